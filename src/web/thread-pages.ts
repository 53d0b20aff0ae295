import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { listAttachments } from '../attachments/service.ts';
import type { Deps } from '../deps.ts';
import {
  createReply,
  getReply,
  getThread,
  threadTimeline,
  listReplies,
  listReplyVersions,
  previousVersionPage,
  updateReply,
  updateThread,
} from '../threads/service.ts';
import { toggleTask } from '../markdown/render.ts';
import { activityOfScope } from './activity.ts';
import { levelAtLeast } from '../access/index.ts';
import { loadRepoJson } from '../repos/view.ts';
import type { TimelineEntry } from '../tracker/timeline.ts';
import { listMilestones } from '../tracker/milestones.ts';
import type { PageCaller } from './context.ts';
import type { FormState } from './forms.ts';
import { allLabels } from './tracker/issues.ts';
import { sidebar, threadPowers, timelineEntry } from './tracker/sidebar.ts';
import { isSignedOut, pageWindow, readerPage, requirePage, seeOther, sendPage } from './context.ts';
import { type Html, html, pager, trusted, when } from './html.ts';
import { repoHref } from './home-pages.ts';
import { csrfField, layout } from './layout.ts';
import { liveFeed, resumePoint } from './live.ts';
import { THREAD_STATE_KINDS, liveState } from './live-state.ts';
import { NumberParam, type PageRepo, pageRepo, repoHeader, repoRoute } from './repo-common.ts';
import { subscribeControl } from './notifications/controls.ts';
import { getThreadSubscription } from '../notifications/subscriptions.ts';

/** The session's CSRF token (or the X-CSRF-Token header instead: web/plugin.ts checks either). */
const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
const PageQuery = Type.Object(
  { page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) },
  { additionalProperties: false },
);
const ReplyForm = Type.Object({ _csrf: Csrf, body: Type.String({ maxLength: 65_536 }) }, { additionalProperties: false });
const ThreadParams = { number: NumberParam };
const ReplyParams = { number: NumberParam, reply_number: NumberParam };
const REPLIES_PER_PAGE = 50;
/** Versions on one history page at most (fewer when their text passes the API's page size). */
const VERSIONS_PER_PAGE = 20;
const HistoryQuery = Type.Object(
  { after_version: Type.Optional(Type.Integer({ minimum: 1, maximum: 2147483647 })) },
  { additionalProperties: false },
);

type Params = { number: number; reply_number?: number };
const TaskForm = Type.Object(
  {
    _csrf: Type.Optional(Type.String({ maxLength: 100 })),
    index: Type.String({ pattern: '^[0-9]{1,4}$' }),
    checked: Type.Union([Type.Literal('true'), Type.Literal('false')]),
  },
  { additionalProperties: false },
);
/** The most timeline entries a thread page reads (the API's page size). */
const TIMELINE_MAX = 100;

/** The page addresses of the repos that `referenced` entries come from (the reader can read them). */
async function referenceRepoPaths(deps: Deps, entries: TimelineEntry[]): Promise<Map<string, string>> {
  const uuids = [
    ...new Set(
      entries.flatMap((e) => (e.kind === 'referenced' ? [String((e.source as { repo_uuid?: string })?.repo_uuid)] : [])),
    ),
  ];
  const out = new Map<string, string>();
  for (const uuid of uuids) {
    const repo = await loadRepoJson(deps.db, uuid, '').catch(() => null);
    if (repo) out.set(uuid, repoHref(repo));
  }
  return out;
}

/**
 * A thread page: its text, its replies with the timeline of its changes between them, and the
 * side bar (web/tracker/sidebar.ts); `sidebarState` is a refused side bar form, shown again.
 */
