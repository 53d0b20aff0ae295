import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';

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

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The instrumented operation this route performs; its stored rate-limit rule applies. */
    rateLimit?: RateLimitedOperation;
  }
}

/**
 * The one hook that enforces stored rate-limit rules on every route whose config names a
 * `rateLimit` operation. Rules are stored by the rate-limit domain; until it lands there are no
 * rules, so nothing is limited.
 */
export function installRateLimit(_app: FastifyInstance, _deps: Deps): void {}
