import type { Selectable } from 'kysely';
import type { AuthSourcesTable } from '../db/tables/signin.ts';

export type SourceRow = Selectable<AuthSourcesTable>;

export interface OidcConfig {
  issuer: string;
  client_id: string;
  scopes: string[];
  username_claim: string;
  email_claim: string;
  groups_claim: string;
}

export interface LdapConfig {
  url: string;
  start_tls: boolean;
  bind_dn: string;
  user_base: string;
  user_filter: string;
  username_attribute: string;
  email_attribute: string;
  group_base: string;
  group_filter: string;
  group_name_attribute: string;
}

/** A source as the sign-in paths use it: its settings and its opened secret. */
export interface Source {
  row: SourceRow;
  oidc: OidcConfig | null;
  ldap: LdapConfig | null;
  /** the client secret or bind password, opened ('' when none is stored) */
  secret(): string;
}
