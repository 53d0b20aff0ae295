import { randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import { type Expression, type Kysely, type Selectable, sql, type SqlBool } from 'kysely';
import {
  assertCanChangeState,
  assertCanEditPost,
  assertCanTickTask,
  assertCanTriage,
  assertMayReply,
  assertRepoNeed,
  DISCUSS,
  type RepoAccess,
  type RepoRef,
  repoContextOf,
  requireRepo,
  type RepoRow,
} from '../access/index.ts';
import { timelinePage } from '../tracker/timeline.ts';
import { recordReferences, type ReferenceSource } from '../references/service.ts';
import { linkReferences } from '../references/render.ts';
import {
  assigneeFilter,
  changeItemSet,
  type Decorations,
  decorations,
  emitItemChanges,
  filterUserUuid,
  type ItemChanges,
  labelFilters,
  type ListFilter,
  drivenRows,
  drivingSet,
  inDrivingSet,
  setIntersection,
  walkBounds,
  milestoneFilter,
  type MilestoneRef,
  milestoneRefs,
  replaceItemTracking,
} from '../tracker/items.ts';
import { indexTerms, listCursor, readListCursor, textFilters } from '../tracker/lists.ts';
import type { DB } from '../db/types.ts';
import type { RepliesTable, ThreadsTable } from '../db/tables/threads.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import { actorOf, type EventKind } from '../events/service.ts';
import { command, type TxContext } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
import { boundedMarkdown } from '../markdown/bounded.ts';
import { nextRepoNumber } from '../repos/numbers.ts';
import { repoScopes } from '../repos/view.ts';
import { nowIso } from '../time.ts';
import { readSettings } from '../settings/service.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import {
  type CreateReplyInput,
  type CreateThreadInput,
  type ParticipantJson,
  type ReplyJson,
  type ReplyVersionJson,
  type ThreadJson,
  type UpdateReplyInput,
  type UpdateThreadInput,
  Link as LinkSchema,
  TITLE_MAX,
} from './schemas.ts';

export type ThreadRow = Selectable<ThreadsTable>;
export type ReplyRow = Selectable<RepliesTable>;
type Link = Static<typeof LinkSchema>;
type PageArgs = { offset: number; limit: number };

const markdown = { render: (text: string) => boundedMarkdown().render(text) };
const READ = { level: 'read' } as const;

export const readOnly = (what: string) => conflict('target_read_only', `The ${what} is removed and read-only.`);

function cleanTitle(raw: string): string {
  const title = raw.trim();
  if (!title) throw badRequest('title must not be blank.');
  if (title.length > TITLE_MAX) throw badRequest(`title must be at most ${TITLE_MAX} characters.`);
  return title;
}

function cleanReplyBody(raw: string): string {
  if (!raw.trim()) throw badRequest('body must not be blank.');
  return raw;
}

// ---------------------------------------------------------------- threads

/** Items with their references linked for the reader (references/render.ts). */
async function linked<T extends { body_html: string }>(db: Kysely<DB>, viewer: Viewer, repo: RepoRow, items: T[]): Promise<T[]> {
  const htmls = await linkReferences(
    db,
    viewer,
    repo,
    items.map((i) => i.body_html),
  );
  return items.map((item, i) => (htmls[i] === item.body_html ? item : { ...item, body_html: htmls[i]! }));
}

type ThreadWithNames = ThreadRow & {
  author_username: string;
  reply_count: number | string;
  closed_by_username: string | null;
};

function threadsWithNames(db: Kysely<DB>) {
  return db
    .selectFrom('threads as t')
    .innerJoin('users as a', 'a.uuid', 't.author_uuid')
    .leftJoin('users as c', 'c.uuid', 't.closed_by_uuid')
    .selectAll('t')
    .select(['a.username as author_username', 'c.username as closed_by_username']);
}

function threadToJson(row: ThreadWithNames, deco: Decorations, milestone: MilestoneRef | null): ThreadJson {
  return {
    uuid: row.uuid,
    repo_uuid: row.repo_uuid,
    number: row.number,
    title: row.title,
    body: row.body,
    body_html: markdown.render(row.body),
    author_uuid: row.author_uuid,
    author_username: row.author_username,
    reply_count: Number(row.reply_count ?? 0),
    state: row.state as ThreadJson['state'],
    state_reason: (row.state_reason ?? null) as ThreadJson['state_reason'],
    closed_at: row.closed_at,
    closed_by:
      row.state === 'closed' && row.closed_by_username !== null
        ? {
            username: row.closed_by_username,
            pull_number: row.closed_by_pull_number ?? null,
            commit_sha: row.closed_by_commit_sha ?? null,
          }
        : null,
    labels: deco.labels,
    assignees: deco.assignees,
    milestone,
    locked: row.locked === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    removed_at: row.removed_at,
  };
}

/** Rows as JSON, with their labels, assignees and milestones read in two more statements. */
async function threadsToJson(db: Kysely<DB>, rows: ThreadWithNames[]): Promise<ThreadJson[]> {
  const [deco, milestones] = await Promise.all([
    decorations(
      db,
      rows.map((r) => r.uuid),
    ),
    milestoneRefs(
      db,
      rows.map((r) => r.milestone_uuid),
    ),
  ]);
  return rows.map((r) =>
    threadToJson(r, deco.get(r.uuid)!, r.milestone_uuid === null ? null : (milestones.get(r.milestone_uuid) ?? null)),
  );
}

