/** The source of "now" for code whose behaviour depends on it (schedules, job due times); tests inject their own. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** The one timestamp format (docs/behaviour.md "Conventions"): ISO 8601 UTC with milliseconds and Z. */
export const nowIso = (): string => new Date().toISOString();

const TIMESTAMP_RE = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-](\d{2}):(\d{2}))$/;

const daysInMonth = (year: number, month: number): number => new Date(Date.UTC(year, month, 0)).getUTCDate();

/**
 * Parses a client timestamp; returns its canonical form or null when it is not a valid date.
 * Every field must be in range: JavaScript's own parser would roll 2099-02-30 over to March 2
 * and 24:00 over to the next day.
 */
export function canonicalTimestamp(value: string): string | null {
  const m = TIMESTAMP_RE.exec(value);
  if (!m) return null;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const second = m[6] === undefined ? 0 : Number(m[6]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

const PLAIN_DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A time zone's offset from UTC at an instant, in ms (positive east of Greenwich). */
function zoneOffsetMs(instant: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(instant));
  const n = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  const asUtc = Date.UTC(n('year'), n('month') - 1, n('day'), n('hour'), n('minute'), n('second'));
  return asUtc - Math.floor(instant / 1000) * 1000;
}

/** Whether `timeZone` is an IANA zone name Node knows. */
export function isTimeZone(timeZone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
    return true;
  } catch {
    return false;
  }
}

/**
 * An expiry typed as a plain date (`2027-01-31`): the last millisecond of that day in `timeZone`
 * (an unknown zone: UTC), canonical; anything else is returned as it was, for the usual checks.
 */
export function endOfDayOrAsIs(value: string, timeZone: string | undefined): string {
  const m = PLAIN_DATE_RE.exec(value.trim());
  if (!m) return value;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return value;
  const zone = timeZone && isTimeZone(timeZone) ? timeZone : 'UTC';
  const nextMidnight = Date.UTC(year, month - 1, day + 1);
  // the local midnight's instant: guess with the offset there, then again with the offset at the guess (DST)
  let instant = nextMidnight - zoneOffsetMs(nextMidnight, zone);
  instant = nextMidnight - zoneOffsetMs(instant, zone);
  return new Date(instant - 1).toISOString();
}
