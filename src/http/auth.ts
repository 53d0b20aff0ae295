import type { FastifyInstance, FastifyRequest } from 'fastify';
import { unauthorized } from '../errors.ts';
import type {
  Authenticate,
  AuthenticatedUser,
  RepoResolution,
  RepoTarget,
  ResolveRepo,
  RouteRepoNeed,
  Viewer,
} from '../viewer.ts';
import { repoRef } from './repo-paths.ts';
import { scopeRefusal } from './scopes.ts';

declare module 'fastify' {
  interface FastifyRequest {
    viewer: Viewer | null;
    /** the viewer's user record, read with the token (GET /user answers from it) */
    viewerUser: AuthenticatedUser | null;
    /** how the viewer authenticated: an API token (header) or a web session (cookie), with its secret */
    credential: { kind: 'token' | 'session'; secret: string } | null;
    /**
     * The route's declared repo (`config.repo`), resolved once by the auth hook for this viewer;
     * null when the route declares none. Read it with `repoAt`/`pullAt` (http/repo-routes.ts).
     */
    repoResolution: RepoResolution | null;
  }
  interface FastifyContextConfig {
    /** No authentication requirement is declared for this route. */
    public?: boolean;
    /**
     * What the route reads before its handler: its repo (`repo`) or its repo and pull (`pull`).
     * The auth hook resolves it once, after authentication (in the token lookup's statement on
     * the fast path), and the handler reads it with `repoAt`/`pullAt` (docs/architecture.md
     * "The read path"). Reads only: a write resolves its target inside its transaction (`command`).
     */
    repo?: RouteRepoNeed;
    /**
     * The route also accepts the web session cookie when no Authorization header is sent
     * (README "Web interface": `GET /api/v1/tail-events` only; pages resolve sessions themselves).
     */
    sessionCookie?: boolean;
    /**
     * The route stays open to a caller the site-wide second-factor requirement refuses (the
     * routes that enrol one, and the caller's own record): docs/signin.md "Requiring it".
     */
    twoFactorExempt?: boolean;
  }
}

/** Extracts the token from `Bearer <token>` or `Basic base64(":" + token)`; null when absent. */
export function tokenFromHeader(header: string | undefined): string | null | false {
  if (header === undefined || header === '') return null;
  const match = /^(\S+)\s+(\S+)$/.exec(header.trim());
  if (!match) return false;
  const scheme = match[1]!.toLowerCase();
  const value = match[2]!;
  if (scheme === 'bearer') return value;
  if (scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return false;
    // docs/behaviour.md "Users and tokens": an empty username with the token as the password. git clients may send a
    // username anyway; the password is what authenticates.
    const password = decoded.slice(colon + 1);
    return password || false;
  }
  return false;
}

/**
 * The repo (and pull) a route declaring `config.repo` names, from its path params (not validated
 * yet: a value the params schema would refuse gives no target, and the route answers its 400 as
 * before; a handler then finds no resolution and `repoAt` resolves from the validated params).
 */
function repoTarget(request: FastifyRequest): RepoTarget | undefined {
  const config = request.routeOptions.config;
  const kind = config?.repo;
  if (!kind) return undefined;
  const params = request.params as { number?: string; repo_slug?: string; team_slug?: string; username?: string };
  let number: number | null = null;
  if (kind === 'pull') {
    if (typeof params.number !== 'string' || !/^[1-9][0-9]{0,8}$/.test(params.number)) return undefined;
    number = Number(params.number);
  }
  if (typeof params.repo_slug !== 'string') return undefined;
  return { ref: repoRef({ ...params, repo_slug: params.repo_slug }), number };
}

/** The web session cookie's name (README "Web interface"). */
export const SESSION_COOKIE_NAME = 'weft_session';

/** Resolves a web session's cookie secret to its caller, or null when it has ended. */
export type AuthenticateSession = (secret: string) => Promise<{ viewer: Viewer; user: AuthenticatedUser } | null>;

