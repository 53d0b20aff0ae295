/**
 * The repo's Issues tab and the new-issue form (docs/tracker.md "Pages"): the threads of
 * GET {repo}/threads with its filters (a query box, label chips, state with counts, sorting,
 * paging) and POST {repo}/threads with labels, assignees and milestone for those who may set them.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../../deps.ts';
import { AppError } from '../../errors.ts';
import { countThreads, createThread, listThreads, type ThreadFilters, threadCursor } from '../../threads/service.ts';
import type { ThreadJson } from '../../threads/schemas.ts';
import { listLabels, type LabelJson } from '../../tracker/labels.ts';
import { listMilestones, type MilestoneJson } from '../../tracker/milestones.ts';
import type { Viewer } from '../../viewer.ts';
import { type PageCaller, pageWindow, readerPage, requirePage, seeOther, sendPage } from '../context.ts';
import { attempt, emptyForm, field, formMessage, type FormState, typedValues } from '../forms.ts';
import { type Html, html, seg, when } from '../html.ts';
import { repoHref } from '../home-pages.ts';
import { csrfField, layout } from '../layout.ts';
import { type PageRepo, pageRepo, pageRepoRef, repoHeader, repoRoute } from '../repo-common.ts';
import { inWords } from '../words.ts';
import { filterQuery, issuesHref, labelChip, parseQueryBox, queryBoxText } from './common.ts';

const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
const Text = Type.Optional(Type.String({ maxLength: 2000 }));
const IssuesQuery = Type.Object(
  {
    /** the keyset cursor of the next page (`next` of GET {repo}/threads) */
    after: Type.Optional(Type.String({ maxLength: 1000 })),
    state: Type.Optional(Type.Union([Type.Literal('open'), Type.Literal('closed'), Type.Literal('all')])),
    labels: Text,
    assignee: Text,
    milestone: Text,
    author: Text,
    mentioned: Text,
    q: Text,
    box: Text,
    sort: Type.Optional(Type.Union([Type.Literal('created'), Type.Literal('updated'), Type.Literal('replies')])),
    direction: Type.Optional(Type.Union([Type.Literal('desc'), Type.Literal('asc')])),
  },
  { additionalProperties: false },
);
/** One or more values of a repeated form field (checkboxes). */
export const Many = Type.Optional(
  Type.Union([Type.String({ maxLength: 100 }), Type.Array(Type.String({ maxLength: 100 }), { maxItems: 100 })]),
);
const NewIssueForm = Type.Object(
  {
    _csrf: Csrf,
    title: Type.String({ maxLength: 4096 }),
    body: Type.Optional(Type.String({ maxLength: 65_536 })),
    labels: Many,
    assignees: Type.Optional(Type.String({ maxLength: 1000 })),
    milestone: Type.Optional(Type.String({ maxLength: 12 })),
  },
  { additionalProperties: false },
);

/** A repeated field's values as a list. */
export const many = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
/** Usernames typed with commas or spaces between them (a leading @ dropped). */
export const usernames = (v: string | undefined): string[] =>
  (v ?? '')
    .split(/[\s,]+/)
    .map((u) => u.replace(/^@/, ''))
    .filter(Boolean);

/** Every label usable in the repo (its own and its team's), by name: a repo has at most a few hundred. */
export async function allLabels(deps: Deps, viewer: Viewer, ref: Parameters<typeof listLabels>[2]): Promise<LabelJson[]> {
  return listLabels(deps, viewer, ref, { offset: 0, limit: 500 });
}

const STATE_WORDS: Record<string, string> = { completed: 'completed', not_planned: 'not planned', duplicate: 'duplicate' };

