import formbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { ENROL_PATH, TWO_FACTOR_REQUIRED, siteTwoFactorRefusal } from '../access/index.ts';
import { SESSION_COOKIE_NAME, cookieValue } from '../http/auth.ts';
import { SESSION_TTL_MS, authenticateSession, csrfTokenFor, csrfTokenMatches } from '../sessions/service.ts';
import { assetRoutes } from './assets.ts';
import { inboxPages } from './notifications/inbox.ts';
import { unsubscribePages } from './notifications/unsubscribe.ts';
import { subscriptionPages } from './notifications/controls.ts';
import { mailSettingsPages } from './notifications/mail-settings.ts';
import { LOGIN_COOKIE, authPages, cookie } from './auth-pages.ts';
import { csrfRefused, sendPage } from './context.ts';
import { html } from './html.ts';
import { inWords, statusTitle } from './words.ts';
import { validationDetail } from '../http/error-handler.ts';
import { CSP, layout } from './layout.ts';
import { homePages } from './home-pages.ts';
import { pullPages } from './pull-pages.ts';
import { repoPages } from './repo-pages.ts';
import { threadPages } from './thread-pages.ts';
import { markdownPreviewPages } from './markdown-preview.ts';
import { issuePages } from './tracker/issues.ts';
import { labelPages } from './tracker/labels.ts';
import { milestonePages } from './tracker/milestones.ts';
import { threadFormPages } from './tracker/thread-forms.ts';
import { uploadPages } from './upload-pages.ts';
import { codePages } from './code-pages.ts';
import { blamePages } from './blame-pages.ts';
import { releasePages } from './release-pages.ts';
import { ciPages } from './ci-pages.ts';
import { mirrorPages } from './mirror-pages.ts';
import { createPages } from './create-pages.ts';
import { searchPages } from './search-pages.ts';
import { firstRunPages } from './first-run.ts';
import { hookPages } from './hook-pages.ts';
import { hookDeliveryPages } from './hook-deliveries.ts';
import { adminUserPages } from './admin-users.ts';
import { adminInvitePages } from './admin-invites.ts';
import { adminLimitPages } from './admin-limits.ts';
import { adminSourcePages } from './admin-sources.ts';
import { adminRunnerPages } from './admin-runners.ts';
import { signinPages } from './signin-pages.ts';
import { passkeySigninPages } from './passkey-pages.ts';
import { signupPages } from './signup-pages.ts';
import { keySettingsPages } from './settings-keys.ts';
import { repoCiSettingsPages } from './settings-ci.ts';
import { repoProtectionPages } from './settings-protections.ts';
import { repoSettingsPages } from './settings-repo.ts';
import { teamSettingsPages } from './settings-team.ts';
import { teamCiSettingsPages } from './settings-team-ci.ts';
import { tokenSettingsPages } from './settings-tokens.ts';
import { userSettingsPages } from './settings-user.ts';
import { securitySettingsPages } from './settings-security.ts';
import { teamSyncPages } from './settings-sync.ts';
import { twoFactorRequirementPages } from './settings-two-factor.ts';

/** Pages a caller the site-wide second-factor requirement refuses may still open: enrolling, signing out. */
const TWO_FACTOR_OPEN = /^\/(settings\/security|logout|login|static\/)/;

/**
 * The web interface (README "Web interface"): server-rendered pages under `/`, each reading and
 * writing through the same services as the API with the same access rules. A page's caller is
 * the web session of its cookie; every POST carries the session's CSRF token (form field `_csrf`
 * or header `X-CSRF-Token`, which htmx sends), else 403 and nothing changes.
 */
