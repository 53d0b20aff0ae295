/**
 * `/notifications` (docs/notifications.md): the caller's inbox with its tabs (unread, all, done),
 * grouped by repo, each with its reason and its actions (mark read, mark done), mark all read, and
 * filters by reason and repo. Plain forms: every action works without JavaScript.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.ts';
import { REASONS } from '../../notifications/fanout.ts';
import {
  type InboxState,
  type NotificationJson,
  listNotifications,
  markAllRead,
  updateNotification,
} from '../../notifications/service.ts';
import { pageWindow, requirePage, seeOther, sendPage } from '../context.ts';
import { type Html, html, pager, when } from '../html.ts';
import { csrfField, layout } from '../layout.ts';
import { FormBody } from '../settings-common.ts';

const TABS = [
  ['unread', 'Unread'],
  ['all', 'All'],
  ['done', 'Done'],
] as const;
type Tab = (typeof TABS)[number][0];

const Query = Type.Object({
  tab: Type.Optional(Type.Union([Type.Literal('unread'), Type.Literal('all'), Type.Literal('done')])),
  reason: Type.Optional(Type.String({ maxLength: 40 })),
  repo: Type.Optional(Type.String({ maxLength: 300 })),
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
});
const UuidParams = Type.Object({ uuid: Type.String({ maxLength: 100 }) });

const REASON_TEXT: Record<string, string> = {
  author: 'you opened it',
  assigned: 'assigned to you',
  mention: 'you were mentioned',
  team_mention: 'your team was mentioned',
  review_requested: 'review requested',
  comment: 'you took part',
  state_change: 'its state changed',
  subscribed: 'you are subscribed',
  ci: 'your run',
};

const STATE_OF: Record<Tab, InboxState> = { unread: 'unread', all: 'all', done: 'done' };

/** Where a form returns: the inbox as it was (tab and filters), from the posted `back`. */
const backTo = (value: unknown): string =>
  typeof value === 'string' && value.startsWith('/notifications') && !value.startsWith('//') ? value : '/notifications';

function item(n: NotificationJson, csrf: string, back: string): Html {
  const action = (path: string, label: string, name: string) =>
    html`<form method="post" action="/notifications/${n.uuid}/${path}">
      <input type="hidden" name="_csrf" value="${csrf}" /><input type="hidden" name="back" value="${back}" />
      <button type="submit" class="link" aria-label="${label}: ${n.subject.title}">${name}</button>
    </form>`;
  return html`<li class="row notification${n.unread ? ' unread' : ''}" id="n-${n.uuid}">
    <span class="badge">${n.subject.kind}</span>
    <a href="${new URL(n.subject.url).pathname}">${n.unread ? html`<strong>${n.subject.title}</strong>` : n.subject.title}</a>
    <span class="muted">#${String(n.subject.number)}</span>
    <span class="badge reason" title="${n.reasons.join(', ')}">${REASON_TEXT[n.reason] ?? n.reason}</span>
    <span class="muted">${n.last_actor ? `${n.last_actor.username} · ` : ''}${when(n.updated_at)}</span>
    ${n.unread ? action('read', 'Mark read', 'Mark read') : ''} ${n.done ? '' : action('done', 'Mark done', 'Done')}
  </li>`;
}

export async function inboxPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  app.get('/notifications', { config: { public: true }, schema: { hide: true, querystring: Query } }, async (request, reply) => {
    const c = requirePage(request);
    const q = request.query as { tab?: Tab; reason?: string; repo?: string; page?: number };
    const tab: Tab = q.tab ?? 'unread';
    const w = pageWindow(q);
    const reason = q.reason && (REASONS as readonly string[]).includes(q.reason) ? q.reason : undefined;
    const repo = q.repo?.trim() || undefined;
    const list = await listNotifications(
      deps,
      c.viewer,
      { state: STATE_OF[tab], ...(reason ? { reason } : {}), ...(repo ? { repo } : {}) },
      { offset: w.offset, limit: w.limit },
    );
    const shown = list.slice(0, w.perPage);
    const query: Record<string, string> = { tab, ...(reason ? { reason } : {}), ...(repo ? { repo } : {}) };
    const back = `/notifications?${new URLSearchParams({ ...query, ...(w.page > 1 ? { page: String(w.page) } : {}) })}`;
    const groups = new Map<string, NotificationJson[]>();
    for (const n of shown) groups.set(n.subject.repo, [...(groups.get(n.subject.repo) ?? []), n]);
    const body = html`<h1>Notifications</h1>
      <nav class="tabs" aria-label="Inbox">
        ${TABS.map(
          ([key, label]) =>
            html`<a href="/notifications?tab=${key}" ${key === tab ? html`aria-current="page"` : ''}>${label}</a>`,
        )}
      </nav>
      <div class="row">
        <form class="row" method="get" action="/notifications" aria-label="Filters">
          <input type="hidden" name="tab" value="${tab}" />
          <label for="f-reason">Reason</label>
          <select id="f-reason" name="reason">
            <option value="">any</option>
            ${REASONS.map((r) => html`<option value="${r}" ${r === reason ? 'selected' : ''}>${r.replace('_', ' ')}</option>`)}
          </select>
          <label for="f-repo">Repo</label>
          <input id="f-repo" type="text" name="repo" placeholder="owner/repo" value="${repo ?? ''}" />
          <button type="submit">Filter</button>
        </form>
        <form method="post" action="/notifications/mark-read">
          ${csrfField(c)}<input type="hidden" name="back" value="${back}" />
          ${repo ? html`<input type="hidden" name="repo" value="${repo}" />` : ''}
          <button type="submit">Mark all read</button>
        </form>
      </div>
      <p id="inbox-live" class="muted" role="status"></p>
      ${
        shown.length === 0
          ? html`<p class="muted">Nothing here.</p>`
          : [...groups].map(
              ([name, items]) =>
                html`<section class="box" aria-label="${name}">
                  <h2>${name}</h2>
                  <ul class="plain">
                    ${items.map((n) => item(n, c.csrf, back))}
                  </ul>
                </section>`,
            )
      }
      ${pager('/notifications', w.page, list.length > w.perPage, query)}`;
    return sendPage(reply, layout({ title: 'Notifications', caller: c }, body));
  });

  const post = { config: { public: true }, schema: { hide: true, params: UuidParams, body: FormBody } };
  app.post('/notifications/:uuid/read', post, async (request, reply) => {
    const c = requirePage(request);
    await updateNotification(deps, c.viewer, (request.params as { uuid: string }).uuid, { unread: false });
    return seeOther(reply, backTo((request.body as Record<string, unknown>).back));
  });
  app.post('/notifications/:uuid/done', post, async (request, reply) => {
    const c = requirePage(request);
    await updateNotification(deps, c.viewer, (request.params as { uuid: string }).uuid, { done: true });
    return seeOther(reply, backTo((request.body as Record<string, unknown>).back));
  });
  app.post(
    '/notifications/mark-read',
    { config: { public: true }, schema: { hide: true, body: FormBody } },
    async (request, reply) => {
      const c = requirePage(request);
      const body = request.body as Record<string, unknown>;
      const repo = typeof body.repo === 'string' && body.repo.trim() ? body.repo.trim() : undefined;
      await markAllRead(deps, c.viewer, repo ? { repo } : {});
      return seeOther(reply, backTo(body.back));
    },
  );
}
