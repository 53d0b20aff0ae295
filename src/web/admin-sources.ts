import type { Static } from '@sinclair/typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { assertCanManageAuthSources } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { CreateAuthSourceBody, UpdateAuthSourceBody } from '../signin/schemas.ts';
import {
  type AuthSourceJson,
  createSource,
  deleteSource,
  getSource,
  listSources,
  testSource,
  updateSource,
} from '../signin/sources.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt, emptyForm, field, formMessage, typedValues } from './forms.ts';
import { type Html, html, seg } from './html.ts';
import { csrfField } from './layout.ts';
import { apiBody } from './api-body.ts';
import { UuidParams, adminPage } from './admin-common.ts';
import { FormBody, type FormFields, confirmButton, lines, text } from './settings-common.ts';

/** Staff page "Sign-in sources" (docs/signin.md): add, change, test and remove OIDC and LDAP sources. */

const SECRET_FIELDS = ['oidc_client_secret', 'ldap_bind_password'];
const FIELDS = [
  'name',
  'display_name',
  'issuer',
  'client_id',
  'scopes',
  'url',
  'user_base',
  'user_filter',
  'group_filter',
] as const;

const flag = (body: FormFields, name: string) => {
  const v = body[name];
  return Array.isArray(v) ? v.includes('on') : v === 'on';
};
const opt = (body: FormFields, name: string) => {
  const v = text(body, name).trim();
  return v === '' ? undefined : v;
};

/** The API body a source form stands for (the kind's settings only). */
function sourceBody(body: FormFields, kind: string, creating: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {
    name: text(body, 'name').trim(),
    display_name: text(body, 'display_name').trim(),
    enabled: flag(body, 'enabled'),
    auto_create_users: flag(body, 'auto_create_users'),
    satisfies_two_factor: flag(body, 'satisfies_two_factor'),
  };
  if (creating) out.kind = kind;
  const secretOf = (name: string) => {
    // empty: none when creating, the stored one kept when changing
    const v = text(body, name);
    return v === '' ? undefined : v;
  };
  if (kind === 'oidc') {
    const scopes = lines(text(body, 'oidc_scopes').replace(/\s+/g, ','));
    out.oidc = {
      issuer: text(body, 'oidc_issuer').trim(),
      client_id: text(body, 'oidc_client_id').trim(),
      ...(secretOf('oidc_client_secret') !== undefined ? { client_secret: secretOf('oidc_client_secret') } : {}),
      ...(scopes.length ? { scopes } : {}),
      ...(opt(body, 'oidc_username_claim') ? { username_claim: opt(body, 'oidc_username_claim') } : {}),
      ...(opt(body, 'oidc_email_claim') ? { email_claim: opt(body, 'oidc_email_claim') } : {}),
      ...(opt(body, 'oidc_groups_claim') ? { groups_claim: opt(body, 'oidc_groups_claim') } : {}),
    };
  } else {
    const l: Record<string, unknown> = {
      url: text(body, 'ldap_url').trim(),
      start_tls: flag(body, 'ldap_start_tls'),
      bind_dn: text(body, 'ldap_bind_dn').trim(),
      user_base: text(body, 'ldap_user_base').trim(),
    };
    if (secretOf('ldap_bind_password') !== undefined) l.bind_password = secretOf('ldap_bind_password');
    for (const k of [
      'user_filter',
      'username_attribute',
      'email_attribute',
      'group_base',
      'group_filter',
      'group_name_attribute',
    ]) {
      const v = opt(body, `ldap_${k}`);
      if (v !== undefined) l[k] = v;
    }
    out.ldap = l;
  }
  return out;
}

