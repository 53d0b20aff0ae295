import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { type RateDecision, countRequest, refundRequest } from './rate-counter.ts';

/** docs/behaviour.md "Events and scopes": the operations a stored rate-limit rule can name. */
export const RATE_LIMITED_OPERATIONS = [
  'api:ping-user',
  'api:signup',
  'api:login',
  'api:login-account',
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

/**
 * Signing in (`api:login`) is counted twice, per client address (`api:login`) and per account
 * asked for (`api:login-account`, caller `account:<username>`), and only when it fails: a
 * sign-in is counted before it runs (so parallel guesses cannot pass the limit together) and
 * given back once it answers a success (below 400).
 */
const ACCOUNT_SCOPE: Partial<Record<string, RateLimitedOperation>> = { 'api:login': 'api:login-account' };
const COUNT_FAILURES_ONLY = new Set<string>(['api:login']);

interface Counted {
  scope: string;
  caller: string;
  atMs: number;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The instrumented operation this route performs; its stored rate-limit rule applies. */
    rateLimit?: RateLimitedOperation;
  }
  interface FastifyRequest {
    /** counts to give back when the response is a success (failed sign-ins only are counted) */
    rateLimitRefunds?: Counted[];
  }
}

/**
 * The one hook that enforces stored rate-limit rules on every route whose config names a
 * `rateLimit` operation. It runs as a preHandler: after authentication and request validation
 * (a 401 or 400 is not counted), before the handler. A request that passes is counted whatever
 * the handler then answers (a 4xx too: a failed login is an attempt); a refused request is 429
 * and changes nothing. The caller is the authenticated user, or the client IP when anonymous
 * (`request.ip`: the socket address unless TRUST_PROXY says which proxies to believe);
 * `api:login` and `api:signup` always count by client IP; `api:login` counts failed sign-ins only,
 * per address and per account (`ACCOUNT_SCOPE`).
 */
export function installRateLimit(app: FastifyInstance, deps: Deps): void {
  // Synchronous for the routes without a rate-limited operation (most): no promise per request.
  app.addHook('preHandler', (request, reply, done) => {
    const operation = request.routeOptions.config?.rateLimit;
    if (!operation) return done();
    limit(request, reply, operation).then(() => done(), done);
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    const refunds = request.rateLimitRefunds;
    if (!refunds || reply.statusCode >= 400) return done(null, payload);
    request.rateLimitRefunds = undefined;
    Promise.all(refunds.map((c) => refundRequest(deps, c.scope, c.caller, c.atMs))).then(
      () => done(null, payload),
      (err: Error) => {
        request.log.warn({ err }, 'could not give back a rate-limit count');
        done(null, payload);
      },
    );
  });

  async function limit(request: FastifyRequest, reply: FastifyReply, operation: string): Promise<void> {
    // Logging in and signing up count per client address whatever the headers say: a token sent
    // along must not move the count to its user (each account would buy more password guesses).
    const byAddress = PER_ADDRESS.has(operation) || !request.viewer;
    const caller = byAddress ? `ip:${request.ip}` : `user:${request.viewer!.uuid}`;
    const counted: Counted[] = [];
    let decision = await countRequest(deps, operation, caller);
    if (decision?.atMs !== undefined) counted.push({ scope: operation, caller, atMs: decision.atMs });
    const accountScope = ACCOUNT_SCOPE[operation];
    const username = (request.body as { username?: unknown } | undefined)?.username;
    if (accountScope && typeof username === 'string' && (!decision || decision.allowed)) {
      const account = `account:${username.trim().toLowerCase()}`;
      const byAccount = await countRequest(deps, accountScope, account);
      if (byAccount?.atMs !== undefined) counted.push({ scope: accountScope, caller: account, atMs: byAccount.atMs });
      if (byAccount && (!decision || !byAccount.allowed || byAccount.remaining < decision.remaining)) {
        decision = byAccount;
        operation = byAccount.allowed ? operation : accountScope;
      }
    }
    if (decision && !decision.allowed) {
      // refused: nothing of this request stays counted
      await Promise.all(counted.map((c) => refundRequest(deps, c.scope, c.caller, c.atMs)));
    } else if (COUNT_FAILURES_ONLY.has(operation) && counted.length > 0) {
      request.rateLimitRefunds = counted;
    }
    if (!decision) return;
    refuseOrTell(reply, operation, decision);
  }

  function refuseOrTell(reply: FastifyReply, operation: string, decision: RateDecision): void {
    const headers = {
      'ratelimit-limit': String(decision.limit),
      'ratelimit-remaining': String(decision.remaining),
      'ratelimit-reset': String(decision.resetSeconds),
    };
    if (!decision.allowed) {
      throw new AppError(
        429,
        'rate_limited',
        operation === 'api:login' || operation === 'api:login-account'
          ? `Too many failed sign-ins ${operation === 'api:login' ? 'from this address' : 'for this account'} (${operation}: at most ${decision.limit} in the window). Retry in ${decision.resetSeconds} seconds.`
          : `Too many requests for ${operation}: at most ${decision.limit} in the window. Retry in ${decision.resetSeconds} seconds.`,
        undefined,
        { ...headers, 'retry-after': String(decision.resetSeconds) },
      );
    }
    reply.headers(headers);
  }
}
