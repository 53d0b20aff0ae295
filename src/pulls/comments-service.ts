import { randomUUID } from 'node:crypto';
import {
  assertCanApplySuggestions,
  assertCanDeleteComment,
  assertCanEditComment,
  assertCanResolve,
  assertNotArchived,
  itemWrite,
  pullContextOf,
  type RepoRef,
  repoAccessLevel,
  type SourceAccess,
} from '../access/index.ts';
import type { Kysely } from 'kysely';
import type { TxContext } from '../core/command.ts';
import type { DB } from '../db/types.ts';
import { command, inTransaction } from '../core/command.ts';
import { onPull } from '../core/targets.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { git } from '../git/run.ts';
import { nowIso } from '../time.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import { findLine, hunkText, type Side, suggestionOf } from './anchors.ts';
import {
  type CommentRow,
  commentsWithNames,
  commentToJson,
  hunksByPath,
  refreshAnchors,
  type ReviewCommentJson,
  visibleComments,
} from './comments-store.ts';
import { pullRange } from './diff-range.ts';
import { isCrossRepo, sourceRepoOf, syncPullHeads } from './heads.ts';
import { emitRefMoves } from './pushes.ts';
import { applyRefMoveCi, planRefMoveCi } from '../ci/ref-moves.ts';
import type { PullRow } from './service.ts';

/**
 * Review comments (README "Code review"): comments anchored to a line or a range of a pull's diff
 * on either side, collected by a pending review until it is submitted; replies, edits, deletion,
 * resolution of conversations, and suggestions applied as one commit on the source branch.
 */

export interface CommentInput {
  path: string;
  line: number;
  side?: Side;
  start_line?: number;
  start_side?: Side;
  body: string;
}

/** A comment checked against the diff, ready to be stored. */
export interface PreparedComment {
  path: string;
  line: number;
  side: Side;
  start_line: number | null;
  start_side: Side | null;
  body: string;
  hunk: string;
  commit_sha: string;
}

export const MAX_COMMENTS = 100;

/**
 * Checks each comment against the pull's diff at its head now (400 naming the first that is not a
 * line of it): `line` (and `start_line`, in the same hunk and not after it) must be shown on its side.
 */
export async function prepareComments(
  deps: Deps,
  repoUuid: string,
  pull: PullRow,
  input: CommentInput[],
): Promise<PreparedComment[]> {
  if (input.length === 0) return [];
  if (input.length > MAX_COMMENTS) throw badRequest(`comments: at most ${MAX_COMMENTS} comments per review.`);
  const range = await pullRange(deps, repoUuid, pull);
  if (!range) throw badRequest('comments: the pull has no diff to comment on (its source branch does not exist).');
  const hunks = await hunksByPath(range);
  return input.map((c, i) => {
    const side = c.side ?? 'RIGHT';
    if (!c.body.trim()) throw badRequest(`comments[${i}].body: a comment needs a body.`);
    const fileHunks = hunks.get(c.path);
    if (!fileHunks) throw badRequest(`comments[${i}].path: "${c.path}" is not a file of the pull's diff.`);
    const end = findLine(fileHunks, side, c.line);
    if (!end) throw badRequest(`comments[${i}].line: line ${c.line} (${side}) of "${c.path}" is not in the pull's diff.`);
    let start_line: number | null = null;
    let start_side: Side | null = null;
    if (c.start_line !== undefined && !(c.start_line === c.line && (c.start_side ?? side) === side)) {
      start_side = c.start_side ?? side;
      const start = findLine(fileHunks, start_side, c.start_line);
      if (!start || start.hunk !== end.hunk || start.index > end.index) {
        throw badRequest(
          `comments[${i}].start_line: line ${c.start_line} (${start_side}) of "${c.path}" must be in the same hunk as line ` +
            `${c.line}, before it.`,
        );
      }
      start_line = c.start_line;
    } else if (c.start_side !== undefined && c.start_line === undefined) {
      throw badRequest(`comments[${i}].start_side: needs start_line.`);
    }
    return {
      path: c.path,
      line: c.line,
      side,
      start_line,
      start_side,
      body: c.body,
      hunk: hunkText(end.hunk),
      commit_sha: range.head,
    };
  });
}

