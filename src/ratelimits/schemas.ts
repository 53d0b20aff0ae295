import { Type } from '@sinclair/typebox';
import { RATE_LIMITED_OPERATIONS } from '../http/rate-limit.ts';
import { PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';

/** Caps (the specification asks only for positive integers): 100,000 requests, 7 days. */
export const MAX_RULE_REQUESTS = 100_000;
export const MAX_RULE_WINDOW_SECONDS = 7 * 86_400;

const Scope = Type.Union(
  RATE_LIMITED_OPERATIONS.map((v) => Type.Literal(v)),
  { description: 'an instrumented operation; unique among rules' },
);
const MaxRequests = Type.Integer({ minimum: 1, maximum: MAX_RULE_REQUESTS, description: 'positive; at most 100000' });
const WindowSeconds = Type.Integer({
  minimum: 1,
  maximum: MAX_RULE_WINDOW_SECONDS,
  description: 'positive; at most 604800 (7 days)',
});

export const RateLimitRule = Type.Object(
  {
    uuid: Type.String(),
    scope: Scope,
    max_requests: MaxRequests,
    window_seconds: WindowSeconds,
    is_enabled: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false, title: 'RateLimitRule' },
);

export const CreateRuleBody = StrictObject({
  scope: Scope,
  max_requests: MaxRequests,
  window_seconds: WindowSeconds,
  is_enabled: Type.Boolean(),
});
export const UpdateRuleBody = StrictObject({
  scope: Type.Optional(Scope),
  max_requests: Type.Optional(MaxRequests),
  window_seconds: Type.Optional(WindowSeconds),
  is_enabled: Type.Optional(Type.Boolean()),
});
export const ListRulesQuery = Type.Object({ ...PageQuery });
export const RuleParams = Type.Object({ uuid: Type.String({ maxLength: 100 }) });
