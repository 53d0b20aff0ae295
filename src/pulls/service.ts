import { startPullRuns } from '../ci/pull-runs.ts';
import { type AutoMergeJson, turnOffAutoMerge } from './auto-merge-state.ts';
import { randomUUID } from 'node:crypto';
import { type Expression, type Kysely, type Selectable, sql, type SqlBool } from 'kysely';
import {
  assertCanEditPull,
  canOpenPull,
  type RepoAccess,
  type RepoRef,
  type RepoNeed,
  pullContextOf,
  repoContextOf,
  repoUuidReadable,
  requireRepoPull,
} from '../access/index.ts';
import { compiledOnce, numberArg, numberParam } from '../db/fast-path.ts';
import type { DB, PullsTable } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, forbidden, notFound } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { command } from '../core/command.ts';
import { onPull, onRepo } from '../core/targets.ts';
import { sameForkNetwork } from '../forks/service.ts';
import { isValidBranchName } from '../git/refname.ts';
import { nextRepoNumber } from '../repos/numbers.ts';
import { nowIso } from '../time.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import {
  isCrossRepo,
  pullHeadSha,
  repoFullNames,
  type SourceRepoJson,
  sourceRepoOf,
  sourceReposFor,
  syncPullHeads,
} from './heads.ts';
import { TITLE_MAX } from './schemas.ts';
import type { RepoRow } from '../access/index.ts';
import { recordReferences, type ReferenceSource } from '../references/service.ts';
import { assigneeFilter, filterUserUuid, isPostgres, labelFilters, type ListFilter, milestoneFilter } from '../tracker/items.ts';
import { filteredKeys, inKeyOrder, indexTerms, listCursor, pageKeys, textFilters } from '../tracker/lists.ts';
import {
  assertMaySetTracking,
  decoratePulls,
  hasTracking,
  type PullTracking,
  type PullTrackingInput,
  setPullTracking,
} from '../tracker/pulls.ts';

export type PullRow = Selectable<PullsTable>;
export type PullStatus = 'open' | 'closed' | 'merged';

export interface PullJson {
  uuid: string;
  repo_uuid: string;
  number: number;
  title: string;
  body: string;
  source_branch: string;
  target_branch: string;
  /** the repo the source branch lives in; its name is filled for the caller at the HTTP edge */
  source_repo: SourceRepoJson;
  status: PullStatus;
  author_username: string;
  author_uuid: string;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  merged_at: string | null;
  merged_by_username: string | null;
  merge_commit_sha: string | null;
  merge_strategy: string | null;
  /** branch tips, filled from git at the HTTP edge (`withBranchTips`); null here */
  head_sha: string | null;
  base_sha: string | null;
  /** the issue tracker's fields (README "Issue tracker"), filled at the HTTP edge with the tips (`decoratePulls`) */
  draft: boolean;
  labels?: PullTracking['labels'];
  assignees?: PullTracking['assignees'];
  milestone?: PullTracking['milestone'];
  requested_reviewers?: PullTracking['requested_reviewers'];
  /** auto-merge (docs/ci.md "Auto-merge"), filled at the HTTP edge with the tips */
  auto_merge?: AutoMergeJson | null;
}

/** The auto-merge `decoratePulls` read with the tracker fields, typed as the pull JSON has it. */
const autoMergeOf = (p: PullTracking): AutoMergeJson | null =>
  p.auto_merge === null
    ? null
    : { ...p.auto_merge, merge_strategy: p.auto_merge.merge_strategy as AutoMergeJson['merge_strategy'] };

/** The pull JSON's `auto_merge` as the HTTP edge fills it. */
type AutoMergeField = { auto_merge: AutoMergeJson | null };

type PullWithNames = PullRow & { author_username: string; merged_by_username: string | null };

function pullsWithNames(db: Kysely<DB>) {
  return db
    .selectFrom('pulls as p')
    .innerJoin('users as a', 'a.uuid', 'p.author_uuid')
    .leftJoin('users as m', 'm.uuid', 'p.merged_by_uuid')
    .selectAll('p')
    .select(['a.username as author_username', 'm.username as merged_by_username']);
}

/**
 * A pull whose merge is still running (claimed, `merge_pending = 1`) reads as open: it is not
 * merged until its commit has landed and `merge_commit_sha` is set (README "Git", merges).
 */
