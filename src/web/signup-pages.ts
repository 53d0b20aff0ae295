import { randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import { SESSION_COOKIE_NAME } from '../http/auth.ts';
import { SignupBody } from '../invites/schemas.ts';
import { signup } from '../invites/signup.ts';
import { SESSION_TTL_MS, startSession } from '../sessions/service.ts';
import { readSettings } from '../settings/service.ts';
import { findUserByUuid } from '../users/service.ts';
import { LOGIN_COOKIE, cookie } from './auth-pages.ts';
import { seeOther, sendPage } from './context.ts';
import { type FormState, attempt, field, formMessage, typedValues } from './forms.ts';
import { html } from './html.ts';
import { layout } from './layout.ts';
import { apiBody } from './api-body.ts';

const Text = (max: number) => Type.Optional(Type.String({ maxLength: max }));
const SignupQuery = Type.Object({ invite: Text(100) }, { additionalProperties: false });
const SignupForm = Type.Object(
  {
    _csrf: Text(100),
    username: Text(100),
    email: Text(254),
    display_name: Text(255),
    password: Text(256),
    invite_uuid: Text(100),
  },
  { additionalProperties: false },
);
const SIGNUP_FIELDS = ['username', 'email', 'display_name', 'password', 'invite_uuid'] as const;

async function signupPage(reply: FastifyReply, deps: Deps, invite: string | undefined, state?: FormState) {
  const settings = await readSettings(deps.db);
  // the sign-up form is bound to the browser that loaded it, as the sign-in form is (login CSRF)
  const bound = randomBytes(18).toString('base64url');
  reply.header('set-cookie', cookie(deps, LOGIN_COOKIE, bound, 3600));
  const needsInvite = settings.signups_require_invite === 1;
  const body =
    settings.signups_enabled !== 1
      ? html`<h1>Sign up</h1>
          <p class="error" role="alert">
            <strong>signups_disabled</strong>: Signups are disabled on this site. Ask the staff for an account.
          </p>
          <p><a href="/login">Sign in</a></p>`
      : html`<h1>Create your Weft account</h1>
          ${needsInvite ? html`<p class="muted">Signing up on this site needs an invite.</p>` : ''} ${formMessage(state)}
          <form class="stack" method="post" action="/signup">
            <input type="hidden" name="_csrf" value="${bound}" />
            ${field(state, { name: 'username', label: 'Username', required: true, autocomplete: 'username', maxlength: 39 })}
            ${field(state, { name: 'email', label: 'Email', type: 'email', required: true, autocomplete: 'email' })}
            ${field(state, { name: 'display_name', label: 'Display name (optional)', autocomplete: 'name' })}
            ${field(state, {
              name: 'password',
              label: 'Password',
              type: 'password',
              required: true,
              autocomplete: 'new-password',
              hint: '8 to 256 characters.',
            })}
            ${field(state, {
              name: 'invite_uuid',
              label: needsInvite ? 'Invite code' : 'Invite code (optional)',
              required: needsInvite,
              value: invite,
              autocomplete: 'off',
            })}
            <div><button type="submit" class="primary">Sign up</button></div>
          </form>
          <p>Already have an account? <a href="/login">Sign in</a></p>`;
  return sendPage(
    reply,
    layout({ title: 'Sign up', caller: null }, body),
    state?.status ?? (settings.signups_enabled === 1 ? 200 : 403),
  );
}

/**
 * `GET/POST /signup` (README "Web interface"): the API's signup (site settings and invites decide
 * who may), then a web session for the new user instead of an API token.
 */
export async function signupPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  app.get('/signup', { config: { public: true }, schema: { hide: true, querystring: SignupQuery } }, async (request, reply) => {
    if (request.page) return seeOther(reply, '/');
    return signupPage(reply, deps, (request.query as { invite?: string }).invite);
  });

  app.post(
    '/signup',
    // the stored rate-limit rule for api:signup applies here too (http/rate-limit.ts)
    { config: { public: true, rateLimit: 'api:signup' }, schema: { hide: true, body: SignupForm } },
    async (request, reply) => {
      const b = request.body as Record<string, string | undefined>;
      const values = typedValues(b);
      const result = await attempt(values, SIGNUP_FIELDS, () =>
        signup(
          deps,
          apiBody(SignupBody, {
            username: (b.username ?? '').trim(),
            email: (b.email ?? '').trim(),
            ...(b.display_name?.trim() ? { display_name: b.display_name.trim() } : {}),
            ...(b.password ? { password: b.password } : {}),
            ...(b.invite_uuid?.trim() ? { invite_uuid: b.invite_uuid.trim() } : {}),
          }),
          { token: false },
        ),
      );
      if (!result.ok) return signupPage(reply, deps, b.invite_uuid, result.state);
      const user = await findUserByUuid(deps.db, result.value.user.uuid);
      const { secret } = await startSession(deps, user!, request.headers['user-agent']);
      reply.header('set-cookie', [
        cookie(deps, SESSION_COOKIE_NAME, secret, SESSION_TTL_MS / 1000),
        cookie(deps, LOGIN_COOKIE, '', 0),
      ]);
      return seeOther(reply, '/');
    },
  );
}
