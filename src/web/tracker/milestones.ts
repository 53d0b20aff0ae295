/**
 * A repo's milestones pages (docs/tracker.md "Pages"): the list with each milestone's progress
 * (closed issues and pulls over all of them), one milestone with its issues, and create, edit,
 * close, reopen and delete for write access (decided by the services of {repo}/milestones).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../../deps.ts';
import { listThreads } from '../../threads/service.ts';
import {
  createMilestone,
  deleteMilestone,
  getMilestone,
  listMilestones,
  type MilestoneJson,
  updateMilestone,
} from '../../tracker/milestones.ts';
import { type PageCaller, requirePage, seeOther, sendPage } from '../context.ts';
import { attempt, dangerForm, emptyForm, field, formMessage, type FormState, typedValues } from '../forms.ts';
import { type Html, html, trusted, when } from '../html.ts';
import { repoHref } from '../home-pages.ts';
import { csrfField, layout } from '../layout.ts';
import { NumberParam, type PageRepo, pageRepo, pageRepoRef, repoHeader, repoRoute } from '../repo-common.ts';
import { boundedMarkdown } from '../../markdown/bounded.ts';
import { issuesHref, labelChip } from './common.ts';

const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
const MilestoneForm = Type.Object(
  {
    _csrf: Csrf,
    title: Type.String({ maxLength: 1000 }),
    description: Type.Optional(Type.String({ maxLength: 65_536 })),
    due_on: Type.Optional(Type.String({ maxLength: 40 })),
  },
  { additionalProperties: false },
);
const StateForm = Type.Object(
  { _csrf: Csrf, state: Type.Union([Type.Literal('open'), Type.Literal('closed')]) },
  { additionalProperties: false },
);
const DeleteForm = Type.Object({ _csrf: Csrf }, { additionalProperties: false });
const ListQuery = Type.Object(
  {
    state: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('closed'), Type.Literal('all')])),
    sort: Type.Optional(Type.Union([Type.Literal('due_on'), Type.Literal('title')])),
  },
  { additionalProperties: false },
);
const Params = { number: NumberParam };
const FIELDS = ['title', 'description', 'due_on'] as const;

/** A milestone's progress: a <progress> bar and the counts in words. */
function progress(m: MilestoneJson): Html {
  const closed = m.closed_threads + m.closed_pulls;
  const all = closed + m.open_threads + m.open_pulls;
  const pct = all === 0 ? 0 : Math.round((closed / all) * 100);
  return html`<div class="progress">
    <progress max="100" value="${pct}" aria-label="${m.title}: ${pct}% complete">${pct}%</progress>
    <span class="muted">${pct}% complete &middot; ${m.open_threads + m.open_pulls} open &middot; ${closed} closed</span>
  </div>`;
}

function milestoneFields(state: FormState | undefined, m?: MilestoneJson): Html {
  return html`${field(state, { name: 'title', label: 'Title', required: true, maxlength: 256, value: m?.title })}
  ${field(state, { name: 'due_on', label: 'Due date', hint: 'YYYY-MM-DD, or empty for none.', maxlength: 10, value: m?.due_on })}
  ${field(state, { name: 'description', label: 'Description (Markdown)', type: 'textarea', value: m?.description, markdown: true })}`;
}

async function listPage(
  deps: Deps,
  c: PageCaller,
  { at, repo, can }: PageRepo,
  query: { state?: 'open' | 'closed' | 'all'; sort?: 'due_on' | 'title' },
  state?: FormState,
): Promise<Html> {
  const base = repoHref(repo);
  const which = query.state ?? 'open';
  const milestones = await listMilestones(deps, c.viewer, at, {
    offset: 0,
    limit: 100,
    state: which,
    sort: query.sort ?? 'due_on',
  });
  const write = can.write;
  const tab = (s: string, label: string) =>
    html`<a href="${base}/milestones?state=${s}" ${which === s ? html` aria-current="page"` : ''}>${label}</a>`;
  const body = html`${repoHeader(repo, 'threads', can)}
    <div class="row">
      <h2 class="grow">Milestones</h2>
      <a href="${base}/threads">Issues</a> <a href="${base}/labels">Labels</a>
    </div>
    <nav class="tabs" aria-label="Milestone state">${tab('open', 'Open')}${tab('closed', 'Closed')}${tab('all', 'All')}</nav>
    ${
      milestones.length
        ? html`<ul class="plain milestones">
            ${milestones.map(
              (m) =>
                html`<li class="box">
                  <h3>
                    <a href="${base}/milestones/${m.number}">${m.title}</a>
                    ${m.state === 'closed' ? html`<span class="badge closed">Closed</span>` : ''}
                  </h3>
                  <p class="muted">${m.due_on ? `Due ${m.due_on}` : 'No due date'}</p>
                  ${progress(m)}
                </li>`,
            )}
          </ul>`
        : html`<p class="muted">No ${which === 'all' ? '' : which} milestones.</p>`
    }
    ${
      write
        ? html`<section class="box" aria-labelledby="new-milestone">
            <h2 id="new-milestone">New milestone</h2>
            <form class="stack" method="post" action="${base}/milestones">
              ${csrfField(c)} ${formMessage(state)} ${milestoneFields(state)}
              <div><button type="submit" class="primary">Create milestone</button></div>
            </form>
          </section>`
        : ''
    }`;
  return layout({ title: `Milestones · ${repo.full_name}`, caller: c }, body);
}