export function pullToJson(row: PullWithNames): PullJson {
  if (row.merge_pending === 1) {
    return {
      ...pullToJson({ ...row, merge_pending: 0 }),
      status: 'open',
      closed_at: null,
      merged_at: null,
      merged_by_username: null,
      merge_strategy: null,
    };
  }
  return {
    uuid: row.uuid,
    repo_uuid: row.repo_uuid,
    number: row.number,
    title: row.title,
    body: row.body,
    source_branch: row.source_branch,
    target_branch: row.target_branch,
    source_repo: { uuid: sourceRepoOf(row), full_name: null },
    status: row.status as PullStatus,
    author_username: row.author_username,
    author_uuid: row.author_uuid,
    created_at: row.created_at,
    updated_at: row.updated_at,
    closed_at: row.closed_at,
    merged_at: row.merged_at,
    merged_by_username: row.merged_by_username,
    merge_commit_sha: row.merge_commit_sha,
    merge_strategy: row.merge_strategy,
    head_sha: null,
    base_sha: null,
    draft: row.draft === 1,
  };
}

/** The fields of a pull JSON that `pullHeadSha` reads. */
const headFields = (pull: PullJson) => ({
  repo_uuid: pull.repo_uuid,
  source_repo_uuid: pull.source_repo.uuid ?? pull.repo_uuid,
  number: pull.number,
  source_branch: pull.source_branch,
});

/**
 * The pull as `viewer` sees it: its head (the source branch's tip, or a fork pull's kept head)
 * and base read from the bare repositories, its source repo named or redacted (`sourceReposFor`).
 */
export async function withBranchTips(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  pull: PullJson,
): Promise<PullJson & PullTracking & AutoMergeField> {
  const [head_sha, base_sha, [source_repo]] = await Promise.all([
    pullHeadSha(deps, headFields(pull)),
    deps.git.branchSha(pull.repo_uuid, pull.target_branch),
    sourceReposFor(deps, viewer, ref, [headFields(pull)]),
  ]);
  const [decorated] = await decoratePulls(deps.db, [pull]);
  return { ...decorated!, source_repo: source_repo!, head_sha, base_sha, auto_merge: autoMergeOf(decorated!) };
}

/** A page of one repo's pulls as `withBranchTips` shows them, each distinct branch of the repo read once. */
export async function listWithBranchTips(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  pulls: PullJson[],
): Promise<Array<PullJson & PullTracking & AutoMergeField>> {
  if (pulls.length === 0) return [];
  const repoUuid = pulls[0]!.repo_uuid;
  const fields = pulls.map(headFields);
  const own = fields.filter((p) => !isCrossRepo(p));
  const branches = [...new Set([...own.map((p) => p.source_branch), ...pulls.map((p) => p.target_branch)])];
  const shas = await Promise.all(branches.map((b) => deps.git.branchSha(repoUuid, b)));
  const tips = new Map(branches.map((b, i) => [b, shas[i] ?? null]));
  const heads = await Promise.all(
    fields.map((p) => (isCrossRepo(p) ? pullHeadSha(deps, p) : Promise.resolve(tips.get(p.source_branch) ?? null))),
  );
  const sources = await sourceReposFor(deps, viewer, ref, fields);
  const decorated = await decoratePulls(deps.db, pulls);
  return decorated.map((p, i) => ({
    ...p,
    auto_merge: autoMergeOf(p),
    source_repo: sources[i]!,
    head_sha: heads[i] ?? null,
    base_sha: tips.get(p.target_branch) ?? null,
  }));
}

/** The pull as JSON, read through `db` (a transaction inside one); a fork pull's source named for events. */
export async function loadPullJson(db: Kysely<DB>, pullUuid: string): Promise<PullJson> {
  const pull = pullToJson(await pullsWithNames(db).where('p.uuid', '=', pullUuid).executeTakeFirstOrThrow());
  if (pull.source_repo.uuid !== pull.repo_uuid) {
    const names = await repoFullNames(db, [pull.source_repo.uuid!]);
    pull.source_repo = { uuid: pull.source_repo.uuid, full_name: names.get(pull.source_repo.uuid!) ?? null };
  }
  return pull;
}

/** The pull with this number in the repo; 404 when there is none. */
export async function findPull(db: Kysely<DB>, repoUuid: string, number: number): Promise<PullRow> {
  const row = await db
    .selectFrom('pulls')
    .selectAll()
    .where('repo_uuid', '=', repoUuid)
    .where('number', '=', number)
    .executeTakeFirst();
  if (!row) throw notFound('Pull');
  return row;
}