export async function loadThreadJson(db: Kysely<DB>, uuid: string): Promise<ThreadJson> {
  const row = (await threadsWithNames(db).where('t.uuid', '=', uuid).executeTakeFirstOrThrow()) as ThreadWithNames;
  return (await threadsToJson(db, [row]))[0]!;
}

export const threadScopes = (thread: ThreadRow, access: RepoAccess) => [...repoScopes(access.repo), `thread:${thread.uuid}`];

/** The thread with this number in the repo (removed ones included); 404 when there is none. */
export async function findThread(db: Kysely<DB>, repoUuid: string, number: number): Promise<ThreadRow> {
  const row = await db
    .selectFrom('threads')
    .selectAll()
    .where('repo_uuid', '=', repoUuid)
    .where('number', '=', number)
    .executeTakeFirst();
  if (!row) throw notFound('Thread');
  return row;
}

export function threadPayload(thread: Pick<ThreadJson, 'repo_uuid' | 'uuid' | 'number' | 'title'>): Record<string, unknown> {
  return { repo_uuid: thread.repo_uuid, thread_uuid: thread.uuid, number: thread.number, title: thread.title };
}

async function emitThread(tx: TxContext, viewer: Viewer, access: RepoAccess, thread: ThreadJson, kind: EventKind, extra = {}) {
  await tx.emit({
    kind,
    scopes: [...repoScopes(access.repo), `thread:${thread.uuid}`],
    actor: actorOf(viewer),
    payload: { ...threadPayload(thread), ...extra },
  });
}

/** Labels, assignees and milestone set on a thread (creation, PATCH), with the events of what changed. */
async function setTracking(
  tx: TxContext,
  viewer: Viewer,
  access: RepoAccess,
  thread: ThreadRow,
  input: { labels?: string[]; assignees?: string[]; milestone?: number | null },
): Promise<ItemChanges> {
  return replaceItemTracking(tx.db, 'threads', access.repo, thread, input);
}

const changedAny = (c: ItemChanges) =>
  Boolean(
    c.labeled?.length || c.unlabeled?.length || c.assigned?.length || c.unassigned?.length || c.milestoned || c.demilestoned,
  );

/** A thread as the source of the references in its text (references/service.ts). */
const threadSource = (access: RepoAccess, t: Pick<ThreadRow, 'uuid' | 'number' | 'title'>): ReferenceSource => ({
  kind: 'thread',
  key: t.uuid,
  repo: access.repo,
  number: t.number,
  title: t.title,
  selfUuid: t.uuid,
});

export async function createThread(deps: Deps, viewer: Viewer, ref: RepoRef, input: CreateThreadInput): Promise<ThreadJson> {
  const title = cleanTitle(input.title);
  return command(deps, viewer, onRepo(ref, DISCUSS), async (tx) => {
    const access = tx.access;
    const tracking = input.labels !== undefined || input.assignees !== undefined || input.milestone !== undefined;
    if (tracking) assertCanTriage(access);
    const number = await nextRepoNumber(tx.db, access.repo.uuid, 'thread_seq');
    const now = nowIso();
    const uuid = randomUUID();
    const row = {
      uuid,
      repo_uuid: access.repo.uuid,
      number,
      title,
      body: input.body ?? '',
      author_uuid: viewer.uuid,
      reply_seq: 0,
      created_at: now,
      updated_at: now,
      removed_at: null,
    };
    await tx.db.insertInto('threads').values(row).execute();
    await indexTerms(tx.db, 'threads', access.repo.uuid, uuid, uuid, `${row.title}\n${row.body}`);
    const changes = tracking
      ? await setTracking(tx, viewer, access, { ...row, ...NEW_THREAD_TRACKING }, input)
      : ({} as ItemChanges);
    const thread = await loadThreadJson(tx.db, uuid);
    await emitThread(tx, viewer, access, thread, 'thread-created');
    await recordReferences(tx, viewer, threadSource(access, row), `${row.title}\n${row.body}`);
    await emitItemChanges(tx, viewer, 'thread', threadScopes(row as ThreadRow, access), threadPayload(thread), changes);
    return thread;
  });
}

const NEW_THREAD_TRACKING = {
  state: 'open',
  state_reason: null,
  closed_at: null,
  closed_by_uuid: null,
  closed_by_pull_number: null,
  closed_by_commit_sha: null,
  locked: 0,
  milestone_uuid: null,
  reply_count: 0,
};

/** A keyset cursor of the thread list: the last row's sort value and number (README "Issue tracker"). */
export function threadCursor(thread: ThreadJson, sort: ThreadFilters['sort']): string {
  return listCursor(
    sort === 'replies' ? thread.reply_count : sort === 'updated' ? thread.updated_at : thread.created_at,
    thread.number,
  );
}

/** The list filters of GET {repo}/threads (README "Issue tracker"), already checked by the route schema. */
export interface ThreadFilters {
  /** a keyset cursor (`next` of the previous page) */
  after?: string;
  state?: 'open' | 'closed' | 'all';
  labels?: string;
  assignee?: string;
  milestone?: string;
  author?: string;
  mentioned?: string;
  q?: string;
  sort?: 'created' | 'updated' | 'replies';
  direction?: 'asc' | 'desc';
}

