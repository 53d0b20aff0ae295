import type { Kysely } from 'kysely';
import { type RepoRef, checkAccess } from '../access/index.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import type { Viewer } from '../viewer.ts';

/**
 * Pull heads (README "Pulls from forks"). A pull's source branch lives in its source repo: the
 * pull's own repo, or a repo of its fork network. Every open pull's head is also kept in the
 * target repo under `refs/pull/{number}/head` (brought up to date when it is opened, after each
 * push to the source branch, before a merge and before its source repo is deleted), so a pull
 * from a fork keeps its commits when the fork or its branch goes away. A pull inside one repo has
 * no kept head to fall back on: its head is its branch.
 */
export interface PullHeadFields {
  repo_uuid: string;
  source_repo_uuid: string | null;
  number: number;
  source_branch: string;
}

export interface SourceRepoJson {
  uuid: string | null;
  full_name: string | null;
}

export const sourceRepoOf = (pull: Pick<PullHeadFields, 'repo_uuid' | 'source_repo_uuid'>): string =>
  pull.source_repo_uuid ?? pull.repo_uuid;

export const isCrossRepo = (pull: Pick<PullHeadFields, 'repo_uuid' | 'source_repo_uuid'>): boolean =>
  sourceRepoOf(pull) !== pull.repo_uuid;

/** The pull's head now: its source branch's tip, else (from a fork) its kept head; null when neither exists. */
export async function pullHeadSha(deps: Deps, pull: PullHeadFields): Promise<string | null> {
  const tip = await deps.git.branchSha(sourceRepoOf(pull), pull.source_branch);
  if (tip !== null || !isCrossRepo(pull)) return tip;
  return deps.git.refSha(pull.repo_uuid, `refs/pull/${pull.number}/head`);
}

/** The pull's head and its target branch's tip now, as pull and review events carry them. */
export async function pullTips(
  deps: Deps,
  pull: PullHeadFields & { target_branch: string },
): Promise<{ head_sha: string | null; base_sha: string | null }> {
  const [head_sha, base_sha] = await Promise.all([
    pullHeadSha(deps, pull),
    deps.git.branchSha(pull.repo_uuid, pull.target_branch),
  ]);
  return { head_sha, base_sha };
}

/**
 * The pull's head as a commit of the target repo, its kept head brought up to date first: what
 * the merge, the commits and the files read. Null when there is none (decisions: 409
 * source_branch_missing for a merge).
 */
export async function syncedPullHead(deps: Deps, pull: PullHeadFields): Promise<string | null> {
  const kept = await deps.git.syncPullHead(pull.repo_uuid, pull.number, sourceRepoOf(pull), pull.source_branch);
  return isCrossRepo(pull) ? kept : deps.git.branchSha(pull.repo_uuid, pull.source_branch);
}

/**
 * The pull's head for reading its commits, files and diff in the target repo: a pull from another
 * repo reads its kept head, brought up to date first (so its commits are in the target's objects);
 * a pull inside one repo its branch (no write on a read).
 */
export async function pullHeadForReading(deps: Deps, pull: PullHeadFields): Promise<string | null> {
  return isCrossRepo(pull) ? syncedPullHead(deps, pull) : deps.git.branchSha(pull.repo_uuid, pull.source_branch);
}

/**
 * Brings the kept heads of these pulls up to date, one after another; a failure is left for the
 * next push or merge (which sync again).
 */
export async function syncPullHeads(deps: Deps, pulls: PullHeadFields[]): Promise<void> {
  for (const pull of pulls) {
    try {
      await deps.git.syncPullHead(pull.repo_uuid, pull.number, sourceRepoOf(pull), pull.source_branch);
    } catch {
      // left as it was: the next push to the branch, or the merge, syncs it again
    }
  }
}

/** `owner/slug` of each repo that exists among `uuids`, in one statement. */
export async function repoFullNames(db: Kysely<DB>, uuids: string[]): Promise<Map<string, string>> {
  if (uuids.length === 0) return new Map();
  const rows = await db
    .selectFrom('repos as r')
    .leftJoin('teams as t', (j) => j.onRef('t.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'team'))
    .leftJoin('users as u', (j) => j.onRef('u.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'user'))
    .select(['r.uuid', 'r.slug', 't.slug as team_slug', 'u.username'])
    .where('r.uuid', 'in', [...new Set(uuids)])
    .execute();
  return new Map(rows.map((r) => [r.uuid, `${r.team_slug ?? r.username ?? ''}/${r.slug}`]));
}

/**
 * The `source_repo` of each pull as `viewer` may see it. A pull inside one repo names the repo of
 * the request (`ref`, whose names are stored lower-case); another repo is named only to callers
 * who may read it, and is `{uuid: null, full_name: null}` to others and once it is deleted.
 */
export async function sourceReposFor(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  pulls: Array<Pick<PullHeadFields, 'repo_uuid' | 'source_repo_uuid'>>,
): Promise<SourceRepoJson[]> {
  const own = `${ref.ownerName.toLowerCase()}/${ref.repoSlug.toLowerCase()}`;
  const others = [...new Set(pulls.filter(isCrossRepo).map(sourceRepoOf))];
  const [names, readable] = await Promise.all([
    repoFullNames(deps.db, others),
    checkAccess(deps.db, viewer, 'repo.read', others),
  ]);
  return pulls.map((p) => {
    if (!isCrossRepo(p)) return { uuid: p.repo_uuid, full_name: own };
    const uuid = sourceRepoOf(p);
    return readable.has(uuid) && names.has(uuid) ? { uuid, full_name: names.get(uuid)! } : { uuid: null, full_name: null };
  });
}

/** The open pulls of other repos whose source branch lives in `repoUuid` (their heads are kept before it is deleted). */
export async function openPullsFrom(db: Kysely<DB>, repoUuid: string): Promise<PullHeadFields[]> {
  return db
    .selectFrom('pulls')
    .select(['repo_uuid', 'source_repo_uuid', 'number', 'source_branch'])
    .where('source_repo_uuid', '=', repoUuid)
    .where('repo_uuid', '<>', repoUuid)
    .where('status', '=', 'open')
    .execute();
}