/**
 * The event payload every pull event carries; a pull from another repo also names that repo
 * (`source_repo`, redacted for readers who cannot read it: events/kinds.ts).
 */
export function pullEventPayload(pull: PullJson): Record<string, unknown> {
  return {
    repo_uuid: pull.repo_uuid,
    pull_uuid: pull.uuid,
    number: pull.number,
    title: pull.title,
    status: pull.status,
    source_branch: pull.source_branch,
    target_branch: pull.target_branch,
    author_username: pull.author_username,
    ...(isCrossPull(pull) ? { source_repo: pull.source_repo } : {}),
  };
}

const isCrossPull = (pull: { repo_uuid: string; source_repo?: SourceRepoJson }) =>
  pull.source_repo?.uuid != null && pull.source_repo.uuid !== pull.repo_uuid;

/** A pull event's scopes: its repo and itself, and the repo of a fork pull's source branch. */
export const pullScopes = (pull: { repo_uuid: string; uuid: string; source_repo?: SourceRepoJson }) => [
  `repo:${pull.repo_uuid}`,
  `pull:${pull.uuid}`,
  ...(isCrossPull(pull) ? [`repo:${pull.source_repo!.uuid}`] : []),
];

function cleanTitle(raw: string): string {
  const title = raw.trim();
  if (!title) throw badRequest('title must not be blank.');
  if (title.length > TITLE_MAX) throw badRequest(`title must be at most ${TITLE_MAX} characters.`);
  return title;
}

function checkBranch(field: string, name: string): void {
  if (!isValidBranchName(name)) throw badRequest(`${field} "${name}" is not a valid git branch name.`);
}

export interface CreatePullInput {
  title: string;
  body: string;
  /** opened as a draft (README "Issue tracker") */
  draft?: boolean;
  source_branch: string;
  target_branch: string;
  /** the uuid of the repo the source branch lives in; absent: this repo */
  source_repo?: string;
}

export async function createPull(deps: Deps, viewer: Viewer, ref: RepoRef, input: CreatePullInput): Promise<PullJson> {
  const title = cleanTitle(input.title);
  checkBranch('source_branch', input.source_branch);
  checkBranch('target_branch', input.target_branch);
  const pull = await command(deps, viewer, onRepo(ref, { level: 'read', write: true }), async (tx) => {
    const access = tx.access;
    if (!(await canOpenPull(tx.db, viewer, access))) {
      throw forbidden(`The repo's pull policy (${access.repo.public_repo_pull_policy}) does not let you open pulls.`);
    }
    const sourceRepo = input.source_repo ?? access.repo.uuid;
    if (sourceRepo !== access.repo.uuid) {
      // another repo: one the caller may read (404 otherwise, as for any repo they cannot see),
      // of this repo's fork network (400 otherwise)
      if (!(await repoUuidReadable(tx.db, viewer, sourceRepo))) throw notFound('Repo');
      if (!(await sameForkNetwork(tx.db, access.repo.uuid, sourceRepo))) {
        throw badRequest('source_repo must be this repo or a repo of its fork network (its source, its forks, their forks).');
      }
    } else if (input.source_branch === input.target_branch) {
      throw badRequest('source_branch and target_branch must differ.');
    }
    const number = await nextRepoNumber(tx.db, access.repo.uuid, 'pull_seq');
    const now = nowIso();
    const uuid = randomUUID();
    await tx.db
      .insertInto('pulls')
      .values({
        uuid,
        repo_uuid: access.repo.uuid,
        number,
        title,
        body: input.body,
        source_branch: input.source_branch,
        target_branch: input.target_branch,
        source_repo_uuid: sourceRepo,
        status: 'open',
        author_uuid: viewer.uuid,
        created_at: now,
        updated_at: now,
        closed_at: null,
        merged_at: null,
        merged_by_uuid: null,
        merge_commit_sha: null,
        merge_strategy: null,
        review_seq: 0,
        draft: input.draft ? 1 : 0,
      })
      .execute();
    await indexTerms(tx.db, 'pulls', access.repo.uuid, uuid, uuid, `${title}\n${input.body}`);
    const pull = await loadPullJson(tx.db, uuid);
    // what a CI builds: the head and the base as they are now (README "Events a CI can build from")
    const [headSha, baseSha] = await Promise.all([
      pullHeadSha(deps, headFields(pull)),
      deps.git.branchSha(pull.repo_uuid, pull.target_branch),
    ]);
    await tx.emit({
      kind: 'pull-opened',
      scopes: pullScopes(pull),
      actor: actorOf(viewer),
      payload: { ...pullEventPayload(pull), head_sha: headSha, base_sha: baseSha },
    });
    if (headSha) await startPullRuns(deps, tx, uuid, 'opened', actorOf(viewer), headSha);
    await recordReferences(tx, viewer, pullSource(access.repo, pull), `${pull.title}\n${pull.body}`);
    return pull;
  });
  // its head kept in this repo from the start when the source branch exists already
  await syncPullHeads(deps, [headFields(pull)]);
  return pull;
}

