/**
 * Schedule maths for timers (README "Timers"): duration parsing, the next occurrence of each
 * schedule kind and the human summary. Zones and daylight-saving rules come from Luxon (the
 * IANA database of the runtime); nothing here does offset arithmetic by hand.
 */
import { DateTime, IANAZone } from 'luxon';

export const WEEK_DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;
export type WeekDay = (typeof WEEK_DAYS)[number];

export type ScheduleKind = 'once' | 'interval' | 'weekly';

export interface Schedule {
  kind: ScheduleKind;
  /** once: when it runs; interval: the first run */
  runAt: Date | null;
  everySeconds: number | null;
  timeOfDay: string;
  days: WeekDay[];
  timezone: string;
}

/** The longest `run_in` and `every_seconds` accepted: ten years. */
export const MAX_SECONDS = 3650 * 86_400;

const SHORT_RE = /^(?:(\d{1,9})d)?(?:(\d{1,9})h)?(?:(\d{1,9})m)?(?:(\d{1,9})s)?$/;
const ISO_RE = /^P(?:(\d{1,9})D)?(?:T(?:(\d{1,9})H)?(?:(\d{1,9})M)?(?:(\d{1,9})S)?)?$/;

/**
 * Seconds in a duration such as `90s`, `15m`, `2h`, `1d`, `1h30m` or ISO 8601 `PT1H30M` /
 * `P1DT2H`; null when malformed, zero or longer than ten years. Years, months and weeks are not
 * accepted (their length depends on the calendar).
 */
export function parseDuration(text: string): number | null {
  const m = SHORT_RE.exec(text) ?? ISO_RE.exec(text.toUpperCase());
  if (!m || text === 'P' || text.toUpperCase().endsWith('T')) return null;
  if (m.slice(1).every((g) => g === undefined)) return null;
  const [d, h, min, s] = m.slice(1).map((g) => (g === undefined ? 0 : Number(g))) as [number, number, number, number];
  const total = d * 86_400 + h * 3600 + min * 60 + s;
  return total >= 1 && total <= MAX_SECONDS ? total : null;
}

export const isValidZone = (zone: string): boolean => zone.length <= 100 && IANAZone.isValidZone(zone);

export const TIME_OF_DAY_RE = /^(?:[01]\d|2[0-3]):[0-5]\d$/;

/** Days in week order, Monday first. */
export const sortDays = (days: readonly string[]): WeekDay[] => WEEK_DAYS.filter((d) => days.includes(d));

/**
 * The instant a local wall-clock time happens in a zone. A time skipped by a daylight-saving
 * change runs at the first valid instant after it (the moment the clocks jump); a time that
 * happens twice runs at its first occurrence only.
 */
export function localInstant(year: number, month: number, day: number, hour: number, minute: number, zone: string): DateTime {
  const exact = DateTime.fromObject({ year, month, day, hour, minute }, { zone });
  if (exact.hour === hour && exact.minute === minute) return earliest(exact, zone);
  // Skipped: walk forward a minute at a time to the first wall-clock minute that exists.
  for (let m = hour * 60 + minute + 1; m < 24 * 60 + 180; m++) {
    const t = DateTime.fromObject({ year, month, day }, { zone }).set({ hour: 0, minute: 0 });
    const local = { hour: Math.floor(m / 60) % 24, minute: m % 60 };
    const date = m >= 24 * 60 ? t.plus({ days: 1 }) : t;
    const cand = DateTime.fromObject({ year: date.year, month: date.month, day: date.day, ...local }, { zone });
    if (cand.hour === local.hour && cand.minute === local.minute) return cand;
  }
  return exact;
}

/** Of the two instants a repeated wall-clock time names, the first. */
function earliest(t: DateTime, zone: string): DateTime {
  const hourEarlier = t.minus({ hours: 1 }).setZone(zone);
  if (hourEarlier.hour === t.hour && hourEarlier.minute === t.minute) return hourEarlier;
  return t;
}

function parseTime(timeOfDay: string): [number, number] {
  const [h, m] = timeOfDay.split(':').map(Number) as [number, number];
  return [h, m];
}