function issueRow(base: string, t: ThreadJson, f: ThreadFilters): Html {
  return html`<li class="issue">
    <span class="badge ${t.state}"
      >${t.state === 'open' ? 'Open' : `Closed${t.state_reason ? `: ${STATE_WORDS[t.state_reason]}` : ''}`}</span
    >
    <a href="${base}/threads/${t.number}">#${t.number} ${t.title}</a>
    ${t.labels.map((l) => labelChip(l, issuesHref(base, { ...f, labels: l.name, page: undefined })))}
    <span class="muted"
      >by <a href="${issuesHref(base, { ...f, author: t.author_username })}">${t.author_username}</a> ${when(t.created_at)}
      &middot; ${t.reply_count}
      ${t.reply_count === 1 ? 'reply' : 'replies'}${
        t.milestone ? html` &middot; milestone <a href="${base}/milestones/${t.milestone.number}">${t.milestone.title}</a>` : ''
      }${t.assignees.length ? html` &middot; assigned to ${t.assignees.map((a) => a.username).join(', ')}` : ''}</span
    >
  </li>`;
}

/**
 * The Issues tab's paging, by keyset as the API's `next`: the first page again, and the next
 * after the last thread shown (its sort value and number), so a deep page costs what the first does.
 */
function keysetPager(base: string, f: ThreadFilters, paged: boolean, last: ThreadJson | null): Html {
  if (!paged && !last) return html``;
  const next = last
    ? `${issuesHref(base, f)}${issuesHref(base, f).includes('?') ? '&' : '?'}after=${threadCursor(last, f.sort)}`
    : null;
  return html`<nav class="row" aria-label="Pages">
    ${paged ? html`<a href="${issuesHref(base, f)}">First page</a>` : ''}
    ${next ? html`<a href="${next}" rel="next">Next</a>` : ''}
  </nav>`;
}

