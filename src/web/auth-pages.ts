import { randomBytes } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { SESSION_COOKIE_NAME } from '../http/auth.ts';
import { revokeSession } from '../sessions/service.ts';
import { type PasswordSignIn, passwordSignIn } from '../signin/password-signin.ts';
import { hasSecondFactor } from '../signin/two-factor.ts';
import { enabledSources } from '../signin/sources.ts';
import { finishSignIn, passkeyForm, startSecondStep } from './signin-pages.ts';
import { readSettings } from '../settings/service.ts';
import { requirePage, seeOther, sendPage } from './context.ts';
import { html } from './html.ts';
import { layout } from './layout.ts';
import { firstRunNote, isFirstRun } from './first-run-state.ts';

export { LOGIN_COOKIE, cookie, localPath } from './cookies.ts';
import { LOGIN_COOKIE, cookie, localPath } from './cookies.ts';

const LoginForm = Type.Object(
  {
    _csrf: Type.Optional(Type.String({ maxLength: 100 })),
    username: Type.String({ maxLength: 200 }),
    password: Type.String({ maxLength: 1000 }),
    next: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { additionalProperties: false },
);
const LogoutForm = Type.Object({ _csrf: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false });

export async function loginPageFor(
  reply: FastifyReply,
  deps: Deps,
  next: string,
  opts: { error?: string; username?: string; status?: number } = {},
) {
  const canSignUp = (await readSettings(deps.db)).signups_enabled === 1;
  const firstRun = await isFirstRun(deps);
  const sources = await enabledSources(deps, 'oidc');
  const bound = randomBytes(18).toString('base64url');
  reply.header('set-cookie', cookie(deps, LOGIN_COOKIE, bound, 3600));
  return sendPage(
    reply,
    layout(
      { title: 'Sign in', caller: null },
      html`<h1>Sign in to Weft</h1>
        ${firstRun ? firstRunNote() : ''} ${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
        <form class="stack" method="post" action="/login">
          <input type="hidden" name="_csrf" value="${bound}" />
          <input type="hidden" name="next" value="${next}" />
          <label for="username">Username</label>
          <input id="username" name="username" type="text" autocomplete="username" required value="${opts.username ?? ''}" />
          <label for="password">Password</label>
          <input id="password" name="password" type="password" autocomplete="current-password" required />
          <div><button type="submit" class="primary">Sign in</button></div>
        </form>
        ${passkeyForm(bound, next, '/login/passkey', 'Sign in with a passkey')}
        ${
          sources.length
            ? html`<ul class="plain" aria-label="Other ways to sign in">
                ${sources.map(
                  (s) =>
                    html`<li>
                      <a class="button" href="/login/oidc/${encodeURIComponent(s.row.name)}?next=${encodeURIComponent(next)}"
                        >Sign in with ${s.row.display_name}</a
                      >
                    </li>`,
                )}
              </ul>`
            : ''
        }
        ${canSignUp ? html`<p>New here? <a href="/signup">Create an account</a></p>` : ''}`,
    ),
    opts.status ?? 200,
  );
}

/** `GET/POST /login`, `POST /logout` (README "Web interface"). */
export async function authPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get(
    '/login',
    {
      config: { public: true },
      schema: { hide: true, querystring: Type.Object({ next: Type.Optional(Type.String({ maxLength: 2000 })) }) },
    },
    async (request, reply) => {
      const next = localPath(request.query.next);
      if (request.page) return seeOther(reply, next);
      return loginPageFor(reply, deps, next);
    },
  );

  r.post(
    '/login',
    // The stored rate-limit rule for api:login applies here too (http/rate-limit.ts).
    { config: { public: true, rateLimit: 'api:login' }, schema: { hide: true, body: LoginForm } },
    async (request, reply) => {
      const next = localPath(request.body.next);
      let signed: PasswordSignIn;
      try {
        signed = await passwordSignIn(deps, request.body.username, request.body.password, (source, err) =>
          request.log.warn({ err, source }, 'LDAP sign-in source failed'),
        );
      } catch (err) {
        if (err instanceof AppError && err.status === 401) {
          return loginPageFor(reply, deps, next, { error: err.detail, username: request.body.username, status: 401 });
        }
        throw err;
      }
      const user = signed.user;
      if (signed.source?.row.satisfies_two_factor !== 1 && (await hasSecondFactor(deps, user.uuid))) {
        return startSecondStep(deps, request, reply, user, next);
      }
      return finishSignIn(deps, request, reply, user, next, {
        sourceSatisfiesTwoFactor: signed.source?.row.satisfies_two_factor === 1,
      });
    },
  );

  r.post('/logout', { config: { public: true }, schema: { hide: true, body: LogoutForm } }, async (request, reply) => {
    const caller = requirePage(request);
    await revokeSession(deps, caller.viewer, caller.sessionUuid);
    reply.header('set-cookie', cookie(deps, SESSION_COOKIE_NAME, '', 0));
    return seeOther(reply, '/login');
  });
}