/**
 * A page of one repo's pulls with their names, with or without a status: the page's keys from the
 * (repo_uuid[, status], number, uuid) index, then their rows, so a deep page skips index entries
 * only (README "Performance").
 */
function pullPageQuery(db: Kysely<DB>, repoUuid: string, status: string | null, offset: string, limit: string) {
  let keys = db.selectFrom('pulls').select('uuid').where('repo_uuid', '=', repoUuid);
  if (status !== null) keys = keys.where('status', '=', status);
  keys = keys.orderBy('number').offset(numberParam(offset)).limit(numberParam(limit));
  return pullsWithNames(db).where('p.uuid', 'in', keys).orderBy('p.number');
}

/** Both forms of the page, each built and compiled once (a named statement on PostgreSQL). */
const pullPage = {
  all: compiledOnce((db, repoUuid: string, offset: string, limit: string) => pullPageQuery(db, repoUuid, null, offset, limit)),
  byStatus: compiledOnce((db, repoUuid: string, status: string, offset: string, limit: string) =>
    pullPageQuery(db, repoUuid, status, offset, limit),
  ),
};

export async function listPulls(
  deps: Deps,
  viewer: Viewer,
  at: RepoAt,
  opts: { status?: PullStatus; offset: number; limit: number },
): Promise<PullJson[]> {
  // the request's resolved repo (`config.repo`), or the same 404s as requireRepo in one statement
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const offset = numberArg(opts.offset);
  const limit = numberArg(opts.limit);
  const rows = opts.status
    ? await pullPage.byStatus(deps.database, repo.uuid, opts.status, offset, limit)
    : await pullPage.all(deps.database, repo.uuid, offset, limit);
  return rows.map(pullToJson);
}

/**
 * Resolves a readable repo and the pull with that number in it (404 for either), for reads; a
 * write resolves them as its command's target (`onPull`, src/core/targets.ts).
 */
export async function requirePull(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  need: RepoNeed = { level: 'read' },
): Promise<{ access: RepoAccess; pull: PullRow }> {
  return requireRepoPull(deps.db, viewer, ref, number, need);
}

/** GET {repo}/pulls/{n}: the request's resolved pull (`config.repo: 'pull'`), or read now in one compiled statement. */
export async function getPull(deps: Deps, viewer: Viewer, at: RepoAt, number: number): Promise<PullJson> {
  const { pull } = await pullContextOf(deps.database, viewer, at, number);
  return pullToJson(pull);
}

export interface UpdatePullInput extends PullTrackingInput {
  title?: string;
  body?: string;
  status?: PullStatus;
}