/** GET .../threads: the Issues tab. */
async function issuesPage(deps: Deps, c: PageCaller, request: FastifyRequest, query: Record<string, unknown>) {
  // the page's one access decision (pageRepo): every part below receives its context
  const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
  const base = repoHref(repo);
  const raw = query as ThreadFilters & { box?: string };
  let filters: ThreadFilters = {};
  for (const [k, v] of Object.entries(filterQuery(raw))) (filters as Record<string, string>)[k] = v;
  if (raw.box !== undefined) filters = parseQueryBox(raw.box, { sort: filters.sort, direction: filters.direction });
  // paging by keyset as the API's `next` (a new search from the box starts at the first page)
  const after = raw.box === undefined ? raw.after : undefined;
  const perPage = pageWindow({}).perPage;
  const [labels, milestones] = await Promise.all([
    allLabels(deps, c.viewer, { repo: ref }),
    listMilestones(deps, c.viewer, ref, { offset: 0, limit: 100, state: 'open', sort: 'due_on' }),
  ]);
  let error: string | null = null;
  let threads: ThreadJson[] = [];
  let counts = { open: 0, closed: 0 };
  try {
    threads = await listThreads(
      deps,
      c.viewer,
      ref,
      { offset: 0, limit: perPage + 1 },
      { ...filters, ...(after ? { after } : {}) },
    );
    counts = await countThreads(deps, c.viewer, ref, filters);
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 400) throw err;
    error = err.detail;
  }
  const state = filters.state ?? 'open';
  const active = new Set(filters.labels ? filters.labels.split(',').map((l) => l.toLowerCase()) : []);
  const toggled = (name: string) => {
    const now = filters.labels ? filters.labels.split(',') : [];
    const next = active.has(name.toLowerCase()) ? now.filter((l) => l.toLowerCase() !== name.toLowerCase()) : [...now, name];
    return issuesHref(base, { ...filters, labels: next.join(',') || undefined });
  };
  const sortValue = `${filters.sort ?? 'created'}-${filters.direction ?? 'desc'}`;
  const sorts: Array<[string, string]> = [
    ['created-desc', 'Newest'],
    ['created-asc', 'Oldest'],
    ['updated-desc', 'Recently updated'],
    ['updated-asc', 'Least recently updated'],
    ['replies-desc', 'Most replies'],
    ['replies-asc', 'Fewest replies'],
  ];
  const body = html`${repoHeader(repo, 'threads', can)}
    <div class="row">
      <h2 class="grow">Issues</h2>
      <a href="${base}/labels">Labels</a> <a href="${base}/milestones">Milestones</a>
      ${can.takePart ? html`<a href="${base}/threads/new" class="badge">New issue</a>` : ''}
    </div>
    <form class="row" method="get" action="${base}/threads" role="search">
      <label for="issue-box" class="visually-hidden">Filter issues</label>
      <input
        id="issue-box"
        name="box"
        type="search"
        value="${queryBoxText(filters)}"
        ${error ? html` aria-invalid="true" aria-describedby="issue-box-error"` : ''}
      />
      <label for="issue-sort" class="visually-hidden">Sort</label>
      <select id="issue-sort" name="sort">
        ${sorts.map(([v, l]) => html`<option value="${v.split('-')[0]}" ${v === sortValue ? html` selected` : ''}>${l}</option>`)}
      </select>
      <button type="submit">Filter</button>
    </form>
    ${error ? html`<p id="issue-box-error" class="field-error" role="alert">${inWords(error)}</p>` : ''}
    <p class="muted small">
      Qualifiers: <code>is:open</code>, <code>is:closed</code>, <code>label:NAME</code>, <code>assignee:USER</code> (or
      <code>none</code>, <code>*</code>), <code>milestone:NUMBER</code>, <code>author:USER</code>, <code>mentioned:USER</code>,
      <code>sort:updated-asc</code>; other words search titles, bodies and replies.
    </p>
    <nav class="row" aria-label="Sort order">
      ${sorts.map(([v, l]) => {
        const [sort, direction] = v.split('-') as [ThreadFilters['sort'], ThreadFilters['direction']];
        return v === sortValue
          ? html`<span aria-current="true"><strong>${l}</strong></span>`
          : html`<a href="${issuesHref(base, { ...filters, sort, direction })}">${l}</a>`;
      })}
    </nav>
    ${
      labels.length
        ? html`<nav class="row chips" aria-label="Filter by label">
            ${labels.map(
              (l) =>
                html`<span ${active.has(l.name.toLowerCase()) ? html` class="chip-on"` : ''}
                  >${labelChip(l, toggled(l.name))}</span
                >`,
            )}
          </nav>`
        : ''
    }
    ${
      milestones.length
        ? html`<nav class="row" aria-label="Filter by milestone">
            <span class="muted">Milestone:</span>
            ${milestones.map((m) =>
              filters.milestone === String(m.number)
                ? html`<strong>${m.title}</strong>`
                : html`<a href="${issuesHref(base, { ...filters, milestone: String(m.number) })}">${m.title}</a>`,
            )}
            ${filters.milestone ? html`<a href="${issuesHref(base, { ...filters, milestone: undefined })}">any</a>` : ''}
          </nav>`
        : ''
    }
    <nav class="tabs" aria-label="State">
      <a href="${issuesHref(base, { ...filters, state: 'open' })}" ${state === 'open' ? html` aria-current="page"` : ''}
        >${counts.open} Open</a
      ><a href="${issuesHref(base, { ...filters, state: 'closed' })}" ${state === 'closed' ? html` aria-current="page"` : ''}
        >${counts.closed} Closed</a
      ><a href="${issuesHref(base, { ...filters, state: 'all' })}" ${state === 'all' ? html` aria-current="page"` : ''}>All</a>
    </nav>
    ${
      threads.length
        ? html`<ul class="plain issues">
            ${threads.slice(0, perPage).map((t) => issueRow(base, t, filters))}
          </ul>`
        : html`<p class="muted">No issues match.</p>`
    }
    ${keysetPager(base, filters, after !== undefined, threads.length > perPage ? threads[perPage - 1]! : null)}`;
  return { html: layout({ title: `Issues · ${repo.full_name}`, caller: c }, body), status: error ? 400 : 200 };
}

