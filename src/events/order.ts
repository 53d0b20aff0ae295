import { type RawBuilder, sql } from 'kysely';
import type { Dialect } from '../db/index.ts';
import { EVENTS_PER_TRANSACTION } from './service.ts';

/**
 * The bound below which every event id is settled (README "Event order"): no transaction still
 * running can commit an event with a smaller id. On PostgreSQL that is the oldest running
 * transaction id of the reading statement's snapshot (`pg_snapshot_xmin`), times the positions
 * per transaction; every reader of the store (GET /events, the activity feeds, the live stream)
 * reads only below it. On SQLite (one writer, ids in commit order) every committed id is settled:
 * null, no bound.
 */
export function settledBound(dialect: Dialect): RawBuilder<number> | null {
  if (dialect !== 'postgres') return null;
  return sql<number>`(select pg_snapshot_xmin(pg_current_snapshot())::text::bigint * ${EVENTS_PER_TRANSACTION})`;
}
