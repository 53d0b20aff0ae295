import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { UpdateUserBody } from '../users/schemas.ts';
import { checkCredentials, getUser, updateUser, userToJson } from '../users/service.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from './context.ts';
import { attempt, field, formMessage, typedValues } from './forms.ts';
import { type Html, html } from './html.ts';
import { csrfField, layout } from './layout.ts';
import { FormBody, type FormFields, type States, checkBody, stateOf, statusOf, tabs, text } from './settings-common.ts';

/** The user settings tabs (README "Web interface"). */
export const userTabs = (current: string): Html =>
  tabs(
    'Settings',
    [
      ['/settings', 'Profile'],
      ['/settings/tokens', 'API tokens'],
      ['/settings/sessions', 'Sessions'],
      ['/settings/keys', 'SSH keys'],
      ['/settings/security', 'Security'],
      ['/settings/notifications', 'Notifications'],
    ],
    current,
  );

export const settingsPage = (c: PageCaller, title: string, current: string, body: Html): Html =>
  layout(
    { title, caller: c },
    html`<h1>Settings</h1>
      ${userTabs(current)}${body}`,
  );

const PING_OPTIONS = [
  ['everyone', 'Everyone may ping me'],
  ['team_only', 'Only people who share a team with me'],
  ['disabled', 'Nobody (pings are refused)'],
] as const;

/** `/settings`: profile, email, password and the ping-mention policy, through `updateUser` (PATCH /users/{u}). */
export async function userSettingsPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const profilePage = async (reply: FastifyReply, c: PageCaller, states: States = {}) => {
    const me = userToJson(await getUser(deps, c.viewer, c.viewer.username), c.viewer);
    const profile = stateOf(states, 'profile');
    const email = stateOf(states, 'email');
    const password = stateOf(states, 'password');
    const body = html`<section aria-labelledby="profile-h">
        <h2 id="profile-h">Profile</h2>
        <p class="muted">Signed in as <strong>${me.username}</strong>${me.is_staff ? ' (staff)' : ''}.</p>
        ${formMessage(profile)}
        <form class="stack" method="post" action="/settings/profile">
          ${csrfField(c)}
          ${field(profile, { name: 'display_name', label: 'Full name', value: me.display_name, maxlength: 255, autocomplete: 'name' })}
          ${field(profile, {
            name: 'ping_mentions',
            label: 'Who may ping me',
            type: 'select',
            value: me.ping_mentions,
            options: PING_OPTIONS,
            hint: 'Pings are @mentions and direct pings (POST /users/{u}/ping).',
          })}
          <div><button type="submit" class="primary">Save profile</button></div>
        </form>
      </section>
      <section aria-labelledby="email-h">
        <h2 id="email-h">Email</h2>
        ${formMessage(email)}
        <form class="stack" method="post" action="/settings/email">
          ${csrfField(c)}
          ${field(email, { name: 'email', label: 'Email', type: 'email', value: me.email, required: true, autocomplete: 'email' })}
          <div><button type="submit" class="primary">Save email</button></div>
        </form>
      </section>
      <section aria-labelledby="password-h">
        <h2 id="password-h">Password</h2>
        ${formMessage(password)}
        <form class="stack" method="post" action="/settings/password">
          ${csrfField(c)}
          ${field(password, { name: 'current_password', label: 'Current password', type: 'password', required: true, autocomplete: 'current-password' })}
          ${field(password, {
            name: 'new_password',
            label: 'New password',
            type: 'password',
            required: true,
            autocomplete: 'new-password',
            hint: '8 to 256 characters.',
          })}
          <div><button type="submit" class="primary">Change password</button></div>
        </form>
      </section>`;
    return sendPage(reply, settingsPage(c, 'Settings', '/settings', body), statusOf(states));
  };

  app.get('/settings', { config: { public: true }, schema: { hide: true } }, async (request, reply) =>
    profilePage(reply, requirePage(request)),
  );

  const post = { config: { public: true }, schema: { hide: true, body: FormBody } };

  app.post('/settings/profile', post, async (request, reply) => {
    const c = requirePage(request);
    const body = request.body as FormFields;
    const input = { display_name: text(body, 'display_name'), ping_mentions: text(body, 'ping_mentions') };
    const done = await attempt(typedValues(body), ['display_name', 'ping_mentions'], async () => {
      checkBody(UpdateUserBody, input);
      return updateUser(deps, c.viewer, c.viewer.username, input);
    });
    if (!done.ok) return profilePage(reply, c, { profile: done.state });
    return seeOther(reply, '/settings');
  });

  app.post('/settings/email', post, async (request, reply) => {
    const c = requirePage(request);
    const body = request.body as FormFields;
    const input = { email: text(body, 'email').trim() };
    const done = await attempt(typedValues(body), ['email'], async () => {
      checkBody(UpdateUserBody, input);
      return updateUser(deps, c.viewer, c.viewer.username, input);
    });
    if (!done.ok) return profilePage(reply, c, { email: done.state });
    return seeOther(reply, '/settings');
  });

  app.post('/settings/password', post, async (request, reply) => {
    const c = requirePage(request);
    const body = request.body as FormFields;
    const input = { password: text(body, 'new_password') };
    const done = await attempt({}, ['current_password', 'password'], async () => {
      try {
        await checkCredentials(deps, c.viewer.username, text(body, 'current_password'));
      } catch (err) {
        if (err instanceof AppError && err.status === 401) {
          throw new AppError(403, 'forbidden', 'The current password is not right.');
        }
        throw err;
      }
      checkBody(UpdateUserBody, input);
      return updateUser(deps, c.viewer, c.viewer.username, input);
    });
    if (!done.ok) {
      const s = done.state;
      // the API names the new password `password`; the form has two
      if (s.errors.password) s.errors = { new_password: s.errors.password };
      return profilePage(reply, c, { password: s });
    }
    return seeOther(reply, '/settings');
  });
}
