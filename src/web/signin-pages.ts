import { randomBytes } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { SESSION_COOKIE_NAME, cookieValue } from '../http/auth.ts';
import { SESSION_TTL_MS, startSession } from '../sessions/service.ts';
import { type ExternalProfile, linkIdentity, resolveExternal } from '../signin/identities.ts';
import { FLOW_COOKIE, FLOW_TTL_MS, beginOidc, finishOidc, readFlow } from '../signin/oidc.ts';
import { hasPasskey } from '../signin/passkeys.ts';
import { sourceByName } from '../signin/sources.ts';
import type { Source } from '../signin/types.ts';
import { checkSecondFactor, hasSecondFactor } from '../signin/two-factor.ts';
import { findUserByUuid } from '../users/service.ts';
import type { UserRow } from '../users/service.ts';
import { LOGIN_COOKIE, cookie, localPath } from './cookies.ts';
import { requirePage, seeOther, sendPage } from './context.ts';
import { type Html, html } from './html.ts';
import { layout } from './layout.ts';

/**
 * The second step of the web sign-in (docs/signin.md "Two-factor"): once the password (or a
 * directory) has said who the user is, a user with a second factor gets a short-lived signed
 * cookie naming them and the code page; the session starts only when the code is right.
 */
export const SECOND_STEP_COOKIE = 'weft_2fa';
const SECOND_STEP_TTL_MS = 5 * 60_000;
const PURPOSE = 'sign-in-second-step';
const SIG_LENGTH = 43;

/** The pending sign-in's cookie value: the user and the expiry, bound to the sign-in form's login cookie. */
function pendingValue(deps: Deps, userUuid: string, bound: string): string {
  const payload = Buffer.from(`${userUuid}.${Date.now() + SECOND_STEP_TTL_MS}`).toString('base64url');
  return payload + deps.secret.sign(PURPOSE, `${payload}.${bound}`);
}

export function pendingUser(deps: Deps, request: FastifyRequest): string | null {
  const value = cookieValue(request.headers.cookie, SECOND_STEP_COOKIE);
  const bound = cookieValue(request.headers.cookie, LOGIN_COOKIE);
  if (!value || !bound || value.length <= SIG_LENGTH) return null;
  const payload = value.slice(0, -SIG_LENGTH);
  if (!deps.secret.verify(PURPOSE, `${payload}.${bound}`, value.slice(-SIG_LENGTH))) return null;
  const [uuid, exp] = Buffer.from(payload, 'base64url').toString('utf8').split('.');
  if (!uuid || !exp || Number(exp) < Date.now()) return null;
  return uuid;
}

export function secondStepPage(
  reply: FastifyReply,
  bound: string,
  next: string,
  opts: { error?: string; status?: number; passkey?: boolean } = {},
): FastifyReply {
  return sendPage(
    reply,
    layout(
      { title: 'Two-factor sign-in', caller: null },
      html`<h1>Two-factor sign-in</h1>
        ${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
        <form class="stack" method="post" action="/login/two-factor">
          <input type="hidden" name="_csrf" value="${bound}" />
          <input type="hidden" name="next" value="${next}" />
          <label for="code">Code from your authenticator app, or a recovery code</label>
          <input
            id="code"
            name="code"
            type="text"
            inputmode="numeric"
            autocomplete="one-time-code"
            required
            autofocus
            maxlength="40"
          />
          <div><button type="submit" class="primary">Verify</button></div>
        </form>
        ${opts.passkey ? passkeyForm(bound, next, '/login/two-factor/passkey', 'Use a passkey') : ''}
        <p><a href="/login">Start again</a></p>`,
    ),
    opts.status ?? 200,
  );
}

/**
 * A passkey form (docs/signin.md "Passkeys"): hidden until weft.js finds WebAuthn in the browser;
 * the script fetches options from `{action}/options`, asks the authenticator and posts its answer
 * in `response`.
 */
export function passkeyForm(csrf: string, next: string | null, action: string, label: string): Html {
  return html`<form method="post" action="${action}" data-passkey="get" data-options="${action}/options" hidden>
    <input type="hidden" name="_csrf" value="${csrf}" />
    ${next === null ? '' : html`<input type="hidden" name="next" value="${next}" />`}
    <input type="hidden" name="response" value="" />
    <button type="submit">${label}</button>
    <p class="error" role="alert" data-passkey-status hidden></p>
  </form>`;
}