/** The fields of the new-issue form that set labels, assignees and milestone (write access). */
export function trackingFields(
  state: FormState | undefined,
  labels: LabelJson[],
  milestones: MilestoneJson[],
  chosen: string[],
): Html {
  const checked = new Set(chosen.map((l) => l.toLowerCase()));
  const err = state?.errors.labels;
  return html`${
    labels.length
      ? html`<fieldset ${err ? html` aria-invalid="true" aria-describedby="f-labels-error"` : ''}>
          <legend>Labels</legend>
          <div class="row">
            ${labels.map(
              (l, i) =>
                html`<span class="check"
                  ><input
                    id="f-label-${i}"
                    type="checkbox"
                    name="labels"
                    value="${l.name}"
                    ${checked.has(l.name.toLowerCase()) ? html` checked` : ''}
                  /><label for="f-label-${i}">${labelChip(l)}</label></span
                >`,
            )}
          </div>
          ${err ? html`<p id="f-labels-error" class="field-error" role="alert">${inWords(err)}</p>` : ''}
        </fieldset>`
      : ''
  }
  ${field(state, {
    name: 'assignees',
    label: 'Assignees',
    hint: 'Usernames of people with write access, separated by commas.',
    maxlength: 1000,
  })}
  ${field(state, {
    name: 'milestone',
    label: 'Milestone',
    type: 'select',
    options: [['', 'None'], ...milestones.map((m) => [String(m.number), m.title] as const)],
  })}`;
}

async function newIssuePage(
  deps: Deps,
  c: PageCaller,
  { at: ref, repo, can }: PageRepo,
  state: FormState,
  chosen: string[],
): Promise<Html> {
  const triage = can.write;
  const [labels, milestones] = triage
    ? await Promise.all([
        allLabels(deps, c.viewer, { repo: ref }),
        listMilestones(deps, c.viewer, ref, { offset: 0, limit: 100, state: 'open', sort: 'due_on' }),
      ])
    : [[], []];
  const body = html`${repoHeader(repo, 'threads', can)}
    <h2>New issue</h2>
    ${
      repo.is_archived
        ? ''
        : html`<form class="stack" method="post" action="${repoHref(repo)}/threads/new">
            ${csrfField(c)} ${formMessage(state)}
            ${field(state, { name: 'title', label: 'Title', required: true, maxlength: 256 })}
            ${field(state, { name: 'body', label: 'Text (Markdown)', type: 'textarea' })}
            ${triage ? trackingFields(state, labels, milestones, chosen) : ''}
            <div><button type="submit" class="primary">Create issue</button></div>
          </form>`
    }`;
  return layout({ title: `New issue · ${repo.full_name}`, caller: c }, body);
}

export async function issuePages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  repoRoute(app, 'GET', '/threads', { querystring: IssuesQuery }, async (request, reply) => {
    const c = readerPage(request);
    const page = await issuesPage(deps, c, request, request.query as Record<string, unknown>);
    return sendPage(reply, page.html, page.status);
  });

  repoRoute(app, 'GET', '/threads/new', {}, async (request, reply) => {
    const c = requirePage(request);
    return sendPage(reply, await newIssuePage(deps, c, await pageRepo(deps, c.viewer, request), emptyForm(), []));
  });

  repoRoute(app, 'POST', '/threads/new', { body: NewIssueForm }, async (request, reply) => {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    const form = request.body as {
      title: string;
      body?: string;
      labels?: string | string[];
      assignees?: string;
      milestone?: string;
    };
    const page = await pageRepo(deps, c.viewer, request);
    const labels = many(form.labels);
    const assignees = usernames(form.assignees);
    const tracking = page.can.write
      ? {
          ...(labels.length ? { labels } : {}),
          ...(assignees.length ? { assignees } : {}),
          ...(form.milestone && /^[1-9][0-9]{0,9}$/.test(form.milestone) ? { milestone: Number(form.milestone) } : {}),
        }
      : {};
    const result = await attempt(typedValues(request.body), ['title', 'body', 'labels', 'assignees', 'milestone'], () =>
      createThread(deps, c.viewer, ref, { title: form.title, body: form.body ?? '', ...tracking }),
    );
    if (!result.ok) {
      return sendPage(reply, await newIssuePage(deps, c, page, result.state, labels), result.state.status);
    }
    return seeOther(reply, `${repoHref(page.repo)}/threads/${seg(result.value.number)}`);
  });
}
