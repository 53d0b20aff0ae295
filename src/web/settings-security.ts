import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import {
  confirmTotp,
  disableTotp,
  pendingTotp,
  regenerateRecoveryCodes,
  startTotp,
  twoFactorStatus,
} from '../signin/two-factor.ts';
import { listIdentities, unlinkIdentity } from '../signin/identities.ts';
import {
  type PasskeyJson,
  deletePasskey,
  listPasskeys,
  passkeyRegistrationOptions,
  registerPasskey,
} from '../signin/passkeys.ts';
import { enabledSources } from '../signin/sources.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from './context.ts';
import { attempt, field, formMessage } from './forms.ts';
import { type Html, html, when } from './html.ts';
import { csrfField } from './layout.ts';
import { FormBody, type FormFields, type States, stateOf, statusOf, text } from './settings-common.ts';
import { settingsPage } from './settings-user.ts';
import { qrSvg } from './qr.ts';
import { UuidParams } from './admin-common.ts';

/** `/settings/security` (docs/signin.md "Two-factor"): the authenticator app, recovery codes, links to password and sessions. */

const codeField = (states: States, form: string, label = 'Current code or a recovery code') =>
  field(stateOf(states, form), {
    name: 'code',
    label,
    required: true,
    autocomplete: 'one-time-code',
    maxlength: 40,
    idPrefix: form,
  });

/** A base32 secret in groups of four, easier to type. */
const grouped = (secret: string) => secret.replace(/(.{4})(?=.)/g, '$1 ');

function recoveryList(codes: string[]): Html {
  return html`<div class="box" role="status" id="recovery-codes">
    <p>
      <strong>Your recovery codes.</strong> Each works once, in place of a code, if you lose your authenticator app. Keep them
      somewhere safe: they are shown only now.
    </p>
    <ol class="codes">
      ${codes.map((c) => html`<li><code>${c}</code></li>`)}
    </ol>
  </div>`;
}

function passkeySection(c: PageCaller, passkeys: PasskeyJson[], states: States): Html {
  const state = stateOf(states, 'passkey');
  return html`<section aria-labelledby="passkeys-h">
    <h2 id="passkeys-h">Two-factor: passkeys</h2>
    <p>
      A passkey (a security key, or the fingerprint or PIN of this device) is a second factor after the password, and signs you in
      on its own from the sign-in page.
    </p>
    ${formMessage(stateOf(states, 'passkey-delete'))}
    ${
      passkeys.length
        ? html`<ul class="plain" aria-label="Passkeys" id="passkeys">
            ${passkeys.map(
              (p) =>
                html`<li id="passkey-${p.uuid}">
                  <strong>${p.name}</strong> <span class="muted">added ${when(p.created_at)}</span>
                  <form method="post" action="/settings/security/passkeys/${p.uuid}/delete" class="row">
                    ${csrfField(c)}<button type="submit" class="danger" aria-label="Remove ${p.name}">Remove</button>
                  </form>
                </li>`,
            )}
          </ul>`
        : html`<p class="muted" id="passkeys-none">No passkey yet.</p>`
    }
    ${formMessage(state)}
    <form
      class="stack"
      method="post"
      action="/settings/security/passkeys"
      data-passkey="create"
      data-options="/settings/security/passkeys/options"
      hidden
    >
      ${csrfField(c)} ${field(state, { name: 'name', label: 'Name of the new passkey', maxlength: 100, idPrefix: 'passkey' })}
      <input type="hidden" name="response" value="" />
      <div><button type="submit">Add a passkey</button></div>
      <p class="error" role="alert" data-passkey-status hidden></p>
    </form>
    <p class="muted" data-passkey-nojs>Adding a passkey needs a browser with JavaScript and passkey support.</p>
  </section>`;
}

