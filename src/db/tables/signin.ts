import type { Bool01 } from './bool.ts';

/** A staff-managed sign-in source (migration 420, docs/signin.md). */
export interface AuthSourcesTable {
  uuid: string;
  /** 'oidc' | 'ldap' */
  kind: string;
  name: string;
  display_name: string;
  enabled: Bool01;
  auto_create_users: Bool01;
  satisfies_two_factor: Bool01;
  /** JSON: the kind's non-secret settings */
  settings: string;
  /** the client secret or bind password, sealed with the server secret (purpose auth-source-secret) */
  secret: string | null;
  created_at: string;
  updated_at: string;
}

/** A user's TOTP secret (migration 420): sealed (purpose totp-secret), active once confirmed. */
export interface UserTotpTable {
  user_uuid: string;
  secret: string;
  confirmed_at: string | null;
  /** the time step of the last accepted code (a code is accepted once) */
  last_step: number | string | null;
  created_at: string;
}

/** A single-use recovery code (migration 420), stored as SHA-256. */
export interface RecoveryCodesTable {
  uuid: string;
  user_uuid: string;
  code_hash: string;
  used_at: string | null;
  created_at: string;
}

/** An identity of a sign-in source linked to a user (migration 420). */
export interface UserIdentitiesTable {
  uuid: string;
  user_uuid: string;
  source_uuid: string;
  subject: string;
  created_at: string;
  last_used_at: string | null;
}

/** A group-sync rule (migration 491): members of `group_name` at `source_uuid` get `role` in the team. */
export interface TeamSyncRulesTable {
  uuid: string;
  team_uuid: string;
  source_uuid: string;
  group_name: string;
  role: string;
  created_at: string;
}

/** A user's passkey (migration 560): a WebAuthn credential, its public key and signature counter. */
export interface PasskeysTable {
  uuid: string;
  user_uuid: string;
  /** base64url, as the browser names it */
  credential_id: string;
  /** base64url COSE public key */
  public_key: string;
  counter: number | string;
  /** JSON array of the authenticator's transports */
  transports: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
}

/** A WebAuthn challenge handed out (migration 560): used once, before `expires_at`. */
export interface WebauthnChallengesTable {
  challenge: string;
  /** 'register' | 'sign-in' | 'second-step' */
  purpose: string;
  user_uuid: string | null;
  /** the sign-in form's cookie the challenge was given to (sign-ins) */
  bound: string | null;
  expires_at: string;
}

export interface SigninTables {
  passkeys: PasskeysTable;
  webauthn_challenges: WebauthnChallengesTable;
  team_sync_rules: TeamSyncRulesTable;
  auth_sources: AuthSourcesTable;
  user_totp: UserTotpTable;
  recovery_codes: RecoveryCodesTable;
  user_identities: UserIdentitiesTable;
}
