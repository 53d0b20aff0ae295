import { type RawBuilder, sql } from 'kysely';
import type { Dialect } from '../db/index.ts';
import { EVENTS_PER_TRANSACTION } from './service.ts';

/**
 * The bound below which every event id is settled (README "Event order"): no transaction still
 * running can commit an event with a smaller id. On PostgreSQL it is the oldest transaction id
 * still running in the reading statement's snapshot (`pg_snapshot_xip`), times the positions per
 * transaction, or the snapshot's `xmax` when none runs. Transactions that cannot write this
 * deployment's events are left out, so they cannot hold the bound back: those running in another
 * database, and those of another Weft deployment (connections name themselves
 * `weft:<schema>`, see db/index.ts). A transaction that ended after the snapshot was taken
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
              or (a.application_name like 'weft:%' and a.application_name <> current_setting('application_name'))))),
      pg_snapshot_xmax(snap)::text::bigint) * ${EVENTS_PER_TRANSACTION}
    from pg_current_snapshot() as snap)`;
}
