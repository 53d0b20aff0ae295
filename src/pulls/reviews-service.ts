import { randomUUID } from 'node:crypto';
import { wakeAutoMerge } from './auto-merge-state.ts';
import type { Kysely, Selectable } from 'kysely';
import {
  assertCanRemoveReview,
  assertCanReview,
  assertNotArchived,
  itemWrite,
  pullContextOf,
  type RepoRef,
  type RepoRow,
} from '../access/index.ts';
import type { DB, ReviewsTable } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { command } from '../core/command.ts';
import { onPull } from '../core/targets.ts';
import { nowIso } from '../time.ts';
import { endReviewRequest } from '../tracker/pulls.ts';
import { indexTerms } from '../tracker/lists.ts';
import { recordReferences } from '../references/service.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import { pullHeadSha, pullTips } from './heads.ts';
import { type CommentInput, emitCommentsCreated, insertComments, prepareComments } from './comments-service.ts';
import type { TxContext } from '../core/command.ts';
import { pullSource } from './service.ts';
import { type PullRow, requirePull } from './service.ts';

export type ReviewStatus = 'approved' | 'changes_requested' | 'commented';
export type ReviewState = ReviewStatus | 'pending';

export interface ReviewJson {
  uuid: string;
  pull_uuid: string;
  pull_number: number;
  status: ReviewState;
  body: string;
  author_username: string;
  author_uuid: string;
  created_at: string;
  removed_at: string | null;
  /** the pull's head when it was submitted (null while pending, and for reviews older than line comments) */
  commit_sha: string | null;
}

type ReviewWithNames = Selectable<ReviewsTable> & { author_username: string; pull_number: number };

function reviewsWithNames(db: Kysely<DB>) {
  return db
    .selectFrom('reviews as r')
    .innerJoin('users as a', 'a.uuid', 'r.author_uuid')
    .innerJoin('pulls as p', 'p.uuid', 'r.pull_uuid')
    .selectAll('r')
    .select(['a.username as author_username', 'p.number as pull_number']);
}

function reviewToJson(row: ReviewWithNames): ReviewJson {
  return {
    uuid: row.uuid,
    pull_uuid: row.pull_uuid,
    pull_number: row.pull_number,
    status: row.status as ReviewState,
    body: row.body,
    author_username: row.author_username,
    author_uuid: row.author_uuid,
    created_at: row.created_at,
    removed_at: row.removed_at,
    commit_sha: row.commit_sha,
  };
}

const reviewScopes = (pull: PullRow, reviewUuid: string) => [
  `repo:${pull.repo_uuid}`,
  `pull:${pull.uuid}`,
  `review:${reviewUuid}`,
];

/** A review event's payload; the pull's target branch and tips let a hook's branch filter and a CI use it. */
async function reviewEventPayload(deps: Deps, pull: PullRow, review: ReviewJson): Promise<Record<string, unknown>> {
  return {
    repo_uuid: pull.repo_uuid,
    pull_uuid: pull.uuid,
    pull_number: pull.number,
    review_uuid: review.uuid,
    status: review.status,
    author_username: review.author_username,
    target_branch: pull.target_branch,
    ...(await pullTips(deps, pull)),
  };
}

/**
 * Keeps `pulls.review_count` (migration 740: the reviews not removed, pending ones included, what
 * the pull list's `sort=replies` orders by) in the review's own transaction.
 */
async function countReviews(db: Kysely<DB>, pullUuid: string, by: 1 | -1): Promise<void> {
  await db
    .updateTable('pulls')
    .set((eb) => ({ review_count: eb('review_count', '+', by) }))
    .where('uuid', '=', pullUuid)
    .execute();
}

/** A submitted review's words and mentions for the pull list's filters (table pull_terms); null drops them. */
const indexReview = (db: Kysely<DB>, pull: PullRow, reviewUuid: string, body: string | null) =>
  indexTerms(db, 'pulls', pull.repo_uuid, pull.uuid, reviewUuid, body);

const MERGED = () => conflict('pull_merged', 'The pull is merged: its reviews can no longer change.');

/**
 * POST {repo}/pulls/{n}/reviews. With a `status`, a submitted review (with its comments, if any);
 * without one, a pending review visible to its author only, which collects comments until it is
 * submitted: a second pending review of the same author adds its comments to the first.
 */
