import type { Kysely } from 'kysely';
import { withTransaction } from '../db/tx.ts';
import type { DB } from '../db/types.ts';
import type { TxContext } from './tx-context.ts';
import type { Deps } from '../deps.ts';
import { insertEvent, insertEvents } from '../events/service.ts';

export type { TxContext } from './tx-context.ts';

/**
 * Runs `fn` in one transaction (`withTransaction` of db/tx.ts: a nested call joins the outer
 * one); events it emits are written in that transaction and published to live subscribers only
 * after commit. No change without its event, no event without its change.
 *
 * A write made for a caller goes through `command` (src/core/command.ts), which opens this and
 * decides access inside it; `inTransaction` alone is for writes without a caller (the CLI, the
 * timer scheduler, the bookkeeping after a push or a merge's git step).
 *
 * `on` runs it on another connection to the same store: `deps.database.writer`, the background
 * writer that keeps a long write off the server's thread on SQLite (db/sqlite-writer.ts).
 */
export async function inTransaction<T>(deps: Deps, fn: (tx: TxContext) => Promise<T>, on: Kysely<DB> = deps.db): Promise<T> {
  return withTransaction(
    on,
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
          if (records.length) handle.afterCommit(() => deps.bus.publishMany(records));
          return records;
        },
      }),
    (err) => console.error('weft: an after-commit step failed', err),
  );
}