function sourceForm(c: PageCaller, state: FormState, s: AuthSourceJson | null): Html {
  const o = s?.oidc;
  const l = s?.ldap;
  const idPrefix = s ? `src-${s.uuid}` : 'new-src';
  const f = (
    name: string,
    label: string,
    value: string | boolean | null | undefined,
    extra: Partial<Parameters<typeof field>[1]> = {},
  ) => field(state, { name, label, value: value ?? '', idPrefix, ...extra });
  return html`<form class="stack" method="post" action="${s ? `/admin/auth-sources/${seg(s.uuid)}` : '/admin/auth-sources'}">
    ${csrfField(c)}
    ${
      s
        ? html`<p>Kind: <strong>${s.kind === 'oidc' ? 'OpenID Connect' : 'LDAP'}</strong></p>`
        : f('kind', 'Kind', 'oidc', {
            type: 'select',
            options: [
              ['oidc', 'OpenID Connect'],
              ['ldap', 'LDAP'],
            ],
          })
    }
    ${f('name', 'Name', s?.name, { required: true, maxlength: 39, hint: 'A slug: the address /login/oidc/{name} and what team sync rules name.' })}
    ${f('display_name', 'Display name', s?.display_name, { required: true, maxlength: 100, hint: 'Shown as "Sign in with {display name}".' })}
    ${f('enabled', 'Enabled', s ? s.enabled : true, { type: 'checkbox' })}
    ${f('auto_create_users', 'Create a user at the first sign-in', s ? s.auto_create_users : true, { type: 'checkbox' })}
    ${f('satisfies_two_factor', 'Counts as a second factor (the directory asks for one)', s ? s.satisfies_two_factor : false, { type: 'checkbox' })}
    ${
      !s || s.kind === 'oidc'
        ? html`<fieldset class="stack">
            <legend>OpenID Connect</legend>
            ${f('oidc_issuer', 'Issuer URL', o?.issuer, { type: 'url' })} ${f('oidc_client_id', 'Client ID', o?.client_id)}
            ${f('oidc_client_secret', 'Client secret', '', {
              type: 'password',
              autocomplete: 'off',
              hint: o?.client_secret_set ? 'A secret is stored; leave empty to keep it.' : 'Stored encrypted, never shown again.',
            })}
            ${f('oidc_scopes', 'Scopes', o ? o.scopes.join(' ') : 'openid profile email groups')}
            ${f('oidc_username_claim', 'Username claim', o?.username_claim ?? 'preferred_username')}
            ${f('oidc_email_claim', 'Email claim', o?.email_claim ?? 'email')}
            ${f('oidc_groups_claim', 'Groups claim', o?.groups_claim ?? 'groups')}
          </fieldset>`
        : ''
    }
    ${
      !s || s.kind === 'ldap'
        ? html`<fieldset class="stack">
            <legend>LDAP</legend>
            ${f('ldap_url', 'Server URL', l?.url, { hint: 'ldap://host:389 or ldaps://host:636' })}
            ${f('ldap_start_tls', 'Use StartTLS', l?.start_tls ?? false, { type: 'checkbox' })}
            ${f('ldap_bind_dn', 'Service bind DN', l?.bind_dn, { hint: 'Empty: search anonymously.' })}
            ${f('ldap_bind_password', 'Service bind password', '', {
              type: 'password',
              autocomplete: 'off',
              hint: l?.bind_password_set
                ? 'A password is stored; leave empty to keep it.'
                : 'Stored encrypted, never shown again.',
            })}
            ${f('ldap_user_base', 'User search base', l?.user_base)}
            ${f('ldap_user_filter', 'User filter', l?.user_filter ?? '(uid={username})')}
            ${f('ldap_username_attribute', 'Username attribute', l?.username_attribute ?? 'uid')}
            ${f('ldap_email_attribute', 'Email attribute', l?.email_attribute ?? 'mail')}
            ${f('ldap_group_base', 'Group search base', l?.group_base, { hint: 'Empty: groups are not read.' })}
            ${f('ldap_group_filter', 'Group filter', l?.group_filter ?? '(member={dn})')}
            ${f('ldap_group_name_attribute', 'Group name attribute', l?.group_name_attribute ?? 'cn')}
          </fieldset>`
        : ''
    }
    <div><button type="submit" class="primary">${s ? 'Save source' : 'Add source'}</button></div>
  </form>`;
}

async function sourcesPage(
  deps: Deps,
  c: PageCaller,
  state: FormState = emptyForm(),
  tested?: { uuid: string; ok: boolean; detail: string },
) {
  const rows = await listSources(deps, c.viewer);
  const body = html`${
      rows.length
        ? html`<ul class="plain" aria-label="Sign-in sources">
            ${rows.map(
              (s) =>
                html`<li id="source-${s.uuid}">
                  <a href="/admin/auth-sources/${seg(s.uuid)}"><strong>${s.display_name}</strong></a>
                  <code>${s.name}</code>
                  <span class="badge">${s.kind === 'oidc' ? 'OIDC' : 'LDAP'}</span>
                  <span class="badge ${s.enabled ? 'open' : 'closed'}">${s.enabled ? 'enabled' : 'disabled'}</span>
                  <form method="post" action="/admin/auth-sources/${seg(s.uuid)}/test" class="row">
                    ${csrfField(c)}<button type="submit">Test</button>
                  </form>
                  ${
                    tested?.uuid === s.uuid
                      ? html`<p class="${tested.ok ? 'ok' : 'error'}" role="status" id="test-result">
                          ${tested.ok ? 'Works: ' : 'Failed: '}${tested.detail}
                        </p>`
                      : ''
                  }
                </li>`,
            )}
          </ul>`
        : html`<p class="muted">No sign-in sources: people sign in with their Weft password.</p>`
    }
    <h2 id="new-source-h">Add a source</h2>
    ${formMessage(state)} ${sourceForm(c, state, null)}`;
  return adminPage(c, 'sources', 'Sign-in sources', body);
}

