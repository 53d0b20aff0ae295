import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { DB } from '../src/db/types.ts';
import type { Clock } from '../src/time.ts';
import type { TestApp } from './helpers.ts';

/** A clock the test moves by hand. */
export class ManualClock implements Clock {
  constructor(public ms: number) {}
  static at(iso: string): ManualClock {
    return new ManualClock(Date.parse(iso));
  }
  now(): Date {
    return new Date(this.ms);
  }
  set(iso: string): void {
    this.ms = Date.parse(iso);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** The timer-fired events of a timer, oldest first, read through the events API as `token` (its owner). */
export async function firedEvents(t: TestApp, timerUuid: string, token: string) {
  const res = await t.req('GET', `/api/v1/events?scope=timer:${timerUuid}&kind=timer-fired&per_page=100`, { token });
  if (res.status !== 200) throw new Error(`events: ${res.status} ${res.text}`);
  // biome-ignore lint/suspicious/noExplicitAny: event payloads are inspected freely
  return res.body.results as any[];
}

/** Inserts an active user straight into the store (for tests and the bench that run no app); returns its uuid. */
export async function insertUserRow(db: Kysely<DB>, username: string): Promise<string> {
  const uuid = randomUUID();
  const now = new Date().toISOString();
  await db
    .insertInto('users')
    .values({
      uuid,
      username,
      display_name: username,
      email: `${username}@example.com`,
      is_staff: 0,
      is_active: 1,
      ping_mentions: 'everyone',
      password_hash: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return uuid;
}

/**
 * Inserts `n` active timers of a user straight into the store, in chunks of 500: timer `i` is
 * due at `dueAt(i)` and says `message(i)`; odd ones run once, even ones every hour. Returns
 * their uuids. For bursts of due timers that the API could not create in the past.
 */
export async function insertDueTimers(
  db: Kysely<DB>,
  ownerUuid: string,
  n: number,
  dueAt: (i: number) => string,
  message: (i: number) => string,
): Promise<string[]> {
  const now = new Date().toISOString();
  const uuids: string[] = [];
  for (let from = 0; from < n; from += 500) {
    const rows = [];
    for (let i = from; i < Math.min(n, from + 500); i++) {
      const due = dueAt(i);
      const uuid = randomUUID();
      uuids.push(uuid);
      rows.push({
        uuid,
        scope: 'user',
        owner_uuid: ownerUuid,
        created_by_uuid: ownerUuid,
        message: message(i),
        schedule_kind: i % 2 ? 'once' : 'interval',
        run_at: due,
        every_seconds: i % 2 ? null : 3600,
        time_of_day: '00:00',
        days_of_week: 'Mon',
        timezone: 'UTC',
        status: 'active',
        next_run_at: due,
        last_run_at: null,
        run_count: 0,
        created_at: now,
        updated_at: now,
      });
    }
    await db.insertInto('timers').values(rows).execute();
  }
  return uuids;
}

/** The timer uuid of every timer-fired event in the store, in id order (a duplicate shows twice). */
export async function firedTimerUuids(db: Kysely<DB>): Promise<string[]> {
  const rows = await db.selectFrom('events').select('payload').where('kind', '=', 'timer-fired').orderBy('id').execute();
  return rows.map((e) => (JSON.parse(e.payload) as { timer_uuid: string }).timer_uuid);
}

/**
 * Waits (up to 5 s) for a timer's first firing under a real clock and returns its events, and
 * how late the first one was written after `dueAt` in milliseconds.
 */
export async function waitForFiring(t: TestApp, timerUuid: string, token: string, dueAt: string) {
  const deadline = Date.now() + 5000;
  let events: Awaited<ReturnType<typeof firedEvents>> = [];
  while (Date.now() < deadline && events.length === 0) {
    await new Promise((r) => setTimeout(r, 50));
    events = await firedEvents(t, timerUuid, token);
  }
  const lag = events.length ? Date.parse(events[0].created_at) - Date.parse(dueAt) : NaN;
  return { events, lag };
}
