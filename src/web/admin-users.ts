import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { CreateUserBody } from '../users/schemas.ts';
import { type UserRow, createUser, getUser, listUsers, updateUser } from '../users/service.ts';
import { type PageCaller, pageWindow, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt, checked, emptyForm, field, formMessage } from './forms.ts';
import { type Html, html, pager, seg, when } from './html.ts';
import { csrfField } from './layout.ts';
import { apiBody } from './api-body.ts';
import { Check, Csrf, PageNumber, Text, UsernameParam, adminPage, typedForm } from './admin-common.ts';

const ListQuery = Type.Object({ search: Text(100), page: PageNumber }, { additionalProperties: false });
const NewUserForm = Type.Object(
  { _csrf: Csrf, username: Text(100), email: Text(254), display_name: Text(255), password: Text(256), is_staff: Check },
  { additionalProperties: false },
);
const FlagForm = Type.Object(
  { _csrf: Csrf, is_staff: Text(5), is_active: Text(5), confirm: Text(100) },
  { additionalProperties: false },
);
const USER_FIELDS = ['username', 'email', 'display_name', 'password', 'is_staff'] as const;
const USERS_PER_PAGE = 30;

const flags = (u: UserRow) =>
  html`${u.is_staff ? html` <span class="badge">staff</span>` : ''}${u.is_active ? '' : html` <span class="badge closed">deactivated</span>`}`;

async function usersPage(deps: Deps, c: PageCaller, q: { search?: string; page?: number }, state?: FormState): Promise<Html> {
  const w = pageWindow(q, USERS_PER_PAGE);
  const search = q.search?.trim() || undefined;
  const rows = await listUsers(deps, c.viewer, { search, offset: w.offset, limit: w.limit });
  const body = html`<form class="row" method="get" action="/admin/users" role="search">
      <label for="user-search">Search</label>
      <input id="user-search" name="search" type="search" value="${search ?? ''}" maxlength="100" />
      <button type="submit">Search</button>
    </form>
    ${
      rows.length
        ? html`<ul class="plain" aria-label="Users">
            ${rows.slice(0, w.perPage).map(
              (u) =>
                html`<li>
                  <a href="/admin/users/${seg(u.username)}">${u.username}</a>${flags(u)}
                  <span class="muted">${u.display_name} ${u.email ?? ''} · joined ${when(u.created_at)}</span>
                </li>`,
            )}
          </ul>`
        : html`<p class="muted">No users${search ? html` match &ldquo;${search}&rdquo;` : ''}.</p>`
    }
    ${pager('/admin/users', w.page, rows.length > w.perPage, search ? { search } : {})}
    <h2 id="new-user-h">Create a user</h2>
    ${formMessage(state)}
    <form class="stack" method="post" action="/admin/users" aria-labelledby="new-user-h">
      ${csrfField(c)} ${field(state, { name: 'username', label: 'Username', required: true, autocomplete: 'off', maxlength: 39 })}
      ${field(state, { name: 'email', label: 'Email', type: 'email', required: true, autocomplete: 'off' })}
      ${field(state, { name: 'display_name', label: 'Display name (optional)', autocomplete: 'off' })}
      ${field(state, {
        name: 'password',
        label: 'Password (optional)',
        type: 'password',
        autocomplete: 'new-password',
        hint: '8 to 256 characters; without one the user signs in only after a password is set.',
      })}
      ${field(state, { name: 'is_staff', label: 'Staff', type: 'checkbox', value: false })}
      <div><button type="submit" class="primary">Create user</button></div>
    </form>`;
  return adminPage(c, 'users', 'Users', body);
}