export async function updatePull(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  input: UpdatePullInput,
): Promise<PullJson> {
  const title = input.title === undefined ? undefined : cleanTitle(input.title);
  if (input.status === 'merged') throw badRequest('status can be set to open or closed only: merge with POST .../merge.');
  return command(deps, viewer, onPull(ref, number, { level: 'read', write: true }), async (tx) => {
    const { access, pull } = tx.access;
    const edits = input.title !== undefined || input.body !== undefined || input.status !== undefined;
    if (edits || !hasTracking(input)) assertCanEditPull(viewer, access, pull);
    assertMaySetTracking(access, viewer, pull, input);
    const current = pull;
    if (current.status === 'merged') throw conflict('pull_merged', 'The pull is merged and can no longer change.');
    const changes: Partial<PullRow> = {};
    if (title !== undefined && title !== current.title) changes.title = title;
    if (input.body !== undefined && input.body !== current.body) changes.body = input.body;
    const now = nowIso();
    if (input.status !== undefined && input.status !== current.status) {
      changes.status = input.status;
      changes.closed_at = input.status === 'closed' ? now : null;
    }
    const changed = Object.keys(changes).filter((k) => k !== 'closed_at');
    if (changed.length > 0) {
      await tx.db
        .updateTable('pulls')
        .set({ ...changes, updated_at: now })
        .where('uuid', '=', pull.uuid)
        .execute();
      const json = await loadPullJson(tx.db, pull.uuid);
      const action = changes.status === 'closed' ? 'closed' : changes.status === 'open' ? 'reopened' : 'edited';
      const renamed = changes.title === undefined ? {} : { renamed: { from: current.title, to: changes.title } };
      await tx.emit({
        kind: 'pull-updated',
        scopes: pullScopes(json),
        actor: actorOf(viewer),
        payload: { ...pullEventPayload(json), action, changed, ...renamed },
      });
      if (action === 'reopened') await startPullRuns(deps, tx, pull.uuid, 'reopened', actorOf(viewer));
      // docs/ci.md "Auto-merge": closing turns it off
      if (action === 'closed') {
        await turnOffAutoMerge(tx, pull.uuid, 'closed', actorOf(viewer), {
          scopes: pullScopes(json),
          payload: pullEventPayload(json),
        });
      }
      if (changes.title !== undefined || changes.body !== undefined) {
        await indexTerms(tx.db, 'pulls', access.repo.uuid, pull.uuid, pull.uuid, `${json.title}\n${json.body}`);
        await recordReferences(tx, viewer, pullSource(access.repo, json), `${json.title}\n${json.body}`);
      }
    }
    if (hasTracking(input)) {
      const json = await loadPullJson(tx.db, pull.uuid);
      await setPullTracking(tx, viewer, access, pull, input, pullScopes(json), pullEventPayload(json));
    }
    return loadPullJson(tx.db, pull.uuid);
  });
}

/** A pull as the source of the references in its text (references/service.ts). */
export const pullSource = (repo: RepoRow, pull: { uuid: string; number: number; title: string }): ReferenceSource => ({
  kind: 'pull',
  key: pull.uuid,
  repo,
  number: pull.number,
  title: pull.title,
  selfUuid: pull.uuid,
});

/** The scopes and payload of a pull's events, for the tracker's writes (tracker/pulls.ts). */
export const pullEventShape = (db: Kysely<DB>) => async (pull: { uuid: string }) => {
  const json = await loadPullJson(db, pull.uuid);
  return { scopes: pullScopes(json), payload: pullEventPayload(json) };
};

/** The tracker's list filters of GET {repo}/pulls (README "Issue tracker"), checked by the route schema. */
export interface PullFilters {
  /** a keyset cursor (`next` of the previous page) */
  after?: string;
  state?: 'open' | 'closed' | 'all';
  status?: PullStatus;
  labels?: string;
  assignee?: string;
  milestone?: string;
  author?: string;
  mentioned?: string;
  q?: string;
  sort?: 'created' | 'updated' | 'replies';
  direction?: 'asc' | 'desc';
  draft?: 'true' | 'false';
  review_requested?: string;
}

/** The `review_requested` filter: a user's review requests (review_requests_user_idx) are its own set. */
function reviewRequestedFilter(db: Kysely<DB>, userUuid: string): ListFilter {
  const requested = (uuid: Expression<unknown>, fence: boolean) =>
    sql<SqlBool>`exists (select 1 from review_requests rr where rr.pull_uuid = ${uuid} and rr.user_uuid = ${userUuid}${
      fence ? sql` offset 0` : sql``
    })`;
  return {
    where: requested(sql.ref('p.uuid'), false),
    check: requested(sql.ref('p.uuid'), isPostgres(db)),
    set: sql`select pull_uuid as uuid from review_requests where user_uuid = ${userUuid}`,
    probe: (uuid) => requested(uuid, false),
  };
}

/**
 * The status a list asks for: `status` when given, else `state` (open by default; closed is closed
 * or merged, written `status <> 'open'` as the partial indexes of migration 740 name it, so the
 * list reads one of them in its order; all: any).
 */
function statusCondition(f: PullFilters): Expression<SqlBool> | null {
  if (f.status !== undefined) return sql<SqlBool>`p.status = ${f.status}`;
  const state = f.state ?? 'open';
  if (state === 'open') return sql<SqlBool>`p.status = 'open'`;
  return state === 'closed' ? sql<SqlBool>`p.status <> 'open'` : null;
}

