import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema } from '../http/repo-paths.ts';
import { type RepoRequest, pagedRepoList } from '../http/repo-routes.ts';
import { Page } from '../http/schemas.ts';
import { PullNumber } from '../pulls/schemas.ts';
import { DiffFile } from './schemas.ts';
import { Branch, Commit, ListQuery } from './ref-schemas.ts';
import { listBranches, listPullCommits, listPullFiles } from './refs.ts';

type PullPath = RepoParams & { number: number };

/** Branches of a repo and the commits and files of a pull, read from the bare repository. */
export async function gitRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  for (const form of REPO_FORMS) {
    const RepoPath = repoParamsSchema(form);
    const PullPath = repoParamsSchema(form, { number: PullNumber });
    r.get(
      `${form.prefix}/branches`,
      {
        schema: {
          tags: ['git'],
          summary: 'Branches, sorted by name (read access)',
          params: RepoPath,
          querystring: ListQuery,
          response: { 200: Page(Branch) },
        },
      },
      pagedRepoList(({ viewer, ref }, p) => listBranches(deps, viewer, ref, p)),
    );
    r.get(
      `${form.prefix}/pulls/:number/commits`,
      {
        schema: {
          tags: ['pulls'],
          summary: "The source branch's commits not in the target, oldest first (read access)",
          description: 'Empty while the source branch does not exist.',
          params: PullPath,
          querystring: ListQuery,
          response: { 200: Page(Commit) },
        },
      },
      pagedRepoList(({ viewer, ref, params }: RepoRequest<PullPath>, p) => listPullCommits(deps, viewer, ref, params.number, p)),
    );
    r.get(
      `${form.prefix}/pulls/:number/files`,
      {
        schema: {
          tags: ['pulls'],
          summary: 'Files the source branch changes since its merge base with the target, by path (read access)',
          description:
            'Renames are detected (`renamed`, with the new path and `previous_path`). Each file has its `patch` (the unified ' +
            'diff hunks; null for binary files, and null with `patch_truncated: true` past 256 KiB); at most 3,000 files. ' +
            'Empty while the source branch does not exist.',
          params: PullPath,
          querystring: ListQuery,
          response: { 200: Page(DiffFile) },
        },
      },
      pagedRepoList(({ viewer, ref, params }: RepoRequest<PullPath>, p) => listPullFiles(deps, viewer, ref, params.number, p)),
    );
  }
}
