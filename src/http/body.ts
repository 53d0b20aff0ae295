import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, badRequest } from '../errors.ts';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
// In a u-mode regex a surrogate pair is one code point, so only unpaired halves match.
const LONE_SURROGATE = /\p{Cs}/u;
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Rejects prototype-poisoning keys and NUL characters (PostgreSQL text cannot hold them). */
function checkValue(value: unknown, depth: number): void {
  if (depth > 32) throw badRequest('JSON body is nested too deeply.');
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw badRequest('Strings must not contain NUL characters.');
    // "\ud800" is valid JSON but no Unicode text: it cannot be stored as UTF-8.
    if (LONE_SURROGATE.test(value)) throw badRequest('Strings must be valid Unicode (no unpaired surrogates).');
  } else if (Array.isArray(value)) {
    for (const item of value) checkValue(item, depth + 1);
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (FORBIDDEN_KEYS.has(key)) throw badRequest(`Property "${key}" is not allowed.`);
      if (key.includes('\u0000')) throw badRequest('Property names must not contain NUL characters.');
      checkValue(item, depth + 1);
    }
  }
}

/**
 * The JSON body parser: UTF-8 must be valid, the JSON well formed and an object; an empty body
 * is no body.
 */
export function installJsonParser(app: FastifyInstance): void {
  // Only application/json is accepted by default (README "Conventions": not +json types such as
  // application/merge-patch+json, whose rules differ); anything else is 415 (uploads register their
  // own parsers).
  app.removeContentTypeParser(['application/json', 'text/plain']);
  // Fastify tests a RegExp parser against the whole header, parameters included
  // (`application/json; charset=utf-8`), so the pattern must allow them.
  app.addContentTypeParser(/^application\/json\s*(;|$)/i, { parseAs: 'buffer' }, (req, body, done) => {
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      return done(new AppError(415, 'unsupported_media_type', 'JSON bodies must be UTF-8 (charset=utf-8).'), undefined);
    }
    // Bodies are read as sent: a compressed one would otherwise be parsed as if it were plain.
    const encoding = req.headers['content-encoding']?.trim().toLowerCase();
    if (encoding && encoding !== 'identity') {
      return done(
        new AppError(
          415,
          'unsupported_media_type',
          `Content-Encoding "${encoding}" is not supported; send the body uncompressed.`,
        ),
        undefined,
      );
    }
    const buffer = body as Buffer;
    if (buffer.length === 0) return done(null, undefined);
    let text: string;
    try {
      text = strictUtf8.decode(buffer);
    } catch {
      return done(new AppError(400, 'invalid_request', 'Request body is not valid UTF-8.'), undefined);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      return done(badRequest(`Malformed JSON body: ${(err as Error).message}`), undefined);
    }
    // Every JSON body of this API is an object; `null`, arrays, strings and numbers are not
    // bodies a route can take (and `null` must not pass for "no body").
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      return done(badRequest('The request body must be a JSON object.'), undefined);
    }
    try {
      checkValue(parsed, 0);
    } catch (err) {
      return done(err as Error, undefined);
    }
    done(null, parsed);
  });
}

/**
 * preValidation for routes that take no body (docs/behaviour.md "Conventions": unknown properties are 400). No
 * body, or an empty JSON object (some clients always send one), is accepted; anything else 400.
 */
function noBody(request: FastifyRequest): void {
  const body = request.body;
  if (body === undefined || body === null) return;
  if (typeof body === 'object' && !Array.isArray(body) && Object.keys(body).length === 0) return;
  throw badRequest('This endpoint takes no request body.');
}

/**
 * Every route that declares no body schema refuses a body (see noBody), in one place. Callback
 * style: it runs on every request, and an async hook costs a promise and a microtask turn.
 */
export function installNoBodyCheck(app: FastifyInstance): void {
  app.addHook('preValidation', (request, _reply, done) => {
    if (request.method === 'GET' || request.method === 'HEAD') {
      // Fastify does not parse a GET's body; one that is sent is refused rather than ignored.
      const length = request.headers['content-length'];
      if ((length !== undefined && length.trim() !== '0') || request.headers['transfer-encoding'] !== undefined)
        return done(badRequest(`A ${request.method} request takes no body.`));
      return done();
    }
    if (request.routeOptions.url === undefined || request.routeOptions.schema?.body) return done();
    try {
      noBody(request);
    } catch (err) {
      return done(err as Error);
    }
    done();
  });
}
