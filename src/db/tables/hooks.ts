import type { Generated } from 'kysely';
import type { Bool01 } from './bool.ts';

/** A webhook (migration 140, src/hooks). */
export interface HooksTable {
  uuid: string;
  /** 'repo' | 'team' | 'site' */
  scope: string;
  /** the repo or team; null for a site hook */
  owner_uuid: string | null;
  url: string;
  /** JSON array of event kinds, or ["*"] */
  events: string;
  branch_filter: string | null;
  active: Bool01;
  secret: string;
  /** the secret before the last rotation, also signing until previous_secret_until */
  previous_secret: string | null;
  previous_secret_until: string | null;
  /** older secrets still inside their overlap, JSON `[{secret, until}]` (migration 330) */
  retired_secrets: Generated<string>;
  created_by_uuid: string;
  /** events with ids at or below this were committed before the hook existed */
  since_event_id: number;
  last_delivery_at: string | null;
  last_status: string | null;
  consecutive_failures: number;
  disabled_reason: string | null;
  /** the lease of the worker sending this hook's first attempts (one at a time, in order) */
  sender_until: string | null;
  sender_token: string | null;
  created_at: string;
  updated_at: string;
}

export interface HookDeliveriesTable {
  id: Generated<number>;
  uuid: string;
  hook_uuid: string;
  event_id: number | null;
  event_kind: string;
  /** a ping's event as JSON; null for a stored event */
  ping: string | null;
  /** 'pending' | 'success' | 'failed' | 'skipped' (written while the hook was disabled) */
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  /** the lease of the worker making an attempt now */
  locked_until: string | null;
  /** why a skipped delivery was not sent: the hook's disabled_reason then (migration 330) */
  skip_reason: string | null;
  created_at: string;
}

export interface HookAttemptsTable {
  delivery_uuid: string;
  n: number;
  at: string;
  duration_ms: number;
  request_headers: string;
  /** the body sent (migration 200); null for attempts made before it, or that sent nothing */
  request_body: string | null;
  response_status: number | null;
  response_headers: string | null;
  response_body: string | null;
  error: string | null;
}

export interface HookDispatchTable {
  id: number;
  last_event_id: number;
}

export interface HooksTables {
  hooks: HooksTable;
  hook_deliveries: HookDeliveriesTable;
  hook_attempts: HookAttemptsTable;
  hook_dispatch: HookDispatchTable;
}
