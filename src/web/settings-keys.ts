import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import { listSessions, revokeSession } from '../sessions/service.ts';
import { CreateSshKeyBody } from '../sshkeys/schemas.ts';
import { addSshKey, deleteSshKey, listSshKeys } from '../sshkeys/service.ts';
import { type PageCaller, pageWindow, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt, field, formMessage, typedValues } from './forms.ts';
import { html, pager, when } from './html.ts';
import { csrfField } from './layout.ts';
import { FormBody, type FormFields, checkBody, confirmButton, text } from './settings-common.ts';
import { settingsPage } from './settings-user.ts';

const PageQuery = Type.Object({ page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) });
const UuidParams = Type.Object({ uuid: Type.String({ maxLength: 100 }) });
const route = { config: { public: true }, schema: { hide: true, params: UuidParams, body: FormBody } };

/** `/settings/sessions` (the API's `/sessions`) and `/settings/keys` (the API's `/user/keys`). */
export async function keySettingsPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  app.get(
    '/settings/sessions',
    { config: { public: true }, schema: { hide: true, querystring: PageQuery } },
    async (request, reply) => {
      const c = requirePage(request);
      const w = pageWindow(request.query as { page?: number });
      const sessions = await listSessions(deps, c.viewer, { offset: w.offset, limit: w.limit });
      const now = new Date().toISOString();
      const body = html`<section aria-labelledby="sessions-h">
        <h2 id="sessions-h">Web sessions</h2>
        <p class="muted">Browsers signed in to your account. Ending a session signs that browser out at once.</p>
        <ul class="plain">
          ${sessions.slice(0, w.perPage).map((s) => {
            const ended = s.revoked_at !== null || s.expires_at <= now;
            return html`<li>
              <strong>${s.user_agent || 'unknown browser'}</strong>
              ${s.uuid === c.sessionUuid ? html`<span class="badge">this session</span>` : ''}
              ${s.revoked_at ? html`<span class="badge">ended</span>` : ended ? html`<span class="badge">expired</span>` : ''}
              <br /><span class="muted"
                >signed in ${when(s.created_at)} · last used
                ${when(s.last_used_at)}${ended ? '' : html` · expires ${when(s.expires_at)}`}</span
              >
              ${
                ended || s.uuid === c.sessionUuid
                  ? ''
                  : confirmButton({
                      action: `/settings/sessions/${s.uuid}/revoke`,
                      csrf: c.csrf,
                      label: 'End session',
                      question: 'Sign this browser out?',
                    })
              }
            </li>`;
          })}
        </ul>
        ${pager('/settings/sessions', w.page, sessions.length > w.perPage)}
        ${confirmButton({
          action: '/settings/sessions/revoke-others',
          csrf: c.csrf,
          label: 'End all other sessions',
          question: 'Sign out every browser but this one?',
        })}
      </section>`;
      return sendPage(reply, settingsPage(c, 'Sessions', '/settings/sessions', body));
    },
  );

  app.post('/settings/sessions/:uuid/revoke', route, async (request, reply) => {
    const c = requirePage(request);
    await revokeSession(deps, c.viewer, (request.params as { uuid: string }).uuid);
    return seeOther(reply, '/settings/sessions');
  });

  app.post(
    '/settings/sessions/revoke-others',
    { config: { public: true }, schema: { hide: true, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      // every other session still open, each ended through the API's revocation
      const open: string[] = [];
      for (let offset = 0; ; offset += 100) {
        const page = await listSessions(deps, c.viewer, { offset, limit: 100 });
        const now = new Date().toISOString();
        open.push(
          ...page.filter((s) => s.revoked_at === null && s.expires_at > now && s.uuid !== c.sessionUuid).map((s) => s.uuid),
        );
        if (page.length < 100) break;
      }
      for (const uuid of open) await revokeSession(deps, c.viewer, uuid);
      return seeOther(reply, '/settings/sessions');
    },
  );

  const keysPage = async (reply: FastifyReply, c: PageCaller, page: number, add?: FormState) => {
    const w = pageWindow({ page });
    const keys = await listSshKeys(deps, c.viewer, { offset: w.offset, limit: w.limit });
    const body = html`<section aria-labelledby="keys-h">
        <h2 id="keys-h">SSH keys</h2>
        <p class="muted">Keys that may use git over SSH as you.</p>
        ${
          keys.length
            ? html`<ul class="plain">
                ${keys.slice(0, w.perPage).map(
                  (k) =>
                    html`<li>
                      <strong>${k.title}</strong> <span class="badge">${k.key_type}</span><br />
                      <code>${k.fingerprint}</code><br />
                      <span class="muted"
                        >added ${when(k.created_at)} · last used ${k.last_used_at ? when(k.last_used_at) : 'never'}</span
                      >
                      ${confirmButton({ action: `/settings/keys/${k.uuid}/delete`, csrf: c.csrf, label: 'Delete', question: `Delete the key "${k.title}"?` })}
                    </li>`,
                )}
              </ul>`
            : html`<p class="muted">No SSH keys yet.</p>`
        }
        ${pager('/settings/keys', w.page, keys.length > w.perPage)}
      </section>
      <section aria-labelledby="add-key-h">
        <h2 id="add-key-h">Add a key</h2>
        ${formMessage(add)}
        <form class="stack" method="post" action="/settings/keys">
          ${csrfField(c)} ${field(add, { name: 'title', label: 'Title', required: true, maxlength: 100 })}
          ${field(add, {
            name: 'key',
            label: 'Public key',
            type: 'textarea',
            required: true,
            hint: 'One OpenSSH public key line, such as the content of ~/.ssh/id_ed25519.pub (ed25519, ecdsa, or RSA of 2,048 bits or more).',
          })}
          <div><button type="submit" class="primary">Add key</button></div>
        </form>
      </section>`;
    return sendPage(reply, settingsPage(c, 'SSH keys', '/settings/keys', body), add?.status ?? 200);
  };

  app.get(
    '/settings/keys',
    { config: { public: true }, schema: { hide: true, querystring: PageQuery } },
    async (request, reply) => keysPage(reply, requirePage(request), (request.query as { page?: number }).page ?? 1),
  );

  app.post('/settings/keys', { config: { public: true }, schema: { hide: true, body: FormBody } }, async (request, reply) => {
    const c = requirePage(request);
    const body = request.body as FormFields;
    const input = { title: text(body, 'title'), key: text(body, 'key') };
    const done = await attempt(typedValues(body), ['title', 'key'], async () => {
      checkBody(CreateSshKeyBody, input);
      return addSshKey(deps, c.viewer, input);
    });
    if (!done.ok) return keysPage(reply, c, 1, done.state);
    return seeOther(reply, '/settings/keys');
  });

  app.post('/settings/keys/:uuid/delete', route, async (request, reply) => {
    const c = requirePage(request);
    await deleteSshKey(deps, c.viewer, (request.params as { uuid: string }).uuid);
    return seeOther(reply, '/settings/keys');
  });
}