/**
 * The thread keys of a repo that pass the list filters, in no order (`state` as given), or null
 * when a filter's own set is empty. When one filter's set is small (a label, an assignee, a word or
 * a mention held by at most DRIVING_SET_MAX items) the keys are those items' (read by primary key,
 * so a filter that matches nothing costs nothing); otherwise each filter is an existence check on
 * its index, made on the rows of the sort index in order, and `walking` names the filters whose
 * sets are large (the page reads a bounded walk first: listThreads). `drive`: the items to drive
 * from, instead of drivingSet's.
 */
async function filteredThreadKeys(
  db: Kysely<DB>,
  repo: RepoRow,
  filters: ThreadFilters,
  state: 'open' | 'closed' | 'all',
  use: 'page' | 'count',
  drive?: string[],
) {
  const conds: Array<Expression<SqlBool>> = [];
  const checks: ListFilter[] = [];
  if (filters.labels !== undefined) checks.push(...(await labelFilters(db, repo, 't', filters.labels)));
  if (filters.assignee !== undefined) checks.push(await assigneeFilter(db, 't', filters.assignee));
  if (filters.milestone !== undefined) conds.push(await milestoneFilter(db, repo.uuid, 't', filters.milestone));
  if (filters.author !== undefined)
    conds.push(sql<SqlBool>`t.author_uuid = ${await filterUserUuid(db, 'author', filters.author)}`);
  // words and mentions: the thread_terms key (repo, term, thread) gives the threads that have them
  checks.push(...(await textFilters(db, 'threads', repo.uuid, filters)));
  const driving = drive ?? (await drivingSet(db, checks));
  if (driving?.length === 0) return null;
  // driven on PostgreSQL: the set's rows by primary key (tracker/items.ts drivenRows)
  const driven = driving && drivenRows(db, 'threads', driving);
  const all = db.selectFrom('threads as t');
  let keys = (driven ? (db.selectFrom(driven.as('t')) as unknown as typeof all) : all)
    .select('t.uuid')
    .where('t.repo_uuid', '=', repo.uuid)
    .where('t.removed_at', 'is', null);
  if (state !== 'all') keys = keys.where('t.state', '=', state);
  for (const cond of conds) keys = keys.where(cond);
  // a page checks its candidate rows one by one, in order (ListFilter.check); a count reads every match
  for (const check of checks) keys = keys.where(use === 'page' ? check.check : check.where);
  // walking with sets each over the driving threshold: the page is read by a bounded walk first
  const walking = driving ? [] : checks.filter((c) => c.set);
  return { keys: driving && !driven ? keys.where(inDrivingSet(db, 't.uuid', driving)) : keys, walking, conds };
}

type ThreadKeys = NonNullable<Awaited<ReturnType<typeof filteredThreadKeys>>>['keys'];

/** How many threads pass the filters, open and closed (the Issues tab's counts). */
export async function countThreads(
  deps: Deps,
  viewer: Viewer,
  ref: RepoAt,
  filters: ThreadFilters,
): Promise<{ open: number; closed: number }> {
  const { repo } = await repoContextOf(deps.database, viewer, ref);
  const filtered = await filteredThreadKeys(deps.db, repo, filters, 'all', 'count');
  if (!filtered) return { open: 0, closed: 0 };
  const rows = await filtered.keys
    .clearSelect()
    .select(['t.state', (eb) => eb.fn.countAll().as('n')])
    .groupBy('t.state')
    .execute();
  const count = (state: string) => Number(rows.find((r) => r.state === state)?.n ?? 0);
  return { open: count('open'), closed: count('closed') };
}

/**
 * The page's keys with the filters applied, in the list's order, from one of the list indexes of
 * migration 310 (repo, state, sort key, number), then their rows: a deep page skips index entries
 * only. Labels and assignees are existence checks on their primary keys. A walk with large sets is
 * bounded (tracker/items.ts WALK_PAGES): a page not found within it is read from the sets'
 * intersection when that holds at most WALK_FALLBACK_MAX items, else by walking on.
 */