/**
 * The pull keys of a repo that pass the list filters, in no order, or null when a filter's own set
 * is empty: driven by a small set (a label, an assignee, a review request, a word or a mention),
 * or checked row by row on the sort index (tracker/lists.ts filteredKeys), as the thread list.
 */
async function filteredPullKeys(db: Kysely<DB>, repo: RepoRow, f: PullFilters) {
  const conds: Array<Expression<SqlBool>> = [];
  const checks: ListFilter[] = [];
  if (f.labels !== undefined) checks.push(...(await labelFilters(db, repo, 'p', f.labels)));
  if (f.assignee !== undefined) checks.push(await assigneeFilter(db, 'p', f.assignee));
  if (f.review_requested !== undefined) {
    checks.push(reviewRequestedFilter(db, await filterUserUuid(db, 'review_requested', f.review_requested)));
  }
  if (f.milestone !== undefined) conds.push(await milestoneFilter(db, repo.uuid, 'p', f.milestone));
  if (f.author !== undefined) conds.push(sql<SqlBool>`p.author_uuid = ${await filterUserUuid(db, 'author', f.author)}`);
  if (f.draft !== undefined) conds.push(sql<SqlBool>`p.draft = ${f.draft === 'true' ? 1 : 0}`);
  const status = statusCondition(f);
  if (status) conds.push(status);
  // words and mentions: the pull_terms key (repo, term, pull) gives the pulls that have them
  checks.push(...(await textFilters(db, 'pulls', repo.uuid, f)));
  // `draft` and `milestone` are conditions on each row that no sort index holds: with a large set
  // that they exclude (`draft=false&q=crash` when every crash pull is a draft), the walk would read
  // the whole list (160 ms at 100,000 pulls). A set of up to SPARSE_DRIVING_MAX items drives it
  // instead: its rows checked, O(that set) at worst (bench/README.md "Pull lists").
  const rowConditions = f.draft !== undefined || f.milestone !== undefined;
  return filteredKeys(
    db,
    'pulls',
    checks,
    'page',
    (driven) => {
      // driven on PostgreSQL: the set's rows by primary key (tracker/items.ts drivenRows)
      const all = db.selectFrom('pulls as p');
      let keys = (driven ? (db.selectFrom(driven.as('p')) as unknown as typeof all) : all)
        .select('p.uuid')
        .where('p.repo_uuid', '=', repo.uuid);
      for (const cond of conds) keys = keys.where(cond);
      return keys;
    },
    rowConditions ? SPARSE_DRIVING_MAX : undefined,
  );
}

/** The largest set that drives a pull list filtered by a row condition (draft, milestone). */
const SPARSE_DRIVING_MAX = 20_000;

const PULL_SORT_COLUMNS = { created: 'created_at', updated: 'updated_at', replies: 'review_count' } as const;

/** A page of the filtered pull list, and each pull's keyset cursor (the `next` link's `after`). */
export interface PullListPage {
  pulls: PullJson[];
  cursors: string[];
}

/**
 * A page of pulls with the tracker's filters, as GET {repo}/threads reads its page: the page's
 * keys in the list's order from one of the list indexes of migrations 310 and 740 (repo[, status],
 * created_at | updated_at | review_count, number), after the `after` cursor when given, then their
 * rows. `replies` sorts by `pulls.review_count` (the reviews not removed, kept by the review writes).
 */
export async function listPullsFiltered(
  deps: Deps,
  viewer: Viewer,
  at: RepoAt,
  page: { offset: number; limit: number },
  f: PullFilters,
): Promise<PullListPage> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const db = deps.db;
  const keys = await filteredPullKeys(db, repo, f);
  if (!keys) return { pulls: [], cursors: [] };
  const column = PULL_SORT_COLUMNS[f.sort ?? 'created'];
  const uuids = await pageKeys(keys, 'pulls', column, column === 'review_count', f, page);
  if (uuids.length === 0) return { pulls: [], cursors: [] };
  const rows = inKeyOrder(await pullsWithNames(db).where('p.uuid', 'in', uuids).execute(), uuids);
  return { pulls: rows.map(pullToJson), cursors: rows.map((r) => listCursor(r[column], r.number)) };
}
