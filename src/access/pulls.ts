/** Pull and review access: who may open pulls and whose approvals count. */
import { type Kysely, type Selectable } from 'kysely';
import { withRowLock } from '../db/tx.ts';
import type { DB, PullsTable } from '../db/types.ts';
import { forbidden, notFound } from '../errors.ts';
import type { RepoRef, Viewer } from '../viewer.ts';
import { type RepoRow, type RepoLevel, levelAtLeast } from './levels.ts';
import { type RepoAccess, type RepoNeed, assertNotArchived, itemWrite, repoAccessLevel, requireRepo } from './repos.ts';

export interface PullAccess {
  access: RepoAccess;
  pull: Selectable<PullsTable>;
}

/**
 * Resolves a readable repo and the pull with that number in it (404 for either), then the checks
 * of `need`. With `need.write` or `need.lock`, inside a write's transaction, the repo's rows are
 * locked as `requireRepo` locks them and the pull's row for update (PostgreSQL), in that order.
 */
export async function requireRepoPull(
  db: Kysely<DB>,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  need: RepoNeed = { level: 'read' },
): Promise<PullAccess> {
  // a missing pull is 404 before 403 repo_archived (a caller passing `itemWrite(need)` checks
  // the archive itself, after a lookup of its own)
  const access = await requireRepo(db, viewer, ref, need.write ? itemWrite(need) : need);
  const query = db.selectFrom('pulls').selectAll().where('repo_uuid', '=', access.repo.uuid).where('number', '=', number);
  const pull = await withRowLock(db, query, need.write || need.lock ? 'update' : undefined).executeTakeFirst();
  if (!pull) throw notFound('Pull');
  if (need.write && !need.allowArchived) assertNotArchived(access);
  return { access, pull };
}

export interface StoredUser {
  uuid: string;
  username: string;
  is_staff: number;
  is_active: number;
}

/** A stored user's level on a repo now; a deactivated user has none. */
export async function storedUserRepoLevel(db: Kysely<DB>, user: StoredUser, repo: RepoRow): Promise<RepoLevel> {
  if (user.is_active !== 1) return 'none';
  return repoAccessLevel(db, { uuid: user.uuid, username: user.username, isStaff: user.is_staff === 1, tokenUuid: '' }, repo);
}

/**
 * Whether an approving review by `reviewer` counts towards a pull's branch protection (docs/behaviour.md
 * "Protections, pulls and reviews"), with access evaluated now, not when the review was written: with an approver list, a
 * listed user who can still read the repo; without one, any user with write access (staff
 * included). A deactivated user's approval never counts. (That the pull's author never counts is
 * the caller's rule.)
 */
export async function approvalCounts(
  db: Kysely<DB>,
  reviewer: StoredUser,
  repo: RepoRow,
  approverUuids: ReadonlySet<string>,
): Promise<boolean> {
  if (approverUuids.size > 0 && !approverUuids.has(reviewer.uuid)) return false;
  const level = await storedUserRepoLevel(db, reviewer, repo);
  return levelAtLeast(level, approverUuids.size > 0 ? 'read' : 'write');
}

/** A pull's title, body and open/closed status are changed by its author or at maintain level. */
export function assertCanEditPull(viewer: Viewer, access: RepoAccess, pull: { author_uuid: string }): void {
  if (pull.author_uuid !== viewer.uuid && !levelAtLeast(access.level, 'maintain')) {
    throw forbidden('Only the pull author or a maintainer can change a pull.');
  }
}

/**
 * Anyone who can read the repo may review a pull (README "Pulls and reviews"), but its author
 * may only comment: approving or requesting changes on one's own pull is 403 cannot_approve_own_pull.
 */
export function assertCanReview(viewer: Viewer, pull: { author_uuid: string }, status: string): void {
  if (pull.author_uuid === viewer.uuid && status !== 'commented') {
    throw forbidden('The author of a pull may only comment on it, not approve or request changes.', 'cannot_approve_own_pull');
  }
}

/** A review is removed by its author or at maintain level. */
export function assertCanRemoveReview(viewer: Viewer, access: RepoAccess, review: { author_uuid: string }): void {
  if (review.author_uuid !== viewer.uuid && !levelAtLeast(access.level, 'maintain')) {
    throw forbidden('Only the review author or a maintainer can remove a review.');
  }
}
