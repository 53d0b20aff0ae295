import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { EVENT_KINDS } from '../events/kinds.ts';
import { type HookJson, createHook, deleteHook, getHook, listHooks, ping, rotateSecret, updateHook } from '../hooks/service.ts';
import { CreateHookBody, UpdateHookBody } from '../hooks/schemas.ts';
import { apiBody } from './api-body.ts';
import { type PageCaller, pageWindow, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt, checked, dangerForm, emptyForm, field, formMessage } from './forms.ts';
import { typedForm } from './admin-common.ts';
import { type Html, html, pager, seg, when } from './html.ts';
import { csrfField, layout } from './layout.ts';
import { type HookPageContext, UuidParam, hookRoute } from './hook-scopes.ts';

const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
const PageOnly = Type.Object(
  { page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) },
  { additionalProperties: false },
);
const Text = (max: number) => Type.Optional(Type.String({ maxLength: max }));
const HookForm = Type.Object(
  {
    _csrf: Csrf,
    url: Text(2048),
    events: Text(10_000),
    branch_filter: Text(255),
    active: Type.Optional(
      Type.Union([Type.String({ maxLength: 5 }), Type.Array(Type.String({ maxLength: 5 }), { maxItems: 2 })]),
    ),
    secret: Text(200),
  },
  { additionalProperties: false },
);
const ActionForm = Type.Object({ _csrf: Csrf }, { additionalProperties: false });
const DeleteForm = Type.Object({ _csrf: Csrf, confirm: Text(100) }, { additionalProperties: false });
const HOOK_FIELDS = ['url', 'events', 'branch_filter', 'active', 'secret'] as const;
const HOOKS_PER_PAGE = 30;
const HookParams = { hook_uuid: UuidParam };

type HookFormBody = { url?: string; events?: string; branch_filter?: string; active?: string | string[]; secret?: string };

/** The events field as the API takes it: kinds separated by commas or spaces (`*`: every kind). */
export const eventsOf = (text: string | undefined): string[] =>
  (text ?? '')
    .split(/[\s,]+/)
    .map((k) => k.trim())
    .filter(Boolean);

const eventsHint = 'Event kinds separated by commas (such as branch-pushed, pull-opened), or * for every kind.';
const knownKinds = html`<details>
  <summary>Known event kinds</summary>
  <p class="muted">${Object.keys(EVENT_KINDS).join(', ')}</p>
</details>`;

/** The fields of a hook's form (new or edit), the typed values kept and errors beside them. */
function hookFields(state: FormState | undefined, hook: HookJson | null): Html {
  return html`${field(state, { name: 'url', label: 'Payload URL', type: 'url', required: true, value: hook?.url, maxlength: 2048 })}
  ${field(state, { name: 'events', label: 'Events', required: true, value: hook ? hook.events.join(', ') : '*', hint: eventsHint })}
  ${knownKinds}
  ${field(state, {
    name: 'branch_filter',
    label: 'Branch filter (optional)',
    value: hook?.branch_filter,
    hint: 'A glob such as main or release/** matched against the branch of branch, pull and status events; empty: every branch.',
  })}
  ${field(state, { name: 'active', label: 'Active', type: 'checkbox', value: hook ? hook.active : true })}`;
}

function hookStatus(h: HookJson): Html {
  const state = h.active ? 'active' : h.disabled_reason ? `disabled (${h.disabled_reason})` : 'inactive';
  return html`<span class="badge ${h.active ? 'open' : 'closed'}">${state}</span>${
      h.last_status
        ? html` <span class="badge ${h.last_status === 'success' ? 'approved' : 'changes_requested'}"
            >last: ${h.last_status}</span
          >`
        : ''
    }`;
}

/** The secret, shown once on the answer page of a create or a rotation. */
const secretOnce = (secret: string) =>
  html`<div class="box" role="status">
    <p><strong>The hook's signing secret.</strong> Copy it now: it is not shown again.</p>
    <p><code id="hook-secret" class="wrap">${secret}</code></p>
  </div>`;

