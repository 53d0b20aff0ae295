import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PullContext, RepoAt, RepoContext, RepoRef, Viewer } from '../viewer.ts';
import { requireViewer } from './auth.ts';
import { type PageEnvelope, type PageParams, pageOf, pageParams } from './paging.ts';
import { type RepoParams, repoRef } from './repo-paths.ts';

/** The caller, the repo and the path params of a request under a repo form. */
export interface RepoRequest<P extends RepoParams = RepoParams> {
  viewer: Viewer;
  ref: RepoRef;
  /** the repo as the request resolved it (`config.repo`), else the ref: what a read service takes */
  at: RepoAt;
  params: P;
}

/**
 * Reads who calls and which repo a route under one of the `REPO_FORMS` is about (the form's
 * params schema has validated the params), so handlers pass them on to a service in one line.
 */
export function repoRequest<P extends RepoParams = RepoParams>(request: FastifyRequest): RepoRequest<P> {
  const params = request.params as P;
  return { viewer: requireViewer(request), ref: repoRef(params), at: repoAt(request), params };
}

/**
 * The repo a route declared (`config.repo`), as the auth hook resolved it for this viewer: its
 * context, or the 404 it resolved to (thrown here, after validation, so a bad request is still
 * 400 first). A route that declares none, or whose params the hook could not read, gets the bare
 * ref of its path: the service resolves it (`repoContextOf`).
 */
export function repoAt(request: FastifyRequest): RepoContext | RepoRef {
  const resolution = request.repoResolution;
  if (resolution) {
    if (resolution.error) throw resolution.error;
    return resolution.context;
  }
  return repoRef(request.params as RepoParams);
}

/** As `repoAt` for a route declaring `config.repo: 'pull'`: the pull's context, or the bare ref. */
export function pullAt(request: FastifyRequest): PullContext | RepoRef {
  const at = repoAt(request);
  return 'pull' in at ? (at as PullContext) : 'repo' in at ? at.ref : at;
}

/**
 * The handler of a paged GET list under a repo: page and per_page from the query, the rows from
 * `list` (one more than a page, see `pageOf`), the page envelope and its `Link` header.
 */
export function pagedRepoList<T, P extends RepoParams = RepoParams>(
  list: (on: RepoRequest<P>, page: PageParams) => Promise<T[]>,
): (request: FastifyRequest, reply: FastifyReply) => Promise<PageEnvelope<T>> {
  return async (request, reply) => {
    const page = pageParams(request.query as { page?: number; per_page?: number });
    return pageOf(request, reply, page, await list(repoRequest<P>(request), page));
  };
}
