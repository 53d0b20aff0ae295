import type { FastifyError, FastifyInstance } from 'fastify';
import { AppError } from '../errors.ts';
import { allowedMethods } from './conventions.ts';

const CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  410: 'gone',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'request_header_fields_too_large',
  503: 'service_unavailable',
  507: 'insufficient_storage',
};

const FULL_DISK_DETAIL =
  'The server has no storage left for this write (its disk is full); nothing was changed. Retry once space is freed.';

/**
 * Whether an error means the storage is full: a file write (ENOSPC, EDQUOT), PostgreSQL's
 * disk_full (53100), SQLite's SQLITE_FULL, or a git command that said so on stderr.
 */
export function isStorageFull(err: unknown): boolean {
  const e = err as { code?: unknown; result?: { stderr?: unknown }; message?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  if (e.code === 'ENOSPC' || e.code === 'EDQUOT' || e.code === '53100' || e.code === 'SQLITE_FULL') return true;
  const stderr = typeof e.result?.stderr === 'string' ? e.result.stderr : '';
  return /No space left on device|Disk quota exceeded/.test(stderr);
}

/** Could not get a process or a file descriptor: a 503 for this request, the server carries on. */
function isResourceExhaustion(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'EMFILE' || code === 'ENFILE' || code === 'EAGAIN';
}

export const WWW_AUTHENTICATE = 'Bearer realm="api", Basic realm="api"';

/** The API's detail of a failed validation (also the settings pages' forms: src/web/settings-common.ts). */
export function validationDetail(error: Pick<FastifyError, 'validation' | 'validationContext' | 'message'>): string {
  const first = error.validation?.[0];
  const where = error.validationContext ?? 'request';
  if (!first) return error.message;
  const path = first.instancePath ? `${where}${first.instancePath.replace(/\//g, '.')}` : where;
  if (first.keyword === 'additionalProperties') {
    const prop = (first.params as { additionalProperty?: string }).additionalProperty;
    return `${where} has an unknown property "${prop}".`;
  }
  if (first.keyword === 'required') {
    const prop = (first.params as { missingProperty?: string }).missingProperty;
    return `${where} is missing the required property "${prop}".`;
  }
  const allowed = allowedValues(error.validation!, first.instancePath);
  if (allowed) return `${path} must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}.`;
  return `${path} ${first.message ?? 'is invalid'}.`;
}

/**
 * The values an enum allows, when the failure is one: an `enum`, or the `const` branches of a
 * union of literals (whose own message, "must be equal to constant", names none of them).
 */
function allowedValues(errors: NonNullable<FastifyError['validation']>, at: string): unknown[] | null {
  const first = errors[0]!;
  if (first.keyword === 'enum')
    return ((first.params as { allowedValues?: unknown[] }).allowedValues ?? null) as unknown[] | null;
  if (first.keyword !== 'const') return null;
  return errors
    .filter((e) => e.keyword === 'const' && e.instancePath === at)
    .map((e) => (e.params as { allowedValue?: unknown }).allowedValue);
}

/** Every failure, ours or Fastify's, leaves as the error envelope (docs/behaviour.md "Conventions"). */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    if (error instanceof AppError) {
      if (error.status === 401) reply.header('www-authenticate', WWW_AUTHENTICATE);
      if (error.headers) reply.headers(error.headers);
      const body: Record<string, unknown> = { error: error.code, detail: error.detail };
      if (error.conflictPaths) body.conflict_paths = error.conflictPaths;
      return reply.status(error.status).send(body);
    }
    if (error.validation) {
      return reply.status(400).send({ error: 'invalid_request', detail: validationDetail(error) });
    }
    const status = typeof error.statusCode === 'number' ? error.statusCode : 500;
    if (status >= 400 && status < 500) {
      let detail = error.message;
      if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') detail = 'Request body is too large.';
      if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
        detail = `Unsupported Content-Type "${request.headers['content-type'] ?? ''}"; send application/json.`;
      return reply.status(status).send({ error: CODE_BY_STATUS[status] ?? 'invalid_request', detail });
    }
    if (isStorageFull(error)) {
      request.log.error({ err: error }, 'storage full');
      return reply.status(507).send({ error: 'insufficient_storage', detail: FULL_DISK_DETAIL });
    }
    if (isResourceExhaustion(error)) {
      request.log.error({ err: error }, 'out of file descriptors or processes');
      return reply.status(503).header('retry-after', '5').send({
        error: 'service_unavailable',
        detail: 'The server is out of file descriptors or processes; retry after 5 seconds.',
      });
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply.status(500).send({ error: 'internal_error', detail: 'An internal error occurred.' });
  });

  app.setNotFoundHandler((request, reply) => {
    // A known path asked with another method: 405 with the methods it answers to.
    const allowed = allowedMethods(app, request.url);
    if (allowed && !allowed.includes(request.method)) {
      return reply
        .status(405)
        .header('allow', allowed.join(', '))
        .send({ error: 'method_not_allowed', detail: `${request.method} is not allowed here; use ${allowed.join(', ')}.` });
    }
    return reply.status(404).send({ error: 'not_found', detail: `No route for ${request.method} ${request.url.split('?')[0]}.` });
  });
}
