import type { FastifyReply, FastifyRequest } from 'fastify';
import { ANONYMOUS_VIEWER, isAnonymous } from '../access/anonymous.ts';
import { AppError } from '../errors.ts';
import { SESSION_COOKIE_NAME, cookieValue } from '../http/auth.ts';
import { csrfTokenMatches } from '../sessions/service.ts';
import type { AuthenticatedUser, Viewer } from '../viewer.ts';
import type { Html } from './html.ts';

/** The signed-in person a page is for (README "Web interface"): their session and its CSRF token. */
export interface PageCaller {
  viewer: Viewer;
  user: AuthenticatedUser;
  sessionUuid: string;
  /** the session's CSRF token, rendered into every form and sent by htmx as X-CSRF-Token */
  csrf: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** the page's signed-in caller (web/plugin.ts), or null */
    page: PageCaller | null;
  }
  interface FastifyContextConfig {
    /** a streamed multipart page form: the handler checks its CSRF token (web/page-route.ts) */
    csrfInBody?: true;
  }
}

/** The caller of a page that needs one; anonymous GETs are sent to the sign-in page (web/plugin.ts). */
export function requirePage(request: FastifyRequest): PageCaller {
  if (!request.page) throw new AppError(401, 'unauthorized', 'Sign in to see this page.');
  return request.page;
}

/**
 * The caller of a page a signed-out reader may open too (a public repo's pages, README "Web
 * interface"): the signed-in caller, or the anonymous reader (access/anonymous.ts), whose
 * abilities take no action and whose layout is the signed-out one.
 */
export function readerPage(request: FastifyRequest): PageCaller {
  return request.page ?? ANONYMOUS_CALLER;
}

/** Whether a page's caller is the signed-out reader of `readerPage`. */
export const isSignedOut = (c: PageCaller): boolean => isAnonymous(c.viewer);

const ANONYMOUS_CALLER: PageCaller = Object.freeze({
  viewer: ANONYMOUS_VIEWER,
  user: Object.freeze({
    uuid: ANONYMOUS_VIEWER.uuid,
    username: '',
    display_name: '',
    email: '',
    is_staff: 0,
    is_active: 0,
    ping_mentions: '',
    created_at: '',
    updated_at: '',
  }),
  sessionUuid: '',
  csrf: '',
});

export function sendPage(reply: FastifyReply, page: Html, status = 200): FastifyReply {
  return reply.status(status).type('text/html; charset=utf-8').send(page.text);
}

/** After a form post: back to a page (303 See Other: the browser follows with a GET). */
export function seeOther(reply: FastifyReply, location: string): FastifyReply {
  return reply.status(303).header('location', location).send();
}

/** Page and per_page of a list page, as the API takes them (page ≥ 1; per_page 1..100, default 30). */
export function pageWindow(
  query: { page?: number },
  perPage = 30,
): { page: number; offset: number; limit: number; perPage: number } {
  const page = query.page ?? 1;
  return { page, perPage, offset: (page - 1) * perPage, limit: perPage + 1 };
}

export const csrfRefused = () =>
  new AppError(403, 'forbidden', 'The form carries no valid CSRF token for this session: reload the page and try again.');

/** A streamed form's CSRF check (`csrfInBody` routes): the token its handler read from the form's first field. */
export function checkBodyCsrf(request: FastifyRequest, given: unknown): void {
  if (request.headers['x-csrf-token'] !== undefined) return; // checked with the headers already (web/plugin.ts)
  const secret = cookieValue(request.headers.cookie, SESSION_COOKIE_NAME);
  if (!secret || !csrfTokenMatches(secret, given)) throw csrfRefused();
}
