import { type Kysely, type RawBuilder, sql } from 'kysely';
import type { DB } from '../db/types.ts';
import type { Dialect } from '../db/index.ts';
import { EVENTS_PER_TRANSACTION } from './service.ts';

/**
 * The bound below which every event id is settled (README "Event order"): no transaction still
 * running can commit an event with a smaller id. On PostgreSQL it is the oldest transaction id
 * still running in the reading statement's snapshot (`pg_snapshot_xip`), times the positions per
 * transaction, or the snapshot's `xmax` when none runs. Transactions that cannot write this
 * deployment's events are left out, so they cannot hold the bound back: those running in another
 * database, and those of any other connection than this deployment's (its connections name
 * themselves `weft:<schema>`, see db/index.ts): another Weft deployment, an operator's psql, an
 * autovacuum ANALYZE, a migration of another schema. A transaction that ended after the snapshot was taken
 * cannot be told apart and still counts (it only delays). Every reader of the store (GET /events,
 * the activity feeds, the live stream) reads below this bound. On SQLite (one writer, ids in
 * commit order) every committed id is settled: null, no bound.
 */
export function settledBound(dialect: Dialect): RawBuilder<number> | null {
  if (dialect !== 'postgres') return null;
  return sql<number>`(select coalesce(
      (select min(x::text::bigint) from pg_snapshot_xip(snap) as x
        where not exists (
          select 1 from pg_stat_activity a
          where a.backend_xid::text::bigint = x::text::bigint % 4294967296
            and (a.datname is distinct from current_database()
              or a.application_name is distinct from current_setting('application_name')))),
      pg_snapshot_xmax(snap)::text::bigint) * ${EVENTS_PER_TRANSACTION}
    from pg_current_snapshot() as snap)`;
}

/**
 * How long a page read waits, at most, for the events that had committed when it began to settle
 * (read-your-writes, README "Event order").
 */
export const READ_YOUR_WRITES_WAIT_MS = 2000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The settled bound as a number, for a read that must see every event committed before it began
 * (a client that wrote an event and then reads its page must find it there). While an older
 * transaction of this deployment still runs, a just-committed event lies above the bound; the read
 * waits, a few milliseconds at a time and at most `waitMs`, until the bound passes the newest
 * event committed when it began. After `waitMs` it returns the bound as it is: a page may then miss
 * the newest events, but never shows an id that another event could still commit below. SQLite:
 * null, every committed event is settled.
 */
export async function readableBound(
  db: Kysely<DB>,
  dialect: Dialect,
  waitMs: number = READ_YOUR_WRITES_WAIT_MS,
): Promise<number | null> {
  const settled = settledBound(dialect);
  if (!settled) return null;
  const deadline = Date.now() + waitMs;
  let target: number | null = null;
  // short steps: the transactions that hold the bound (a request's write, a job's claim) last a
  // millisecond or two, and every step a page waits past them is latency
  for (let delay = 1; ; delay = Math.min(delay * 2, 8)) {
    const { rows } = await sql<{ bound: string | number; top: string | number | null }>`
      select ${settled} as bound, (select max(id) from events) as top`.execute(db);
    const bound = Number(rows[0]!.bound);
    if (target === null) target = rows[0]!.top === null ? -1 : Number(rows[0]!.top);
    if (bound > target || Date.now() >= deadline) return bound;
    await sleep(delay);
  }
}