export async function listThreads(
  deps: Deps,
  viewer: Viewer,
  repoAt: RepoAt,
  page: PageArgs,
  filters?: ThreadFilters,
): Promise<ThreadJson[]> {
  const { repo } = await repoContextOf(deps.database, viewer, repoAt);
  const db = deps.db;
  if (!filters) {
    // the legacy order (web pages): every thread not removed, by number
    const keys = db
      .selectFrom('threads')
      .select('uuid')
      .where('repo_uuid', '=', repo.uuid)
      .where('removed_at', 'is', null)
      .orderBy('number')
      .offset(page.offset)
      .limit(page.limit);
    const rows = await threadsWithNames(db).where('t.uuid', 'in', keys).orderBy('t.number').execute();
    return linked(db, viewer, repo, await threadsToJson(db, rows as ThreadWithNames[]));
  }
  const state = filters.state ?? 'open';
  const filtered = await filteredThreadKeys(db, repo, filters, state, 'page');
  if (!filtered) return [];
  const dir = filters.direction ?? 'desc';
  const sort = filters.sort ?? 'created';
  const sortKey = sql.ref(sort === 'replies' ? 't.reply_count' : sort === 'updated' ? 't.updated_at' : 't.created_at');
  const cmp = dir === 'desc' ? '<' : '>';
  // keyset paging: the rows after the cursor's (sort value, number) in the list's order
  const cursor = filters.after !== undefined ? readListCursor(filters.after, sort === 'replies') : null;
  const inOrder = (q: ThreadKeys) => {
    let ordered = q.orderBy(sortKey, dir);
    // as a row value, which both databases read as one range of the sort index (an OR of the two
    // comparisons is read from the index's start on PostgreSQL: O(depth))
    if (cursor) ordered = ordered.where(sql<SqlBool>`(${sortKey}, t.number) ${sql.raw(cmp)} (${cursor[0]}, ${cursor[1]})`);
    return ordered.orderBy('t.number', dir).offset(page.offset).limit(page.limit);
  };
  let pageKeys: Array<{ uuid: string }> | null = null;
  if (filtered.walking.length > 0) {
    // a bounded walk (tracker/items.ts WALK_PAGES): the key of the row that many pages on, among
    // those of the state, author and milestone asked for (read from their index: the state's sort
    // index, or the author's), fences the walk; a page found before it is the page
    const bounds = walkBounds();
    let entries = db
      .selectFrom('threads as t')
      .select([sortKey.as('v'), 't.number'])
      .where('t.repo_uuid', '=', repo.uuid);
    if (state !== 'all') entries = entries.where('t.state', '=', state);
    for (const cond of filtered.conds) entries = entries.where(cond);
    let fenceQuery = entries.orderBy(sortKey, dir);
    if (cursor) fenceQuery = fenceQuery.where(sql<SqlBool>`(${sortKey}, t.number) ${sql.raw(cmp)} (${cursor[0]}, ${cursor[1]})`);
    const fence = await fenceQuery
      .orderBy('t.number', dir)
      .offset(page.offset + page.limit * bounds.pages - 1)
      .limit(1)
      .executeTakeFirst();
    if (!fence)
      pageKeys = await inOrder(filtered.keys).execute(); // the rest of the list is within the bound
    else {
      const within = sql<SqlBool>`(${sortKey}, t.number) ${sql.raw(dir === 'desc' ? '>=' : '<=')} (${fence.v}, ${fence.number})`;
      const found = await inOrder(filtered.keys.where(within)).execute();
      if (found.length === page.limit) pageKeys = found;
      else {
        // rarer there than the sets said: their intersection drives the list when it is at most
        // WALK_FALLBACK_MAX items, else the walk goes on to the end
        const both = await setIntersection(db, filtered.walking, bounds.fallback);
        if (both?.length === 0) return [];
        if (both) {
          const driven = await filteredThreadKeys(db, repo, filters, state, 'page', both);
          if (!driven) return [];
          pageKeys = await inOrder(driven.keys).execute();
        }
      }
    }
  }
  pageKeys ??= await inOrder(filtered.keys).execute();
  if (pageKeys.length === 0) return [];
  const rows = (await threadsWithNames(db)
    .where(
      't.uuid',
      'in',
      pageKeys.map((k) => k.uuid),
    )
    .execute()) as ThreadWithNames[];
  const at = new Map(pageKeys.map((k, i) => [k.uuid, i]));
  rows.sort((a, b) => at.get(a.uuid)! - at.get(b.uuid)!);
  return linked(db, viewer, repo, await threadsToJson(db, rows));
}

/** GET {repo}/threads/{n}/timeline: its events as timeline entries, oldest first (tracker/timeline.ts). */
export async function threadTimeline(deps: Deps, viewer: Viewer, at: RepoAt, number: number, page: PageArgs) {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const thread = await findThread(deps.db, repo.uuid, number);
  return timelinePage(deps, viewer, `thread:${thread.uuid}`, 'thread', page);
}

export async function getThread(deps: Deps, viewer: Viewer, at: RepoAt, number: number): Promise<ThreadJson> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const thread = await loadThreadJson(deps.db, (await findThread(deps.db, repo.uuid, number)).uuid);
  return (await linked(deps.db, viewer, repo, [thread]))[0]!;
}

/** Who closes a thread and how (`closed_by`): a person, or a merged pull or pushed commit of theirs. */
export interface Closer {
  uuid: string;
  username: string;
  pull_number?: number | null;
  commit_sha?: string | null;
}

/** Closes an open thread (nothing when it is closed already); emits thread-closed. */
export async function closeThreadRow(
  tx: TxContext,
  scopes: string[],
  thread: ThreadRow,
  reason: string,
  closer: Closer,
  actor: { uuid: string; username: string },
): Promise<boolean> {
  const now = nowIso();
  const res = await tx.db
    .updateTable('threads')
    .set({
      state: 'closed',
      state_reason: reason,
      closed_at: now,
      closed_by_uuid: closer.uuid,
      closed_by_pull_number: closer.pull_number ?? null,
      closed_by_commit_sha: closer.commit_sha ?? null,
      updated_at: now,
    })
    .where('uuid', '=', thread.uuid)
    .where('state', '=', 'open')
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) return false;
  await tx.emit({
    kind: 'thread-closed',
    scopes,
    actor: actorOf(actor),
    payload: {
      ...threadPayload(thread),
      state_reason: reason,
      closed_by: {
        uuid: closer.uuid,
        username: closer.username,
        pull_number: closer.pull_number ?? null,
        commit_sha: closer.commit_sha ?? null,
      },
    },
  });
  return true;
}

