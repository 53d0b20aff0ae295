import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** PUBLIC_URL: where clients reach this server (absolute Link header URLs). */
    publicUrl: string;
  }
}

/** Link headers carry absolute URLs on PUBLIC_URL, as GitHub sends them. */
export function installPaging(app: FastifyInstance, publicUrl: string): void {
  app.decorate('publicUrl', publicUrl);
}

export const DEFAULT_PER_PAGE = 30;
export const MAX_PER_PAGE = 100;

export interface PageParams {
  page: number;
  perPage: number;
  offset: number;
  /** rows to fetch: one more than a page, to know whether a next page exists */
  limit: number;
}

export function pageParams(query: { page?: number; per_page?: number }): PageParams {
  const page = query.page ?? 1;
  const perPage = Math.min(query.per_page ?? DEFAULT_PER_PAGE, MAX_PER_PAGE);
  return { page, perPage, offset: (page - 1) * perPage, limit: perPage + 1 };
}

/** The request's own path and query with some parameters replaced; all others are kept. */
export function linkWith(request: FastifyRequest, changes: Record<string, string | null>): string {
  const url = new URL(request.url, 'http://x');
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) url.searchParams.delete(key);
    else url.searchParams.set(key, value);
  }
  return url.pathname + url.search;
}

/** `links` are path-and-query URLs (as in the page body); the header makes them absolute. */
function setLinkHeader(reply: FastifyReply, links: Record<string, string | null>): void {
  const base = reply.server.publicUrl;
  const parts = Object.entries(links)
    .filter((e): e is [string, string] => e[1] !== null)
    .map(([rel, url]) => `<${base}${url}>; rel="${rel}"`);
  if (parts.length) reply.header('link', parts.join(', '));
}

export interface PageEnvelope<T> {
  results: T[];
  next: string | null;
  previous: string | null;
}

/**
 * Builds the Page envelope from `limit` fetched rows (one more than a page) and sets a Link
 * header with first/prev/next/last, as GitHub does (absolute URLs; the body's are path and query).
 */
export function pageOf<T>(
  request: FastifyRequest,
  reply: FastifyReply,
  p: PageParams,
  rows: T[],
  /** the number of items in the whole list, when a service knows it cheaply (adds rel="last") */
  total?: number,
  /** query changes that continue a page its service ended early (a feed's scan budget: before_id, page 1) */
  continueWith?: Record<string, string>,
  /** query keys of a position (a keyset cursor): kept by `next` only, dropped from the first/prev/last links */
  positionKeys: readonly string[] = [],
): PageEnvelope<T> {
  const at = (changes: Record<string, string>) =>
    linkWith(request, { ...Object.fromEntries(positionKeys.map((k) => [k, null])), ...changes });
  const hasNext = rows.length > p.perPage || continueWith !== undefined;
  const results = rows.length > p.perPage ? rows.slice(0, p.perPage) : rows;
  const perPage = String(p.perPage);
  const next = !hasNext
    ? null
    : linkWith(request, continueWith ? { ...continueWith, per_page: perPage } : { page: String(p.page + 1), per_page: perPage });
  const previous = p.page > 1 ? at({ page: String(p.page - 1), per_page: perPage }) : null;
  // The last page is known when the total is, or when this page is the last one (a page past
  // the end does not know where the end is).
  const isLast = !hasNext && (results.length > 0 || p.page === 1);
  const lastPage = total !== undefined ? Math.max(1, Math.ceil(total / p.perPage)) : isLast ? p.page : null;
  setLinkHeader(reply, {
    first: at({ page: '1', per_page: perPage }),
    prev: previous,
    next,
    last: lastPage === null ? null : at({ page: String(lastPage), per_page: perPage }),
  });
  return { results, next, previous };
}

export function cursorLinks(reply: FastifyReply, next: string | null, previous: string | null): void {
  setLinkHeader(reply, { prev: previous, next });
}
