import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { type DocumentExtras, transformDocument } from './openapi-transform.ts';
import { operationIdOf } from './operation-ids.ts';
import { routeScopeKey } from './route-scopes.ts';
import { SECURED } from './route-schemas.ts';
import { ErrorBody } from './schemas.ts';

const API_DESCRIPTION = `Weft: self-hostable collaboration hosting for source repositories.

Conventions (see the README for the full list):
- Errors are \`{error, detail}\` (plus \`conflict_paths\` on merge conflicts); \`error\` is a stable snake_case code.
- Unknown body properties, wrong types and malformed JSON are 400 \`invalid_request\`; bodies must be valid UTF-8 JSON objects (1 MiB at most, not compressed) and strings may not contain NUL. Integer query and path parameters are plain decimal digits.
- Lists return a Page \`{results, next, previous}\`: \`page\` (default 1), \`per_page\` (default 30, values above 100 clamp to 100); \`next\`/\`previous\` keep every other query parameter; a \`Link\` header carries first/prev/next as absolute URLs on PUBLIC_URL (as GitHub sends it).
- Authenticate with \`Authorization: Bearer <token>\` or Basic with an empty username and the token as password (as git sends it; a non-empty username is ignored). Missing, malformed, unknown, expired or revoked credentials, and the tokens of deactivated users, are 401 with \`WWW-Authenticate\`, even on public routes. A private resource you cannot see is 404, never 403.
- URLs with NUL (%00) or broken percent-encoding are 400. Every response carries \`X-Request-Id\` (yours when you send a sane one).
- Timestamps are ISO 8601 UTC with milliseconds and Z.`;

// @fastify/swagger takes a response's description from this keyword; the schema is untouched.
const X_DESCRIPTION = 'x-response-description';
const RESPONSE_DESCRIPTIONS: Record<number, string> = {
  200: 'Success',
  201: 'Created',
  204: 'No content',
  400: 'invalid_request: schema, query, JSON or format problem; unknown body properties',
  401: 'unauthorized: missing, malformed, unknown, expired or revoked token (sets WWW-Authenticate)',
  403: 'forbidden (or a more specific code): authenticated but not allowed',
  404: 'not_found: no such resource, or not visible to the caller',
  409: 'conflict (or a more specific code)',
  410: 'gone: the resource was removed',
  413: 'payload_too_large: the body is over 1 MiB',
  416: 'range_not_satisfiable: the Range is outside the content',
  415: 'unsupported_media_type: the body is not application/json',
  429: 'rate_limited: retry after Retry-After seconds',
  500: 'internal_error',
};

const withoutId = new WeakMap<FastifyInstance, string[]>();

/**
 * The documented /api/v1 routes without an operationId in src/http/operation-ids.ts, as the line
 * to add there (`'get {repo}/things': '?',`), so test/openapi-gate.test.ts can name them.
 */
export const routesWithoutOperationId = (app: FastifyInstance): string[] => [...(withoutId.get(app) ?? [])];

/**
 * Registers @fastify/swagger (OpenAPI 3.1.0 from the route schemas) and fills in, for every
 * route, the security requirement and the error responses every route can give.
 */
export async function installOpenApi(app: FastifyInstance, extra: DocumentExtras = {}): Promise<void> {
  const missing: string[] = [];
  withoutId.set(app, missing);
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs') || route.schema?.hide) return;
    route.schema ??= {};
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const key = routeScopeKey(String(methods[0]), route.url);
    // HEAD routes share their GET route's schema object: the GET route names it. The two owner
    // forms of a {repo} route may share one schema object: each gets its own copy with its id.
    if (key !== null && !methods.every((m) => m === 'HEAD')) {
      const id = operationIdOf(key, /^\/api\/v1\/users\/:username\/repos\/:repo_slug(\/|$)/.test(route.url));
      if (id === undefined) {
        if (!missing.includes(key)) missing.push(key); // both owner forms of a {repo} route: one line
      } else route.schema = { ...route.schema, operationId: id };
    }
    const schema = route.schema;
    const isPublic = route.config?.public === true;
    const s = schema as Record<string, unknown>;
    const operation = route.config?.rateLimit;
    if (operation) {
      // Every instrumented route says so, with the headers it answers (README: Rate limits).
      const note = `Instrumented operation \`${operation}\`: a stored rate-limit rule for it applies (429 rate_limited with Retry-After; RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset on success too)${
        operation === 'api:login' || operation === 'api:signup' ? '; counted per client address, even with a token' : ''
      }.`;
      s.description = typeof s.description === 'string' && s.description ? `${s.description} ${note}` : note;
    }
    s.security ??= isPublic ? [] : SECURED;
    schema.response ??= {};
    const response = schema.response as Record<string, unknown>;
    const common = isPublic ? [400, 404, 500] : [400, 401, 404, 500];
    if (route.schema?.body) common.push(413, 415);
    // HEAD routes share their GET route's schema object: they must not add to it either.
    const isRead = route.method === 'GET' || route.method === 'HEAD';
    if (!isPublic || !isRead) common.push(429);
    for (const status of common) response[status] ??= ErrorBody;
    for (const [status, body] of Object.entries(response)) {
      const description = RESPONSE_DESCRIPTIONS[Number(status)];
      if (description && body && typeof body === 'object' && !(X_DESCRIPTION in body)) {
        response[status] = { ...body, [X_DESCRIPTION]: description };
      }
    }
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Weft API', version: '0.1.0', description: API_DESCRIPTION },
      servers: [{ url: '/api/v1' }],
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', description: 'API token' },
          basic: { type: 'http', scheme: 'basic', description: 'empty username, API token as password' },
        },
      },
    },
    transform: ({ schema, url }) => ({ schema: schema as never, url: url.replace(/^\/api\/v1/, '') }),
    // operationIds, named component schemas, real enums, response headers, licence.
    transformObject: (document) =>
      transformDocument('openapiObject' in document ? document.openapiObject : document.swaggerObject, extra) as never,
  });
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { url: '/api/v1/openapi.json' } as never,
    // The page may not be framed (clickjacking) and loads only its own scripts and styles (the
    // plugin's CSP with its inline hashes), without the external validator badge; plain http
    // deployments keep working (no upgrade-insecure-requests).
    staticCSP: true,
    transformStaticCSP: (header: string) =>
      header
        .replace("frame-ancestors 'self'", "frame-ancestors 'none'")
        .replace(' validator.swagger.io', '')
        .replace(/\s*upgrade-insecure-requests;/, ''),
    uiHooks: {
      onRequest: (_request, reply, done) => {
        reply.header('x-frame-options', 'DENY');
        done();
      },
    },
  });
}
