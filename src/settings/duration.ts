/**
 * Durations of site settings such as `signup_invite_min_account_age`: one or more groups of a
 * whole number and a unit, largest unit first, e.g. `7d`, `12h`, `1d12h`, `90m`, `0d`.
 * Units: w (weeks), d (days), h (hours), m (minutes), s (seconds). Anything else (`7x`, `-1d`,
 * `1.5d`, `7`, `d`, white space inside) is refused. At most 3650 days in all.
 */
const UNIT_MS: Record<string, number> = { w: 604_800_000, d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 };
const ORDER = 'wdhms';
export const MAX_DURATION_MS = 3650 * 86_400_000;

/** Milliseconds, or null when `text` is not a duration. */
export function parseDuration(text: string): number | null {
  if (!/^(\d{1,7}[wdhms])+$/.test(text)) return null;
  let total = 0;
  let last = -1;
  for (const [, digits, unit] of text.matchAll(/(\d+)([wdhms])/g)) {
    const rank = ORDER.indexOf(unit!);
    if (rank <= last) return null; // each unit once, largest first
    last = rank;
    total += Number(digits) * UNIT_MS[unit!]!;
  }
  return total <= MAX_DURATION_MS ? total : null;
}
