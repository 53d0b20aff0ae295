import { Type } from '@sinclair/typebox';
import {
  NoControl,
  NullableInteger,
  NullableString,
  NullableTimestamp,
  PageQuery,
  StrictObject,
  Timestamp,
} from '../http/schemas.ts';

const Enum = <T extends string>(values: readonly T[], description?: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    description ? { description } : {},
  );

export const DISABLED_REASONS = ['failures', 'gone', 'creator_lost_access'] as const;
export const DELIVERY_STATUSES = ['pending', 'success', 'failed', 'skipped'] as const;

const Url = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'where deliveries are POSTed: an http:// or https:// URL, at most 2,048 characters',
});
const Events = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  minItems: 1,
  maxItems: 100,
  description: 'event kinds to deliver (README "Event kinds"), or `["*"]` for every kind; an unknown kind is 400',
});
const BranchFilter = NullableString({
  minLength: 1,
  maxLength: 255,
  pattern: NoControl.pattern,
  description:
    'no control characters; a glob (`*` within a path segment, `**` across segments, `?`, `{a,b}`) matched against the branch of branch-pushed events, ' +
    "a pull event's target branch and any branch of a status event; other events are not filtered; null: every branch",
});

export const Hook = Type.Object(
  {
    uuid: Type.String(),
    url: Type.String(),
    events: Type.Array(Type.String()),
    branch_filter: NullableString(),
    active: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
    created_by_username: Type.String({ description: 'deliveries show events as this user may see them at delivery time' }),
    last_delivery_at: NullableTimestamp,
    last_status: Type.Unsafe<'success' | 'failed' | null>({ type: ['string', 'null'], enum: ['success', 'failed', null] }),
    consecutive_failures: Type.Integer({
      minimum: 0,
      description: 'failed attempts since the last success; the hook is disabled at 20',
    }),
    disabled_reason: Type.Unsafe<(typeof DISABLED_REASONS)[number] | null>({
      type: ['string', 'null'],
      enum: [...DISABLED_REASONS, null],
      description: 'why the hook was turned off by Weft: failures (20 in a row), gone (a 410 answer), creator_lost_access',
    }),
  },
  { additionalProperties: false, title: 'Hook' },
);

export const CreatedHook = Type.Object(
  {
    ...Hook.properties,
    secret: Type.String({ description: 'the signing secret (`whsec_<base64>`), shown only in this answer' }),
    warnings: Type.Array(Type.String(), {
      description:
        'advice in sentences, empty when none: e.g. the URL resolves only to addresses deliveries refuse (see webhook_allowed_hosts)',
    }),
  },
  { additionalProperties: false, title: 'CreatedHook' },
);

export const CreateHookBody = StrictObject({
  url: Url,
  events: Events,
  branch_filter: Type.Optional(BranchFilter),
  active: Type.Optional(Type.Boolean({ description: 'default true' })),
  secret: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: '`whsec_` and the base64 of 24 to 64 random bytes; generated (32 bytes) when absent',
    }),
  ),
});

export const UpdateHookBody = StrictObject({
  url: Type.Optional(Url),
  events: Type.Optional(Events),
  branch_filter: Type.Optional(BranchFilter),
  active: Type.Optional(
    Type.Boolean({ description: 'true re-enables a disabled hook and resets consecutive_failures and disabled_reason' }),
  ),
});

export const SecretBody = Type.Object(
  { secret: Type.String({ description: 'the new secret, shown only here; the old one also signs for 24 hours' }) },
  { additionalProperties: false },
);

export const Attempt = Type.Object(
  {
    at: Timestamp,
    duration_ms: Type.Integer({ minimum: 0 }),
    request_headers: Type.Record(Type.String(), Type.String()),
    request_body: NullableString({
      description:
        'the body this attempt sent (`{hook_uuid, event}`); null when nothing was sent (address_not_allowed, event_not_visible) or for attempts recorded before Weft kept bodies',
    }),
    response_status: NullableInteger(),
    response_headers: Type.Unsafe<Record<string, string> | null>({
      type: ['object', 'null'],
      additionalProperties: { type: 'string' },
    }),
    response_body: NullableString({ description: 'the first 64 KiB of the answer, as text' }),
    error: NullableString({
      description:
        'why the attempt failed without a 2xx answer: address_not_allowed, timeout, redirect, connection_error: …, or null',
    }),
  },
  { additionalProperties: false, title: 'HookAttempt' },
);

export const Delivery = Type.Object(
  {
    uuid: Type.String({ description: 'also the `webhook-id` header of every attempt' }),
    event_id: NullableString({ description: 'the event delivered; null for a ping' }),
    event_kind: Type.String(),
    status: Enum(
      DELIVERY_STATUSES,
      'skipped: written while the hook was disabled (failures or gone), not sent; POST …/deliveries/redeliver sends it',
    ),
    skip_reason: NullableString({ description: "a skipped delivery's reason: the hook's disabled_reason then; else null" }),
    attempts: Type.Integer({ minimum: 0 }),
    next_attempt_at: NullableTimestamp,
    created_at: Timestamp,
    last_attempt: Type.Union([Attempt, Type.Null()]),
  },
  { additionalProperties: false, title: 'HookDelivery' },
);

export const ListDeliveriesQuery = Type.Object(
  { ...PageQuery, status: Type.Optional(Enum(DELIVERY_STATUSES, 'only deliveries in this status')) },
  { additionalProperties: false },
);

export const Accepted = Type.Object(
  { delivery_uuid: Type.String({ description: 'the delivery that will be attempted' }) },
  { additionalProperties: false, 'x-response-description': 'Accepted: the attempt is queued' },
);

export const RedeliverManyBody = StrictObject({
  status: Enum(['failed', 'skipped'] as const, 'which deliveries to send again'),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'only deliveries created at or after this time' })),
});

export const RedeliverManyAccepted = Type.Object(
  { count: Type.Integer({ minimum: 0, description: 'how many deliveries were put back in line (at most 1,000)' }) },
  { additionalProperties: false, 'x-response-description': 'Accepted: the deliveries are queued' },
);