export async function createReview(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  input: { status?: ReviewStatus; body?: string; comments?: CommentInput[] },
  /** work of the caller's in the review's transaction, after the checks (reply by mail records its mail) */
  also?: (db: Kysely<DB>) => Promise<void>,
): Promise<ReviewJson> {
  if (input.status === undefined && (input.comments ?? []).length === 0) {
    throw badRequest('status: required, unless the review is a pending one collecting comments.');
  }
  // the comments are checked against the pull's diff before the write (git runs outside it)
  const seen = await pullContextOf(deps.database, viewer, ref, number);
  const prepared = await prepareComments(deps, seen.repo.uuid, seen.pull, input.comments ?? []);
  const head = prepared[0]?.commit_sha ?? (input.status ? await pullHeadSha(deps, seen.pull) : null);
  // Read access is enough to review; a review is still a write under the repo.
  return command(deps, viewer, onPull(ref, number, { level: 'read', write: true }), async (tx) => {
    const { pull } = tx.access;
    const pending = input.status === undefined;
    if (!pending) assertCanReview(viewer, pull, input.status!);
    // Bumping the pull's review counter locks its row: a concurrent merge either sees this
    // review or commits first, in which case the status read here is `merged`.
    const counter = await tx.db
      .updateTable('pulls')
      .set((eb) => ({ review_seq: eb('review_seq', '+', 1) }))
      .where('uuid', '=', pull.uuid)
      .returning(['review_seq', 'status'])
      .executeTakeFirst();
    if (!counter) throw notFound('Pull');
    if (counter.status === 'merged') throw MERGED();
    if (also) await also(tx.db);
    if (pending) {
      const open = await tx.db
        .selectFrom('reviews')
        .select('uuid')
        .where('pull_uuid', '=', pull.uuid)
        .where('author_uuid', '=', viewer.uuid)
        .where('status', '=', 'pending')
        .where('removed_at', 'is', null)
        .executeTakeFirst();
      if (open) {
        await insertComments(tx, viewer, pull.uuid, open.uuid, prepared, true);
        if (input.body !== undefined)
          await tx.db.updateTable('reviews').set({ body: input.body }).where('uuid', '=', open.uuid).execute();
        return reviewToJson(await reviewsWithNames(tx.db).where('r.uuid', '=', open.uuid).executeTakeFirstOrThrow());
      }
    }
    const uuid = randomUUID();
    await tx.db
      .insertInto('reviews')
      .values({
        uuid,
        pull_uuid: pull.uuid,
        author_uuid: viewer.uuid,
        status: input.status ?? 'pending',
        body: input.body ?? '',
        created_at: nowIso(),
        removed_at: null,
        seq: counter.review_seq,
        commit_sha: pending ? null : head,
      })
      .execute();
    await countReviews(tx.db, pull.uuid, 1);
    if (!pending) await indexReview(tx.db, pull, uuid, input.body ?? '');
    const comments = await insertComments(tx, viewer, pull.uuid, uuid, prepared, pending);
    const review = reviewToJson(await reviewsWithNames(tx.db).where('r.uuid', '=', uuid).executeTakeFirstOrThrow());
    if (!pending) await published(deps, tx, viewer, tx.access.access.repo, pull, review, comments);
    return review;
  });
}

/** What a review's submission does: ends the reviewer's request, records references, emits its events. */
async function published(
  deps: Deps,
  tx: TxContext,
  viewer: Viewer,
  repo: RepoRow,
  pull: PullRow,
  review: ReviewJson,
  comments: string[],
) {
  // README "Issue tracker": a review by a requested reviewer ends their request
  await endReviewRequest(tx, pull.uuid, viewer.uuid);
  if (review.body) {
    const source = { ...pullSource(repo, pull), kind: 'review' as const, key: review.uuid };
    await recordReferences(tx, viewer, source, review.body);
  }
  await tx.emit({
    kind: 'review-submitted',
    scopes: reviewScopes(pull, review.uuid),
    actor: actorOf(viewer),
    payload: await reviewEventPayload(deps, pull, review),
  });
  await emitCommentsCreated(tx, viewer, pull, comments);
  // docs/ci.md "Auto-merge": an approval may be what the pull waits for
  if (review.status === 'approved') await wakeAutoMerge(deps, tx.db, { pullUuid: pull.uuid });
}