/** Stores prepared comments of a review (pending or not). */
export async function insertComments(
  tx: TxContext,
  viewer: Viewer,
  pullUuid: string,
  reviewUuid: string,
  comments: PreparedComment[],
  pending: boolean,
): Promise<string[]> {
  const uuids: string[] = [];
  for (const c of comments) {
    const uuid = randomUUID();
    const now = nowIso();
    await tx.db
      .insertInto('review_comments')
      .values({
        uuid,
        pull_uuid: pullUuid,
        review_uuid: reviewUuid,
        author_uuid: viewer.uuid,
        path: c.path,
        side: c.side,
        line: c.line,
        start_line: c.start_line,
        start_side: c.start_side,
        original_line: c.line,
        original_start_line: c.start_line,
        commit_sha: c.commit_sha,
        hunk: c.hunk,
        anchored_head: c.commit_sha,
        body: c.body,
        in_reply_to: null,
        thread_uuid: uuid,
        resolved_by_uuid: null,
        pending: pending ? 1 : 0,
        created_at: now,
        updated_at: now,
      })
      .execute();
    uuids.push(uuid);
  }
  return uuids;
}

const commentScopes = (pull: { uuid: string; repo_uuid: string }) => [`repo:${pull.repo_uuid}`, `pull:${pull.uuid}`];

function commentPayload(pull: PullRow, c: ReviewCommentJson): Record<string, unknown> {
  return {
    repo_uuid: pull.repo_uuid,
    pull_uuid: pull.uuid,
    pull_number: pull.number,
    comment_uuid: c.uuid,
    review_uuid: c.review_uuid,
    in_reply_to: c.in_reply_to,
    path: c.path,
    line: c.line,
    side: c.side,
    start_line: c.start_line,
    start_side: c.start_side,
    commit_sha: c.commit_sha,
    body: c.body,
    author_username: c.author.username,
  };
}

async function loadComment(tx: { db: TxContext['db'] }, uuid: string): Promise<ReviewCommentJson> {
  return commentToJson(await commentsWithNames(tx.db).where('c.uuid', '=', uuid).executeTakeFirstOrThrow());
}

/** `review-comment-created` for comments that became visible (a submitted review's, a reply). */
export async function emitCommentsCreated(tx: TxContext, viewer: Viewer, pull: PullRow, uuids: string[]): Promise<void> {
  for (const uuid of uuids) {
    const c = await loadComment(tx, uuid);
    await tx.emit({
      kind: 'review-comment-created',
      scopes: commentScopes(pull),
      actor: actorOf(viewer),
      payload: commentPayload(pull, c),
    });
  }
}

/** A comment of this pull the viewer may see (a pending one only its author): 404 otherwise. */
async function findComment(db: TxContext['db'], viewer: Viewer, pull: PullRow, uuid: string): Promise<CommentRow> {
  const row = await db
    .selectFrom('review_comments')
    .selectAll()
    .where('uuid', '=', uuid)
    .where('pull_uuid', '=', pull.uuid)
    .executeTakeFirst();
  if (!row || (row.pending === 1 && row.author_uuid !== viewer.uuid)) throw notFound('Comment');
  return row;
}

/** GET {repo}/pulls/{n}/comments: the comments the viewer sees, at their places on the current diff. */
export async function listComments(
  deps: Deps,
  viewer: Viewer,
  at: RepoAt,
  number: number,
  page: { offset: number; limit: number },
  /** bring their places to the current head first (the API and the Files tab; the Conversation tab shows them as stored) */
  refresh = true,
  /** only the comments on these files (a screen of the Files tab) */
  paths?: string[],
): Promise<ReviewCommentJson[]> {
  const { repo, pull } = await pullContextOf(deps.database, viewer, at, number);
  if (refresh) await refreshAnchors(deps, pull.uuid, await pullRange(deps, repo.uuid, pull));
  const all = await visibleComments(deps.db, pull.uuid, viewer.uuid, paths);
  return all.slice(page.offset, page.offset + page.limit);
}

