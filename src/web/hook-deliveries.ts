import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { DELIVERY_STATUSES } from '../hooks/schemas.ts';
import { type DeliveryJson, getDelivery, getHook, listDeliveries, redeliver } from '../hooks/service.ts';
import { type PageCaller, pageWindow, requirePage, seeOther, sendPage } from './context.ts';
import { type FormState, attempt, formMessage } from './forms.ts';
import { type Html, html, pager, seg, when } from './html.ts';
import { csrfField, layout } from './layout.ts';
import { type HookPageContext, UuidParam, hookRoute } from './hook-scopes.ts';

const ListQuery = Type.Object(
  {
    status: Type.Optional(Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s)))),
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  },
  { additionalProperties: false },
);
const ActionForm = Type.Object({ _csrf: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false });
const DELIVERIES_PER_PAGE = 30;
const HookParams = { hook_uuid: UuidParam };
const DeliveryParams = { hook_uuid: UuidParam, delivery_uuid: UuidParam };

const statusBadge = (s: string) =>
  html`<span class="badge ${s === 'success' ? 'approved' : s === 'failed' ? 'changes_requested' : ''}">${s}</span>`;

/** The answer of a delivery's last attempt in a few words. */
function outcome(d: DeliveryJson): Html {
  const a = d.last_attempt;
  if (!a) return html`<span class="muted">not attempted yet</span>`;
  return html`${a.response_status === null ? '' : html`HTTP ${a.response_status}`}${a.error ? html` ${a.error}` : ''}
    <span class="muted">in ${a.duration_ms} ms</span>`;
}

