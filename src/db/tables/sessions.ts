import type { Generated } from 'kysely';
import type { Bool01 } from './bool.ts';
/** A signed-in browser (migration 160): its cookie secret is stored only as a SHA-256. */
export interface WebSessionsTable {
  uuid: string;
  user_uuid: string;
  secret_hash: string;
  /** the browser's User-Agent at sign-in (at most 200 characters), to tell sessions apart */
  user_agent: string;
  created_at: string;
  last_used_at: string;
  /** 30 days after the last use (sliding) */
  expires_at: string;
  revoked_at: string | null;
  /** 1 when started through a source that satisfies the second factor (migration 490) */
  two_factor: Generated<Bool01>;
}

/** A short-lived secret that opens one scope's live stream without a header (migration 160). */
export interface StreamTicketsTable {
  uuid: string;
  secret_hash: string;
  user_uuid: string;
  /** 'token' | 'session' */
  credential_kind: string;
  credential_uuid: string;
  scope: string;
  kind: string | null;
  created_at: string;
  expires_at: string;
}

export interface SessionsTables {
  web_sessions: WebSessionsTable;
  stream_tickets: StreamTicketsTable;
}