async function onePage(deps: Deps, c: PageCaller, { at, repo, can }: PageRepo, number: number, state?: FormState) {
  const base = repoHref(repo);
  // the milestone first: a missing one is 404 (its threads' list would refuse the number as 400)
  const m = await getMilestone(deps, c.viewer, at, number);
  const threads = await listThreads(deps, c.viewer, at, { offset: 0, limit: 50 }, { state: 'all', milestone: String(number) });
  const write = can.write;
  const body = html`${repoHeader(repo, 'threads', can)}
    <p><a href="${base}/milestones">All milestones</a></p>
    <h2>
      ${m.title}
      ${m.state === 'closed' ? html`<span class="badge closed">Closed</span>` : html`<span class="badge open">Open</span>`}
    </h2>
    <p class="muted">${m.due_on ? `Due ${m.due_on}` : 'No due date'}</p>
    ${m.description.trim() ? html`<div class="markdown box">${trusted(boundedMarkdown().render(m.description))}</div>` : ''}
    ${progress(m)}
    <h3>Issues</h3>
    ${
      threads.length
        ? html`<ul class="plain issues">
              ${threads.map(
                (t) =>
                  html`<li>
                    <span class="badge ${t.state}">${t.state === 'open' ? 'Open' : 'Closed'}</span>
                    <a href="${base}/threads/${t.number}">#${t.number} ${t.title}</a> ${t.labels.map((l) => labelChip(l))}
                  </li>`,
              )}
            </ul>
            <p><a href="${issuesHref(base, { milestone: String(number), state: 'all' })}">All issues of this milestone</a></p>`
        : html`<p class="muted">No issues in this milestone.</p>`
    }
    ${
      write
        ? html`<section class="box" aria-labelledby="edit-milestone">
            <h2 id="edit-milestone">Edit</h2>
            <form class="stack" method="post" action="${base}/milestones/${number}/edit">
              ${csrfField(c)} ${formMessage(state)} ${milestoneFields(state, m)}
              <div><button type="submit" class="primary">Save milestone</button></div>
            </form>
            <form method="post" action="${base}/milestones/${number}/state" class="row">
              ${csrfField(c)}<input type="hidden" name="state" value="${m.state === 'open' ? 'closed' : 'open'}" />
              <button type="submit">${m.state === 'open' ? 'Close milestone' : 'Reopen milestone'}</button>
            </form>
            <h3>Delete this milestone</h3>
            <p>Its issues and pulls stay; they lose the milestone.</p>
            ${dangerForm({ action: `${base}/milestones/${number}/delete`, csrf: c.csrf, label: `Delete ${m.title}` })}
          </section>`
        : ''
    }
    <p class="muted">Created ${when(m.created_at)}${m.closed_at ? html`, closed ${when(m.closed_at)}` : ''}</p>`;
  return layout({ title: `${m.title} · Milestones · ${repo.full_name}`, caller: c }, body);
}

const inputOf = (form: { title: string; description?: string; due_on?: string }) => ({
  title: form.title,
  description: form.description ?? '',
  due_on: form.due_on?.trim() ? form.due_on.trim() : null,
});

export async function milestonePages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  repoRoute(app, 'GET', '/milestones', { querystring: ListQuery }, async (request, reply) => {
    const c = requirePage(request);
    return sendPage(
      reply,
      await listPage(deps, c, await pageRepo(deps, c.viewer, request), request.query as object, emptyForm()),
    );
  });

  repoRoute(app, 'POST', '/milestones', { body: MilestoneForm }, async (request, reply) => {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    const result = await attempt(typedValues(request.body), FIELDS, () =>
      createMilestone(deps, c.viewer, ref, inputOf(request.body as { title: string })),
    );
    const page = await pageRepo(deps, c.viewer, request);
    if (!result.ok) return sendPage(reply, await listPage(deps, c, page, {}, result.state), result.state.status);
    return seeOther(reply, `${repoHref(page.repo)}/milestones/${result.value.number}`);
  });

  repoRoute(app, 'GET', '/milestones/:number', { params: Params }, async (request, reply) => {
    const c = requirePage(request);
    const page = await pageRepo(deps, c.viewer, request);
    return sendPage(reply, await onePage(deps, c, page, (request.params as { number: number }).number));
  });

  repoRoute(app, 'POST', '/milestones/:number/edit', { params: Params, body: MilestoneForm }, async (request, reply) => {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    const { number } = request.params as { number: number };
    const result = await attempt(typedValues(request.body), FIELDS, () =>
      updateMilestone(deps, c.viewer, ref, number, inputOf(request.body as { title: string })),
    );
    const page = await pageRepo(deps, c.viewer, request);
    if (!result.ok) return sendPage(reply, await onePage(deps, c, page, number, result.state), result.state.status);
    return seeOther(reply, `${repoHref(page.repo)}/milestones/${number}`);
  });

  repoRoute(app, 'POST', '/milestones/:number/state', { params: Params, body: StateForm }, async (request, reply) => {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    const { number } = request.params as { number: number };
    await updateMilestone(deps, c.viewer, ref, number, { state: (request.body as { state: 'open' | 'closed' }).state });
    return seeOther(reply, `${repoHref((await pageRepo(deps, c.viewer, request)).repo)}/milestones/${number}`);
  });

  repoRoute(app, 'POST', '/milestones/:number/delete', { params: Params, body: DeleteForm }, async (request, reply) => {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    await deleteMilestone(deps, c.viewer, ref, (request.params as { number: number }).number);
    return seeOther(reply, `${repoHref((await pageRepo(deps, c.viewer, request)).repo)}/milestones`);
  });
}
