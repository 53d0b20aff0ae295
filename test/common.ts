import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Database } from '../src/db/index.ts';
import type { QueryConnection, QueryObserver } from '../src/db/query-timing.ts';
import { snapshot } from './foundation-helpers.ts';
import type { RequestOptions, Res, TestApp } from './helpers.ts';
import { isErrorBody } from './helpers.ts';

/** The helpers several test files share: one copy each (test/helpers.ts starts apps). */

/** A user made for a test: their token, uuid and username. */
export interface Person {
  token: string;
  uuid: string;
  username: string;
}

/**
 * Sends a request that must be refused with `status` and error `code`, with the exact error
 * envelope and no stack trace, and must change nothing (users, tokens and events are counted
 * before and after).
 */
export async function assertRefused(
  t: TestApp,
  status: number,
  code: string,
  method: string,
  url: string,
  opts: RequestOptions = {},
): Promise<Res> {
  const before = await snapshot(t);
  const res = await t.req(method, url, opts);
  assert.equal(res.status, status, `${method} ${url}: ${res.text}`);
  assert.ok(isErrorBody(res.body, code), `envelope ${code}: ${res.text}`);
  assert.ok(!/\bat .*\(.*:\d+:\d+\)/.test(res.text), 'no stack trace');
  assert.deepEqual(await snapshot(t), before, `${method} ${url} changed nothing and emitted no event`);
  return res;
}

export interface EventJson {
  id: string;
  kind: string;
  scopes: string[];
  actor: { uuid: string; username: string } | null;
  payload: Record<string, unknown>;
  created_at: string;
}

/** GET /events of one scope (up to 100, optionally of one kind) as `token` (the admin by default). */
export function eventsInScope(t: TestApp, scope: string, token?: string, kind?: string): Promise<Res> {
  const kindQuery = kind === undefined ? '' : `&kind=${encodeURIComponent(kind)}`;
  return t.req(
    'GET',
    `/api/v1/events?scope=${encodeURIComponent(scope)}&per_page=100${kindQuery}`,
    token === undefined ? {} : { token },
  );
}

/** The events of a scope, asserting the read is allowed (200). */
export async function eventResults(t: TestApp, scope: string, token?: string, kind?: string): Promise<EventJson[]> {
  const res = await eventsInScope(t, scope, token, kind);
  assert.equal(res.status, 200, res.text);
  return res.body.results as EventJson[];
}

/** Polls `pred` until it holds, or fails after `ms` naming `what`. */
/** Whether a process with this id is alive (signal 0). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function waitUntil(pred: () => boolean | Promise<boolean>, ms = 20_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await pred()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * The statements `run` makes, by connection (the main one, the background writer, a reader;
 * db/query-timing.ts): every query of the database (Kysely's and the compiled ones) made in
 * `run`'s async context, so background work (jobs, the live feed) is not counted.
 */
export async function statementsOf(
  database: Database,
  run: () => Promise<unknown>,
): Promise<Record<QueryConnection, number> & { total: number }> {
  const mine = new AsyncLocalStorage<true>();
  const n = { main: 0, writer: 0, reader: 0, total: 0 };
  const observe: QueryObserver = (_kind, _seconds, _failed, connection) => {
    if (!mine.getStore()) return;
    n[connection]++;
    n.total++;
  };
  database.queryObservers.add(observe);
  try {
    await mine.run(true, run);
  } finally {
    database.queryObservers.delete(observe);
  }
  return n;
}

/** The notification fan-out has read every committed event (its cursor is at the newest). */
export async function fanoutSettled(t: TestApp): Promise<void> {
  await waitUntil(
    async () => {
      const top = await t.deps.db
        .selectFrom('events')
        .select((eb) => eb.fn.max('id').as('id'))
        .where('kind', '!=', 'notification-updated')
        .executeTakeFirst();
      const cursor = await t.deps.db.selectFrom('notification_dispatch').select('last_event_id').executeTakeFirstOrThrow();
      return Number(cursor.last_event_id) >= Number(top?.id ?? 0);
    },
    20_000,
    'the fan-out',
  );
}
