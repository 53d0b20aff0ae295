import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { passkeySignInOptions, verifyPasskeySignIn } from '../signin/passkeys.ts';
import { findUserByUuid } from '../users/service.ts';
import { loginPageFor } from './auth-pages.ts';
import { LOGIN_COOKIE, localPath } from './cookies.ts';
import { cookieValue } from '../http/auth.ts';
import { seeOther } from './context.ts';
import { finishSignIn, pendingUser, secondStepPage } from './signin-pages.ts';

/**
 * Passkeys on the sign-in pages (docs/signin.md "Passkeys"): "Sign in with a passkey" (no
 * username: the authenticator offers its discoverable credential) and "Use a passkey" on the
 * second step. Each takes options (a challenge bound to the sign-in form's cookie) and then the
 * authenticator's answer; both are rate-limited like the password form, and a refusal says the
 * same thing whatever the reason.
 */
const OptionsForm = Type.Object({ _csrf: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false });
const AnswerForm = Type.Object(
  {
    _csrf: Type.Optional(Type.String({ maxLength: 100 })),
    response: Type.String({ maxLength: 20_000 }),
    next: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { additionalProperties: false },
);
const PASSKEY_REFUSED = 'That passkey could not sign you in: try again, or sign in with your password.';

export async function passkeySigninPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const limited = { public: true, rateLimit: 'api:login' as const };
  const bound = (cookieHeader: string | undefined) => cookieValue(cookieHeader, LOGIN_COOKIE) ?? '';

  r.post('/login/passkey/options', { config: limited, schema: { hide: true, body: OptionsForm } }, async (request, reply) =>
    reply.send(await passkeySignInOptions(deps, bound(request.headers.cookie), null)),
  );

  r.post('/login/passkey', { config: limited, schema: { hide: true, body: AnswerForm } }, async (request, reply) => {
    const next = localPath(request.body.next);
    let userUuid: string;
    try {
      userUuid = await verifyPasskeySignIn(deps, request.body.response, bound(request.headers.cookie), null);
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 400) throw err;
      request.log.info({ reason: err.detail }, 'passkey sign-in refused');
      return loginPageFor(reply, deps, next, { error: PASSKEY_REFUSED, status: 401 });
    }
    const user = await findUserByUuid(deps.db, userUuid);
    if (!user || user.is_active !== 1) return loginPageFor(reply, deps, next, { error: PASSKEY_REFUSED, status: 401 });
    // a passkey with user verification is two factors on its own
    return finishSignIn(deps, request, reply, user, next, { sourceSatisfiesTwoFactor: true });
  });

  const secondStepRefused = (reply: FastifyReply, csrf: string, next: string) =>
    secondStepPage(reply, csrf, next, { error: PASSKEY_REFUSED, status: 401, passkey: true });

  r.post(
    '/login/two-factor/passkey/options',
    { config: limited, schema: { hide: true, body: OptionsForm } },
    async (request, reply) => {
      const uuid = pendingUser(deps, request);
      if (!uuid) throw new AppError(401, 'unauthorized', 'This sign-in took too long: start again.');
      return reply.send(await passkeySignInOptions(deps, bound(request.headers.cookie), uuid));
    },
  );

  r.post('/login/two-factor/passkey', { config: limited, schema: { hide: true, body: AnswerForm } }, async (request, reply) => {
    const next = localPath(request.body.next);
    const csrf = bound(request.headers.cookie);
    const uuid = pendingUser(deps, request);
    const user = uuid ? await findUserByUuid(deps.db, uuid) : undefined;
    if (!user || user.is_active !== 1) return seeOther(reply, `/login?next=${encodeURIComponent(next)}`);
    try {
      await verifyPasskeySignIn(deps, request.body.response, csrf, user.uuid);
    } catch (err) {
      if (!(err instanceof AppError) || err.status !== 400) throw err;
      request.log.info({ reason: err.detail }, 'passkey second step refused');
      return secondStepRefused(reply, csrf, next);
    }
    return finishSignIn(deps, request, reply, user, next);
  });
}