export async function webRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  await app.register(formbody, { bodyLimit: 1024 * 1024 });
  app.decorateRequest('page', null);

  app.addHook('onRequest', async (request) => {
    const secret = cookieValue(request.headers.cookie, SESSION_COOKIE_NAME);
    if (!secret) return;
    const found = await authenticateSession(deps, secret);
    if (found) {
      request.page = { viewer: found.viewer, user: found.user, sessionUuid: found.session.uuid, csrf: csrfTokenFor(secret) };
      // the site requires a second factor: the enrolment page first (docs/signin.md "Requiring it")
      const refused = siteTwoFactorRefusal(found.viewer);
      if (refused && !TWO_FACTOR_OPEN.test(request.url)) throw refused;
    }
  });

  // Every state-changing request of a page carries the CSRF token of its session, checked
  // before anything else is done with it (the sign-in and sign-up forms: the token of their login cookie).
  app.addHook('preValidation', async (request) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    // RFC 8058 one-click unsubscribe: a mail client's POST, whose signed token is its credential
    if (request.routeOptions.url === '/notifications/unsubscribe/:token') return;
    // a form field or the header htmx sends (a streamed multipart form: its first field, read by its handler)
    const given = (request.body as Record<string, unknown> | undefined)?._csrf ?? request.headers['x-csrf-token'];
    if (
      request.routeOptions.url === '/login' ||
      request.routeOptions.url === '/login/two-factor' ||
      request.routeOptions.url === '/login/passkey' ||
      request.routeOptions.url === '/login/passkey/options' ||
      request.routeOptions.url === '/login/two-factor/passkey' ||
      request.routeOptions.url === '/login/two-factor/passkey/options' ||
      request.routeOptions.url === '/signup' ||
      request.routeOptions.url === '/setup'
    ) {
      const bound = cookieValue(request.headers.cookie, LOGIN_COOKIE);
      if (!bound || given !== bound) throw csrfRefused();
      return;
    }
    const secret = cookieValue(request.headers.cookie, SESSION_COOKIE_NAME);
    if (!request.page || !secret) throw new AppError(401, 'unauthorized', 'Sign in first: the session has ended.');
    if (given === undefined && request.routeOptions.config.csrfInBody) return;
    if (!csrfTokenMatches(secret, given)) throw csrfRefused();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    const type = String(reply.getHeader('content-type') ?? '');
    // The session cookie slides with the session (30 days after the last use).
    if (request.page && request.method === 'GET' && !reply.hasHeader('set-cookie')) {
      const secret = cookieValue(request.headers.cookie, SESSION_COOKIE_NAME);
      if (secret) reply.header('set-cookie', cookie(deps, SESSION_COOKIE_NAME, secret, SESSION_TTL_MS / 1000));
    }
    if (type.startsWith('text/html')) {
      reply.header('content-security-policy', CSP);
      reply.header('x-content-type-options', 'nosniff');
      reply.header('referrer-policy', 'same-origin');
      reply.header('cache-control', 'private, no-store');
    }
    done(null, payload);
  });

  app.setErrorHandler((error: FastifyError | AppError, request, reply) => errorPage(error, request, reply));

  await app.register(assetRoutes);
  await app.register(authPages, { deps });
  await app.register(signinPages, { deps });
  await app.register(passkeySigninPages, { deps });
  await app.register(homePages, { deps });
  await app.register(repoPages, { deps });
  await app.register(pullPages, { deps });
  await app.register(threadPages, { deps });
  await app.register(markdownPreviewPages);
  await app.register(issuePages, { deps });
  await app.register(threadFormPages, { deps });
  await app.register(labelPages, { deps });
  await app.register(milestonePages, { deps });
  await app.register(uploadPages, { deps });
  await app.register(codePages, { deps });
  await app.register(blamePages, { deps });
  await app.register(releasePages, { deps });
  await app.register(ciPages, { deps });
  await app.register(mirrorPages, { deps });
  await app.register(createPages, { deps });
  await app.register(searchPages, { deps });
  await app.register(firstRunPages, { deps });
  await app.register(hookPages, { deps });
  await app.register(hookDeliveryPages, { deps });
  await app.register(adminUserPages, { deps });
  await app.register(adminInvitePages, { deps });
  await app.register(adminLimitPages, { deps });
  await app.register(adminSourcePages, { deps });
  await app.register(adminRunnerPages, { deps });
  await app.register(signupPages, { deps });
  await app.register(userSettingsPages, { deps });
  await app.register(securitySettingsPages, { deps });
  await app.register(teamSyncPages, { deps });
  await app.register(tokenSettingsPages, { deps });
  await app.register(keySettingsPages, { deps });
  await app.register(inboxPages, { deps });
  await app.register(unsubscribePages, { deps });
  await app.register(subscriptionPages, { deps });
  await app.register(mailSettingsPages, { deps });
  await app.register(teamSettingsPages, { deps });
  await app.register(teamCiSettingsPages, { deps });
  await app.register(twoFactorRequirementPages, { deps });
  await app.register(repoSettingsPages, { deps });
  await app.register(repoProtectionPages, { deps });
  await app.register(repoCiSettingsPages, { deps });
}

/** Errors as pages: the status and the error envelope's code and detail, in HTML. */
function errorPage(error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  let status: number;
  let code: string;
  let detail: string;
  if (error instanceof AppError) {
    status = error.status;
    code = error.code;
    detail = error.detail;
    if (error.headers) reply.headers(error.headers);
  } else if (error.validation) {
    status = 400;
    code = 'invalid_request';
    detail = validationDetail(error);
  } else if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    status = error.statusCode;
    code = status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type' : 'invalid_request';
    detail = error.message;
  } else {
    request.log.error({ err: error }, 'unhandled error on a page');
    status = 500;
    code = 'internal_error';
    detail = 'An internal error occurred.';
  }
  // A second factor the site or the team requires: a person is sent to enrol one.
  if (code === TWO_FACTOR_REQUIRED && request.method === 'GET') {
    return reply.status(303).header('location', `${ENROL_PATH}?required=1`).send();
  }
  // A page that needs a signed-in caller sends an anonymous reader to the sign-in page.
  if (status === 401 && request.method === 'GET') {
    return reply
      .status(303)
      .header('location', `/login?next=${encodeURIComponent(request.url)}`)
      .send();
  }
  // In words for a person: no error code or schema path (web/words.ts); a 500 names its request id.
  void code;
  const title = statusTitle(status);
  return sendPage(
    reply,
    layout(
      { title, caller: request.page },
      html`<h1>${title}</h1>
        <p class="error" role="alert">${inWords(detail)}</p>
        ${status >= 500 ? html`<p class="muted">Request id: <code>${request.id}</code> (give it to the server&rsquo;s operator).</p>` : ''}
        ${
          // signed out, a private repo is not found as anything absent is: signing in may show it
          status === 404 && !request.page && request.method === 'GET'
            ? html`<p>If it is private, <a href="/login?next=${encodeURIComponent(request.url)}">sign in</a> to see it.</p>`
            : ''
        }
        <p>
          ${request.headers.referer ? html`<a href="${localBack(request.headers.referer)}">Back</a> · ` : ''}<a href="/"
            >The dashboard</a
          >
        </p>`,
    ),
    status,
  );
}

/** The page a person came from, when it is on this site (the error page's Back link). */
function localBack(referer: string): string {
  try {
    const u = new URL(referer);
    return `${u.pathname}${u.search}`.startsWith('/') ? `${u.pathname}${u.search}` : '/';
  } catch {
    return '/';
  }
}