export async function renderThreadPage(
  deps: Deps,
  c: PageCaller,
  { at: ref, repo, can }: PageRepo,
  number: number,
  pageNumber: number | undefined,
  sidebarState?: FormState,
): Promise<Html> {
  const w = pageWindow({ page: pageNumber }, REPLIES_PER_PAGE);
  const after = await resumePoint(deps);
  const thread = await getThread(deps, c.viewer, ref, number);
  const powers = threadPowers(can.level, c.viewer, thread, repo.is_archived);
  const [replies, attachments, events, timeline, labels, milestones] = await Promise.all([
    listReplies(deps, c.viewer, ref, number, w),
    listAttachments(deps, c.viewer, ref, { kind: 'thread', number }, { offset: 0, limit: 100 }),
    activityOfScope(deps, c.viewer, `thread:${thread.uuid}`, 20, [`thread:${thread.uuid}`, `repo:${repo.uuid}`]),
    threadTimeline(deps, c.viewer, ref, number, { offset: 0, limit: TIMELINE_MAX }),
    powers.triage ? allLabels(deps, c.viewer, { repo: ref }) : Promise.resolve([]),
    powers.triage
      ? listMilestones(deps, c.viewer, ref, { offset: 0, limit: 100, state: 'open', sort: 'due_on' })
      : Promise.resolve([]),
  ]);
  const repoPaths = await referenceRepoPaths(deps, timeline);
  const subscription = await getThreadSubscription(deps, c.viewer, ref, number);
  const shown = replies.slice(0, w.perPage);
  const more = replies.length > w.perPage;
  // the timeline's changes between this page's replies: from the first reply (the thread's start on
  // page 1) to the next page's first reply
  const from = w.page === 1 ? '' : (shown[0]?.created_at ?? '');
  const until = more ? replies[w.perPage]!.created_at : '\uffff';
  const changes = timeline.filter((e) => e.kind !== 'reply' && e.created_at >= from && e.created_at < until);
  const repoBase = repoHref(repo);
  const base = `${repoBase}/threads/${thread.number}`;
  const items: Array<{ at: string; html: Html }> = [
    ...shown.map((r) => ({
      at: r.created_at,
      html: html`<article class="reply" id="reply-${r.number}">
        <header>
          <strong>${r.author_username}</strong>
          ${when(r.created_at)}${r.version > 1 ? html` <a href="${base}/replies/${r.number}/history">edited (version ${r.version})</a>` : ''}
          ${can.takePart ? html`<a href="${base}/replies/${r.number}/edit">Edit</a>` : ''}
        </header>
        <div class="markdown">${trusted(r.body_html)}</div>
      </article>`,
    })),
    ...changes.flatMap((e) => {
      const entry = timelineEntry(repoBase, e, repoPaths);
      return entry
        ? [
            {
              at: e.created_at,
              html: html`<ul class="timeline">
                ${entry}
              </ul>`,
            },
          ]
        : [];
    }),
  ].sort((x, y) => (x.at < y.at ? -1 : x.at > y.at ? 1 : 0));
  const body = html`${repoHeader(repo, 'threads', can)}
    <div id="thread-main">
      <h2>#${thread.number} ${thread.title}</h2>
      <p class="muted" id="thread-state">
        <span class="badge ${thread.state}">${thread.state === 'open' ? 'Open' : 'Closed'}</span> Started by
        ${thread.author_username} ${when(thread.created_at)}
      </p>
      ${isSignedOut(c) ? '' : subscribeControl(`${repoBase}/threads/${thread.number}`, c.csrf, subscription)}
      <div class="thread-layout">
        <div class="thread-body">
          ${
            thread.body.trim()
              ? html`<section
                  class="box markdown"
                  aria-label="Thread text"
                  ${powers.state ? html` data-tasks="${repoBase}/threads/${thread.number}/tasks"` : ''}
                >
                  ${trusted(thread.body_html)}
                </section>`
              : ''
          }
          ${
            attachments.length
              ? html`<section class="box" aria-label="Attachments">
                  <ul class="plain">
                    ${attachments.map((a) => html`<li>${a.upload.filename} <span class="muted">${a.upload.size_bytes} bytes</span></li>`)}
                  </ul>
                </section>`
              : ''
          }
          <section aria-labelledby="replies-h" id="thread-replies">
            <h2 id="replies-h">Replies and changes</h2>
            ${items.map((i) => i.html)} ${shown.length === 0 ? html`<p class="muted">No replies yet.</p>` : ''}
            ${pager(base, w.page, more)}
          </section>
          ${
            !can.takePart
              ? ''
              : html`<form class="row" method="post" action="${base}/attachments" enctype="multipart/form-data">
                    <input type="hidden" name="_csrf" value="${c.csrf}" />
                    <label for="attach-file">Attach a file</label><input id="attach-file" name="file" type="file" required />
                    <button type="submit">Attach</button>
                  </form>
                  ${
                    thread.locked && !levelAtLeast(can.level, 'write')
                      ? html`<p class="muted">This conversation is locked: only people with write access can reply.</p>`
                      : html`<form class="stack" method="post" action="${base}/replies">
                          ${csrfField(c)} <label for="reply-body">Reply (Markdown)</label
                          ><textarea id="reply-body" name="body" required></textarea>
                          <div><button type="submit" class="primary">Reply</button></div>
                        </form>`
                  }`
          }
        </div>
        ${sidebar({ c, base: repoBase, thread, powers, labels, milestones, state: sidebarState })}
      </div>
    </div>
    ${liveFeed({ id: 'thread-feed', label: 'Activity', scopes: isSignedOut(c) ? [] : [`thread:${thread.uuid}`], after, events })}
    ${isSignedOut(c) ? '' : liveState({ scope: `thread:${thread.uuid}`, after, kinds: THREAD_STATE_KINDS, href: w.page === 1 ? base : `${base}?page=${w.page}`, parts: ['thread-replies', 'thread-state'] })}`;
  return layout({ title: `#${thread.number} ${thread.title}`, caller: c }, body);
}

