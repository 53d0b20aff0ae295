import { randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import { type Kysely, type Selectable, sql } from 'kysely';
import { type TimerOwner, type TimerScopeRef, assertNotArchived, requireTimerScope } from '../access/index.ts';
import type { DB } from '../db/types.ts';
import type { TimersTable } from '../db/tables/timers.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import { actorOf, type EventKind } from '../events/service.ts';
import { command, type TxContext } from '../core/command.ts';
import { decide } from '../core/targets.ts';
import { canonicalTimestamp } from '../time.ts';
import { readSettings } from '../settings/service.ts';
import type { Viewer } from '../viewer.ts';
import {
  MAX_SECONDS,
  type Schedule,
  TIME_OF_DAY_RE,
  type WeekDay,
  firstRun,
  isValidZone,
  parseDuration,
  sortDays,
  summarize,
  wallClockOf,
} from './schedule.ts';
import type { CreateTimerBody, Timer, UpdateTimerBody } from './schemas.ts';

export type TimerRow = Selectable<TimersTable>;
export type TimerJson = Static<typeof Timer>;
type CreateInput = Static<typeof CreateTimerBody>;
type UpdateInput = Static<typeof UpdateTimerBody>;
type ScheduleInput = Omit<UpdateInput, 'message' | 'status'>;

export const MAX_MESSAGE = 4000;

export function scheduleOf(row: TimerRow): Schedule {
  return {
    kind: row.schedule_kind as Schedule['kind'],
    runAt: row.run_at ? new Date(row.run_at) : null,
    everySeconds: row.every_seconds,
    timeOfDay: row.time_of_day,
    days: row.days_of_week.split(',') as WeekDay[],
    timezone: row.timezone,
  };
}

export function timerToJson(row: TimerRow): TimerJson {
  return {
    uuid: row.uuid,
    message: row.message,
    scope: row.scope as TimerJson['scope'],
    schedule_kind: row.schedule_kind as TimerJson['schedule_kind'],
    schedule: summarize(scheduleOf(row), new Date(row.next_run_at)),
    run_at: row.run_at,
    every_seconds: row.every_seconds,
    time_of_day: row.time_of_day,
    days_of_week: row.days_of_week.split(',') as WeekDay[],
    timezone: row.timezone,
    status: row.status as TimerJson['status'],
    next_run_at: row.next_run_at,
    last_run_at: row.last_run_at,
    run_count: row.run_count,
    created_at: row.created_at,
  };
}

/** The event scopes of a timer: its own and its owner's (docs/behaviour.md "Events and scopes"). */
export const timerScopes = (row: { uuid: string; scope: string; owner_uuid: string }): string[] => [
  `timer:${row.uuid}`,
  `${row.scope}:${row.owner_uuid}`,
];

function cleanMessage(raw: string): string {
  const message = raw.trim();
  if (message.length === 0) throw badRequest('message must not be empty.');
  if ([...message].length > MAX_MESSAGE) throw badRequest(`message must be at most ${MAX_MESSAGE} characters after trimming.`);
  return message;
}

const hasScheduleFields = (i: ScheduleInput): boolean =>
  [i.run_in, i.run_at, i.every_seconds, i.time_of_day, i.days_of_week, i.timezone].some((v) => v !== undefined);

/**
 * Exactly one schedule form (README "Timers"): once (`run_in`, or `run_at` alone), interval
 * (`every_seconds` with an optional first `run_at`) or weekly (`time_of_day` + `days_of_week`);
 * `timezone` goes with any of them (default UTC).
 */
export function parseSchedule(input: ScheduleInput, now: Date): Schedule {
  const once = input.run_in !== undefined;
  const interval = input.every_seconds !== undefined;
  const weekly = input.time_of_day !== undefined || input.days_of_week !== undefined;
  const forms = [once, interval, weekly, input.run_at !== undefined && !interval].filter(Boolean).length;
  if (
    (once && input.run_at !== undefined) ||
    [once, interval, weekly].filter(Boolean).length > 1 ||
    (weekly && input.run_at !== undefined)
  ) {
    throw badRequest(
      'Give exactly one schedule form: run_in or run_at (once), every_seconds (interval), or time_of_day with days_of_week (weekly).',
    );
  }
  if (forms === 0) {
    throw badRequest(
      'A schedule is required: run_in or run_at (once), every_seconds (interval), or time_of_day with days_of_week (weekly).',
    );
  }
  const timezone = input.timezone ?? 'UTC';
  if (!isValidZone(timezone)) throw badRequest('timezone must be an IANA time zone name such as Europe/Berlin or UTC.');
  let runAt: Date | null = null;
  if (input.run_at !== undefined) {
    const iso = canonicalTimestamp(input.run_at);
    if (iso === null) throw badRequest('run_at must be an ISO 8601 timestamp with a time zone, such as 2026-11-22T10:00:00Z.');
    runAt = new Date(iso);
    if (runAt.getTime() <= now.getTime()) throw badRequest('run_at must be in the future.');
  }
  if (once) {
    const seconds = parseDuration(input.run_in!);
    if (seconds === null) {
      throw badRequest('run_in must be a duration of 1 second to 10 years such as 90s, 15m, 2h, 1d, 1h30m or PT1H30M.');
    }
    runAt = new Date(now.getTime() + seconds * 1000);
  }
  if (weekly) {
    if (input.time_of_day === undefined || input.days_of_week === undefined) {
      throw badRequest('A weekly schedule needs both time_of_day and days_of_week.');
    }
    if (!TIME_OF_DAY_RE.test(input.time_of_day)) throw badRequest('time_of_day must be HH:MM, 24-hour, 00:00 to 23:59.');
    const days = input.days_of_week;
    if (days.length === 0 || new Set(days).size !== days.length) throw badRequest('days_of_week must be non-empty and unique.');
    return { kind: 'weekly', runAt: null, everySeconds: null, timeOfDay: input.time_of_day, days: sortDays(days), timezone };
  }
  if (interval) {
    const every = input.every_seconds!;
    if (every < 60 || every > MAX_SECONDS) throw badRequest(`every_seconds must be an integer from 60 to ${MAX_SECONDS}.`);
    runAt ??= new Date(now.getTime() + every * 1000);
    const wall = wallClockOf(runAt, timezone);
    return { kind: 'interval', runAt, everySeconds: every, timeOfDay: wall.timeOfDay, days: [wall.day], timezone };
  }
  const wall = wallClockOf(runAt!, timezone);
  return { kind: 'once', runAt, everySeconds: null, timeOfDay: wall.timeOfDay, days: [wall.day], timezone };
}

const scheduleColumns = (s: Schedule) => ({
  schedule_kind: s.kind,
  run_at: s.runAt ? s.runAt.toISOString() : null,
  every_seconds: s.everySeconds,
  time_of_day: s.timeOfDay,
  days_of_week: s.days.join(','),
  timezone: s.timezone,
});

async function findTimer(db: Kysely<DB>, owner: TimerOwner, uuid: string): Promise<TimerRow> {
  const row = await db
    .selectFrom('timers')
    .selectAll()
    .where('uuid', '=', uuid)
    .where('scope', '=', owner.scope)
    .where('owner_uuid', '=', owner.uuid)
    .executeTakeFirst();
  if (!row) throw notFound('Timer');
  return row;
}

async function emitTimerEvent(
  tx: TxContext,
  viewer: Viewer,
  row: TimerRow,
  kind: EventKind,
  extra: Record<string, unknown> = {},
) {
  await tx.emit({
    kind,
    scopes: timerScopes(row),
    actor: actorOf(viewer),
    payload: { timer_uuid: row.uuid, ...(kind === 'timer-deleted' ? {} : { timer: timerToJson(row) }), ...extra },
  });
}

export async function listTimers(
  deps: Deps,
  viewer: Viewer,
  ref: TimerScopeRef,
  status: string | undefined,
  page: { offset: number; limit: number },
): Promise<TimerJson[]> {
  const owner = await requireTimerScope(deps.db, viewer, ref, false);
  // The page's keys from timers_owner_list_idx, or timers_owner_status_list_idx with a status
  // (index entries only), then their rows: a deep page skips index entries (README "Performance").
  let keys = deps.db.selectFrom('timers').select('uuid').where('scope', '=', owner.scope).where('owner_uuid', '=', owner.uuid);
  if (status !== undefined) keys = keys.where('status', '=', status);
  keys = keys.orderBy('created_at').orderBy('uuid').offset(page.offset).limit(page.limit);
  const rows = await deps.db
    .selectFrom('timers')
    .selectAll()
    .where('uuid', 'in', keys)
    .orderBy('created_at')
    .orderBy('uuid')
    .execute();
  return rows.map(timerToJson);
}

export async function getTimer(deps: Deps, viewer: Viewer, ref: TimerScopeRef, uuid: string): Promise<TimerJson> {
  const owner = await requireTimerScope(deps.db, viewer, ref, false, true);
  return timerToJson(await findTimer(deps.db, owner, uuid));
}

/** A timer scope the viewer may change timers in (a write's target: README "Timers", Access). */
const changeableScope = (ref: TimerScopeRef, item = false) =>
  decide((db, v: Viewer) => requireTimerScope(db, v, ref, true, item));

/** Advisory lock class of "one owner's timers" (PostgreSQL; SQLite's write lock serialises already). */
const TIMER_OWNER_LOCK_CLASS = 7_401_030;

/**
 * An owner may hold at most `max_timers_per_owner` unfinished (active or paused) timers (a site
 * setting, README "Limits"); one more is 409 limit_reached. Counted under a per-owner lock, so
 * parallel creates cannot pass it together.
 */
async function assertTimerRoom(tx: TxContext, owner: TimerOwner): Promise<void> {
  if (tx.dialect === 'postgres') {
    await sql`select pg_advisory_xact_lock(${TIMER_OWNER_LOCK_CLASS}, hashtext(${`${owner.scope}:${owner.uuid}`}))`.execute(
      tx.db,
    );
  }
  const { max_timers_per_owner: max } = await readSettings(tx.db);
  const { n } = await tx.db
    .selectFrom('timers')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('scope', '=', owner.scope)
    .where('owner_uuid', '=', owner.uuid)
    .where('status', 'in', ['active', 'paused'])
    .executeTakeFirstOrThrow();
  if (Number(n) >= max) {
    throw conflict(
      'limit_reached',
      `This ${owner.scope} already has ${Number(n)} active or paused timers, the most allowed (site setting max_timers_per_owner); delete or cancel one first.`,
    );
  }
}

export async function createTimer(deps: Deps, viewer: Viewer, ref: TimerScopeRef, input: CreateInput): Promise<TimerJson> {
  const message = cleanMessage(input.message);
  const now = deps.clock.now();
  const schedule = parseSchedule(input, now);
  return command(deps, viewer, changeableScope(ref), async (tx) => {
    const owner = tx.access;
    await assertTimerRoom(tx, owner);
    const nowIso = now.toISOString();
    const row: TimerRow = {
      uuid: randomUUID(),
      scope: owner.scope,
      owner_uuid: owner.uuid,
      created_by_uuid: viewer.uuid,
      message,
      ...scheduleColumns(schedule),
      status: input.status ?? 'active',
      next_run_at: firstRun(schedule, now).toISOString(),
      last_run_at: null,
      run_count: 0,
      created_at: nowIso,
      updated_at: nowIso,
    };
    await tx.db.insertInto('timers').values(row).execute();
    await emitTimerEvent(tx, viewer, row, 'timer-created');
    return timerToJson(row);
  });
}

export async function updateTimer(
  deps: Deps,
  viewer: Viewer,
  ref: TimerScopeRef,
  uuid: string,
  input: UpdateInput,
): Promise<TimerJson> {
  const message = input.message === undefined ? undefined : cleanMessage(input.message);
  const now = deps.clock.now();
  const schedule = hasScheduleFields(input) ? parseSchedule(input, now) : null;
  return command(deps, viewer, changeableScope(ref, true), async (tx) => {
    const owner = tx.access;
    const row = await findTimer(tx.db, owner, uuid);
    if (owner.archived) assertNotArchived({ repo: { is_archived: 1 } });
    if (row.status === 'completed' || row.status === 'cancelled') {
      throw conflict('timer_finished', `The timer is ${row.status}; it can no longer be changed.`);
    }
    const changes: Partial<TimerRow> = {};
    if (message !== undefined && message !== row.message) changes.message = message;
    if (input.status !== undefined && input.status !== row.status) changes.status = input.status;
    if (schedule) {
      Object.assign(changes, scheduleColumns(schedule));
      changes.next_run_at = firstRun(schedule, now).toISOString();
    } else if (changes.status === 'active') {
      // Resuming: the next future occurrence (a once timer that fell due while paused fires now).
      changes.next_run_at = firstRun(scheduleOf(row), now, new Date(row.next_run_at)).toISOString();
    }
    const fields = Object.keys(changes).filter(
      (k) => (changes as Record<string, unknown>)[k] !== (row as Record<string, unknown>)[k],
    );
    if (fields.length === 0) return timerToJson(row);
    const updated: TimerRow = { ...row, ...changes, updated_at: now.toISOString() };
    await tx.db
      .updateTable('timers')
      .set({ ...changes, updated_at: updated.updated_at })
      .where('uuid', '=', row.uuid)
      .execute();
    await emitTimerEvent(tx, viewer, updated, 'timer-updated', { fields });
    return timerToJson(updated);
  });
}

export async function deleteTimer(deps: Deps, viewer: Viewer, ref: TimerScopeRef, uuid: string): Promise<void> {
  await command(deps, viewer, changeableScope(ref, true), async (tx) => {
    const owner = tx.access;
    const row = await findTimer(tx.db, owner, uuid);
    if (owner.archived) assertNotArchived({ repo: { is_archived: 1 } });
    await tx.db.deleteFrom('timers').where('uuid', '=', row.uuid).execute();
    await emitTimerEvent(tx, viewer, row, 'timer-deleted');
  });
}