/** Called by the sign-in form once the password was right: the code page, with the pending cookie. */
export async function startSecondStep(deps: Deps, request: FastifyRequest, reply: FastifyReply, user: UserRow, next: string) {
  const given = cookieValue(request.headers.cookie, LOGIN_COOKIE);
  // coming back from a directory: no sign-in form was loaded, so bind the step to a new login cookie
  const bound = given ?? randomBytes(18).toString('base64url');
  const cookies = [cookie(deps, SECOND_STEP_COOKIE, pendingValue(deps, user.uuid, bound), SECOND_STEP_TTL_MS / 1000)];
  if (!given) cookies.push(cookie(deps, LOGIN_COOKIE, bound, 3600));
  reply.header('set-cookie', cookies);
  return secondStepPage(reply, bound, next, { passkey: await hasPasskey(deps, user.uuid) });
}

/** Starts the session of a user who has passed every step, and goes on. */
export async function finishSignIn(
  deps: Deps,
  request: FastifyRequest,
  reply: FastifyReply,
  user: UserRow,
  next: string,
  opts: { sourceSatisfiesTwoFactor?: boolean } = {},
) {
  const { secret } = await startSession(deps, user, request.headers['user-agent'], opts);
  reply.header('set-cookie', [
    cookie(deps, SESSION_COOKIE_NAME, secret, SESSION_TTL_MS / 1000),
    cookie(deps, LOGIN_COOKIE, '', 0),
    cookie(deps, SECOND_STEP_COOKIE, '', 0),
  ]);
  return seeOther(reply, next);
}

const CodeForm = Type.Object(
  {
    _csrf: Type.Optional(Type.String({ maxLength: 100 })),
    code: Type.String({ maxLength: 40 }),
    next: Type.Optional(Type.String({ maxLength: 2000 })),
  },
  { additionalProperties: false },
);

/** The OIDC flow cookie: longer than the other cookies (a sealed JSON), same alphabet. */
function flowCookie(header: string | undefined): string | null {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== FLOW_COOKIE) continue;
    const value = part.slice(eq + 1).trim();
    return /^[A-Za-z0-9_-]{1,2000}$/.test(value) ? value : null;
  }
  return null;
}