export async function updateThread(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  input: UpdateThreadInput,
  /** an edit of the body as it is in the transaction (a page's ticked task, docs/web.md "Markdown"); null: nothing to change */
  editBody?: (body: string) => string | null,
): Promise<ThreadJson> {
  const title = input.title === undefined ? undefined : cleanTitle(input.title);
  if (input.state_reason !== undefined && input.state !== 'closed') {
    throw badRequest('state_reason goes only with state "closed".');
  }
  return command(deps, viewer, onRepo(ref, READ), async (tx) => {
    // read level first: a missing thread or reply is 404 before the 403 of DISCUSS
    const access = tx.access;
    const row = await findThread(tx.db, access.repo.uuid, number);
    assertRepoNeed(access, DISCUSS);
    const triage =
      input.labels !== undefined || input.assignees !== undefined || input.milestone !== undefined || input.locked !== undefined;
    const edits = input.title !== undefined || input.body !== undefined;
    if (edits || (!triage && input.state === undefined && !editBody)) assertCanEditPost(access, viewer, row.author_uuid);
    if (editBody) assertCanTickTask(access, viewer, row.author_uuid);
    if (input.state !== undefined) assertCanChangeState(access, viewer, row.author_uuid);
    if (triage) assertCanTriage(access);
    if (row.removed_at) throw readOnly('thread');
    const changes: Partial<ThreadRow> = {};
    if (title !== undefined && title !== row.title) changes.title = title;
    if (input.body !== undefined && input.body !== row.body) changes.body = input.body;
    if (editBody) {
      // the body as committed, locked on PostgreSQL (SQLite's write transaction holds the database)
      let current = row.body;
      if (tx.dialect === 'postgres') {
        current = (
          await tx.db.selectFrom('threads').select('body').where('uuid', '=', row.uuid).forUpdate().executeTakeFirstOrThrow()
        ).body;
      }
      const next = editBody(current);
      if (next === null) throw badRequest('The text has no such task.');
      if (next !== current) changes.body = next;
    }
    const scopes = threadScopes(row, access);
    const now = nowIso();
    if (Object.keys(changes).length) {
      await tx.db
        .updateTable('threads')
        .set({ ...changes, updated_at: now })
        .where('uuid', '=', row.uuid)
        .execute();
      const renamed = changes.title === undefined ? {} : { renamed: { from: row.title, to: changes.title } };
      const edited = { ...row, ...changes };
      await indexTerms(tx.db, 'threads', access.repo.uuid, row.uuid, row.uuid, `${edited.title}\n${edited.body}`);
      await recordReferences(tx, viewer, threadSource(access, edited), `${edited.title}\n${edited.body}`);
      await emitThread(tx, viewer, access, await loadThreadJson(tx.db, row.uuid), 'thread-updated', {
        fields: Object.keys(changes),
        ...renamed,
      });
    }
    const current = { ...row, ...changes };
    let touched = Object.keys(changes).length > 0;
    if (input.state === 'closed') {
      const reason = input.state_reason ?? 'completed';
      if (row.state === 'open') {
        touched = await closeThreadRow(tx, scopes, current, reason, viewer, viewer);
      } else if (input.state_reason !== undefined && input.state_reason !== row.state_reason) {
        await tx.db.updateTable('threads').set({ state_reason: reason, updated_at: now }).where('uuid', '=', row.uuid).execute();
        touched = true;
      }
    } else if (input.state === 'open' && row.state === 'closed') {
      await tx.db
        .updateTable('threads')
        .set({
          state: 'open',
          state_reason: null,
          closed_at: null,
          closed_by_uuid: null,
          closed_by_pull_number: null,
          closed_by_commit_sha: null,
          updated_at: now,
        })
        .where('uuid', '=', row.uuid)
        .execute();
      await tx.emit({ kind: 'thread-reopened', scopes, actor: actorOf(viewer), payload: threadPayload(current) });
      touched = true;
    }
    const tracked = await setTracking(tx, viewer, access, row, input);
    if (changedAny(tracked)) {
      touched = true;
      await emitItemChanges(tx, viewer, 'thread', scopes, threadPayload(current), tracked);
    }
    if (input.locked !== undefined && (input.locked ? 1 : 0) !== row.locked) {
      await tx.db
        .updateTable('threads')
        .set({ locked: input.locked ? 1 : 0 })
        .where('uuid', '=', row.uuid)
        .execute();
      await tx.emit({
        kind: input.locked ? 'thread-locked' : 'thread-unlocked',
        scopes,
        actor: actorOf(viewer),
        payload: threadPayload(current),
      });
      touched = true;
    }
    if (touched) await tx.db.updateTable('threads').set({ updated_at: now }).where('uuid', '=', row.uuid).execute();
    return loadThreadJson(tx.db, row.uuid);
  });
}

/** POST/DELETE {repo}/threads/{n}/labels and .../assignees: one change that keeps every concurrent one. */
export async function changeThreadSet(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  what: 'labels' | 'assignees',
  mode: 'add' | 'remove',
  names: string[],
): Promise<ThreadJson> {
  return command(deps, viewer, onRepo(ref, READ), async (tx) => {
    const access = tx.access;
    const row = await findThread(tx.db, access.repo.uuid, number);
    assertRepoNeed(access, DISCUSS);
    assertCanTriage(access);
    if (row.removed_at) throw readOnly('thread');
    const tracked = await changeItemSet(tx.db, access.repo, row.uuid, what, mode, names);
    if (changedAny(tracked)) {
      await tx.db.updateTable('threads').set({ updated_at: nowIso() }).where('uuid', '=', row.uuid).execute();
      await emitItemChanges(tx, viewer, 'thread', threadScopes(row, access), threadPayload(row), tracked);
    }
    return loadThreadJson(tx.db, row.uuid);
  });
}