async function sourcePage(deps: Deps, c: PageCaller, uuid: string, state: FormState = emptyForm()) {
  const s = await getSource(deps, c.viewer, uuid);
  const body = html`<h2>${s.display_name}</h2>
    ${formMessage(state)} ${sourceForm(c, state, s)}
    <h2>Remove</h2>
    <p>Removing a source unlinks the identities signed in through it; the users stay.</p>
    ${confirmButton({ action: `/admin/auth-sources/${seg(s.uuid)}/delete`, csrf: c.csrf, label: 'Remove source', question: 'Remove this source?' })}`;
  return adminPage(c, 'sources', 'Sign-in sources', body);
}

const values = (body: unknown) => typedValues(body, ['password', ...SECRET_FIELDS]);

export async function adminSourcePages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  app.get('/admin/auth-sources', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    const c = requirePage(request);
    return sendPage(reply, await sourcesPage(deps, c));
  });

  app.post(
    '/admin/auth-sources',
    { config: { public: true }, schema: { hide: true, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      assertCanManageAuthSources(c.viewer);
      const body = request.body as FormFields;
      const kind = text(body, 'kind') === 'ldap' ? 'ldap' : 'oidc';
      const result = await attempt(values(body), FIELDS, () =>
        createSource(
          deps,
          c.viewer,
          apiBody(CreateAuthSourceBody, sourceBody(body, kind, true)) as Static<typeof CreateAuthSourceBody>,
        ),
      );
      if (!result.ok) return sendPage(reply, await sourcesPage(deps, c, result.state), result.state.status);
      return seeOther(reply, `/admin/auth-sources#source-${result.value.uuid}`);
    },
  );

  app.get(
    '/admin/auth-sources/:uuid',
    { config: { public: true }, schema: { hide: true, params: UuidParams } },
    async (request, reply) => {
      const c = requirePage(request);
      return sendPage(reply, await sourcePage(deps, c, (request.params as { uuid: string }).uuid));
    },
  );

  app.post(
    '/admin/auth-sources/:uuid',
    { config: { public: true }, schema: { hide: true, params: UuidParams, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      const uuid = (request.params as { uuid: string }).uuid;
      const current = await getSource(deps, c.viewer, uuid);
      const body = request.body as FormFields;
      const result = await attempt(values(body), FIELDS, () =>
        updateSource(
          deps,
          c.viewer,
          uuid,
          apiBody(UpdateAuthSourceBody, sourceBody(body, current.kind, false)) as Static<typeof UpdateAuthSourceBody>,
        ),
      );
      if (!result.ok) return sendPage(reply, await sourcePage(deps, c, uuid, result.state), result.state.status);
      return seeOther(reply, `/admin/auth-sources#source-${uuid}`);
    },
  );

  app.post(
    '/admin/auth-sources/:uuid/test',
    {
      config: { public: true },
      schema: { hide: true, params: UuidParams, body: Type.Object({ _csrf: Type.Optional(Type.String({ maxLength: 100 })) }) },
    },
    async (request, reply) => {
      const c = requirePage(request);
      const uuid = (request.params as { uuid: string }).uuid;
      const result = await testSource(deps, c.viewer, uuid);
      return sendPage(reply, await sourcesPage(deps, c, emptyForm(), { uuid, ...result }));
    },
  );

  app.post(
    '/admin/auth-sources/:uuid/delete',
    { config: { public: true }, schema: { hide: true, params: UuidParams, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      await deleteSource(deps, c.viewer, (request.params as { uuid: string }).uuid);
      return seeOther(reply, '/admin/auth-sources');
    },
  );
}
