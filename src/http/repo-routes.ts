import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RepoRef, Viewer } from '../viewer.ts';
import { requireViewer } from './auth.ts';
import { type PageEnvelope, type PageParams, pageOf, pageParams } from './paging.ts';
import { type RepoParams, repoRef } from './repo-paths.ts';

/** The caller, the repo and the path params of a request under a repo form. */
export interface OnRepo<P extends RepoParams = RepoParams> {
  viewer: Viewer;
  ref: RepoRef;
  params: P;
}

/**
 * Reads who calls and which repo a route under one of the `REPO_FORMS` is about (the form's
 * params schema has validated the params), so handlers pass them on to a service in one line.
 */
export function onRepo<P extends RepoParams = RepoParams>(request: FastifyRequest): OnRepo<P> {
  const params = request.params as P;
  return { viewer: requireViewer(request), ref: repoRef(params), params };
}

/**
 * The handler of a paged GET list under a repo: page and per_page from the query, the rows from
 * `list` (one more than a page, see `pageOf`), the page envelope and its `Link` header.
 */
export function pagedRepoList<T, P extends RepoParams = RepoParams>(
  list: (on: OnRepo<P>, page: PageParams) => Promise<T[]>,
): (request: FastifyRequest, reply: FastifyReply) => Promise<PageEnvelope<T>> {
  return async (request, reply) => {
    const page = pageParams(request.query as { page?: number; per_page?: number });
    return pageOf(request, reply, page, await list(onRepo<P>(request), page));
  };
}