async function listPage(
  deps: Deps,
  c: PageCaller,
  h: HookPageContext,
  query: { page?: number },
  state?: FormState,
): Promise<{ page: Html; status: number }> {
  const w = pageWindow(query, HOOKS_PER_PAGE);
  const hooks = await listHooks(deps, c.viewer, h.ref, w);
  const crumbs = await h.form.crumbs(deps, c.viewer, h.params);
  const body = html`<p class="crumbs">${crumbs}</p>
    <h1>Hooks</h1>
    ${
      hooks.length
        ? html`<ul class="plain" aria-label="Hooks">
            ${hooks.slice(0, w.perPage).map(
              (k) =>
                html`<li>
                  <a href="${h.base}/${seg(k.uuid)}">${k.url}</a> ${hookStatus(k)}
                  <span class="muted"
                    >${k.events.join(', ')}${k.last_delivery_at ? html` · last delivery ${when(k.last_delivery_at)}` : ''}</span
                  >
                </li>`,
            )}
          </ul>`
        : html`<p class="muted">No hooks yet.</p>`
    }
    ${pager(h.base, w.page, hooks.length > w.perPage)}
    <h2 id="new-h">Add a hook</h2>
    ${formMessage(state)}
    <form class="stack" method="post" action="${h.base}" aria-labelledby="new-h">
      ${csrfField(c)} ${hookFields(state, null)}
      ${field(state, {
        name: 'secret',
        label: 'Secret (optional)',
        type: 'password',
        autocomplete: 'off',
        hint: 'whsec_ and the base64 of 24 to 64 random bytes; left empty, one is generated and shown once.',
      })}
      <div><button type="submit" class="primary">Add hook</button></div>
    </form>`;
  return { page: layout({ title: 'Hooks', caller: c }, body), status: state?.status ?? 200 };
}

async function hookPage(
  deps: Deps,
  c: PageCaller,
  h: HookPageContext,
  uuid: string,
  opts: { state?: FormState; secret?: string; warnings?: string[]; deleteState?: FormState } = {},
): Promise<Html> {
  const hook = await getHook(deps, c.viewer, h.ref, uuid);
  const crumbs = await h.form.crumbs(deps, c.viewer, h.params);
  const self = `${h.base}/${seg(hook.uuid)}`;
  const body = html`<p class="crumbs">${crumbs} <a href="${h.base}">Hooks</a> /</p>
    <h1>${hook.url}</h1>
    ${opts.secret ? secretOnce(opts.secret) : ''}
    ${(opts.warnings ?? []).map((w) => html`<p class="warning" role="alert"><strong>Warning:</strong> ${w}</p>`)}
    <p>${hookStatus(hook)}</p>
    <p class="muted">
      Created by ${hook.created_by_username} ${when(hook.created_at)} · ${hook.consecutive_failures} failed attempts since the
      last success${hook.last_delivery_at ? html` · last delivery ${when(hook.last_delivery_at)}` : ''}
    </p>
    <p><a href="${self}/deliveries">Deliveries</a></p>
    <div class="row">
      <form method="post" action="${self}/pings">${csrfField(c)}<button type="submit">Send a ping</button></form>
      <form method="post" action="${self}/rotate-secret">${csrfField(c)}<button type="submit">Rotate the secret</button></form>
    </div>
    <h2 id="edit-h">Edit</h2>
    ${formMessage(opts.state)}
    <form class="stack" method="post" action="${self}" aria-labelledby="edit-h">
      ${csrfField(c)} ${hookFields(opts.state, hook)}
      <div><button type="submit" class="primary">Save</button></div>
    </form>
    <h2>Delete this hook</h2>
    <p class="muted">Its deliveries are deleted with it.</p>
    ${formMessage(opts.deleteState)}
    ${dangerForm({ action: `${self}/delete`, csrf: c.csrf, label: 'Delete hook', confirmWith: 'delete', state: opts.deleteState })}`;
  return layout({ title: `Hook ${hook.url}`, caller: c }, body);
}

const formInput = (b: HookFormBody) => ({
  url: b.url ?? '',
  events: eventsOf(b.events),
  branch_filter: b.branch_filter?.trim() ? b.branch_filter.trim() : null,
  active: checked(b.active),
});

