import type { Static } from '@sinclair/typebox';
import { type RepoRef, repoContextOf } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { pullHeadForReading } from '../pulls/heads.ts';
import { requirePull } from '../pulls/service.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import { branchMatchesPattern } from '../git/refname.ts';
import { pullFiles } from './pulls.ts';
import type { DiffFile } from './schemas.ts';
import type { Branch, Commit } from './ref-schemas.ts';

type Window = { offset: number; limit: number };

/** GET {repo}/branches: every branch, sorted by name, with its tip and whether a protection matches it. */
export async function listBranches(deps: Deps, viewer: Viewer, at: RepoAt, page: Window): Promise<Static<typeof Branch>[]> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const patterns = (await deps.db.selectFrom('protections').select('branch').where('repo_uuid', '=', repo.uuid).execute()).map(
    (r) => r.branch,
  );
  const refs = await deps.git.refs(repo.uuid, 'refs/heads/');
  return refs.slice(page.offset, page.offset + page.limit).map(({ ref, sha }) => {
    const name = ref.slice('refs/heads/'.length);
    return { name, commit_sha: sha, protected: patterns.some((p) => branchMatchesPattern(p, name)) };
  });
}

/** The pull's head (`pullHeadForReading`) and base (null while there is none). */
async function tips(deps: Deps, viewer: Viewer, ref: RepoRef, number: number) {
  const { access, pull } = await requirePull(deps, viewer, ref, number);
  const head = await pullHeadForReading(deps, pull);
  const base = await deps.git.branchSha(access.repo.uuid, pull.target_branch);
  return { uuid: access.repo.uuid, head, base };
}

/** GET {repo}/pulls/{n}/commits: the source's commits not in the target, oldest first. */
export async function listPullCommits(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  page: Window,
): Promise<Static<typeof Commit>[]> {
  const { uuid, head, base } = await tips(deps, viewer, ref, number);
  if (head === null) return [];
  return (await deps.git.commitsBetween(uuid, base, head)).slice(page.offset, page.offset + page.limit);
}

/** GET {repo}/pulls/{n}/files: files changed on the source since its merge base with the target, by path, with patches. */
export async function listPullFiles(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  page: Window,
): Promise<Static<typeof DiffFile>[]> {
  return pullFiles(deps, viewer, ref, number, page);
}