/** The first weekly occurrence strictly after `after`. */
export function nextWeekly(after: Date, timeOfDay: string, days: readonly WeekDay[], zone: string): Date {
  const [hour, minute] = parseTime(timeOfDay);
  const start = DateTime.fromJSDate(after, { zone }).startOf('day');
  for (let i = 0; i <= 8; i++) {
    const date = start.plus({ days: i });
    if (!days.includes(WEEK_DAYS[date.weekday - 1]!)) continue;
    const cand = localInstant(date.year, date.month, date.day, hour, minute, zone);
    if (cand.toMillis() > after.getTime()) return cand.toJSDate();
  }
  throw new Error('weekly schedule without days');
}

/**
 * The next occurrence after `now`, given the one just due (`due`): once → null (completed);
 * interval → `due` plus whole periods, the first after now; weekly → the first after now. So
 * occurrences missed while no server ran collapse into the one firing that catches up.
 */
export function nextAfterFiring(s: Schedule, due: Date, now: Date): Date | null {
  if (s.kind === 'once') return null;
  if (s.kind === 'interval') return nextInterval(due, s.everySeconds!, now);
  return nextWeekly(now.getTime() > due.getTime() ? now : due, s.timeOfDay, s.days, s.timezone);
}

/** `anchor` plus the fewest whole periods that put it strictly after `now` (anchor itself if already after). */
export function nextInterval(anchor: Date, everySeconds: number, now: Date): Date {
  if (anchor.getTime() > now.getTime()) return anchor;
  const period = everySeconds * 1000;
  const k = Math.floor((now.getTime() - anchor.getTime()) / period) + 1;
  return new Date(anchor.getTime() + k * period);
}

/**
 * The first run of a new or replaced schedule, or of a resumed one (`previous` is the stored
 * next run): once → its time (now when that passed while paused: it fires promptly); interval →
 * the first period boundary from its anchor after now; weekly → the first occurrence after now.
 */
export function firstRun(s: Schedule, now: Date, previous?: Date): Date {
  if (s.kind === 'once') return s.runAt!.getTime() > now.getTime() ? s.runAt! : now;
  if (s.kind === 'interval')
    return nextInterval(previous ?? s.runAt ?? new Date(now.getTime() + s.everySeconds! * 1000), s.everySeconds!, now);
  return nextWeekly(now, s.timeOfDay, s.days, s.timezone);
}

/** time_of_day and days_of_week of a once or interval timer: its first run, seen in its zone. */
export function wallClockOf(at: Date, zone: string): { timeOfDay: string; day: WeekDay } {
  const t = DateTime.fromJSDate(at, { zone });
  return { timeOfDay: t.toFormat('HH:mm'), day: WEEK_DAYS[t.weekday - 1]! };
}

function period(seconds: number): string {
  const unit = (n: number, word: string) => (n === 1 ? `${word}` : `${n} ${word}s`);
  if (seconds % 86_400 === 0) return unit(seconds / 86_400, 'day');
  if (seconds % 3600 === 0) return unit(seconds / 3600, 'hour');
  if (seconds % 60 === 0) return unit(seconds / 60, 'minute');
  return unit(seconds, 'second');
}

function localStamp(at: Date, zone: string): string {
  const t = DateTime.fromJSDate(at, { zone });
  return t.toFormat(t.second === 0 && t.millisecond === 0 ? 'yyyy-MM-dd HH:mm' : 'yyyy-MM-dd HH:mm:ss');
}

/**
 * The human summary: `Every Mon, Wed at 09:00 (Europe/Berlin)`, `Every day at 07:30 (UTC)`,
 * `Once at 2026-11-22 10:00 (UTC)`, `Every 2 hours from 2026-11-22 10:00 (UTC)`.
 */
export function summarize(s: Schedule, firstRunAt: Date): string {
  if (s.kind === 'weekly') {
    const days = s.days.length === 7 ? 'day' : s.days.join(', ');
    return `Every ${days} at ${s.timeOfDay} (${s.timezone})`;
  }
  if (s.kind === 'once') return `Once at ${localStamp(s.runAt!, s.timezone)} (${s.timezone})`;
  return `Every ${period(s.everySeconds!)} from ${localStamp(s.runAt ?? firstRunAt, s.timezone)} (${s.timezone})`;
}
