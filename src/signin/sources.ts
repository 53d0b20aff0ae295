import { randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import type { LdapConfig, OidcConfig, Source, SourceRow } from './types.ts';

import { assertCanManageAuthSources } from '../access/index.ts';
import { command } from '../core/command.ts';
import { anyUser } from '../core/targets.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import {
  type AuthSource,
  type AuthSourceTest,
  type CreateAuthSourceBody,
  DEFAULT_OIDC_SCOPES,
  type UpdateAuthSourceBody,
} from './schemas.ts';

/** Sign-in sources (docs/signin.md "Signing in with your directory"): staff-managed OIDC and LDAP. */
export type { LdapConfig, OidcConfig, Source, SourceRow } from './types.ts';

export type AuthSourceJson = Static<typeof AuthSource>;
type CreateBody = Static<typeof CreateAuthSourceBody>;
type UpdateBody = Static<typeof UpdateAuthSourceBody>;

export const SOURCE_SECRET_PURPOSE = 'auth-source-secret';

export function sourceOf(deps: Deps, row: SourceRow): Source {
  const settings = JSON.parse(row.settings) as OidcConfig | LdapConfig;
  return {
    row,
    oidc: row.kind === 'oidc' ? (settings as OidcConfig) : null,
    ldap: row.kind === 'ldap' ? (settings as LdapConfig) : null,
    secret: () => (row.secret ? deps.secret.open(SOURCE_SECRET_PURPOSE, row.secret) : ''),
  };
}