/** A hook's list, create, page, edit, ping, secret rotation and delete (README "Web interface"). */
export async function hookPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  hookRoute(app, 'GET', '', { querystring: PageOnly }, async (request, reply, h) => {
    const c = requirePage(request);
    const { page, status } = await listPage(deps, c, h, request.query as { page?: number });
    return sendPage(reply, page, status);
  });

  hookRoute(app, 'POST', '', { body: HookForm }, async (request, reply, h) => {
    const c = requirePage(request);
    const b = request.body as HookFormBody;
    const values = typedForm(b);
    const result = await attempt(values, HOOK_FIELDS, () => {
      const input = apiBody(CreateHookBody, { ...formInput(b), ...(b.secret ? { secret: b.secret } : {}) });
      return createHook(deps, c.viewer, h.ref, input);
    });
    if (!result.ok) {
      const { page, status } = await listPage(deps, c, h, {}, result.state);
      return sendPage(reply, page, status);
    }
    return sendPage(
      reply,
      await hookPage(deps, c, h, result.value.uuid, { secret: result.value.secret, warnings: result.value.warnings }),
      201,
    );
  });

  hookRoute(app, 'GET', '/:hook_uuid', { params: HookParams }, async (request, reply, h) => {
    const c = requirePage(request);
    return sendPage(reply, await hookPage(deps, c, h, (request.params as { hook_uuid: string }).hook_uuid));
  });

  hookRoute(app, 'POST', '/:hook_uuid', { params: HookParams, body: HookForm }, async (request, reply, h) => {
    const c = requirePage(request);
    const uuid = (request.params as { hook_uuid: string }).hook_uuid;
    const b = request.body as HookFormBody;
    const values = typedForm(b);
    const result = await attempt(values, HOOK_FIELDS, async () => {
      // `active` is sent only when the box changed: re-sending true would reset the failure count
      const { active, ...rest } = formInput(b);
      const was = (await getHook(deps, c.viewer, h.ref, uuid)).active;
      return updateHook(deps, c.viewer, h.ref, uuid, apiBody(UpdateHookBody, active === was ? rest : { ...rest, active }));
    });
    if (!result.ok) return sendPage(reply, await hookPage(deps, c, h, uuid, { state: result.state }), result.state.status);
    return seeOther(reply, `${h.base}/${seg(uuid)}`);
  });

  hookRoute(app, 'POST', '/:hook_uuid/rotate-secret', { params: HookParams, body: ActionForm }, async (request, reply, h) => {
    const c = requirePage(request);
    const uuid = (request.params as { hook_uuid: string }).hook_uuid;
    const { secret } = await rotateSecret(deps, c.viewer, h.ref, uuid);
    return sendPage(reply, await hookPage(deps, c, h, uuid, { secret }));
  });

  hookRoute(app, 'POST', '/:hook_uuid/pings', { params: HookParams, body: ActionForm }, async (request, reply, h) => {
    const c = requirePage(request);
    const uuid = (request.params as { hook_uuid: string }).hook_uuid;
    const result = await attempt({}, [], () => ping(deps, c.viewer, h.ref, uuid));
    if (!result.ok) return sendPage(reply, await hookPage(deps, c, h, uuid, { state: result.state }), result.state.status);
    return seeOther(reply, `${h.base}/${seg(uuid)}/deliveries/${seg(result.value.delivery_uuid)}`);
  });

  hookRoute(app, 'POST', '/:hook_uuid/delete', { params: HookParams, body: DeleteForm }, async (request, reply, h) => {
    const c = requirePage(request);
    const uuid = (request.params as { hook_uuid: string }).hook_uuid;
    const typed = (request.body as { confirm?: string }).confirm ?? '';
    if (typed.trim() !== 'delete') {
      // nothing is deleted; the hook's page again, the confirmation asked for beside its field
      await getHook(deps, c.viewer, h.ref, uuid);
      const deleteState: FormState = {
        ...emptyForm({ confirm: typed }),
        errors: { confirm: 'Type delete to confirm: nothing was deleted.' },
        status: 400,
      };
      return sendPage(reply, await hookPage(deps, c, h, uuid, { deleteState }), 400);
    }
    await deleteHook(deps, c.viewer, h.ref, uuid);
    return seeOther(reply, h.base);
  });
}
