import type { Kysely, Selectable } from 'kysely';
import type { DB } from '../db/types.ts';
import type { ReviewCommentsTable } from '../db/tables/reviews.ts';
import type { Deps } from '../deps.ts';
import { diffTrees } from '../git/diff.ts';
import { type Hunk, hunkShift, parseHunks, type Side, sameHunk, storedHunk } from './anchors.ts';
import type { PullRange } from './diff-range.ts';

/**
 * Review comments as stored and shown (README "Code review"): their JSON, the conversations a
 * merge waits for, and their places on the pull's current diff (`refreshAnchors`).
 */

export type CommentRow = Selectable<ReviewCommentsTable>;
/** The columns a comment's JSON shows (not its stored hunk, kilobytes a comment, read only to move it). */
const SHOWN = [
  'c.uuid',
  'c.review_uuid',
  'c.path',
  'c.line',
  'c.side',
  'c.start_line',
  'c.start_side',
  'c.commit_sha',
  'c.original_line',
  'c.original_start_line',
  'c.position_outdated',
  'c.body',
  'c.author_uuid',
  'c.created_at',
  'c.updated_at',
  'c.in_reply_to',
  'c.resolved',
  'c.resolved_by_uuid',
  'c.pending',
] as const;
type Shown = Pick<CommentRow, (typeof SHOWN)[number] extends `c.${infer K}` ? K & keyof CommentRow : never>;
type Named = Shown & { author_username: string; resolved_by_username: string | null };

export interface ReviewCommentJson {
  uuid: string;
  review_uuid: string | null;
  path: string;
  line: number;
  side: Side;
  start_line: number | null;
  start_side: Side | null;
  commit_sha: string;
  original_line: number;
  original_start_line: number | null;
  position_outdated: boolean;
  body: string;
  author: { uuid: string; username: string };
  created_at: string;
  updated_at: string;
  in_reply_to: string | null;
  resolved: boolean;
  resolved_by: { uuid: string; username: string } | null;
  pending: boolean;
}

export function commentsWithNames(db: Kysely<DB>) {
  return db
    .selectFrom('review_comments as c')
    .innerJoin('users as a', 'a.uuid', 'c.author_uuid')
    .leftJoin('users as rb', 'rb.uuid', 'c.resolved_by_uuid')
    .select(SHOWN)
    .select(['a.username as author_username', 'rb.username as resolved_by_username']);
}

export function commentToJson(row: Named): ReviewCommentJson {
  return {
    uuid: row.uuid,
    review_uuid: row.review_uuid,
    path: row.path,
    line: row.line,
    side: row.side as Side,
    start_line: row.start_line,
    start_side: row.start_side as Side | null,
    commit_sha: row.commit_sha,
    original_line: row.original_line,
    original_start_line: row.original_start_line,
    position_outdated: row.position_outdated === 1,
    body: row.body,
    author: { uuid: row.author_uuid, username: row.author_username },
    created_at: row.created_at,
    updated_at: row.updated_at,
    in_reply_to: row.in_reply_to,
    resolved: row.resolved === 1,
    resolved_by: row.resolved_by_uuid ? { uuid: row.resolved_by_uuid, username: row.resolved_by_username ?? '' } : null,
    pending: row.pending === 1,
  };
}

/**
 * The comments of a pull a viewer sees (pending ones only to their author), by path, line, then
 * time; with `paths`, only those on these files (a screen of the Files tab).
 */
export async function visibleComments(
  db: Kysely<DB>,
  pullUuid: string,
  viewerUuid: string | null,
  paths?: string[],
): Promise<ReviewCommentJson[]> {
  if (paths && paths.length === 0) return [];
  const rows = await commentsWithNames(db)
    .where('c.pull_uuid', '=', pullUuid)
    .$if(paths !== undefined, (qb) => qb.where('c.path', 'in', paths!))
    .where((eb) =>
      viewerUuid ? eb.or([eb('c.pending', '=', 0), eb('c.author_uuid', '=', viewerUuid)]) : eb('c.pending', '=', 0),
    )
    .orderBy('c.path')
    .orderBy('c.line')
    .orderBy('c.created_at')
    .orderBy('c.uuid')
    .execute();
  return rows.map(commentToJson);
}

/** How many comments a review holds (a pending review's, for its Submit button). */
export async function reviewCommentCount(db: Kysely<DB>, reviewUuid: string): Promise<number> {
  const row = await db
    .selectFrom('review_comments')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('review_uuid', '=', reviewUuid)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** How many submitted conversations of a pull are not resolved (what `require_conversation_resolution` waits for). */
export async function unresolvedConversations(db: Kysely<DB>, pullUuid: string): Promise<number> {
  const row = await db
    .selectFrom('review_comments')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('pull_uuid', '=', pullUuid)
    .where('in_reply_to', 'is', null)
    .where('pending', '=', 0)
    .where('resolved', '=', 0)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** The hunks of each file of a diff, by path. */
export async function hunksByPath(range: PullRange): Promise<Map<string, Hunk[]>> {
  const diff = await diffTrees(range.readers.limits, range.dir, range.from, range.head, { pool: range.readers });
  return new Map(diff.files.map((f) => [f.path, parseHunks(f.patch)]));
}

/**
 * Brings the comments of a pull to its current head: a comment whose hunk is still in the diff,
 * unchanged, moves with it (`line`, `start_line`); one whose hunk changed (a later push, a force
 * push, a new merge base) is `position_outdated` for good and keeps its last place. One statement
 * when nothing moved; the diff is read only when some comment was made on another head.
 */
export async function refreshAnchors(deps: Deps, pullUuid: string, range: PullRange | null): Promise<void> {
  if (!range) return;
  const stale = await deps.db
    .selectFrom('review_comments')
    .select(['uuid', 'path', 'side', 'start_side', 'original_line', 'original_start_line', 'hunk'])
    .where('pull_uuid', '=', pullUuid)
    .where('position_outdated', '=', 0)
    .where('anchored_head', '<>', range.head)
    .execute();
  if (stale.length === 0) return;
  const hunks = await hunksByPath(range);
  for (const c of stale) {
    const was = storedHunk(c.hunk);
    const now = was ? sameHunk(hunks.get(c.path) ?? [], was.body) : null;
    if (!was || !now) {
      await deps.db
        .updateTable('review_comments')
        .set({ position_outdated: 1, anchored_head: range.head })
        .where('uuid', '=', c.uuid)
        .execute();
      continue;
    }
    const shift = hunkShift(was, now);
    await deps.db
      .updateTable('review_comments')
      .set({
        line: c.original_line + shift[c.side as Side],
        start_line: c.original_start_line === null ? null : c.original_start_line + shift[(c.start_side ?? c.side) as Side],
        anchored_head: range.head,
      })
      .where('uuid', '=', c.uuid)
      .execute();
  }
}