export async function securitySettingsPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const page = async (reply: FastifyReply, c: PageCaller, states: States = {}, shown?: string[]) => {
    const status = await twoFactorStatus(deps, c.viewer);
    const pending = status.totp ? null : await pendingTotp(deps, c.viewer);
    const ids = await listIdentities(deps, c.viewer);
    const passkeys = await listPasskeys(deps, c.viewer);
    const sources = await enabledSources(deps, 'oidc');
    let totp: Html;
    if (status.totp) {
      totp = html`<p>
          An authenticator app is <strong>on</strong>. Recovery codes left:
          <strong id="codes-left">${status.recovery_codes_left}</strong>.
        </p>
        <h3 id="regen-h">New recovery codes</h3>
        ${formMessage(stateOf(states, 'regen'))}
        <form class="stack" method="post" action="/settings/security/recovery-codes" aria-labelledby="regen-h">
          ${csrfField(c)} ${codeField(states, 'regen')}
          <div><button type="submit">Make new recovery codes</button></div>
        </form>
        <h3 id="off-h">Turn off</h3>
        ${formMessage(stateOf(states, 'off'))}
        <form class="stack" method="post" action="/settings/security/totp/delete" aria-labelledby="off-h">
          ${csrfField(c)} ${codeField(states, 'off')}
          <div><button type="submit" class="danger">Turn off the authenticator app</button></div>
        </form>`;
    } else if (pending) {
      const qr = await qrSvg(pending.otpauth_url, 'QR code of the authenticator app key');
      totp = html`<p>Add this account to your authenticator app: scan this QR code, then type the code it shows.</p>
        <div class="qr" id="totp-qr">${qr}</div>
        <p><a href="${pending.otpauth_url}">Open in an authenticator app on this device</a></p>
        <p>Or type this key by hand (time-based, 6 digits, every 30 seconds):</p>
        <p><code id="totp-secret" class="wrap">${grouped(pending.secret)}</code></p>
        ${formMessage(stateOf(states, 'confirm'))}
        <form class="stack" method="post" action="/settings/security/totp/confirm">
          ${csrfField(c)} ${codeField(states, 'confirm', 'Code from the app')}
          <div><button type="submit" class="primary">Turn on</button></div>
        </form>`;
    } else {
      totp = html`<p>
          Sign-ins then ask for a code from an app on your phone (such as FreeOTP, Aegis or Google Authenticator) after the
          password.
        </p>
        ${formMessage(stateOf(states, 'start'))}
        <form method="post" action="/settings/security/totp">
          ${csrfField(c)}
          <button type="submit" class="primary">Set up an authenticator app</button>
        </form>`;
    }
    const required = status.totp
      ? ''
      : c.viewer.siteRequiresTwoFactor
        ? html`<p class="error" role="alert" id="two-factor-required">
            This site requires a second factor: set up an authenticator app to go on.
          </p>`
        : status.required_by.length
          ? html`<p class="error" role="alert" id="two-factor-required">
              Required by ${status.required_by.join(', ')}: set up a second factor to keep working there.
            </p>`
          : '';
    const body = html`${shown ? recoveryList(shown) : ''} ${required}
      <section aria-labelledby="totp-h">
        <h2 id="totp-h">Two-factor: authenticator app</h2>
        ${totp}
      </section>
      ${passkeySection(c, passkeys, states)}
      <section aria-labelledby="ids-h">
        <h2 id="ids-h">Linked identities</h2>
        ${formMessage(stateOf(states, 'unlink'))}
        ${
          ids.length
            ? html`<ul class="plain" aria-label="Linked identities">
                ${ids.map(
                  (i) =>
                    html`<li id="identity-${i.uuid}">
                      <strong>${i.display_name}</strong> <code>${i.subject}</code>
                      <form method="post" action="/settings/security/identities/${i.uuid}/delete" class="row">
                        ${csrfField(c)}<button type="submit" class="danger">Unlink</button>
                      </form>
                    </li>`,
                )}
              </ul>`
            : html`<p class="muted">No identity of a sign-in source is linked to this account.</p>`
        }
        ${sources
          .filter((s) => s.oidc && !ids.some((i) => i.source === s.row.name))
          .map(
            (s) =>
              html`<form method="post" action="/settings/security/link/${encodeURIComponent(s.row.name)}">
                ${csrfField(c)}<button type="submit">Link ${s.row.display_name}</button>
              </form>`,
          )}
      </section>
      <section aria-labelledby="more-h">
        <h2 id="more-h">Password and sessions</h2>
        <p><a href="/settings">Change your password</a> &middot; <a href="/settings/sessions">Signed-in sessions</a></p>
      </section>`;
    return sendPage(reply, settingsPage(c, 'Security', '/settings/security', body), statusOf(states));
  };

  app.get('/settings/security', { config: { public: true }, schema: { hide: true } }, async (request, reply) =>
    page(reply, requirePage(request)),
  );

  // a code sent from these forms is a credential like a password: failures count as failed sign-ins do
  const post = { config: { public: true, rateLimit: 'api:login' as const }, schema: { hide: true, body: FormBody } };

  app.post('/settings/security/totp', post, async (request, reply) => {
    const c = requirePage(request);
    const done = await attempt({}, [], () => startTotp(deps, c.viewer));
    if (!done.ok) return page(reply, c, { start: done.state });
    return seeOther(reply, '/settings/security');
  });

  app.post('/settings/security/totp/confirm', post, async (request, reply) => {
    const c = requirePage(request);
    const done = await attempt({}, ['code'], () => confirmTotp(deps, c.viewer, text(request.body as FormFields, 'code')));
    if (!done.ok) return page(reply, c, { confirm: done.state });
    return page(reply, c, {}, done.value.recovery_codes);
  });

  app.post('/settings/security/recovery-codes', post, async (request, reply) => {
    const c = requirePage(request);
    const done = await attempt({}, ['code'], () =>
      regenerateRecoveryCodes(deps, c.viewer, text(request.body as FormFields, 'code')),
    );
    if (!done.ok) return page(reply, c, { regen: done.state });
    return page(reply, c, {}, done.value.recovery_codes);
  });

  app.post('/settings/security/totp/delete', post, async (request, reply) => {
    const c = requirePage(request);
    const done = await attempt({}, ['code'], () => disableTotp(deps, c.viewer, text(request.body as FormFields, 'code')));
    if (!done.ok) return page(reply, c, { off: done.state });
    return seeOther(reply, '/settings/security');
  });

  app.post(
    '/settings/security/passkeys/options',
    { config: { public: true }, schema: { hide: true, body: FormBody } },
    async (request, reply) => reply.send(await passkeyRegistrationOptions(deps, requirePage(request).viewer)),
  );

  app.post('/settings/security/passkeys', post, async (request, reply) => {
    const c = requirePage(request);
    const body = request.body as FormFields;
    const done = await attempt({ name: text(body, 'name') }, [], () =>
      registerPasskey(deps, c.viewer, text(body, 'response'), text(body, 'name')),
    );
    if (!done.ok) return page(reply, c, { passkey: done.state });
    return seeOther(reply, '/settings/security');
  });

  app.post(
    '/settings/security/passkeys/:uuid/delete',
    { config: { public: true }, schema: { hide: true, params: UuidParams, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      const done = await attempt({}, [], () => deletePasskey(deps, c.viewer, (request.params as { uuid: string }).uuid));
      if (!done.ok) return page(reply, c, { 'passkey-delete': done.state });
      return seeOther(reply, '/settings/security');
    },
  );

  app.post(
    '/settings/security/identities/:uuid/delete',
    { config: { public: true }, schema: { hide: true, params: UuidParams, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      const done = await attempt({}, [], () => unlinkIdentity(deps, c.viewer, (request.params as { uuid: string }).uuid));
      if (!done.ok) return page(reply, c, { unlink: done.state });
      return seeOther(reply, '/settings/security');
    },
  );
}
