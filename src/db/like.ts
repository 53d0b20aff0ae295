import { type RawBuilder, sql } from 'kysely';

/** `lower(column) LIKE %text%` with the text's own % and _ taken literally, on both dialects. */
export function containsText(column: string, text: string): RawBuilder<boolean> {
  const escaped = text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
  return sql<boolean>`lower(${sql.ref(column)}) like ${`%${escaped}%`} escape '\\'`;
}

export function startsWithText(column: string, text: string): RawBuilder<boolean> {
  const escaped = text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
  return sql<boolean>`lower(${sql.ref(column)}) like ${`${escaped}%`} escape '\\'`;
}
