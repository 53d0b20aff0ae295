import type { Transaction } from 'kysely';
import type { Dialect } from '../db/index.ts';
import { withTransaction } from '../db/tx.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { type EventInput, type EventRecord, insertEvent, insertEvents } from '../events/service.ts';

/** A transaction plus `emit`, which records an event in that same transaction (the outbox). */
export interface TxContext {
  db: Transaction<DB>;
  dialect: Dialect;
  emit(event: EventInput): Promise<EventRecord>;
  /** Several events with one insert per table (bulk producers such as the timer scheduler). */
  emitMany(events: EventInput[]): Promise<EventRecord[]>;
  /** Runs `fn` after the outermost transaction commits (jobs to wake, files to remove, ...). */
  afterCommit(fn: () => void | Promise<void>): void;
}

/**
 * Runs `fn` in one transaction (`withTransaction` of db/tx.ts: a nested call joins the outer
 * one); events it emits are written in that transaction and published to live subscribers only
 * after commit. No change without its event, no event without its change.
 *
 * A write made for a caller goes through `command` (src/core/command.ts), which opens this and
 * decides access inside it; `inTransaction` alone is for writes without a caller (the CLI, the
 * timer scheduler, the bookkeeping after a push or a merge's git step).
 */
export async function inTransaction<T>(deps: Deps, fn: (tx: TxContext) => Promise<T>): Promise<T> {
  return withTransaction(
    deps.db,
    (handle) =>
      fn({
        db: handle.trx,
        dialect: deps.dialect,
        afterCommit: handle.afterCommit,
        emit: async (input) => {
          const record = await insertEvent(handle.trx, deps.dialect, input);
          handle.afterCommit(() => deps.bus.publish(record));
          return record;
        },
        emitMany: async (inputs) => {
          const records = await insertEvents(handle.trx, deps.dialect, inputs);
          if (records.length)
            handle.afterCommit(() => {
              for (const r of records) deps.bus.publish(r);
            });
          return records;
        },
      }),
    (err) => console.error('weft: an after-commit step failed', err),
  );
}
