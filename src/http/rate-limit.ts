import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { countRequest } from '../ratelimits/counter.ts';

/** docs/behaviour.md "Events and scopes": the operations a stored rate-limit rule can name. */
export const RATE_LIMITED_OPERATIONS = [
  'api:ping-user',
  'api:signup',
  'api:login',
  'api:create-token',
  'api:create-repo',
  'api:create-pull',
  'api:create-thread',
  'api:create-reply',
  'api:upload',
  'api:create-invite',
] as const;
export type RateLimitedOperation = (typeof RATE_LIMITED_OPERATIONS)[number];

/** Operations counted per client address even when the request carries a valid token. */
const PER_ADDRESS = new Set<string>(['api:login', 'api:signup']);

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The instrumented operation this route performs; its stored rate-limit rule applies. */
    rateLimit?: RateLimitedOperation;
  }
}

/**
 * The one hook that enforces stored rate-limit rules on every route whose config names a
 * `rateLimit` operation. It runs as a preHandler: after authentication and request validation
 * (a 401 or 400 is not counted), before the handler. A request that passes is counted whatever
 * the handler then answers (a 4xx too: a failed login is an attempt); a refused request is 429
 * and changes nothing. The caller is the authenticated user, or the client IP when anonymous
 * (`request.ip`: the socket address unless TRUST_PROXY says which proxies to believe);
 * `api:login` and `api:signup` always count by client IP.
 */
export function installRateLimit(app: FastifyInstance, deps: Deps): void {
  // Synchronous for the routes without a rate-limited operation (most): no promise per request.
  app.addHook('preHandler', (request, reply, done) => {
    const operation = request.routeOptions.config?.rateLimit;
    if (!operation) return done();
    limit(request, reply, operation).then(() => done(), done);
  });

  async function limit(request: FastifyRequest, reply: FastifyReply, operation: string): Promise<void> {
    // Logging in and signing up count per client address whatever the headers say: a token sent
    // along must not move the count to its user (each account would buy more password guesses).
    const byAddress = PER_ADDRESS.has(operation) || !request.viewer;
    const caller = byAddress ? `ip:${request.ip}` : `user:${request.viewer!.uuid}`;
    const decision = await countRequest(deps, operation, caller);
    if (!decision) return;
    const headers = {
      'ratelimit-limit': String(decision.limit),
      'ratelimit-remaining': String(decision.remaining),
      'ratelimit-reset': String(decision.resetSeconds),
    };
    if (!decision.allowed) {
      throw new AppError(
        429,
        'rate_limited',
        `Too many requests for ${operation}: at most ${decision.limit} in the window. Retry in ${decision.resetSeconds} seconds.`,
        undefined,
        { ...headers, 'retry-after': String(decision.resetSeconds) },
      );
    }
    reply.headers(headers);
  }
}