/** Threads list, a thread with its replies, editing a reply and its version history (README "Web interface"). */
export async function threadPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  repoRoute(app, 'GET', '/threads/:number', { params: ThreadParams, querystring: PageQuery }, async (request, reply) => {
    const c = readerPage(request);
    const { number } = request.params as Params;
    const page = (request.query as { page?: number }).page;
    return sendPage(reply, await renderThreadPage(deps, c, await pageRepo(deps, c.viewer, request), number, page));
  });

  // a task of the thread's text ticked on the page (weft.js posts it; without JavaScript the text is edited instead)
  repoRoute(app, 'POST', '/threads/:number/tasks', { params: ThreadParams, body: TaskForm }, async (request, reply) => {
    const c = requirePage(request);
    const { at, repo } = await pageRepo(deps, c.viewer, request);
    const { number } = request.params as Params;
    const { index, checked } = request.body as { index: string; checked: 'true' | 'false' };
    await updateThread(deps, c.viewer, at.ref, number, {}, (text) => toggleTask(text, Number(index), checked === 'true'));
    if (request.headers['hx-request'] || request.headers['x-requested-with']) return reply.status(204).send();
    return seeOther(reply, `${repoHref(repo)}/threads/${number}`);
  });

  repoRoute(app, 'POST', '/threads/:number/replies', { params: ThreadParams, body: ReplyForm }, async (request, reply) => {
    const c = requirePage(request);
    const { at: ref, repo } = await pageRepo(deps, c.viewer, request);
    const { number } = request.params as Params;
    const created = await createReply(deps, c.viewer, ref.ref, number, { body: (request.body as { body: string }).body });
    return seeOther(reply, `${repoHref(repo)}/threads/${number}#reply-${created.number}`);
  });

  repoRoute(app, 'GET', '/threads/:number/replies/:reply_number/edit', { params: ReplyParams }, async (request, reply) => {
    const c = requirePage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const { number, reply_number } = request.params as Required<Params>;
    const r = await getReply(deps, c.viewer, ref.ref, number, reply_number);
    const base = `${repoHref(repo)}/threads/${number}`;
    const body = html`${repoHeader(repo, 'threads', can)}
      <h2>Edit reply ${reply_number} of <a href="${base}">thread #${number}</a></h2>
      ${
        repo.is_archived
          ? ''
          : html`<form class="stack" method="post" action="${base}/replies/${reply_number}/edit">
              ${csrfField(c)} <label for="reply-body">Reply (Markdown)</label
              ><textarea id="reply-body" name="body" required>${r.body}</textarea>
              <div class="row">
                <button type="submit" class="primary">Save</button> <a href="${base}#reply-${reply_number}">Cancel</a>
              </div>
            </form>`
      }`;
    return sendPage(reply, layout({ title: `Edit reply · #${number}`, caller: c }, body));
  });

  repoRoute(
    app,
    'POST',
    '/threads/:number/replies/:reply_number/edit',
    { params: ReplyParams, body: ReplyForm },
    async (request, reply) => {
      const c = requirePage(request);
      const { at: ref, repo } = await pageRepo(deps, c.viewer, request);
      const { number, reply_number } = request.params as Required<Params>;
      await updateReply(deps, c.viewer, ref.ref, number, reply_number, { body: (request.body as { body: string }).body });
      return seeOther(reply, `${repoHref(repo)}/threads/${number}#reply-${reply_number}`);
    },
  );

  repoRoute(
    app,
    'GET',
    '/threads/:number/replies/:reply_number/history',
    { params: ReplyParams, querystring: HistoryQuery },
    async (request, reply) => {
      const c = readerPage(request);
      const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
      const { number, reply_number } = request.params as Required<Params>;
      const after = (request.query as { after_version?: number }).after_version;
      // the API's pages of versions: at most VERSIONS_PER_PAGE, cut short by their size
      // (GET {repo}/threads/{n}/replies/{r}/versions with after_version)
      const page = await listReplyVersions(deps, c.viewer, ref.ref, number, reply_number, {
        offset: 0,
        limit: VERSIONS_PER_PAGE + 1,
        afterVersion: after,
      });
      const shown = page.versions.slice(0, VERSIONS_PER_PAGE);
      const more = page.continueAfter !== null || page.versions.length > VERSIONS_PER_PAGE;
      const older =
        after === undefined || shown.length === 0
          ? null
          : await previousVersionPage(deps, c.viewer, ref.ref, number, reply_number, shown[0]!.version, VERSIONS_PER_PAGE);
      const base = `${repoHref(repo)}/threads/${number}`;
      const here = `${base}/replies/${reply_number}/history`;
      const link = (afterVersion: number | undefined) =>
        afterVersion === undefined ? here : `${here}?after_version=${afterVersion}`;
      const nav = (where: string) =>
        after !== undefined || more
          ? html`<nav class="row" aria-label="Versions (${where})">
              ${after !== undefined ? html`<a href="${link(older ?? undefined)}" rel="prev">Older versions</a>` : ''}
              ${shown.length ? html`<span class="muted">versions ${shown[0]!.version}&ndash;${shown.at(-1)!.version}</span>` : ''}
              ${more ? html`<a href="${link(shown.at(-1)!.version)}" rel="next">Newer versions</a>` : ''}
            </nav>`
          : '';
      const body = html`${repoHeader(repo, 'threads', can)}
        <h2>History of reply ${reply_number} in <a href="${base}#reply-${reply_number}">thread #${number}</a></h2>
        ${nav('top')}
        ${shown.map(
          (v) =>
            html`<article class="reply" id="version-${v.version}">
              <header><strong>Version ${v.version}</strong> by ${v.editor_username} ${when(v.created_at)}</header>
              <div class="markdown">${trusted(v.body_html)}</div>
            </article>`,
        )}
        ${shown.length === 0 ? html`<p class="muted">No versions after version ${after ?? 0}.</p>` : ''} ${nav('bottom')}`;
      return sendPage(reply, layout({ title: `History · reply ${reply_number}`, caller: c }, body));
    },
  );
}
