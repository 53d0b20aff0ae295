import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { type RepoRef, requireRepo } from '../access/index.ts';
import { commitOf, openRepo } from '../code/service.ts';
import { command } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { repoScopes } from '../repos/view.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import type { StatusState } from './schemas.ts';
import { wakeAutoMerge } from '../pulls/auto-merge-state.ts';

/**
 * Commit statuses (README "Commit statuses and required checks"): what CI systems report on a
 * commit, GitHub's statuses API. A status belongs to a repo and a commit sha; the latest status of
 * each context (by insertion order) is the one that counts.
 */
export interface StatusJson {
  uuid: string;
  sha: string;
  state: StatusState;
  context: string;
  description: string | null;
  target_url: string | null;
  creator: { uuid: string; username: string };
  created_at: string;
}

export interface CombinedJson {
  sha: string;
  state: 'pending' | 'success' | 'failure';
  total_count: number;
  statuses: StatusJson[];
}

function statusRows(db: Kysely<DB>) {
  return db
    .selectFrom('commit_statuses as s')
    .innerJoin('users as u', 'u.uuid', 's.creator_uuid')
    .select([
      's.id',
      's.uuid',
      's.sha',
      's.state',
      's.context',
      's.description',
      's.target_url',
      's.created_at',
      's.creator_uuid',
      'u.username',
    ]);
}

type StatusRow = Awaited<ReturnType<ReturnType<typeof statusRows>['execute']>>[number];

const toJson = (r: StatusRow): StatusJson => ({
  uuid: r.uuid,
  sha: r.sha,
  state: r.state as StatusState,
  context: r.context,
  description: r.description,
  target_url: r.target_url,
  creator: { uuid: r.creator_uuid, username: r.username },
  created_at: r.created_at,
});

/**
 * The latest status of each of a commit's contexts (only `contexts` when given), sorted by
 * context: one statement, whose subquery reads the latest id per context from the
 * (repo_uuid, sha, context, id) index.
 */
export async function latestStatuses(db: Kysely<DB>, repoUuid: string, sha: string, contexts?: string[]): Promise<StatusJson[]> {
  if (contexts && contexts.length === 0) return [];
  let latest = db
    .selectFrom('commit_statuses')
    .select((eb) => eb.fn.max('id').as('id'))
    .where('repo_uuid', '=', repoUuid)
    .where('sha', '=', sha);
  if (contexts) latest = latest.where('context', 'in', contexts);
  const rows = await statusRows(db).where('s.id', 'in', latest.groupBy('context')).orderBy('s.context').execute();
  return rows.map(toJson);
}

/** The combined state of latest statuses (README: any failure or error → failure; any pending or none → pending). */
export function combinedState(statuses: Array<{ state: string }>): CombinedJson['state'] {
  if (statuses.some((s) => s.state === 'failure' || s.state === 'error')) return 'failure';
  if (statuses.length === 0 || statuses.some((s) => s.state === 'pending')) return 'pending';
  return 'success';
}

export interface CreateStatusInput {
  state: StatusState;
  context?: string;
  description?: string;
  target_url?: string;
}

/**
 * POST {repo}/statuses/{sha}: write access; the sha must name a commit of the repo (a pull from a
 * fork's head is one once its kept head is in the repo). Emits `status-created` with the branches
 * whose tip is that sha (a webhook's branch filter matches them).
 */
export async function createStatus(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  rawSha: string,
  input: CreateStatusInput,
): Promise<StatusJson> {
  const sha = rawSha.toLowerCase();
  // a first look (404/403 before git hears of the sha); the command decides again on locked rows
  const { repo } = await requireRepo(deps.db, viewer, ref, { level: 'write', write: true });
  if (!(await deps.git.hasCommit(repo.uuid, sha))) {
    throw new AppError(404, 'not_found', `No commit ${sha} in this repo.`);
  }
  const branches = (await deps.git.refs(repo.uuid, 'refs/heads/'))
    .filter((r) => r.sha === sha)
    .map((r) => r.ref.slice('refs/heads/'.length));
  return command(deps, viewer, onRepo(ref, { level: 'write', write: true }), async (tx) => {
    const target = tx.access.repo;
    const row = {
      uuid: randomUUID(),
      repo_uuid: target.uuid,
      sha,
      state: input.state,
      context: input.context ?? 'default',
      description: input.description ?? null,
      target_url: input.target_url ?? null,
      creator_uuid: viewer.uuid,
      created_at: nowIso(),
    };
    await tx.db.insertInto('commit_statuses').values(row).execute();
    const status: StatusJson = {
      uuid: row.uuid,
      sha,
      state: input.state,
      context: row.context,
      description: row.description,
      target_url: row.target_url,
      creator: { uuid: viewer.uuid, username: viewer.username },
      created_at: row.created_at,
    };
    await tx.emit({
      kind: 'status-created',
      scopes: repoScopes(target),
      actor: actorOf(viewer),
      payload: { repo_uuid: target.uuid, status, branches },
    });
    // docs/ci.md "Auto-merge": a success may be what a pull waits for
    if (input.state === 'success') await wakeAutoMerge(deps, tx.db, { repoUuid: target.uuid });
    return status;
  });
}

/** The commit `{ref}` names in a readable repo (404 when none): the resolver of reading code. */
async function resolve(deps: Deps, viewer: Viewer, ref: RepoRef, commit: string) {
  const opened = await openRepo(deps, viewer, ref);
  const resolved = await commitOf(opened, commit);
  return { repoUuid: opened.repo.uuid, sha: resolved.sha };
}

/** GET {repo}/commits/{ref}/statuses: a page of the commit's statuses, newest first. */
export async function listStatuses(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  commit: string,
  page: { offset: number; limit: number },
): Promise<StatusJson[]> {
  const { repoUuid, sha } = await resolve(deps, viewer, ref, commit);
  const rows = await statusRows(deps.db)
    .where('s.repo_uuid', '=', repoUuid)
    .where('s.sha', '=', sha)
    .orderBy('s.id', 'desc')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
  return rows.map(toJson);
}

/** GET {repo}/commits/{ref}/status: the combined status. */
export async function combinedStatus(deps: Deps, viewer: Viewer, ref: RepoRef, commit: string): Promise<CombinedJson> {
  const { repoUuid, sha } = await resolve(deps, viewer, ref, commit);
  const statuses = await latestStatuses(deps.db, repoUuid, sha);
  return { sha, state: combinedState(statuses), total_count: statuses.length, statuses };
}
