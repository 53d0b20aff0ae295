import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { badRequest } from '../errors.ts';

/**
 * What is wrong with a request URL before any route sees it, or null. Path parameters and
 * query values reach SQL as text: PostgreSQL cannot hold NUL, and a query value with broken
 * percent-encoding would otherwise be silently turned into U+FFFD.
 */
export function urlProblem(url: string): string | null {
  // the common case: nothing to check (no dot segment and no percent-encoding can occur)
  if (!url.includes('.') && !url.includes('%')) return null;
  const q0 = url.indexOf('?');
  // A `.` or `..` path segment (plain or percent-encoded) names no resource: clients normalise
  // them away, so one that reaches the server is a path trick, refused before routing.
  for (const segment of (q0 >= 0 ? url.slice(0, q0) : url).split('/')) {
    if (/^(\.|%2e){1,2}$/i.test(segment)) return 'The URL path must not contain "." or ".." segments.';
  }
  if (!url.includes('%')) return null;
  if (/%00/i.test(url)) return 'The URL must not contain NUL characters (%00).';
  const q = url.indexOf('?');
  if (q >= 0) {
    for (const part of url.slice(q + 1).split(/[&=]/)) {
      if (!part.includes('%')) continue;
      try {
        decodeURIComponent(part);
      } catch {
        return 'The query string has malformed percent-encoding or is not UTF-8.';
      }
    }
  }
  return null;
}

/** Refuses malformed URLs with 400 before authentication and routing work. */
export function installUrlCheck(app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const problem = urlProblem(request.url);
    done(problem ? badRequest(problem) : undefined);
  });
}

/**
 * Fastify's router failures (a path segment that is not valid percent-encoded UTF-8, a path
 * parameter over the length limit) leave as the error envelope like every other error.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  // These replies skip the onSend hooks that stamp every other response (app.ts).
  reply.header('x-request-id', request.id);
  if (error.code === 'FST_ERR_BAD_URL') {
    reply.status(400).send({ error: 'invalid_request', detail: 'The URL path has malformed percent-encoding or is not UTF-8.' });
  } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    reply.status(400).send({ error: 'invalid_request', detail: 'A path segment is too long.' });
  } else {
    reply.status(500).send({ error: 'internal_error', detail: 'An internal error occurred.' });
  }
}

/**
 * Requests Node's HTTP parser rejects before Fastify sees them (malformed request line or
 * headers, headers too large) are answered with the error envelope too, then the connection
 * is closed, as Node itself does.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let reason = 'Bad Request';
  let body = { error: 'invalid_request', detail: 'The HTTP request is malformed.' };
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    reason = 'Request Header Fields Too Large';
    body = { error: 'request_header_fields_too_large', detail: 'The request headers are too large.' };
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    reason = 'Request Timeout';
    body = { error: 'request_timeout', detail: 'The request took too long to arrive.' };
  }
  const text = JSON.stringify(body);
  if (socket.writable) {
    // No request was parsed, so no client-sent id to echo: a fresh one, like every other response.
    socket.write(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(text)}\r\nX-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy(err);
}
