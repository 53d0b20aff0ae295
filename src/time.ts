/** The one timestamp format (decisions §1): ISO 8601 UTC with milliseconds and Z. */
export const nowIso = (): string => new Date().toISOString();

/** Parses a client timestamp; returns its canonical form or null when it is not a valid date. */
export function canonicalTimestamp(value: string): string | null {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}