const WRITE = { level: 'read', write: true } as const;

/** POST .../comments/{uuid}/replies: a reply joins the conversation of the comment (its first comment's place). */
export async function replyToComment(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  uuid: string,
  body: string,
): Promise<ReviewCommentJson> {
  return command(deps, viewer, onPull(ref, number, itemWrite(WRITE)), async (tx) => {
    const { pull } = tx.access;
    const target = await findComment(tx.db, viewer, pull, uuid);
    assertNotArchived(tx.access.access);
    if (!body.trim()) throw badRequest('body: a reply needs a body.');
    const first = await tx.db
      .selectFrom('review_comments')
      .selectAll()
      .where('uuid', '=', target.thread_uuid)
      .executeTakeFirstOrThrow();
    if (first.pending === 1) throw badRequest('The comment belongs to a pending review: submit the review before replying.');
    const reply = randomUUID();
    const now = nowIso();
    await tx.db
      .insertInto('review_comments')
      .values({
        ...first,
        uuid: reply,
        review_uuid: null,
        author_uuid: viewer.uuid,
        body,
        in_reply_to: first.uuid,
        resolved: 0,
        resolved_by_uuid: null,
        pending: 0,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await emitCommentsCreated(tx, viewer, pull, [reply]);
    return loadComment(tx, reply);
  });
}

/** PATCH .../comments/{uuid}: its author changes the body. */
export async function editComment(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  uuid: string,
  body: string,
): Promise<ReviewCommentJson> {
  return command(deps, viewer, onPull(ref, number, itemWrite(WRITE)), async (tx) => {
    const { pull } = tx.access;
    const row = await findComment(tx.db, viewer, pull, uuid);
    assertNotArchived(tx.access.access);
    assertCanEditComment(viewer, row);
    if (!body.trim()) throw badRequest('body: a comment needs a body.');
    if (body === row.body) return loadComment(tx, uuid);
    await tx.db.updateTable('review_comments').set({ body, updated_at: nowIso() }).where('uuid', '=', uuid).execute();
    const c = await loadComment(tx, uuid);
    if (!c.pending) {
      await tx.emit({
        kind: 'review-comment-edited',
        scopes: commentScopes(pull),
        actor: actorOf(viewer),
        payload: commentPayload(pull, c),
      });
    }
    return c;
  });
}

/** DELETE .../comments/{uuid}: its author or maintain level; a first comment takes its replies with it. */
export async function deleteComment(deps: Deps, viewer: Viewer, ref: RepoRef, number: number, uuid: string): Promise<void> {
  await command(deps, viewer, onPull(ref, number, itemWrite(WRITE)), async (tx) => {
    const { pull } = tx.access;
    const row = await findComment(tx.db, viewer, pull, uuid);
    assertNotArchived(tx.access.access);
    assertCanDeleteComment(viewer, tx.access.access, row);
    const gone =
      row.in_reply_to === null
        ? await tx.db
            .selectFrom('review_comments')
            .select(['uuid', 'pending'])
            .where('thread_uuid', '=', row.uuid)
            .orderBy('created_at', 'desc')
            .execute()
        : [{ uuid: row.uuid, pending: row.pending }];
    for (const g of gone) {
      const c = g.pending === 1 ? null : await loadComment(tx, g.uuid);
      await tx.db.deleteFrom('review_comments').where('uuid', '=', g.uuid).execute();
      if (c) {
        await tx.emit({
          kind: 'review-comment-deleted',
          scopes: commentScopes(pull),
          actor: actorOf(viewer),
          payload: {
            repo_uuid: pull.repo_uuid,
            pull_uuid: pull.uuid,
            pull_number: pull.number,
            comment_uuid: c.uuid,
            review_uuid: c.review_uuid,
            in_reply_to: c.in_reply_to,
            path: c.path,
            author_username: c.author.username,
          },
        });
      }
    }
  });
}

/** PUT/DELETE .../comments/{uuid}/resolution: the conversation's state, carried by its first comment. */
export async function setResolution(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  uuid: string,
  resolved: boolean,
): Promise<ReviewCommentJson> {
  return command(deps, viewer, onPull(ref, number, itemWrite(WRITE)), async (tx) => {
    const { pull } = tx.access;
    const row = await findComment(tx.db, viewer, pull, uuid);
    assertNotArchived(tx.access.access);
    const first = await tx.db
      .selectFrom('review_comments')
      .selectAll()
      .where('uuid', '=', row.thread_uuid)
      .executeTakeFirstOrThrow();
    assertCanResolve(viewer, tx.access.access, pull, first);
    if (first.pending === 1) throw badRequest('The comment belongs to a pending review: submit the review first.');
    if ((first.resolved === 1) === resolved) return loadComment(tx, first.uuid);
    await tx.db
      .updateTable('review_comments')
      .set({ resolved: resolved ? 1 : 0, resolved_by_uuid: resolved ? viewer.uuid : null })
      .where('uuid', '=', first.uuid)
      .execute();
    const c = await loadComment(tx, first.uuid);
    await tx.emit({
      kind: resolved ? 'conversation-resolved' : 'conversation-unresolved',
      scopes: commentScopes(pull),
      actor: actorOf(viewer),
      payload: {
        repo_uuid: pull.repo_uuid,
        pull_uuid: pull.uuid,
        pull_number: pull.number,
        comment_uuid: c.uuid,
        path: c.path,
        line: c.line,
        side: c.side,
      },
    });
    return c;
  });
}

const outdated = () =>
  conflict('suggestion_outdated', 'The lines a suggestion replaces changed since it was made: it can no longer be applied.');

export interface AppliedJson {
  commit_sha: string;
  branch: string;
  comment_uuids: string[];
}

/**
 * POST .../suggestions/apply: one commit on the source branch applying the suggestions of these
 * comments, made without a work tree (src/git: a temporary index) and recorded as a push of the
 * branch (`branch-pushed`, `pull-updated`). Write access to the source branch: to this repo, or for
 * a pull from a fork to the fork, where the commit is made (`sourceAccess`). A comment whose lines
 * changed since is 409 suggestion_outdated, and so is a branch that moved while the commit was made.
 */
export async function applySuggestions(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  commentUuids: string[],
): Promise<AppliedJson> {
  const uuids = [...new Set(commentUuids)];
  const checked = await command(deps, viewer, onPull(ref, number, itemWrite({ level: 'read', write: true })), async (tx) => {
    const { pull, access } = tx.access;
    const rows: CommentRow[] = [];
    for (const uuid of uuids) rows.push(await findComment(tx.db, viewer, pull, uuid));
    assertNotArchived(access);
    const source = await sourceAccess(tx.db, viewer, pull);
    if (source === 'gone') throw conflict('source_branch_missing', "The pull's source repo no longer exists.");
    assertCanApplySuggestions(access, source);
    if (pull.status === 'merged') throw conflict('pull_merged', 'The pull is merged.');
    if (pull.status === 'closed') throw conflict('pull_closed', 'The pull is closed: reopen it before applying suggestions.');
    return { pull, repo: access.repo, rows };
  });
  const { pull, repo } = checked;
  // the branch's repo: this one, or the fork the pull comes from (its objects hold the head too)
  const branchRepo = sourceRepoOf(pull);
  for (const r of checked.rows) {
    if (r.pending === 1) throw badRequest(`The comment ${r.uuid} belongs to a pending review.`);
    if (suggestionOf(r.body) === null) throw badRequest(`The comment ${r.uuid} has no suggestion.`);
    if (r.side !== 'RIGHT' || (r.start_side ?? 'RIGHT') !== 'RIGHT')
      throw badRequest(`The comment ${r.uuid} is not on the RIGHT side.`);
  }
  const range = await pullRange(deps, repo.uuid, pull);
  if (!range) throw outdated();
  await refreshAnchors(deps, pull.uuid, range);
  const rows = await deps.db.selectFrom('review_comments').selectAll().where('uuid', 'in', uuids).execute();
  const byPath = new Map<string, CommentRow[]>();
  for (const r of rows) {
    if (r.position_outdated === 1) throw outdated();
    byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
  }
  const files: Array<{ path: string; content: string }> = [];
  const dir = range.dir;
  for (const [path, list] of byPath) {
    const now = await git(dir, ['cat-file', 'blob', `${range.head}:${path}`], { okCodes: [128] });
    if (now.code !== 0) throw outdated();
    const lines = now.stdout.split('\n');
    const finalNewline = lines.length > 0 && lines[lines.length - 1] === '';
    if (finalNewline) lines.pop();
    // bottom first, so earlier replacements keep the later line numbers right
    list.sort((a, b) => b.line - a.line);
    let floor = Infinity;
    for (const c of list) {
      const first = c.start_line ?? c.line;
      if (c.line >= floor) throw badRequest('Two of the suggestions replace the same lines: apply them one at a time.');
      floor = first;
      const was = await git(dir, ['cat-file', 'blob', `${c.commit_sha}:${path}`], { okCodes: [128] });
      if (was.code !== 0) throw outdated();
      const wasLines = was.stdout.split('\n');
      const origFirst = c.original_start_line ?? c.original_line;
      const expected = wasLines.slice(origFirst - 1, c.original_line);
      const current = lines.slice(first - 1, c.line);
      if (expected.length !== current.length || expected.some((l, i) => l !== current[i])) throw outdated();
      lines.splice(first - 1, c.line - first + 1, ...suggestionOf(c.body)!);
    }
    files.push({ path, content: lines.join('\n') + (finalNewline ? '\n' : '') });
  }
  const people = await deps.db
    .selectFrom('users')
    .select(['uuid', 'username', 'display_name', 'email'])
    .where('uuid', 'in', [viewer.uuid, ...rows.map((r) => r.author_uuid)])
    .execute();
  const person = (uuid: string) => {
    const u = people.find((p) => p.uuid === uuid);
    return { name: u?.display_name || u?.username || 'weft', email: u?.email || 'weft@localhost' };
  };
  const coAuthors = [...new Set(rows.map((r) => r.author_uuid).filter((u) => u !== viewer.uuid))].map((u) => {
    const p = person(u);
    return `Co-authored-by: ${p.name} <${p.email}>`;
  });
  const title = rows.length === 1 ? 'Apply suggestion from code review' : 'Apply suggestions from code review';
  const message = `${title}\n${coAuthors.length ? `\n${coAuthors.join('\n')}\n` : ''}`;
  const outcome = await deps.git.commitFiles({
    repoUuid: branchRepo,
    branch: pull.source_branch,
    expected: range.head,
    files,
    message,
    author: person(viewer.uuid),
    committer: person(viewer.uuid),
  });
  if ('moved' in outcome) throw outdated();
  // the branch moved as by a push: its `on.push` workflows run (and its pulls' `synchronize`)
  const move = { ref: `refs/heads/${pull.source_branch}`, before: range.head, after: outcome.sha, forced: false };
  const actor = { uuid: viewer.uuid, username: viewer.username };
  const ci = await planRefMoveCi(deps, branchRepo, [move], actor);
  const moved = await inTransaction(deps, async (tx) => {
    const heads = await emitRefMoves(deps, tx, branchRepo, [move], actor);
    await applyRefMoveCi(deps, tx, branchRepo, ci);
    return heads;
  });
  await syncPullHeads(deps, moved);
  return { commit_sha: outcome.sha, branch: pull.source_branch, comment_uuids: uuids };
}

/**
 * The viewer's access to a pull's source repo when it is another repo than the pull's (a fork):
 * null for a pull inside one repo, 'gone' once that repo is deleted.
 */
export async function sourceAccess(
  db: Kysely<DB>,
  viewer: Viewer,
  pull: Pick<PullRow, 'repo_uuid' | 'source_repo_uuid'>,
): Promise<SourceAccess | null | 'gone'> {
  if (!isCrossRepo(pull)) return null;
  const row = await db.selectFrom('repos').selectAll().where('uuid', '=', sourceRepoOf(pull)).executeTakeFirst();
  if (!row) return 'gone';
  return { level: await repoAccessLevel(db, viewer, row), archived: row.is_archived === 1 };
}
