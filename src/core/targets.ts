/**
 * The targets of `command` (src/core/command.ts): each resolves what a write acts on inside its
 * transaction, locks it on PostgreSQL, and decides access with src/access/.
 */
import type { Kysely, Transaction } from 'kysely';
import { type PullAccess, type RepoAccess, type RepoNeed, type RepoRef, requireRepo, requireRepoPull } from '../access/index.ts';
import type { DB } from '../db/types.ts';
import type { Viewer } from '../viewer.ts';
import type { Target } from './command.ts';

/**
 * A repo named by its path, at `need` (the repo row locked for update, its team's row and the
 * caller's membership shared, whether or not `need.write` is set).
 */
export const onRepo = (ref: RepoRef, need: RepoNeed): Target<RepoAccess> => ({
  resolve: (db, viewer) => requireRepo(db, viewer, ref, { ...need, lock: true }),
});

/** A pull of a repo, at `need` on the repo: the repo's rows locked as `onRepo`, then the pull's row for update. */
export const onPull = (ref: RepoRef, number: number, need: RepoNeed): Target<PullAccess> => ({
  resolve: (db, viewer) => requireRepoPull(db, viewer, ref, number, { ...need, lock: true }),
});

/**
 * A target decided by a named access function that reads with the transaction and locks what it
 * decides on (a team and the caller's membership, a token, a timer's scope, an invite, ...).
 */
export const decide = <A, V extends Viewer | null = Viewer>(
  fn: (db: Transaction<DB> & Kysely<DB>, viewer: V) => Promise<A>,
): Target<A, V> => ({ resolve: fn });

/** No target: the write's rule needs no row (signup, a staff-only setting decided from the viewer). */
export const nothing: Target<undefined, Viewer | null> = { resolve: async () => undefined };

/** Any authenticated caller (creating a team; a login's token, once the password decided who). */
export const anyUser: Target<undefined> = { resolve: async () => undefined };
