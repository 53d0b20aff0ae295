/**
 * Token scopes on the HTTP side (README "Scoped tokens"): each /api/v1 route gets the scope the
 * table in route-scopes.ts gives it, written into its OpenAPI `security`; `scopeRefusal` is asked
 * by the auth hook right after the token is resolved, before any handler or lookup runs, so a
 * refusal reveals nothing about the resource.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError } from '../errors.ts';
import { type TokenScope, insufficientScopeChallenge, scopeGranted } from '../token-scopes.ts';
import type { Viewer } from '../viewer.ts';
import { type RouteScope, routeScope, routeScopeKey } from './route-scopes.ts';
import { ErrorBody } from './schemas.ts';

/** A route under /api/v1 the table has no entry for: only unscoped tokens may call it. */
export const UNMAPPED = 'unmapped';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The scope this route needs (src/http/route-scopes.ts); unset outside /api/v1. */
    tokenScope?: RouteScope | typeof UNMAPPED;
  }
}

const unmapped = new WeakMap<FastifyInstance, string[]>();
const seen = new WeakMap<FastifyInstance, Set<string>>();

/** The /api/v1 routes (`METHOD url`) registered on `app` without an entry in ROUTE_SCOPES. */
export const unmappedRoutes = (app: FastifyInstance): string[] => [...(unmapped.get(app) ?? [])];

/** The table keys of every /api/v1 route registered on `app` (to find entries no route uses). */
export const routeKeysOf = (app: FastifyInstance): Set<string> => new Set(seen.get(app));

/** Give every /api/v1 route its scope; call before installOpenApi (whose hook fills the rest of `security`). */
export function installTokenScopes(app: FastifyInstance): void {
  const missing: string[] = [];
  const keys = new Set<string>();
  unmapped.set(app, missing);
  seen.set(app, keys);
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const key = routeScopeKey(String(methods[0]), route.url);
    if (key === null) return;
    keys.add(key);
    const scope = routeScope(key);
    if (scope === undefined && !methods.every((m) => m === 'HEAD')) missing.push(`${methods.join(',')} ${route.url}`);
    route.config = { ...route.config, tokenScope: scope ?? UNMAPPED };
    if (scope === undefined || scope === 'public' || route.config.public === true || route.schema?.hide) return;
    route.schema ??= {};
    const s = route.schema as Record<string, unknown>;
    s.security = [{ bearer: [scope] }, { basic: [scope] }];
    const note = `Token scope: \`${scope}\` (a token without it gets 403 insufficient_scope).`;
    s.description = typeof s.description === 'string' && s.description ? `${s.description} ${note}` : note;
    const response = (route.schema.response ??= {}) as Record<string, unknown>;
    response[403] ??= ErrorBody;
  });
}

/** 403 insufficient_scope with the challenge of RFC 6750, or null when the token may call the route. */
export function scopeRefusal(request: FastifyRequest, viewer: Viewer): AppError | null {
  if (viewer.scopes === null || viewer.scopes === undefined) return null;
  const needed = request.routeOptions.config?.tokenScope;
  if (needed === undefined || needed === 'public') return null;
  if (needed !== UNMAPPED && scopeGranted(viewer.scopes, needed as TokenScope)) return null;
  const named = needed === UNMAPPED ? 'unrestricted' : needed;
  return new AppError(
    403,
    'insufficient_scope',
    needed === UNMAPPED
      ? 'This route is open to unscoped tokens only.'
      : `This token lacks the scope ${needed} that this route needs.`,
    undefined,
    { 'www-authenticate': insufficientScopeChallenge(named) },
  );
}