/** Soft removal (docs/behaviour.md "Threads, replies, uploads and attachments"); removing a removed thread is 204 and changes nothing. */
export async function removeThread(deps: Deps, viewer: Viewer, ref: RepoRef, number: number): Promise<void> {
  await command(deps, viewer, onRepo(ref, READ), async (tx) => {
    // read level first: a missing thread or reply is 404 before the 403 of DISCUSS
    const access = tx.access;
    const row = await findThread(tx.db, access.repo.uuid, number);
    assertRepoNeed(access, DISCUSS);
    assertCanEditPost(access, viewer, row.author_uuid);
    if (row.removed_at) return;
    const now = nowIso();
    const res = await tx.db
      .updateTable('threads')
      .set({ removed_at: now, updated_at: now })
      .where('uuid', '=', row.uuid)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) return;
    await emitThread(tx, viewer, access, await loadThreadJson(tx.db, row.uuid), 'thread-removed');
  });
}

/**
 * The thread's author and everyone with a reply not removed, in order of first participation;
 * the author counts from the thread's creation.
 */
export async function listParticipants(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  page: PageArgs,
): Promise<ParticipantJson[]> {
  const { repo } = await requireRepo(deps.db, viewer, ref, READ);
  const thread = await findThread(deps.db, repo.uuid, number);
  const rows = await sql<{ user_uuid: string; username: string; reply_count: number | string; first_participated_at: string }>`
    select p.user_uuid, u.username, sum(p.n) as reply_count, min(p.at) as first_participated_at
    from (
      select author_uuid as user_uuid, 0 as n, created_at as at from threads where uuid = ${thread.uuid}
      union all
      select author_uuid, 1, created_at from replies where thread_uuid = ${thread.uuid} and removed_at is null
    ) p
    join users u on u.uuid = p.user_uuid
    group by p.user_uuid, u.username
    order by min(p.at), u.username
    limit ${page.limit} offset ${page.offset}`.execute(deps.db);
  return rows.rows.map((r) => ({
    user_uuid: r.user_uuid,
    username: r.username,
    reply_count: Number(r.reply_count),
    first_participated_at: r.first_participated_at,
  }));
}

// ---------------------------------------------------------------- replies

type ReplyWithNames = ReplyRow & { author_username: string; thread_number: number };

function repliesWithNames(db: Kysely<DB>) {
  return db
    .selectFrom('replies as r')
    .innerJoin('users as a', 'a.uuid', 'r.author_uuid')
    .innerJoin('threads as t', 't.uuid', 'r.thread_uuid')
    .selectAll('r')
    .select(['a.username as author_username', 't.number as thread_number']);
}

function replyToJson(row: ReplyWithNames): ReplyJson {
  return {
    uuid: row.uuid,
    thread_uuid: row.thread_uuid,
    thread_number: row.thread_number,
    number: row.number,
    author_uuid: row.author_uuid,
    author_username: row.author_username,
    body: row.body,
    body_html: markdown.render(row.body),
    kind: row.kind,
    status: row.status,
    links: JSON.parse(row.links) as Link[],
    version: row.version,
    created_at: row.created_at,
    updated_at: row.updated_at,
    removed_at: row.removed_at,
  };
}

async function loadReplyJson(db: Kysely<DB>, uuid: string): Promise<ReplyJson> {
  return replyToJson(await repliesWithNames(db).where('r.uuid', '=', uuid).executeTakeFirstOrThrow());
}

/**
 * The reply with this number in the thread (removed ones included); 404 when there is none.
 * `lock` (PostgreSQL) takes the reply's row lock until commit, so concurrent edits queue.
 */
export async function findReply(db: Kysely<DB>, threadUuid: string, number: number, lock = false): Promise<ReplyRow> {
  let q = db.selectFrom('replies').selectAll().where('thread_uuid', '=', threadUuid).where('number', '=', number);
  if (lock) q = q.forUpdate();
  const row = await q.executeTakeFirst();
  if (!row) throw notFound('Reply');
  return row;
}

async function emitReply(
  tx: TxContext,
  viewer: Viewer,
  access: RepoAccess,
  thread: ThreadRow,
  reply: ReplyJson,
  kind: EventKind,
  extra = {},
) {
  await tx.emit({
    kind,
    scopes: [...repoScopes(access.repo), `thread:${thread.uuid}`, `reply:${reply.uuid}`],
    actor: actorOf(viewer),
    payload: {
      repo_uuid: access.repo.uuid,
      thread_uuid: thread.uuid,
      thread_number: thread.number,
      reply_uuid: reply.uuid,
      number: reply.number,
      version: reply.version,
      kind: reply.kind,
      status: reply.status,
      ...extra,
    },
  });
}

async function insertVersion(tx: TxContext, reply: ReplyRow, editorUuid: string, at: string): Promise<void> {
  await tx.db
    .insertInto('reply_versions')
    .values({
      reply_uuid: reply.uuid,
      version: reply.version,
      body: reply.body,
      kind: reply.kind,
      status: reply.status,
      links: reply.links,
      editor_uuid: editorUuid,
      created_at: at,
    })
    .execute();
}