export function sourceToJson(row: SourceRow): AuthSourceJson {
  const settings = JSON.parse(row.settings) as Record<string, unknown>;
  const has = row.secret !== null;
  return {
    uuid: row.uuid,
    kind: row.kind as 'oidc' | 'ldap',
    name: row.name,
    display_name: row.display_name,
    enabled: row.enabled === 1,
    auto_create_users: row.auto_create_users === 1,
    satisfies_two_factor: row.satisfies_two_factor === 1,
    oidc:
      row.kind === 'oidc' ? ({ ...(settings as unknown as OidcConfig), client_secret_set: has } as AuthSourceJson['oidc']) : null,
    ldap:
      row.kind === 'ldap' ? ({ ...(settings as unknown as LdapConfig), bind_password_set: has } as AuthSourceJson['ldap']) : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

function httpUrl(value: string, field: string): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw badRequest(`${field} must be an http or https URL.`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw badRequest(`${field} must be an http or https URL.`);
  return url.href.replace(/\/$/, '');
}

type OidcInput = NonNullable<CreateBody['oidc']>;
type LdapInput = NonNullable<CreateBody['ldap']>;

function oidcConfig(input: OidcInput): OidcConfig {
  const scopes = input.scopes ?? DEFAULT_OIDC_SCOPES;
  if (!scopes.includes('openid')) throw badRequest('oidc.scopes must include "openid".');
  return {
    issuer: httpUrl(input.issuer, 'oidc.issuer'),
    client_id: input.client_id.trim(),
    scopes: [...new Set(scopes)],
    username_claim: input.username_claim?.trim() || 'preferred_username',
    email_claim: input.email_claim?.trim() || 'email',
    groups_claim: input.groups_claim?.trim() || 'groups',
  };
}

function ldapConfig(input: LdapInput): LdapConfig {
  const url = input.url.trim();
  if (!/^ldaps?:\/\/[^\s/]+\/?$/i.test(url)) throw badRequest('ldap.url must be ldap://host[:port] or ldaps://host[:port].');
  const filter = input.user_filter?.trim() || '(uid={username})';
  if (!filter.includes('{username}')) throw badRequest('ldap.user_filter must contain {username}.');
  if (!filter.startsWith('(') || !filter.endsWith(')'))
    throw badRequest('ldap.user_filter must be an LDAP filter in parentheses.');
  const groupFilter = input.group_filter?.trim() || '(member={dn})';
  if (!groupFilter.startsWith('(') || !groupFilter.endsWith(')')) {
    throw badRequest('ldap.group_filter must be an LDAP filter in parentheses.');
  }
  if (input.start_tls && /^ldaps:/i.test(url))
    throw badRequest('ldap.start_tls applies to ldap:// only (ldaps:// is TLS already).');
  return {
    url: url.replace(/\/$/, ''),
    start_tls: input.start_tls ?? false,
    bind_dn: input.bind_dn?.trim() ?? '',
    user_base: input.user_base.trim(),
    user_filter: filter,
    username_attribute: input.username_attribute?.trim() || 'uid',
    email_attribute: input.email_attribute?.trim() || 'mail',
    group_base: input.group_base?.trim() ?? '',
    group_filter: groupFilter,
    group_name_attribute: input.group_name_attribute?.trim() || 'cn',
  };
}

const bool = (v: boolean | undefined, dflt: boolean): 0 | 1 => ((v ?? dflt) ? 1 : 0);

async function findSource(db: Kysely<DB>, uuid: string): Promise<SourceRow> {
  const row = await db.selectFrom('auth_sources').selectAll().where('uuid', '=', uuid).executeTakeFirst();
  if (!row) throw notFound('Sign-in source');
  return row;
}

async function assertNameFree(db: Kysely<DB>, name: string, except?: string): Promise<void> {
  let q = db.selectFrom('auth_sources').select('uuid').where('name', '=', name);
  if (except) q = q.where('uuid', '!=', except);
  if (await q.executeTakeFirst()) throw conflict('source_name_taken', `A sign-in source named ${name} exists.`);
}

export async function listSources(deps: Deps, viewer: Viewer): Promise<AuthSourceJson[]> {
  assertCanManageAuthSources(viewer);
  const rows = await deps.db.selectFrom('auth_sources').selectAll().orderBy('created_at').orderBy('uuid').execute();
  return rows.map(sourceToJson);
}

/** The enabled sources of a kind, in the order they were created (LDAP sign-in tries them in turn). */
export async function enabledSources(deps: Deps, kind?: 'oidc' | 'ldap'): Promise<Source[]> {
  let q = deps.db.selectFrom('auth_sources').selectAll().where('enabled', '=', 1);
  if (kind) q = q.where('kind', '=', kind);
  const rows = await q.orderBy('created_at').orderBy('uuid').execute();
  return rows.map((r) => sourceOf(deps, r));
}

export async function sourceByName(deps: Deps, name: string): Promise<Source | null> {
  const row = await deps.db.selectFrom('auth_sources').selectAll().where('name', '=', name).executeTakeFirst();
  return row ? sourceOf(deps, row) : null;
}

export async function getSource(deps: Deps, viewer: Viewer, uuid: string): Promise<AuthSourceJson> {
  assertCanManageAuthSources(viewer);
  return sourceToJson(await findSource(deps.db, uuid));
}

function kindSettings(kind: 'oidc' | 'ldap', body: { oidc?: OidcInput | null; ldap?: LdapInput | null }) {
  if (kind === 'oidc') {
    if (!body.oidc) throw badRequest('An oidc source needs oidc settings.');
    if (body.ldap) throw badRequest('An oidc source has no ldap settings.');
    return { settings: oidcConfig(body.oidc), secret: body.oidc.client_secret };
  }
  if (!body.ldap) throw badRequest('An ldap source needs ldap settings.');
  if (body.oidc) throw badRequest('An ldap source has no oidc settings.');
  return { settings: ldapConfig(body.ldap), secret: body.ldap.bind_password };
}

export async function createSource(deps: Deps, viewer: Viewer, body: CreateBody): Promise<AuthSourceJson> {
  assertCanManageAuthSources(viewer);
  const { settings, secret } = kindSettings(body.kind, body);
  return command(deps, viewer, anyUser, async (tx) => {
    await assertNameFree(tx.db, body.name);
    const now = nowIso();
    const row: SourceRow = {
      uuid: randomUUID(),
      kind: body.kind,
      name: body.name,
      display_name: body.display_name.trim(),
      enabled: bool(body.enabled, true),
      auto_create_users: bool(body.auto_create_users, true),
      satisfies_two_factor: bool(body.satisfies_two_factor, false),
      settings: JSON.stringify(settings),
      secret: secret ? deps.secret.seal(SOURCE_SECRET_PURPOSE, secret) : null,
      created_at: now,
      updated_at: now,
    };
    await tx.db.insertInto('auth_sources').values(row).execute();
    return sourceToJson(row);
  });
}

export async function updateSource(deps: Deps, viewer: Viewer, uuid: string, body: UpdateBody): Promise<AuthSourceJson> {
  assertCanManageAuthSources(viewer);
  return command(deps, viewer, anyUser, async (tx) => {
    const row = await findSource(tx.db, uuid);
    const kind = row.kind as 'oidc' | 'ldap';
    if (kind === 'oidc' && body.ldap) throw badRequest('An oidc source has no ldap settings.');
    if (kind === 'ldap' && body.oidc) throw badRequest('An ldap source has no oidc settings.');
    const next: SourceRow = { ...row, updated_at: nowIso() };
    if (body.name !== undefined && body.name !== row.name) {
      await assertNameFree(tx.db, body.name, uuid);
      next.name = body.name;
    }
    if (body.display_name !== undefined) next.display_name = body.display_name.trim();
    if (body.enabled !== undefined) next.enabled = body.enabled ? 1 : 0;
    if (body.auto_create_users !== undefined) next.auto_create_users = body.auto_create_users ? 1 : 0;
    if (body.satisfies_two_factor !== undefined) next.satisfies_two_factor = body.satisfies_two_factor ? 1 : 0;
    const input = kind === 'oidc' ? body.oidc : body.ldap;
    if (input) {
      const { settings, secret } = kindSettings(kind, kind === 'oidc' ? { oidc: body.oidc } : { ldap: body.ldap });
      next.settings = JSON.stringify(settings);
      // an omitted secret keeps the stored one; an empty one removes it
      if (secret !== undefined) next.secret = secret ? deps.secret.seal(SOURCE_SECRET_PURPOSE, secret) : null;
    }
    await tx.db
      .updateTable('auth_sources')
      .set({
        name: next.name,
        display_name: next.display_name,
        enabled: next.enabled,
        auto_create_users: next.auto_create_users,
        satisfies_two_factor: next.satisfies_two_factor,
        settings: next.settings,
        secret: next.secret,
        updated_at: next.updated_at,
      })
      .where('uuid', '=', uuid)
      .execute();
    return sourceToJson(next);
  });
}

export async function deleteSource(deps: Deps, viewer: Viewer, uuid: string): Promise<void> {
  assertCanManageAuthSources(viewer);
  await command(deps, viewer, anyUser, async (tx) => {
    await findSource(tx.db, uuid);
    await tx.db.deleteFrom('user_identities').where('source_uuid', '=', uuid).execute();
    await tx.db.deleteFrom('auth_sources').where('uuid', '=', uuid).execute();
  });
}

const reason = (err: unknown): string => {
  const e = err as { message?: string; code?: string; cause?: { message?: string; code?: string } };
  const parts = [e?.message, e?.cause?.code ?? e?.cause?.message].filter((x): x is string => Boolean(x));
  return (parts.join(': ') || String(err)).slice(0, 500);
};

/** `POST /admin/auth-sources/{uuid}/test`: OIDC discovery, or an LDAP connection, bind and base search. */
export async function testSource(deps: Deps, viewer: Viewer, uuid: string): Promise<Static<typeof AuthSourceTest>> {
  assertCanManageAuthSources(viewer);
  const source = sourceOf(deps, await findSource(deps.db, uuid));
  let secret: string;
  try {
    secret = source.secret();
  } catch (err) {
    return { ok: false, detail: `The stored secret does not open with the server secret (${reason(err)}): enter it again.` };
  }
  if (source.oidc) {
    const { discover } = await import('./oidc-client.ts');
    try {
      const config = await discover(source, secret, true);
      const meta = config.serverMetadata();
      return {
        ok: true,
        detail: `Discovery at ${source.oidc.issuer} answered: issuer ${meta.issuer}, authorization endpoint ${meta.authorization_endpoint ?? 'missing'}.`,
      };
    } catch (err) {
      return { ok: false, detail: `Discovery at ${source.oidc.issuer} failed: ${reason(err)}` };
    }
  }
  const { ldapCheck } = await import('./ldap.ts');
  return ldapCheck(source.ldap!, secret);
}
