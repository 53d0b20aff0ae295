import { Type } from '@sinclair/typebox';
import { StrictObject } from '../http/schemas.ts';

export const INVITE_CREATORS = ['staff', 'users'] as const;
export const MAX_INVITES_PER_24H = 1_000_000;
/** The highest value staff may set for a per-owner limit. */
export const MAX_OWNER_LIMIT = 1_000_000;

const fields = {
  rate_limits_enabled: Type.Boolean({ description: 'stored rate-limit rules are enforced only when this is true; default true' }),
  signup_invite_creators: Type.Union(
    INVITE_CREATORS.map((v) => Type.Literal(v)),
    {
      description:
        '`staff` (default): only staff create signup invites; `users`: also any active user whose account is at least signup_invite_min_account_age old',
    },
  ),
  signup_invite_max_per_24h: Type.Integer({
    minimum: 0,
    maximum: MAX_INVITES_PER_24H,
    description:
      'invites one non-staff user may create in any 24 hours (beyond it 429 rate_limited); staff are exempt; default 10',
  }),
  signup_invite_min_account_age: Type.String({
    minLength: 2,
    maxLength: 40,
    description:
      'a duration: whole numbers with units w, d, h, m, s, largest first (`7d`, `1d12h`, `0d`); at most 3650 days; default `7d`',
  }),
  max_timers_per_owner: Type.Integer({
    minimum: 0,
    maximum: MAX_OWNER_LIMIT,
    description:
      'unfinished (active or paused) timers one owner (a user, team or repo) may have; creating one more is 409 limit_reached; default 1000',
  }),
  max_reply_versions: Type.Integer({
    minimum: 1,
    maximum: MAX_OWNER_LIMIT,
    description: 'versions one reply may have (its first included); an edit beyond it is 409 limit_reached; default 1000',
  }),
  signups_enabled: Type.Boolean({ description: 'POST /signup is 403 signups_disabled when false; default true' }),
  signups_require_invite: Type.Boolean({ description: 'POST /signup needs an invite_uuid when true; default false' }),
  webhook_allowed_hosts: Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
    maxItems: 100,
    description:
      'what webhooks may reach although it is loopback, private, link-local, unique-local, multicast or unspecified: host names (matched against the URL host) and IP addresses or CIDR ranges (matched against the resolved address, e.g. `127.0.0.1`, `10.0.0.0/8`, `fd00::/8`); default empty. A bad entry is 400.',
  }),
};

export const SiteSettings = Type.Object(fields, { additionalProperties: false, title: 'SiteSettings' });
export const UpdateSiteSettingsBody = StrictObject({
  rate_limits_enabled: Type.Optional(fields.rate_limits_enabled),
  signup_invite_creators: Type.Optional(fields.signup_invite_creators),
  signup_invite_max_per_24h: Type.Optional(fields.signup_invite_max_per_24h),
  signup_invite_min_account_age: Type.Optional(fields.signup_invite_min_account_age),
  signups_enabled: Type.Optional(fields.signups_enabled),
  signups_require_invite: Type.Optional(fields.signups_require_invite),
  max_timers_per_owner: Type.Optional(fields.max_timers_per_owner),
  max_reply_versions: Type.Optional(fields.max_reply_versions),
  webhook_allowed_hosts: Type.Optional(fields.webhook_allowed_hosts),
});