export async function createReply(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  input: CreateReplyInput,
  /** work of the caller's in the reply's transaction, after the checks (reply by mail records its mail) */
  also?: (db: Kysely<DB>) => Promise<void>,
): Promise<ReplyJson> {
  const body = cleanReplyBody(input.body);
  return command(deps, viewer, onRepo(ref, READ), async (tx) => {
    // read level first: a missing thread or reply is 404 before the 403 of DISCUSS
    const access = tx.access;
    const thread = await findThread(tx.db, access.repo.uuid, number);
    assertRepoNeed(access, DISCUSS);
    if (thread.removed_at) throw readOnly('thread');
    assertMayReply(access, thread);
    if (also) await also(tx.db);
    const seq = await tx.db
      .updateTable('threads')
      .set((eb) => ({ reply_seq: eb('reply_seq', '+', 1), reply_count: eb('reply_count', '+', 1) }))
      .where('uuid', '=', thread.uuid)
      .where('removed_at', 'is', null)
      .returning('reply_seq')
      .executeTakeFirst();
    if (!seq) throw readOnly('thread');
    const now = nowIso();
    const row: ReplyRow = {
      uuid: randomUUID(),
      thread_uuid: thread.uuid,
      number: seq.reply_seq,
      author_uuid: viewer.uuid,
      body,
      kind: input.kind ?? 'comment',
      status: input.status ?? 'open',
      links: JSON.stringify(input.links ?? []),
      version: 1,
      created_at: now,
      updated_at: now,
      removed_at: null,
    };
    await tx.db.insertInto('replies').values(row).execute();
    await indexTerms(tx.db, 'threads', access.repo.uuid, thread.uuid, row.uuid, body);
    await insertVersion(tx, row, viewer.uuid, now);
    const reply = await loadReplyJson(tx.db, row.uuid);
    await emitReply(tx, viewer, access, thread, reply, 'reply-created');
    await recordReferences(tx, viewer, { ...threadSource(access, thread), kind: 'reply', key: row.uuid }, body);
    return reply;
  });
}

export async function listReplies(deps: Deps, viewer: Viewer, at: RepoAt, number: number, page: PageArgs): Promise<ReplyJson[]> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const thread = await findThread(deps.db, repo.uuid, number);
  // The page's keys from replies_thread_list_idx (index entries only), then their rows with names.
  const keys = deps.db
    .selectFrom('replies')
    .select('uuid')
    .where('thread_uuid', '=', thread.uuid)
    .where('removed_at', 'is', null)
    .orderBy('number')
    .offset(page.offset)
    .limit(page.limit);
  const rows = await repliesWithNames(deps.db).where('r.uuid', 'in', keys).orderBy('r.number').execute();
  return linked(deps.db, viewer, repo, rows.map(replyToJson));
}

export async function getReply(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  replyNumber: number,
): Promise<ReplyJson> {
  const { repo } = await requireRepo(deps.db, viewer, ref, READ);
  const thread = await findThread(deps.db, repo.uuid, number);
  const reply = await loadReplyJson(deps.db, (await findReply(deps.db, thread.uuid, replyNumber)).uuid);
  return (await linked(deps.db, viewer, repo, [reply]))[0]!;
}

/**
 * docs/behaviour.md "Threads, replies, uploads and attachments": omitted fields stay unchanged, `links` replaces the whole array, and
 * every edit stores a full snapshot as the next version. A PATCH that changes nothing returns
 * the current version and stores none.
 */
export async function updateReply(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  replyNumber: number,
  input: UpdateReplyInput,
): Promise<ReplyJson> {
  if (input.body !== undefined) cleanReplyBody(input.body);
  return command(deps, viewer, onRepo(ref, READ), async (tx) => {
    // read level first: a missing thread or reply is 404 before the 403 of DISCUSS
    const access = tx.access;
    const thread = await findThread(tx.db, access.repo.uuid, number);
    // Serialised on the reply's row lock: every concurrent edit becomes a version of its own
    // (SQLite's write lock already serialises them).
    const row = await findReply(tx.db, thread.uuid, replyNumber, tx.dialect === 'postgres');
    assertRepoNeed(access, DISCUSS);
    assertCanEditPost(access, viewer, row.author_uuid);
    if (thread.removed_at) throw readOnly('thread');
    if (row.removed_at) throw readOnly('reply');
    const next = {
      body: input.body ?? row.body,
      kind: input.kind ?? row.kind,
      status: input.status ?? row.status,
      links: input.links === undefined ? row.links : JSON.stringify(input.links),
    };
    const fields = (Object.keys(next) as Array<keyof typeof next>).filter((k) => next[k] !== row[k]);
    if (fields.length === 0) return loadReplyJson(tx.db, row.uuid);
    // A reply holds at most max_reply_versions versions (a site setting, README "Limits").
    const { max_reply_versions: maxVersions } = await readSettings(tx.db);
    if (row.version >= maxVersions) {
      throw conflict(
        'limit_reached',
        `This reply already has ${row.version} versions, the most allowed (site setting max_reply_versions); post a new reply instead.`,
      );
    }
    const now = nowIso();
    // The version bump is conditional on the version read, so two concurrent edits cannot both
    // become the same version.
    const res = await tx.db
      .updateTable('replies')
      .set({ ...next, version: row.version + 1, updated_at: now })
      .where('uuid', '=', row.uuid)
      .where('version', '=', row.version)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) throw conflict('conflict', 'The reply changed meanwhile; try again.');
    const updated: ReplyRow = { ...row, ...next, version: row.version + 1, updated_at: now };
    await insertVersion(tx, updated, viewer.uuid, now);
    const reply = await loadReplyJson(tx.db, row.uuid);
    await emitReply(tx, viewer, access, thread, reply, 'reply-edited', { fields });
    if (fields.includes('body')) {
      await indexTerms(tx.db, 'threads', access.repo.uuid, thread.uuid, row.uuid, next.body);
      await recordReferences(tx, viewer, { ...threadSource(access, thread), kind: 'reply', key: row.uuid }, next.body);
    }
    return reply;
  });
}

