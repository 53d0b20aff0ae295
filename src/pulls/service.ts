import { startPullRuns } from '../ci/pull-runs.ts';
import { type AutoMergeJson, turnOffAutoMerge } from './auto-merge-state.ts';
import { randomUUID } from 'node:crypto';
import { type Kysely, type Selectable, sql } from 'kysely';
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
import { containsText } from '../db/like.ts';
import type { RepoRow } from '../access/index.ts';
import { recordReferences, type ReferenceSource } from '../references/service.ts';
import {
  assigneeFilter,
  drivenRows,
  drivingSet,
  filterUserUuid,
  inDrivingSet,
  labelFilters,
  milestoneFilter,
} from '../tracker/items.ts';
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

/**
 * A page of pulls with the tracker's filters: the page's keys from the (repo, status, created_at,
 * number) indexes of migration 310 with existence checks on the label, assignee and review
 * request keys, then their rows. `replies` sorts by the number of reviews.
 */
export async function listPullsFiltered(
  deps: Deps,
  viewer: Viewer,
  at: RepoAt,
  page: { offset: number; limit: number },
  f: PullFilters,
): Promise<PullJson[]> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const db = deps.db;
  // a label's or an assignee's own set drives the list when it is small (tracker/items.ts drivingSet);
  // on PostgreSQL its rows are read by primary key (drivenRows)
  const checks = f.labels !== undefined ? await labelFilters(db, repo, 'p', f.labels) : [];
  if (f.assignee !== undefined) checks.push(await assigneeFilter(db, 'p', f.assignee));
  const driving = await drivingSet(db, checks);
  if (driving?.length === 0) return [];
  const driven = driving && drivenRows(db, 'pulls', driving);
  const all = db.selectFrom('pulls as p');
  let keys = (driven ? (db.selectFrom(driven.as('p')) as unknown as typeof all) : all)
    .select('p.uuid')
    .where('p.repo_uuid', '=', repo.uuid);
  if (f.status !== undefined) keys = keys.where('p.status', '=', f.status);
  else if ((f.state ?? 'open') === 'open') keys = keys.where('p.status', '=', 'open');
  else if (f.state === 'closed') keys = keys.where('p.status', 'in', ['closed', 'merged']);
  if (f.draft !== undefined) keys = keys.where('p.draft', '=', f.draft === 'true' ? 1 : 0);
  for (const check of checks) keys = keys.where(check.check);
  if (driving && !driven) keys = keys.where(inDrivingSet(db, 'p.uuid', driving));
  if (f.review_requested !== undefined) {
    const uuid = await filterUserUuid(db, 'review_requested', f.review_requested);
    keys = keys.where((eb) =>
      eb.exists(
        eb
          .selectFrom('review_requests as rr')
          .select('rr.pull_uuid')
          .whereRef('rr.pull_uuid', '=', 'p.uuid')
          .where('rr.user_uuid', '=', uuid),
      ),
    );
  }
  if (f.milestone !== undefined) keys = keys.where(await milestoneFilter(db, repo.uuid, 'p', f.milestone));
  if (f.author !== undefined) keys = keys.where('p.author_uuid', '=', await filterUserUuid(db, 'author', f.author));
  if (f.mentioned !== undefined) {
    const name = f.mentioned.toLowerCase();
    await filterUserUuid(db, 'mentioned', name);
    keys = keys.where((eb) =>
      eb.or([
        containsText('p.body', `@${name}`),
        eb.exists(
          eb
            .selectFrom('reviews as rv')
            .select('rv.uuid')
            .whereRef('rv.pull_uuid', '=', 'p.uuid')
            .where('rv.removed_at', 'is', null)
            .where(containsText('rv.body', `@${name}`)),
        ),
      ]),
    );
  }
  for (const word of (f.q ?? '').split(/\s+/).filter(Boolean)) {
    keys = keys.where((eb) => eb.or([containsText('p.title', word), containsText('p.body', word)]));
  }
  const dir = f.direction ?? 'desc';
  const sort = f.sort ?? 'created';
  const ordered =
    sort === 'replies'
      ? keys.orderBy(sql`(select count(*) from reviews rv where rv.pull_uuid = p.uuid and rv.removed_at is null)`, dir)
      : keys.orderBy(sort === 'updated' ? 'p.updated_at' : 'p.created_at', dir);
  const pageKeys = await ordered.orderBy('p.number', dir).offset(page.offset).limit(page.limit).execute();
  if (pageKeys.length === 0) return [];
  const rows = await pullsWithNames(db)
    .where(
      'p.uuid',
      'in',
      pageKeys.map((k) => k.uuid),
    )
    .execute();
  const order = new Map(pageKeys.map((k, i) => [k.uuid, i]));
  rows.sort((a, b) => order.get(a.uuid)! - order.get(b.uuid)!);
  return rows.map(pullToJson);
}