/** POST .../reviews/{uuid}/submit: the author's pending review becomes a review with this status; its comments are shown. */
export async function submitReview(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  reviewUuid: string,
  input: { status: ReviewStatus; body?: string },
): Promise<ReviewJson> {
  const seen = await pullContextOf(deps.database, viewer, ref, number);
  const head = await pullHeadSha(deps, seen.pull);
  return command(deps, viewer, onPull(ref, number, itemWrite({ level: 'read', write: true })), async (tx) => {
    const { pull } = tx.access;
    const row = await findReview(tx.db, viewer, pull, reviewUuid);
    assertNotArchived(tx.access.access);
    if (row.status !== 'pending' || row.removed_at !== null) {
      throw conflict('review_submitted', 'The review is already submitted.');
    }
    assertCanReview(viewer, pull, input.status);
    const counter = await tx.db
      .updateTable('pulls')
      .set((eb) => ({ review_seq: eb('review_seq', '+', 1) }))
      .where('uuid', '=', pull.uuid)
      .returning(['review_seq', 'status'])
      .executeTakeFirst();
    if (!counter) throw notFound('Pull');
    if (counter.status === 'merged') throw MERGED();
    await tx.db
      .updateTable('reviews')
      .set({
        status: input.status,
        body: input.body ?? row.body,
        seq: counter.review_seq,
        created_at: nowIso(),
        commit_sha: head,
      })
      .where('uuid', '=', row.uuid)
      .execute();
    await indexReview(tx.db, pull, row.uuid, input.body ?? row.body);
    const comments = await tx.db
      .selectFrom('review_comments')
      .select('uuid')
      .where('review_uuid', '=', row.uuid)
      .orderBy('created_at')
      .orderBy('uuid')
      .execute();
    await tx.db.updateTable('review_comments').set({ pending: 0 }).where('review_uuid', '=', row.uuid).execute();
    const review = reviewToJson(await reviewsWithNames(tx.db).where('r.uuid', '=', row.uuid).executeTakeFirstOrThrow());
    await published(
      deps,
      tx,
      viewer,
      tx.access.access.repo,
      pull,
      review,
      comments.map((c) => c.uuid),
    );
    return review;
  });
}

export async function listReviews(
  deps: Deps,
  viewer: Viewer,
  at: RepoAt,
  number: number,
  page: { offset: number; limit: number },
): Promise<ReviewJson[]> {
  const { pull } = await pullContextOf(deps.database, viewer, at, number);
  // The page's keys from reviews_pull_live_idx (index entries only), then their rows with names.
  const keys = deps.db
    .selectFrom('reviews')
    .select('uuid')
    .where('pull_uuid', '=', pull.uuid)
    .where('removed_at', 'is', null)
    .where((eb) => eb.or([eb('status', '<>', 'pending'), eb('author_uuid', '=', viewer.uuid)]))
    .orderBy('seq')
    .orderBy('created_at')
    .orderBy('uuid')
    .offset(page.offset)
    .limit(page.limit);
  const rows = await reviewsWithNames(deps.db)
    .where('r.uuid', 'in', keys)
    .orderBy('r.seq')
    .orderBy('r.created_at')
    .orderBy('r.uuid')
    .execute();
  return rows.map(reviewToJson);
}

/** A review of this pull the viewer may see (a pending one only its author): 404 otherwise. */
async function findReview(db: Kysely<DB>, viewer: Viewer, pull: PullRow, reviewUuid: string): Promise<ReviewWithNames> {
  const row = await reviewsWithNames(db).where('r.uuid', '=', reviewUuid).where('r.pull_uuid', '=', pull.uuid).executeTakeFirst();
  if (!row || (row.status === 'pending' && row.author_uuid !== viewer.uuid)) throw notFound('Review');
  return row;
}

export async function getReview(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  reviewUuid: string,
): Promise<ReviewJson> {
  const { pull } = await requirePull(deps, viewer, ref, number);
  return reviewToJson(await findReview(deps.db, viewer, pull, reviewUuid));
}

/** Soft removal: the review stays readable with removed_at set and stops counting. Idempotent. */
export async function removeReview(deps: Deps, viewer: Viewer, ref: RepoRef, number: number, reviewUuid: string): Promise<void> {
  await command(deps, viewer, onPull(ref, number, itemWrite({ level: 'read', write: true })), async (tx) => {
    const { access, pull } = tx.access;
    const review = await findReview(tx.db, viewer, pull, reviewUuid);
    assertNotArchived(access);
    assertCanRemoveReview(viewer, access, review);
    if (review.status === 'pending') {
      // a pending review was never shown: it goes with its comments, without an event
      await tx.db.deleteFrom('review_comments').where('review_uuid', '=', review.uuid).execute();
      const deleted = await tx.db.deleteFrom('reviews').where('uuid', '=', review.uuid).executeTakeFirst();
      if (Number(deleted.numDeletedRows) > 0) await countReviews(tx.db, pull.uuid, -1);
      return;
    }
    // the pull's row is locked by the target: a concurrent merge waits, or is seen here
    if (pull.status === 'merged') throw MERGED();
    const result = await tx.db
      .updateTable('reviews')
      .set({ removed_at: nowIso() })
      .where('uuid', '=', review.uuid)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return; // already removed: nothing changes
    await countReviews(tx.db, pull.uuid, -1);
    await indexReview(tx.db, pull, review.uuid, null);
    const removed = reviewToJson(await findReview(tx.db, viewer, pull, review.uuid));
    await tx.emit({
      kind: 'review-removed',
      scopes: reviewScopes(pull, review.uuid),
      actor: actorOf(viewer),
      payload: { ...(await reviewEventPayload(deps, pull, removed)), removed_at: removed.removed_at },
    });
  });
}
