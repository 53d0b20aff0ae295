import { hash } from 'node:crypto';
import compress from '@fastify/compress';
import cors from '@fastify/cors';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';

/**
 * HTTP conventions integrators expect from GitHub's and Gitea's APIs (README "Deploying"):
 * CORS (CORS_ORIGINS, off by default), gzip/brotli over COMPRESS_THRESHOLD bytes, weak ETags
 * with If-None-Match → 304 and `Cache-Control: private, no-cache` on authenticated JSON reads,
 * and 405 with `Allow` for a known path asked with a wrong method.
 */

/** Paths whose bodies are never compressed: git smart-HTTP does its own packing. */
const NO_COMPRESS_PATH = /\/git\//;

export const EXPOSED_HEADERS = [
  'Link',
  'ETag',
  'X-Request-Id',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'WWW-Authenticate',
];

export async function installConventions(app: FastifyInstance, config: Config): Promise<void> {
  installMethodNotAllowed(app);

  if (config.corsOrigins.length) {
    await app.register(cors, {
      origin: config.corsOrigins.includes('*') ? '*' : config.corsOrigins,
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id', 'If-None-Match'],
      exposedHeaders: EXPOSED_HEADERS,
      // Tokens travel in the Authorization header, never in cookies.
      credentials: false,
      maxAge: 600,
      strictPreflight: false,
    });
  }

  // Routes under /git/ (smart HTTP) and event streams are never compressed.
  app.addHook('onRoute', (route) => {
    if (NO_COMPRESS_PATH.test(route.url) && route.compress === undefined) route.compress = false;
  });
  installEtag(app);
  await app.register(compress, {
    global: true,
    threshold: config.compressThreshold,
    encodings: ['br', 'gzip', 'deflate'],
    // Requests are never decompressed: a compressed body is 415 (README "Conventions").
    globalDecompression: false,
    // JSON and text, never text/event-stream.
    customTypes: /^text\/(?!event-stream)|(?:\+|\/)json(?:;|$)/,
    brotliOptions: { params: { [(await import('node:zlib')).constants.BROTLI_PARAM_QUALITY]: 4 } },
  });
}

/**
 * Weak ETag on successful JSON reads by an authenticated caller (or the strong one the route set),
 * with If-None-Match → 304 and `Cache-Control: private, no-cache` (the body depends on who asks; revalidate every time).
 * Streamed bodies (event streams, git) are left alone: only string and Buffer payloads are hashed.
 */
function installEtag(app: FastifyInstance): void {
  // Hooks on every request are synchronous (callback style): an async hook costs a promise and
  // a microtask turn per request (bench/README.md "Hot reads").
  app.addHook(
    'onSend',
    (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, p: unknown) => void) => {
      done(null, withEtag(request, reply, payload));
    },
  );
}

function withEtag(request: FastifyRequest, reply: FastifyReply, payload: unknown): unknown {
  {
    if (request.method !== 'GET' && request.method !== 'HEAD') return payload;
    if (reply.statusCode !== 200 || !request.viewer) return payload;
    if (typeof payload !== 'string' && !Buffer.isBuffer(payload)) return payload;
    const type = String(reply.getHeader('content-type') ?? '');
    if (!type.startsWith('application/json')) return payload;
    // a route that knows its body's tag already (a strong one, src/code/body-cache.ts) spares the hash
    const preset = reply.getHeader('etag');
    const etag = typeof preset === 'string' ? preset : `W/"${hash('sha1', payload, 'base64url').slice(0, 27)}"`;
    reply.header('etag', etag);
    // a route may have said more (an answer addressed by a full commit sha is immutable)
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'private, no-cache');
    reply.header('vary', varyWith(reply.getHeader('vary'), 'Authorization'));
    if (ifNoneMatch(request.headers['if-none-match'], etag)) {
      reply.code(304);
      reply.removeHeader('content-length');
      reply.removeHeader('content-type');
      return '';
    }
    return payload;
  }
}

function varyWith(current: unknown, name: string): string {
  if (current === undefined || current === '') return name;
  const list = String(current ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!list.some((v) => v.toLowerCase() === name.toLowerCase() || v === '*')) list.push(name);
  return list.join(', ');
}

/** RFC 9110 §13.1.2: weak comparison; `*` matches any current representation. */
function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const opaque = etag.replace(/^W\//, '');
  return header
    .split(',')
    .map((s) => s.trim())
    .some((tag) => tag === '*' || tag.replace(/^W\//, '') === opaque);
}

/** Route patterns seen at registration, to tell 405 (known path, other method) from 404. */
interface KnownRoute {
  pattern: RegExp;
  methods: Set<string>;
}

function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => {
      if (segment === '*') return '.*';
      if (segment.startsWith(':')) return '[^/]+';
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  return new RegExp(`^${source}/?$`);
}

const KNOWN = Symbol('weft.knownRoutes');

function installMethodNotAllowed(app: FastifyInstance): void {
  const known = new Map<string, KnownRoute>();
  (app as unknown as Record<symbol, unknown>)[KNOWN] = known;
  app.addHook('onRoute', (route) => {
    // catch-all routes (the CORS preflight's `OPTIONS *`) say nothing about which paths exist
    if (route.url === '*' || route.url === '/*') return;
    let entry = known.get(route.url);
    if (!entry) {
      entry = { pattern: patternOf(route.url), methods: new Set() };
      known.set(route.url, entry);
    }
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) entry.methods.add(method);
  });
}

/**
 * The methods a path answers to (for 405 + Allow), or null when no route has this path.
 * Called by the not-found handler.
 */
export function allowedMethods(app: FastifyInstance, url: string): string[] | null {
  const known = (app as unknown as Record<symbol, Map<string, KnownRoute> | undefined>)[KNOWN];
  if (!known) return null;
  const path = url.split('?')[0] ?? '';
  const methods = new Set<string>();
  for (const { pattern, methods: m } of known.values()) if (pattern.test(path)) for (const x of m) methods.add(x);
  if (methods.size === 0) return null;
  return [...methods].sort();
}