async function userPage(deps: Deps, c: PageCaller, username: string, state?: FormState): Promise<Html> {
  const u = await getUser(deps, c.viewer, username);
  const action = `/admin/users/${seg(u.username)}`;
  const body = html`<h2>${u.username}${flags(u)}</h2>
    <p class="muted">
      ${u.display_name} ${u.email ?? ''} · joined ${when(u.created_at)} · <a href="/users/${seg(u.username)}">profile</a>
    </p>
    ${formMessage(state)}
    <form method="post" action="${action}">
      ${csrfField(c)}<input type="hidden" name="is_staff" value="${u.is_staff ? 'false' : 'true'}" />
      <button type="submit">${u.is_staff ? 'Remove staff rights' : 'Make staff'}</button>
    </form>
    <h2>${u.is_active ? 'Deactivate' : 'Reactivate'}</h2>
    ${
      u.is_active
        ? html`<p class="muted">
              A deactivated user cannot sign in; their tokens and sessions stop working and they are hidden from everyone but
              staff.
            </p>
            <form method="post" action="${action}" class="stack danger">
              ${csrfField(c)}<input type="hidden" name="is_active" value="false" />
              ${field(state, { name: 'confirm', label: `Type ${u.username} to confirm`, required: true, autocomplete: 'off', idPrefix: 'danger' })}
              <div><button type="submit" class="danger">Deactivate ${u.username}</button></div>
            </form>`
        : html`<form method="post" action="${action}">
            ${csrfField(c)}<input type="hidden" name="is_active" value="true" /><button type="submit" class="primary">
              Reactivate
            </button>
          </form>`
    }`;
  return adminPage(c, 'users', `User ${u.username}`, body);
}

/** Staff pages of users: search, create, deactivate and reactivate, staff rights (README "Web interface"). */
export async function adminUserPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  app.get('/admin', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
    const c = requirePage(request);
    // the staff rule of the users list decides who reaches the staff pages (403 to others)
    await listUsers(deps, c.viewer, { offset: 0, limit: 1 });
    return seeOther(reply, '/admin/users');
  });

  app.get(
    '/admin/users',
    { config: { public: true }, schema: { hide: true, querystring: ListQuery } },
    async (request, reply) => {
      const c = requirePage(request);
      return sendPage(reply, await usersPage(deps, c, request.query as { search?: string; page?: number }));
    },
  );

  app.post('/admin/users', { config: { public: true }, schema: { hide: true, body: NewUserForm } }, async (request, reply) => {
    const c = requirePage(request);
    const b = request.body as { username?: string; email?: string; display_name?: string; password?: string; is_staff?: unknown };
    const values = typedForm(b);
    const result = await attempt(values, USER_FIELDS, () =>
      createUser(
        deps,
        c.viewer,
        apiBody(CreateUserBody, {
          username: b.username ?? '',
          email: b.email ?? '',
          ...(b.display_name ? { display_name: b.display_name } : {}),
          ...(b.password ? { password: b.password } : {}),
          is_staff: checked(b.is_staff),
        }),
      ),
    );
    if (!result.ok) return sendPage(reply, await usersPage(deps, c, {}, result.state), result.state.status);
    return seeOther(reply, `/admin/users/${seg(result.value.user.username)}`);
  });

  app.get(
    '/admin/users/:username',
    { config: { public: true }, schema: { hide: true, params: UsernameParam } },
    async (request, reply) => {
      const c = requirePage(request);
      // the staff page of a user: staff only, as listing users is
      await listUsers(deps, c.viewer, { offset: 0, limit: 1 });
      return sendPage(reply, await userPage(deps, c, (request.params as { username: string }).username));
    },
  );

  app.post(
    '/admin/users/:username',
    { config: { public: true }, schema: { hide: true, params: UsernameParam, body: FlagForm } },
    async (request, reply) => {
      const c = requirePage(request);
      const username = (request.params as { username: string }).username;
      const b = request.body as { is_staff?: string; is_active?: string; confirm?: string };
      if (b.is_active === 'false' && b.confirm?.trim().toLowerCase() !== username.toLowerCase()) {
        await listUsers(deps, c.viewer, { offset: 0, limit: 1 });
        const state: FormState = {
          ...emptyForm({ confirm: b.confirm ?? '' }),
          errors: { confirm: `Type ${username} to confirm: the user was not deactivated.` },
          status: 400,
        };
        return sendPage(reply, await userPage(deps, c, username, state), 400);
      }
      const input = {
        ...(b.is_staff === undefined ? {} : { is_staff: b.is_staff === 'true' }),
        ...(b.is_active === undefined ? {} : { is_active: b.is_active === 'true' }),
      };
      const result = await attempt({}, [], () => updateUser(deps, c.viewer, username, input));
      if (!result.ok) return sendPage(reply, await userPage(deps, c, username, result.state), result.state.status);
      return seeOther(reply, `/admin/users/${seg(result.value.username)}`);
    },
  );
}
