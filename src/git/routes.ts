import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { Page } from '../http/schemas.ts';
import { PullNumber } from '../pulls/schemas.ts';
import { Branch, Commit, FileChange, ListQuery } from './schemas.ts';
import { listBranches, listPullCommits, listPullFiles } from './service.ts';

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
      async (request, reply) => {
        const p = pageParams(request.query);
        const rows = await listBranches(deps, requireViewer(request), repoRef(request.params as RepoParams), p);
        return pageOf(request, reply, p, rows);
      },
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
      async (request, reply) => {
        const p = pageParams(request.query);
        const params = request.params as PullPath;
        const rows = await listPullCommits(deps, requireViewer(request), repoRef(params), params.number, p);
        return pageOf(request, reply, p, rows);
      },
    );
    r.get(
      `${form.prefix}/pulls/:number/files`,
      {
        schema: {
          tags: ['pulls'],
          summary: 'Files the source branch changes since its merge base with the target, by path (read access)',
          description: 'Renames are detected (`renamed`, with the new path). Empty while the source branch does not exist.',
          params: PullPath,
          querystring: ListQuery,
          response: { 200: Page(FileChange) },
        },
      },
      async (request, reply) => {
        const p = pageParams(request.query);
        const params = request.params as PullPath;
        const rows = await listPullFiles(deps, requireViewer(request), repoRef(params), params.number, p);
        return pageOf(request, reply, p, rows);
      },
    );
  }
}
