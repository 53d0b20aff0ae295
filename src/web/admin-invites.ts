import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { assertCanListUsers } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { CreateInviteBody, INVITE_STATUSES } from '../invites/schemas.ts';
import { type InviteJson, createInvite, deleteInvite, getInvite, listInvites } from '../invites/service.ts';
import { type PageCaller, pageWindow, requirePage, seeOther, sendPage } from './context.ts';
import { EXPIRY_HINT, type FormState, attempt, dangerForm, emptyForm, field, formMessage, tzField } from './forms.ts';
import { endOfDayOrAsIs } from '../time.ts';
import { type Html, html, pager, seg, when } from './html.ts';
import { csrfField } from './layout.ts';
import { apiBody } from './api-body.ts';
import { Csrf, PageNumber, Text, UuidParams, adminPage, typedForm } from './admin-common.ts';

type InviteStatus = (typeof INVITE_STATUSES)[number];
const ListQuery = Type.Object(
  { status: Type.Optional(Type.Union(INVITE_STATUSES.map((s) => Type.Literal(s)))), page: PageNumber },
  { additionalProperties: false },
);
const NewInviteForm = Type.Object(
  { _csrf: Csrf, email: Text(254), expires_at: Text(64), tz: Text(64) },
  { additionalProperties: false },
);
const RevokeForm = Type.Object({ _csrf: Csrf, confirm: Text(100) }, { additionalProperties: false });
const INVITE_FIELDS = ['email', 'expires_at'] as const;
const INVITES_PER_PAGE = 30;
const WEEK_MS = 7 * 86_400_000;

/** The address a new user signs up at with this invite. */
export const inviteLink = (deps: Deps, uuid: string) => `${deps.config.publicUrl.replace(/\/$/, '')}/signup?invite=${seg(uuid)}`;

function inviteItem(deps: Deps, c: PageCaller, i: InviteJson, revoke?: FormState): Html {
  return html`<li id="invite-${i.uuid}">
    <code>${i.uuid}</code>
    <span class="badge ${i.status === 'pending' ? 'open' : i.status === 'accepted' ? 'merged' : 'closed'}">${i.status}</span>
    <span class="muted">
      ${i.email ? html`for ${i.email} · ` : ''}by ${i.created_by_username} ${when(i.created_at)} · expires
      ${when(i.expires_at)}${i.accepted_by_username ? html` · accepted by ${i.accepted_by_username} ${when(i.accepted_at)}` : ''}
    </span>
    ${
      i.status === 'pending'
        ? html`<p>Link: <code class="wrap">${inviteLink(deps, i.uuid)}</code></p>
            <details ${revoke ? html` open` : ''}>
              <summary>Revoke</summary>
              ${formMessage(revoke)}
              ${dangerForm({ action: `/admin/invites/${seg(i.uuid)}/delete`, csrf: c.csrf, label: 'Revoke invite', confirmWith: 'revoke', state: revoke, idPrefix: `revoke-${i.uuid}` })}
            </details>`
        : ''
    }
  </li>`;
}

