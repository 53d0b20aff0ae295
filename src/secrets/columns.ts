/**
 * Every column that holds a value sealed with the server secret (src/secrets/server-secret.ts),
 * with the purpose it was sealed for. `weft rotate-secret-key` re-seals exactly these, so a domain
 * that stores a sealed value adds its column here (and nowhere else).
 */
export interface SealedColumn {
  table: string;
  /** the table's primary key column */
  key: string;
  column: string;
  /** the additional authenticated data the value was sealed with */
  purpose: string;
}

export const SEALED_COLUMNS: SealedColumn[] = [
  // sign-in sources: the OIDC client secret or the LDAP bind password (docs/signin.md)
  { table: 'auth_sources', key: 'uuid', column: 'secret', purpose: 'auth-source-secret' },
  // TOTP secrets of users' second factor
  { table: 'user_totp', key: 'user_uuid', column: 'secret', purpose: 'totp-secret' },
  // imports and mirrors: the source's or the push mirror's username and password (docs/bring-in.md)
  { table: 'repo_imports', key: 'repo_uuid', column: 'credentials', purpose: 'mirror-credentials' },
  { table: 'push_mirrors', key: 'uuid', column: 'credentials', purpose: 'mirror-credentials' },
  // CI secrets of repos and teams (docs/ci.md "Secrets and variables")
  { table: 'ci_secrets', key: 'uuid', column: 'value', purpose: 'ci-secret' },
];