export async function signinPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.post(
    '/login/two-factor',
    // a wrong code counts as a failed sign-in from this address (and toward the user's lock)
    { config: { public: true, rateLimit: 'api:login' }, schema: { hide: true, body: CodeForm } },
    async (request, reply) => {
      const next = localPath(request.body.next);
      const bound = cookieValue(request.headers.cookie, LOGIN_COOKIE) ?? '';
      const uuid = pendingUser(deps, request);
      const user = uuid ? await findUserByUuid(deps.db, uuid) : undefined;
      if (!user || user.is_active !== 1) return seeOther(reply, `/login?next=${encodeURIComponent(next)}`);
      try {
        await checkSecondFactor(deps, user.uuid, request.body.code, {
          onWrong: () => new AppError(401, 'invalid_two_factor_code', 'That code is not right.'),
        });
      } catch (err) {
        if (err instanceof AppError && (err.status === 401 || err.status === 429)) {
          if (err.headers) reply.headers(err.headers);
          return secondStepPage(reply, bound, next, {
            error: err.detail,
            status: err.status,
            passkey: await hasPasskey(deps, user.uuid),
          });
        }
        throw err;
      }
      return finishSignIn(deps, request, reply, user, next);
    },
  );

  const enabledOidc = async (name: string): Promise<Source> => {
    const source = await sourceByName(deps, name);
    if (!source || !source.oidc || source.row.enabled !== 1) throw new AppError(404, 'not_found', 'Sign-in source not found.');
    return source;
  };

  const failed = (reply: FastifyReply, title: string, detail: string, status: number) =>
    sendPage(
      reply,
      layout(
        { title, caller: null },
        html`<h1>${title}</h1>
          <p class="error" role="alert">${detail}</p>
          <p><a href="/login">Back to sign-in</a></p>`,
      ),
      status,
    );

  const begin = async (reply: FastifyReply, source: Source, next: string, link: string | null) => {
    let started;
    try {
      started = await beginOidc(deps, source, { next, link });
    } catch (err) {
      reply.log.warn({ err, source: source.row.name }, 'OIDC discovery failed');
      return failed(
        reply,
        'Sign-in failed',
        `${source.row.display_name} did not answer. Try again later, or sign in with your password.`,
        502,
      );
    }
    reply.header('set-cookie', cookie(deps, FLOW_COOKIE, started.cookie, FLOW_TTL_MS / 1000));
    return seeOther(reply, started.url);
  };

  r.get(
    '/login/oidc/:name',
    {
      config: { public: true, rateLimit: 'api:login' },
      schema: {
        hide: true,
        params: Type.Object({ name: Type.String({ maxLength: 100 }) }),
        querystring: Type.Object({ next: Type.Optional(Type.String({ maxLength: 2000 })) }),
      },
    },
    async (request, reply) => begin(reply, await enabledOidc(request.params.name), localPath(request.query.next), null),
  );

  r.get(
    '/login/oidc/:name/callback',
    {
      config: { public: true, rateLimit: 'api:login' },
      schema: {
        hide: true,
        params: Type.Object({ name: Type.String({ maxLength: 100 }) }),
        querystring: Type.Object({}, { additionalProperties: Type.String({ maxLength: 4000 }) }),
      },
    },
    async (request, reply) => {
      const source = await enabledOidc(request.params.name);
      const flow = readFlow(deps, flowCookie(request.headers.cookie));
      reply.header('set-cookie', cookie(deps, FLOW_COOKIE, '', 0));
      const title = `Sign-in with ${source.row.display_name} failed`;
      if (!flow || flow.source !== source.row.uuid) {
        return failed(reply, title, 'This sign-in was not started in this browser, or it took too long: start again.', 401);
      }
      let profile: ExternalProfile;
      try {
        const url = new URL(request.url, deps.config.publicUrl);
        profile = await finishOidc(deps, source, flow, url);
      } catch (err) {
        request.log.warn({ err, source: source.row.name }, 'OIDC callback refused');
        return failed(reply, title, `${source.row.display_name} did not confirm who you are: start again.`, 401);
      }
      if (flow.link) {
        // linking from Security settings: the signed-in user who started it
        const c = request.page;
        if (!c || c.viewer.uuid !== flow.link)
          return failed(reply, title, 'Sign in again, then link from Security settings.', 401);
        try {
          await linkIdentity(deps, c.viewer, source, profile.subject);
        } catch (err) {
          if (err instanceof AppError && err.status === 409) return failed(reply, 'Not linked', err.detail, 409);
          throw err;
        }
        return seeOther(reply, '/settings/security');
      }
      const outcome = await resolveExternal(deps, source, profile);
      if (outcome.kind === 'email_taken') {
        return failed(
          reply,
          title,
          `An account with the email address ${profile.email} already exists. Sign in with your password to link this identity: ` +
            `then choose "Link ${source.row.display_name}" in Settings, Security.`,
          409,
        );
      }
      if (outcome.kind !== 'user') {
        return failed(reply, title, 'There is no Weft account for you yet: ask an administrator.', 403);
      }
      const user = outcome.user;
      if (source.row.satisfies_two_factor !== 1 && (await hasSecondFactor(deps, user.uuid))) {
        return startSecondStep(deps, request, reply, user, flow.next);
      }
      return finishSignIn(deps, request, reply, user, flow.next, {
        sourceSatisfiesTwoFactor: source.row.satisfies_two_factor === 1,
      });
    },
  );

  r.post(
    '/settings/security/link/:name',
    {
      config: { public: true },
      schema: {
        hide: true,
        params: Type.Object({ name: Type.String({ maxLength: 100 }) }),
        body: Type.Object({ _csrf: Type.Optional(Type.String({ maxLength: 100 })) }),
      },
    },
    async (request, reply) => {
      const c = requirePage(request);
      return begin(reply, await enabledOidc(request.params.name), '/settings/security', c.viewer.uuid);
    },
  );
}
