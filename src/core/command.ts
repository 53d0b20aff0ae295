/**
 * The one entry point of every write made for a caller (README "Architecture", "Write pipeline").
 *
 *   command(deps, viewer, target, fn)
 *
 * opens one transaction (`inTransaction`; a nested command joins the outer one), resolves the
 * `target` inside it with its rows locked on PostgreSQL (the repo row for update, the owning
 * team's row and the caller's membership shared, a pull's row for update, ...), decides the
 * caller's access with the access module (404 when unreadable, 403 below the need), and hands
 * `fn` the transaction context plus what the target resolved:
 *
 *   ctx = { db, dialect, emit, emitMany, afterCommit, access }
 *
 * So an archive, a deactivation or a member removal committed concurrently either waits for the
 * write or is seen by its decision, and the change and its events commit together.
 *
 * A new write:
 *
 *   export async function closeThing(deps: Deps, viewer: Viewer, ref: RepoRef, n: number) {
 *     return command(deps, viewer, onRepo(ref, { level: 'write', write: true }), async (tx) => {
 *       const thing = await findThing(tx.db, tx.access.repo.uuid, n);      // 404s of its own
 *       await tx.db.updateTable('things').set({ closed: 1 }).where('uuid', '=', thing.uuid).execute();
 *       await tx.emit({ kind: 'thing-closed', scopes: [...], actor: actorOf(viewer), payload: {...} });
 *       return thingToJson(thing);
 *     });
 *   }
 *
 * The targets are in src/core/targets.ts; a decision that is none of them is `decide(...)` around a
 * named function of src/access/. Writes with no caller (the CLI, the timer scheduler, the
 * bookkeeping after a push or a merge's git step) use `inTransaction` directly.
 */
import type { Transaction } from 'kysely';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import type { Viewer } from '../viewer.ts';
import { inTransaction, type TxContext } from './transaction.ts';

export { inTransaction, type TxContext } from './transaction.ts';

/**
 * What a write acts on: `resolve` runs first in the write's transaction, reads (and locks) the
 * target's rows and decides the caller's access, throwing the 404 or 403 that refuses it.
 */
export interface Target<A, V extends Viewer | null = Viewer> {
  resolve(db: Transaction<DB>, viewer: V): Promise<A>;
}

/** The transaction context of a command: `TxContext` plus the resolved target. */
export type CommandContext<A> = TxContext & { access: A };

/** Runs a write for `viewer` on `target` (see the module comment). */
export async function command<A, T, V extends Viewer | null = Viewer>(
  deps: Deps,
  viewer: V,
  target: Target<A, V>,
  fn: (ctx: CommandContext<A>) => Promise<T>,
): Promise<T> {
  return inTransaction(deps, async (tx) => {
    const access = await target.resolve(tx.db, viewer);
    return fn({ ...tx, access });
  });
}
