import type { Generated } from 'kysely';
import type { Bool01 } from './bool.ts';

/** The one row (id 1) of site settings (README "Rate limits, site settings, signup invites, signup"). */
export interface SiteSettingsTable {
  id: number;
  rate_limits_enabled: Bool01;
  signup_invite_creators: string; // 'staff' | 'users'
  signup_invite_max_per_24h: number;
  signup_invite_min_account_age: string; // a duration such as 7d
  signups_enabled: Bool01;
  signups_require_invite: Bool01;
  /** unfinished (active or paused) timers one owner may have (migration 180) */
  max_timers_per_owner: Generated<number>;
  /** versions one reply may have (migration 180) */
  max_reply_versions: Generated<number>;
  /** JSON array of host names, IP addresses and CIDR ranges webhooks may reach (migration 140) */
  webhook_allowed_hosts: string;
  /** every user needs a second factor (migration 490) */
  require_two_factor: Generated<Bool01>;
  updated_at: string;
}

export interface RateLimitRulesTable {
  uuid: string;
  scope: string;
  max_requests: number;
  window_seconds: number;
  is_enabled: Bool01;
  created_at: string;
  updated_at: string;
}

/** One counted request of one caller under one rule scope. */
export interface RateLimitHitsTable {
  id: Generated<number>;
  scope: string;
  caller: string;
  at_ms: number;
}

export interface SignupInvitesTable {
  uuid: string;
  email: string | null;
  expires_at: string;
  created_by_uuid: string;
  created_at: string;
  updated_at: string;
  accepted_at: string | null;
  accepted_by_uuid: string | null;
}

export interface LimitsTables {
  site_settings: SiteSettingsTable;
  rate_limit_rules: RateLimitRulesTable;
  rate_limit_hits: RateLimitHitsTable;
  signup_invites: SignupInvitesTable;
}