/** One cookie's value from a Cookie header, or null (no parsing of the others). */
export function cookieValue(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return /^[A-Za-z0-9_-]{1,200}$/.test(value) ? value : null;
  }
  return null;
}

export function requireViewer(request: FastifyRequest): Viewer {
  if (!request.viewer) throw unauthorized();
  return request.viewer;
}

/**
 * Authenticates every request that carries credentials; a route not marked public refuses
 * anonymous callers with 401. Bad credentials are 401 even on public routes. Then, for a route
 * that declares its repo (`config.repo`), resolves it once for the viewer onto
 * `request.repoResolution`: with a token on the fast path `authenticate` has read it in its own
 * statement, otherwise `resolveRepo` reads it. `authenticate` (the tokens domain's lookup) and
 * `resolveRepo` (access/repo-read.ts) are passed in by `buildApp`: http/ imports no domain.
 */
export function installAuth(
  app: FastifyInstance,
  authenticate: Authenticate,
  authenticateSession?: AuthenticateSession,
  resolveRepo?: ResolveRepo,
  gate?: (viewer: Viewer) => Error | null,
): void {
  app.decorateRequest('viewer', null);
  app.decorateRequest('viewerUser', null);
  app.decorateRequest('credential', null);
  app.decorateRequest('repoResolution', null);
  /** The declared repo of an authenticated request, once (nothing when the route declares none). */
  const withRepo = (request: FastifyRequest, viewer: Viewer, target: RepoTarget | undefined, done: (err?: Error) => void) => {
    if (!target || !resolveRepo) return done();
    resolveRepo(viewer, target).then((resolution) => {
      request.repoResolution = resolution;
      done();
    }, done);
  };
  /** The site-wide refusal (a second factor required) unless the route is exempt from it. */
  const gated = (request: FastifyRequest, viewer: Viewer): Error | null =>
    gate && request.routeOptions.config?.twoFactorExempt !== true ? gate(viewer) : null;
  // Callback style: an async hook costs a promise and a microtask turn per request, and the
  // anonymous path needs neither.
  app.addHook('onRequest', (request, _reply, done) => {
    const token = tokenFromHeader(request.headers.authorization);
    if (token === false) return done(unauthorized('Malformed Authorization header: use Bearer or Basic with the API token.'));
    if (token !== null) {
      const target = repoTarget(request);
      authenticate(token, target).then((found) => {
        if (!found) return done(unauthorized('The API token is invalid, expired or revoked.'));
        request.viewer = found.viewer;
        request.viewerUser = found.user;
        request.credential = { kind: 'token', secret: token };
        // a scoped token outside its scopes: 403 before any lookup (README "Scoped tokens")
        const refused = scopeRefusal(request, found.viewer) ?? gated(request, found.viewer);
        if (refused) return done(refused);
        if (found.repo) {
          request.repoResolution = found.repo;
          return done();
        }
        withRepo(request, found.viewer, target, done);
      }, done);
      return;
    }
    const url = request.routeOptions.url;
    const isPublic = request.routeOptions.config?.public === true || url === undefined || url.startsWith('/docs');
    const sessionRoute = request.routeOptions.config?.sessionCookie === true;
    // A stream ticket in the query authenticates in the route itself (activity/tickets.ts).
    if (sessionRoute && /[?&]ticket=/.test(request.url)) return done();
    if (authenticateSession && sessionRoute) {
      const secret = cookieValue(request.headers.cookie, SESSION_COOKIE_NAME);
      if (secret) {
        authenticateSession(secret).then((found) => {
          if (found) {
            request.viewer = found.viewer;
            request.viewerUser = found.user;
            request.credential = { kind: 'session', secret };
            const refused = gated(request, found.viewer);
            if (refused) return done(refused);
            return withRepo(request, found.viewer, repoTarget(request), done);
          }
          // An ended session is no credential: the route decides (a stream ticket may still open it).
          done(isPublic ? undefined : unauthorized('The session has ended: sign in again.'));
        }, done);
        return;
      }
    }
    done(isPublic ? undefined : unauthorized());
  });
}