function headerTable(headers: Record<string, string> | null, label: string): Html {
  const entries = Object.entries(headers ?? {});
  if (!entries.length) return html`<p class="muted">No headers.</p>`;
  return html`<div class="table-wrap">
    <table aria-label="${label}">
      <thead>
        <tr>
          <th scope="col">Header</th>
          <th scope="col">Value</th>
        </tr>
      </thead>
      <tbody>
        ${entries.map(
          ([k, v]) =>
            html`<tr>
              <td><code>${k}</code></td>
              <td><code class="wrap">${v}</code></td>
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

/** A body as text, pretty-printed when it is JSON. */
function bodyText(body: string | null | undefined): string {
  if (body === null || body === undefined) return '';
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

async function heading(deps: Deps, c: PageCaller, h: HookPageContext, hookUuid: string) {
  const hook = await getHook(deps, c.viewer, h.ref, hookUuid);
  const crumbs = await h.form.crumbs(deps, c.viewer, h.params);
  const hookHref = `${h.base}/${seg(hook.uuid)}`;
  return {
    hook,
    hookHref,
    crumbs: html`<p class="crumbs">${crumbs} <a href="${h.base}">Hooks</a> / <a href="${hookHref}">${hook.url}</a> /</p>`,
  };
}

async function deliveryPage(
  deps: Deps,
  c: PageCaller,
  h: HookPageContext,
  hookUuid: string,
  deliveryUuid: string,
  state?: FormState,
): Promise<Html> {
  const d = await getDelivery(deps, c.viewer, h.ref, hookUuid, deliveryUuid);
  const { hook, hookHref, crumbs } = await heading(deps, c, h, hookUuid);
  const a = d.last_attempt;
  const self = `${hookHref}/deliveries/${seg(d.uuid)}`;
  const body = html`${crumbs}
    <h1>Delivery of ${d.event_kind}</h1>
    <p>${statusBadge(d.status)} ${outcome(d)}</p>
    <p class="muted">
      <code>${d.uuid}</code> (the webhook-id header) · created ${when(d.created_at)} · ${d.attempts}
      attempt${d.attempts === 1 ? '' : 's'}${d.event_id ? html` · event ${d.event_id}` : ''}${
        d.next_attempt_at ? html` · next attempt ${when(d.next_attempt_at)}` : ''
      }
    </p>
    ${formMessage(state)}
    ${
      hook.active
        ? html`<form method="post" action="${self}/redeliver">
            ${csrfField(c)}<button type="submit" class="primary">Redeliver</button>
          </form>`
        : html`<p class="muted">The hook is not active: re-enable it on <a href="${hookHref}">its page</a> to redeliver.</p>`
    }
    <p><a href="${hookHref}/deliveries">All deliveries of this hook</a></p>
    ${
      a
        ? html`<section class="box" aria-labelledby="req-h">
              <h2 id="req-h">Request</h2>
              <p class="muted">Attempt ${d.attempts}, ${when(a.at)}: POST <code class="wrap">${hook.url}</code></p>
              ${headerTable(a.request_headers, 'Request headers')}
              ${
                a.request_body === null || a.request_body === undefined
                  ? html`<p class="muted">The body was not recorded for this attempt.</p>`
                  : html`<h3>Body</h3>
                      <pre class="wrap" tabindex="0"><code>${bodyText(a.request_body)}</code></pre>`
              }
            </section>
            <section class="box" aria-labelledby="res-h">
              <h2 id="res-h">Response</h2>
              <p>
                ${a.response_status === null ? html`No answer` : html`HTTP ${a.response_status}`}${a.error ? html` · <strong>${a.error}</strong>` : ''}
                <span class="muted">after ${a.duration_ms} ms</span>
              </p>
              ${a.response_headers ? headerTable(a.response_headers, 'Response headers') : ''}
              ${
                a.response_body
                  ? html`<h3>Body</h3>
                      <pre class="wrap" tabindex="0"><code>${bodyText(a.response_body)}</code></pre>`
                  : html`<p class="muted">No body.</p>`
              }
            </section>`
        : html`<p class="muted">Not attempted yet.</p>`
    }`;
  return layout({ title: `Delivery ${d.uuid}`, caller: c }, body);
}

/** A hook's deliveries, one delivery's request and response, and redelivering it (README "Web interface"). */
export async function hookDeliveryPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  hookRoute(app, 'GET', '/:hook_uuid/deliveries', { params: HookParams, querystring: ListQuery }, async (request, reply, h) => {
    const c = requirePage(request);
    const hookUuid = (request.params as { hook_uuid: string }).hook_uuid;
    const q = request.query as { status?: (typeof DELIVERY_STATUSES)[number]; page?: number };
    const w = pageWindow(q, DELIVERIES_PER_PAGE);
    const rows = await listDeliveries(deps, c.viewer, h.ref, hookUuid, q.status, w);
    const { hookHref, crumbs } = await heading(deps, c, h, hookUuid);
    const base = `${hookHref}/deliveries`;
    const filter = (s: string | undefined, label: string) =>
      html`<a href="${s ? `${base}?status=${s}` : base}" ${q.status === s ? html` aria-current="page"` : ''}>${label}</a>`;
    const body = html`${crumbs}
      <h1>Deliveries</h1>
      <nav class="row" aria-label="Delivery status">
        ${filter(undefined, 'all')} ${DELIVERY_STATUSES.map((s) => filter(s, s))}
      </nav>
      ${
        rows.length
          ? html`<ul class="plain" aria-label="Deliveries">
              ${rows.slice(0, w.perPage).map(
                (d) =>
                  html`<li class="delivery">
                    <a href="${base}/${seg(d.uuid)}">${d.event_kind}</a> ${statusBadge(d.status)} ${outcome(d)}
                    <span class="muted">· ${d.attempts} attempt${d.attempts === 1 ? '' : 's'} · ${when(d.created_at)}</span>
                  </li>`,
              )}
            </ul>`
          : html`<p class="muted">No ${q.status ?? ''} deliveries.</p>`
      }
      ${pager(base, w.page, rows.length > w.perPage, q.status ? { status: q.status } : {})}`;
    return sendPage(reply, layout({ title: 'Deliveries', caller: c }, body));
  });

  hookRoute(app, 'GET', '/:hook_uuid/deliveries/:delivery_uuid', { params: DeliveryParams }, async (request, reply, h) => {
    const c = requirePage(request);
    const p = request.params as { hook_uuid: string; delivery_uuid: string };
    return sendPage(reply, await deliveryPage(deps, c, h, p.hook_uuid, p.delivery_uuid));
  });

  hookRoute(
    app,
    'POST',
    '/:hook_uuid/deliveries/:delivery_uuid/redeliver',
    { params: DeliveryParams, body: ActionForm },
    async (request, reply, h) => {
      const c = requirePage(request);
      const p = request.params as { hook_uuid: string; delivery_uuid: string };
      const result = await attempt({}, [], () => redeliver(deps, c.viewer, h.ref, p.hook_uuid, p.delivery_uuid));
      if (!result.ok) {
        return sendPage(reply, await deliveryPage(deps, c, h, p.hook_uuid, p.delivery_uuid, result.state), result.state.status);
      }
      return seeOther(reply, `${h.base}/${seg(p.hook_uuid)}/deliveries/${seg(p.delivery_uuid)}`);
    },
  );
}