/** Soft removal; removing a removed reply is 204 and changes nothing. */
export async function removeReply(deps: Deps, viewer: Viewer, ref: RepoRef, number: number, replyNumber: number): Promise<void> {
  await command(deps, viewer, onRepo(ref, READ), async (tx) => {
    // read level first: a missing thread or reply is 404 before the 403 of DISCUSS
    const access = tx.access;
    const thread = await findThread(tx.db, access.repo.uuid, number);
    const row = await findReply(tx.db, thread.uuid, replyNumber);
    assertRepoNeed(access, DISCUSS);
    assertCanEditPost(access, viewer, row.author_uuid);
    if (row.removed_at) return;
    const now = nowIso();
    const res = await tx.db
      .updateTable('replies')
      .set({ removed_at: now })
      .where('uuid', '=', row.uuid)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) return;
    await tx.db
      .updateTable('threads')
      .set((eb) => ({ reply_count: eb('reply_count', '-', 1) }))
      .where('uuid', '=', thread.uuid)
      .execute();
    await indexTerms(tx.db, 'threads', access.repo.uuid, thread.uuid, row.uuid, null);
    await emitReply(tx, viewer, access, thread, await loadReplyJson(tx.db, row.uuid), 'reply-removed');
  });
}

/** The most text (bodies and their HTML) one page of a reply's versions carries, in UTF-16 code units. */
export const VERSION_PAGE_MAX_CHARS = 1_048_576;

/** A page of versions, and where to continue when the page was cut short by its size. */
export interface VersionWindow {
  versions: ReplyVersionJson[];
  /** set when the page stopped at VERSION_PAGE_MAX_CHARS: the last version it holds (after_version) */
  continueAfter: number | null;
}

/**
 * A reply's versions, oldest first, after `afterVersion` when given. A page is bounded in size as
 * well as in count: it stops before the version that would take its text past
 * VERSION_PAGE_MAX_CHARS (always holding at least one), and then says where to continue.
 */
export async function listReplyVersions(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  replyNumber: number,
  page: PageArgs & { afterVersion?: number },
): Promise<VersionWindow> {
  const { repo } = await requireRepo(deps.db, viewer, ref, READ);
  const thread = await findThread(deps.db, repo.uuid, number);
  const reply = await findReply(deps.db, thread.uuid, replyNumber);
  let q = deps.db
    .selectFrom('reply_versions as v')
    .innerJoin('users as u', 'u.uuid', 'v.editor_uuid')
    .selectAll('v')
    .select('u.username as editor_username')
    .where('v.reply_uuid', '=', reply.uuid);
  if (page.afterVersion !== undefined) q = q.where('v.version', '>', page.afterVersion);
  const rows = await q.orderBy('v.version').offset(page.offset).limit(page.limit).execute();
  const versions: ReplyVersionJson[] = [];
  let chars = 0;
  for (const v of rows) {
    const body_html = markdown.render(v.body);
    chars += v.body.length + body_html.length;
    if (versions.length > 0 && chars > VERSION_PAGE_MAX_CHARS) {
      return { versions, continueAfter: versions.at(-1)!.version };
    }
    versions.push({
      reply_uuid: v.reply_uuid,
      version: v.version,
      body: v.body,
      body_html,
      kind: v.kind,
      status: v.status,
      links: JSON.parse(v.links) as Link[],
      editor_username: v.editor_username,
      created_at: v.created_at,
    });
  }
  return { versions, continueAfter: null };
}

/**
 * Where the page of a reply's versions that ends just before `beforeVersion` starts, for a page of
 * at most `perPage` versions cut as listReplyVersions cuts it (estimated from the bodies' lengths,
 * their HTML counted as long again): the `afterVersion` to ask for, or undefined for the first
 * page. The pages of the web interface's history page go back with it ("older").
 */
export async function previousVersionPage(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  replyNumber: number,
  beforeVersion: number,
  perPage: number,
): Promise<number | undefined> {
  const { repo } = await requireRepo(deps.db, viewer, ref, READ);
  const thread = await findThread(deps.db, repo.uuid, number);
  const reply = await findReply(deps.db, thread.uuid, replyNumber);
  const rows = await deps.db
    .selectFrom('reply_versions')
    .select(['version', sql<number>`length(body)`.as('chars')])
    .where('reply_uuid', '=', reply.uuid)
    .where('version', '<', beforeVersion)
    .orderBy('version', 'desc')
    .limit(perPage)
    .execute();
  let chars = 0;
  let start: number | undefined;
  for (const r of rows) {
    chars += 2 * Number(r.chars);
    if (start !== undefined && chars > VERSION_PAGE_MAX_CHARS) break;
    start = r.version;
  }
  if (start === undefined) return undefined;
  const first = await deps.db
    .selectFrom('reply_versions')
    .select((eb) => eb.fn.min('version').as('v'))
    .where('reply_uuid', '=', reply.uuid)
    .executeTakeFirst();
  return Number(first?.v ?? start) >= start ? undefined : start - 1;
}