async function invitesPage(
  deps: Deps,
  c: PageCaller,
  q: { status?: InviteStatus; page?: number },
  opts: { state?: FormState; created?: InviteJson; revoke?: { uuid: string; state: FormState } } = {},
): Promise<Html> {
  // the staff pages are staff only (403 to others, as the API's staff routes)
  assertCanListUsers(c.viewer);
  const w = pageWindow(q, INVITES_PER_PAGE);
  const rows = await listInvites(deps, c.viewer, { status: q.status, sort: '-created_at' }, w);
  const filter = (s: InviteStatus | undefined, label: string) =>
    html`<a href="/admin/invites${s ? `?status=${s}` : ''}" ${q.status === s ? html` aria-current="page"` : ''}>${label}</a>`;
  const defaultExpiry = new Date(deps.clock.now().getTime() + WEEK_MS).toISOString();
  const body = html`${
      opts.created
        ? html`<div class="box" role="status">
            <p><strong>Invite created.</strong> Send this link to the person you invite:</p>
            <p><code id="invite-link" class="wrap">${inviteLink(deps, opts.created.uuid)}</code></p>
          </div>`
        : ''
    }
    <h2 id="new-invite-h">Create an invite</h2>
    ${formMessage(opts.state)}
    <form class="stack" method="post" action="/admin/invites" aria-labelledby="new-invite-h">
      ${csrfField(c)}
      ${field(opts.state, { name: 'email', label: 'Email (optional)', type: 'email', hint: 'When set, only a signup with this email may use the invite.' })}
      ${field(opts.state, { name: 'expires_at', label: 'Expires at', required: true, value: defaultExpiry, hint: EXPIRY_HINT })}
      ${tzField()}
      <div><button type="submit" class="primary">Create invite</button></div>
    </form>
    <h2>Invites</h2>
    <nav class="row" aria-label="Invite status">${filter(undefined, 'all')} ${INVITE_STATUSES.map((s) => filter(s, s))}</nav>
    ${
      rows.length
        ? html`<ul class="plain" aria-label="Invites">
            ${rows.slice(0, w.perPage).map((i) => inviteItem(deps, c, i, opts.revoke?.uuid === i.uuid ? opts.revoke.state : undefined))}
          </ul>`
        : html`<p class="muted">No ${q.status ?? ''} invites.</p>`
    }
    ${pager('/admin/invites', w.page, rows.length > w.perPage, q.status ? { status: q.status } : {})}`;
  return adminPage(c, 'invites', 'Signup invites', body);
}

/** Staff pages of signup invites: create, list, revoke (README "Web interface"). */
export async function adminInvitePages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  app.get(
    '/admin/invites',
    { config: { public: true }, schema: { hide: true, querystring: ListQuery } },
    async (request, reply) => {
      const c = requirePage(request);
      return sendPage(reply, await invitesPage(deps, c, request.query as { status?: InviteStatus }));
    },
  );

  app.post(
    '/admin/invites',
    { config: { public: true }, schema: { hide: true, body: NewInviteForm } },
    async (request, reply) => {
      const c = requirePage(request);
      assertCanListUsers(c.viewer);
      const b = request.body as { email?: string; expires_at?: string; tz?: string };
      const result = await attempt(typedForm(b), INVITE_FIELDS, () =>
        createInvite(
          deps,
          c.viewer,
          apiBody(CreateInviteBody, {
            expires_at: endOfDayOrAsIs(b.expires_at?.trim() ?? '', b.tz),
            ...(b.email?.trim() ? { email: b.email.trim() } : {}),
          }),
        ),
      );
      if (!result.ok) return sendPage(reply, await invitesPage(deps, c, {}, { state: result.state }), result.state.status);
      return sendPage(reply, await invitesPage(deps, c, {}, { created: result.value, state: emptyForm() }), 201);
    },
  );

  app.post(
    '/admin/invites/:uuid/delete',
    { config: { public: true }, schema: { hide: true, params: UuidParams, body: RevokeForm } },
    async (request, reply) => {
      const c = requirePage(request);
      assertCanListUsers(c.viewer);
      const uuid = (request.params as { uuid: string }).uuid;
      const typed = (request.body as { confirm?: string }).confirm ?? '';
      if (typed.trim() !== 'revoke') {
        await getInvite(deps, c.viewer, uuid);
        const state: FormState = {
          ...emptyForm({ confirm: typed }),
          errors: { confirm: 'Type revoke to confirm: the invite was not revoked.' },
          status: 400,
        };
        return sendPage(reply, await invitesPage(deps, c, {}, { revoke: { uuid, state } }), 400);
      }
      const result = await attempt({}, [], () => deleteInvite(deps, c.viewer, uuid));
      if (!result.ok) {
        return sendPage(reply, await invitesPage(deps, c, {}, { revoke: { uuid, state: result.state } }), result.state.status);
      }
      return seeOther(reply, '/admin/invites');
    },
  );
}
