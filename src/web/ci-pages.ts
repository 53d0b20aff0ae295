/**
 * The Actions pages (docs/ci.md "Pages"): a repo's runs with filters and paging, a run with its
 * jobs and the re-run / cancel / approve forms (write access), and a job with its steps and log
 * (src/web/ci-log.ts). A run that has not completed refreshes its jobs every two seconds; a
 * running job's log grows by byte offset when the repo's live stream says it grew (a `job-log`
 * signal, src/ci/runs.ts `jobLogSignal`), so a reconnect resumes where it stopped and no line
 * comes twice.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { approveRun, cancelRunApi, getJob, getRun, jobLog, listRuns, type RunsQuery, rerunRun } from '../ci/api.ts';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import type { RepoJson } from '../repos/view.ts';
import { LOG_WINDOW, logHtml, logLines, summaryOf } from './ci-log.ts';
import { type PageCaller, pageWindow, requirePage, seeOther, sendPage } from './context.ts';
import { type Html, html, pager, seg, when } from './html.ts';
import { repoHref } from './home-pages.ts';
import { csrfField, layout } from './layout.ts';
import { markdownHtml } from './render-cache.ts';
import { PageSlug, pageRoute } from './page-route.ts';
import { NumberParam, type PageRepo, pageRepo, pageRepoRef, repoHeader, repoRoute } from './repo-common.ts';

const Text = (max: number) => Type.Optional(Type.String({ maxLength: max }));
const ListQuery = Type.Object(
  {
    workflow: Text(255),
    branch: Text(255),
    event: Text(40),
    status: Text(40),
    actor: Text(100),
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
  },
  { additionalProperties: false },
);
const RunParams = { number: NumberParam };
const JobParams = { number: NumberParam, job: Type.String({ minLength: 1, maxLength: 100 }) };
const Offset = Type.Optional(Type.Integer({ minimum: 0, maximum: 2 ** 40 }));
const JobQuery = Type.Object({ before: Offset }, { additionalProperties: false });
const PartQuery = Type.Object({ from: Offset, before: Offset, line: Offset }, { additionalProperties: false });
const Form = Type.Object({ _csrf: Text(100), failed_only: Text(10) });

const EVENTS = ['push', 'pull_request', 'workflow_dispatch', 'schedule'];
const STATUSES = ['waiting', 'queued', 'in_progress', 'completed', 'success', 'failure', 'cancelled', 'skipped', 'timed_out'];

type Run = Awaited<ReturnType<typeof getRun>>;
type Job = Awaited<ReturnType<typeof getJob>>;

/** How long something took (or has taken so far): `1m 05s`, `12s`, or nothing before it started. */
export function duration(started: string | null, completed: string | null): string {
  if (!started) return '';
  const ms = (completed ? Date.parse(completed) : Date.now()) - Date.parse(started);
  const s = Math.max(0, Math.round(ms / 1000));
  return s >= 60 ? `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

/** A state's icon and word: the conclusion once completed, else the status. */
export function stateBadge(status: string, conclusion: string | null): Html {
  const state = status === 'completed' ? (conclusion ?? 'completed') : status;
  const icon =
    state === 'success'
      ? '✓'
      : ['failure', 'timed_out', 'startup_failure', 'runner_lost'].includes(state)
        ? '✗'
        : state === 'cancelled' || state === 'skipped'
          ? '⊘'
          : '●';
  const cls = state === 'success' ? 'success' : icon === '✗' ? 'failure' : icon === '●' ? 'pending' : '';
  return html`<span class="badge state ${cls}"><span aria-hidden="true">${icon}</span> ${state.replace('_', ' ')}</span>`;
}

const runsHref = (repo: RepoJson) => `${repoHref(repo)}/actions`;
const runHref = (repo: RepoJson, n: number) => `${repoHref(repo)}/runs/${n}`;
export const jobHref = (repo: RepoJson, n: number, job: string) => `${runHref(repo, n)}/jobs/${seg(job)}`;

function filters(q: Record<string, string | undefined>): Html {
  const opt = (values: string[], current: string | undefined) =>
    html`<option value="">any</option>
      ${values.map((v) => html`<option value="${v}" ${v === current ? html`selected` : ''}>${v.replace('_', ' ')}</option>`)}`;
  return html`<form method="get" class="row filters" aria-label="Filter runs">
    <label>Workflow <input name="workflow" value="${q.workflow ?? ''}" placeholder="ci.yml" /></label>
    <label>Branch <input name="branch" value="${q.branch ?? ''}" /></label>
    <label
      >Event
      <select name="event">
        ${opt(EVENTS, q.event)}
      </select></label
    >
    <label
      >Status
      <select name="status">
        ${opt(STATUSES, q.status)}
      </select></label
    >
    <label>Actor <input name="actor" value="${q.actor ?? ''}" /></label>
    <button type="submit">Filter</button>
  </form>`;
}

function runsTable(repo: RepoJson, runs: Array<Omit<Run, 'jobs' | 'error'>>): Html {
  if (!runs.length) return html`<p class="muted">No runs.</p>`;
  return html`<ul class="plain runs">
    ${runs.map(
      (r) =>
        html`<li>
          ${stateBadge(r.status, r.conclusion)}
          <a href="${runHref(repo, r.number)}">${r.workflow.name} #${r.number}</a>
          <span class="muted">
            ${r.event} ${r.head_branch ? html`on <code>${r.head_branch}</code>` : ''} by ${r.actor.username} &middot;
            ${when(r.created_at)} ${r.started_at ? html`&middot; ${duration(r.started_at, r.completed_at)}` : ''}
          </span>
        </li>`,
    )}
  </ul>`;
}

/** The run's jobs in `needs` order (the order the workflow declares them, each after what it needs). */
function jobsSection(p: PageRepo, run: Run): Html {
  const live = run.status !== 'completed';
  return html`<section
    class="box"
    id="run-jobs"
    aria-labelledby="run-jobs-h"
    ${live ? html`hx-get="${runHref(p.repo, run.number)}/jobs-part" hx-trigger="every 2s" hx-swap="outerHTML"` : ''}
  >
    <h2 id="run-jobs-h">Jobs ${stateBadge(run.status, run.conclusion)}</h2>
    ${run.error ? html`<pre class="log" role="alert">${run.error}</pre>` : ''}
    <ol class="plain">
      ${run.jobs.map(
        (j) =>
          html`<li>
            ${stateBadge(j.status, j.conclusion)}
            <a href="${jobHref(p.repo, run.number, j.uuid)}">${j.name}</a>
            ${
              j.matrix
                ? html`<span class="muted"
                    >${Object.entries(j.matrix)
                      .map(([k, v]) => `${k}: ${String(v)}`)
                      .join(', ')}</span
                  >`
                : ''
            }
            <span class="muted">${duration(j.started_at, j.completed_at)}</span>
          </li>`,
      )}
    </ol>
  </section>`;
}

function runActions(p: PageRepo, c: PageCaller, run: Run): Html {
  if (!p.can.write) return html``;
  const base = runHref(p.repo, run.number);
  const form = (action: string, label: string, extra: Html = html``) =>
    html`<form method="post" action="${base}/${action}" class="inline">
      ${csrfField(c)}${extra}<button type="submit">${label}</button>
    </form>`;
  const failed = run.jobs.some((j) => j.status === 'completed' && j.conclusion !== 'success' && j.conclusion !== 'skipped');
  return html`<div class="row" aria-label="Run actions">
    ${run.status === 'waiting' ? form('approve', 'Approve and run') : ''}
    ${run.status !== 'completed' ? form('cancel', 'Cancel run') : ''}
    ${run.status === 'completed' && !run.error ? form('rerun', 'Re-run all jobs') : ''}
    ${
      run.status === 'completed' && !run.error && failed
        ? form('rerun', 'Re-run failed jobs', html`<input type="hidden" name="failed_only" value="true" />`)
        : ''
    }
  </div>`;
}

function runPage(p: PageRepo, c: PageCaller, run: Run, error?: string): Html {
  return html`${repoHeader(p.repo, 'actions', p.can)}
    <p class="crumbs"><a href="${runsHref(p.repo)}">Actions</a> /</p>
    <h2>${run.workflow.name} #${run.number}</h2>
    <p class="muted">
      <code>${run.workflow.path}</code> &middot; ${run.event} ${run.head_branch ? html`on <code>${run.head_branch}</code>` : ''}
      at <code>${run.head_sha.slice(0, 12)}</code> by ${run.actor.username} &middot; attempt ${run.attempt}
      ${run.started_at ? html`&middot; ${duration(run.started_at, run.completed_at)}` : ''}
    </p>
    ${error ? html`<p class="error" role="alert">${error}</p>` : ''} ${runActions(p, c, run)} ${jobsSection(p, run)}`;
}

/** The log window's HTML and, while the job runs, the element that fetches what comes next. */
function logPart(
  p: PageRepo,
  run: number,
  job: Job,
  data: Buffer,
  start: number,
  line: number | null,
  aligned = start === 0,
): Html {
  const { lines, next } = logLines(data, start, aligned);
  const firstNumber = start === 0 ? 1 : line;
  // the next part's address: the page's script asks for it when the stream says the log grew
  // (or, without EventSource, every two seconds); without JavaScript, the reload link
  const follow =
    job.status !== 'completed'
      ? html`<div
          class="log-follow"
          data-next="${jobHref(p.repo, run, job.uuid)}/log-part?from=${next}${firstNumber === null ? '' : `&line=${firstNumber + lines.length}`}"
          data-from="${next}"
        >
          <p class="muted" role="status">Running&hellip; <a href="?">reload</a></p>
        </div>`
      : html``;
  return html`${logHtml(lines, firstNumber)}${follow}`;
}

function earlierLink(p: PageRepo, run: number, job: string, first: number): Html {
  if (first <= 0) return html``;
  const href = `${jobHref(p.repo, run, job)}`;
  return html`<p class="log-earlier">
    <a href="${href}?before=${first}" hx-get="${href}/log-part?before=${first}" hx-swap="outerHTML" hx-target="closest p"
      >Show earlier lines</a
    >
    <span class="muted">(${first} bytes before)</span>
  </p>`;
}

async function window(deps: Deps, c: PageCaller, request: FastifyRequest, before: number | undefined, from?: number) {
  const { number, job } = request.params as { number: number; job: string };
  const p = await pageRepo(deps, c.viewer, request);
  const j = await getJob(deps, c.viewer, pageRepoRef(request), number, job);
  const end = before ?? j.log_bytes;
  const start = from ?? Math.max(0, end - LOG_WINDOW);
  const log =
    end > start
      ? await jobLog(deps, c.viewer, pageRepoRef(request), number, job, () => ({
          start,
          end: Math.min(end, start + LOG_WINDOW) - 1,
        }))
      : { data: Buffer.alloc(0) };
  return { p, number, j, start, data: log.data };
}

export async function ciPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  /** A job's `target_url` (`/{owner}/{slug}/runs/{n}/jobs/{uuid}`, src/ci/runs.ts): to the job's page. */
  pageRoute(
    app,
    'GET',
    '/:owner/:repo_slug/runs/:number/jobs/:job',
    { owner: PageSlug, repo_slug: PageSlug },
    { params: JobParams },
    async (request, reply) => {
      const { owner, repo_slug, number, job } = request.params as {
        owner: string;
        repo_slug: string;
        number: number;
        job: string;
      };
      const user = await deps.db
        .selectFrom('users')
        .select('uuid')
        .where('username', '=', owner.toLowerCase())
        .executeTakeFirst();
      const kind = user ? 'users' : 'teams';
      return seeOther(reply, `/${kind}/${seg(owner)}/${seg(repo_slug)}/runs/${number}/jobs/${seg(job)}`);
    },
  );

  repoRoute(app, 'GET', '/actions', { querystring: ListQuery }, async (request, reply) => {
    const c = requirePage(request);
    const p = await pageRepo(deps, c.viewer, request);
    const query = request.query as Record<string, string | undefined> & { page?: number };
    const q: RunsQuery = {};
    for (const k of ['workflow', 'branch', 'event', 'status', 'actor'] as const) if (query[k]) q[k] = query[k];
    const w = pageWindow(query);
    const runs = await listRuns(deps, c.viewer, pageRepoRef(request), q, { offset: w.offset, limit: w.perPage + 1 });
    const body = html`${repoHeader(p.repo, 'actions', p.can)}
      <h2>Actions</h2>
      ${filters(query)} ${runsTable(p.repo, runs.slice(0, w.perPage))}
      ${pager(runsHref(p.repo), w.page, runs.length > w.perPage, q as Record<string, string>)}`;
    return sendPage(reply, layout({ title: `Actions · ${p.repo.full_name}`, caller: c, repo: p.repo.full_name }, body));
  });

  repoRoute(app, 'GET', '/runs/:number', { params: RunParams }, async (request, reply) => {
    const c = requirePage(request);
    const p = await pageRepo(deps, c.viewer, request);
    const run = await getRun(deps, c.viewer, pageRepoRef(request), (request.params as { number: number }).number);
    const title = `${run.workflow.name} #${run.number} · ${p.repo.full_name}`;
    return sendPage(reply, layout({ title, caller: c, repo: p.repo.full_name }, runPage(p, c, run)));
  });

  repoRoute(app, 'GET', '/runs/:number/jobs-part', { params: RunParams }, async (request, reply) => {
    const c = requirePage(request);
    const p = await pageRepo(deps, c.viewer, request);
    const run = await getRun(deps, c.viewer, pageRepoRef(request), (request.params as { number: number }).number);
    // a run that completed refreshes the whole page, so its actions change too
    if (run.status === 'completed') reply.header('hx-refresh', 'true');
    return sendPage(reply, jobsSection(p, run));
  });

  const write = (action: string, run: (c: PageCaller, p: PageRepo, n: number, request: FastifyRequest) => Promise<unknown>) =>
    repoRoute(app, 'POST', `/runs/:number/${action}`, { params: RunParams, body: Form }, async (request, reply: FastifyReply) => {
      const c = requirePage(request);
      const p = await pageRepo(deps, c.viewer, request);
      const n = (request.params as { number: number }).number;
      try {
        await run(c, p, n, request);
      } catch (e) {
        if (!(e instanceof AppError) || e.status !== 409) throw e;
        const current = await getRun(deps, c.viewer, pageRepoRef(request), n);
        return sendPage(
          reply,
          layout({ title: `Run #${n} · ${p.repo.full_name}`, caller: c }, runPage(p, c, current, e.message)),
          409,
        );
      }
      return seeOther(reply, runHref(p.repo, n));
    });
  write('cancel', (c, _p, n, request) => cancelRunApi(deps, c.viewer, pageRepoRef(request), n));
  write('approve', (c, _p, n, request) => approveRun(deps, c.viewer, pageRepoRef(request), n));
  write('rerun', (c, _p, n, request) =>
    rerunRun(deps, c.viewer, pageRepoRef(request), n, (request.body as { failed_only?: string }).failed_only === 'true'),
  );

  repoRoute(app, 'GET', '/runs/:number/jobs/:job', { params: JobParams, querystring: JobQuery }, async (request, reply) => {
    const c = requirePage(request);
    const { before } = request.query as { before?: number };
    const { p, number, j, start, data } = await window(deps, c, request, before);
    const { lines, first } = logLines(data, start);
    const summary = summaryOf(lines);
    const body = html`${repoHeader(p.repo, 'actions', p.can)}
      <p class="crumbs"><a href="${runsHref(p.repo)}">Actions</a> / <a href="${runHref(p.repo, number)}">Run #${number}</a> /</p>
      <h2>${j.name} ${stateBadge(j.status, j.conclusion)}</h2>
      <p class="muted">
        attempt ${j.attempt} ${j.runner_name ? html`&middot; runner ${j.runner_name}` : ''}
        ${j.started_at ? html`&middot; ${duration(j.started_at, j.completed_at)}` : ''}
      </p>
      <section class="box" aria-labelledby="steps-h">
        <h3 id="steps-h">Steps</h3>
        <ol class="plain">
          ${j.steps.map(
            (s) =>
              html`<li>
                ${stateBadge(s.status, s.conclusion)} ${s.name}
                <span class="muted">${duration(s.started_at, s.completed_at)}</span>
              </li>`,
          )}
        </ol>
      </section>
      ${summary ? html`<section class="box markdown" aria-label="Step summary">${markdownHtml(summary)}</section>` : ''}
      <section
        class="box job-log"
        aria-label="Log"
        data-job-log="${j.uuid}"
        data-scope="repo:${p.repo.uuid}"
        ${j.status === 'completed' ? '' : html`data-live`}
      >
        <p class="muted">
          <a href="/api/v1${repoApiPath(p.repo)}/runs/${number}/jobs/${seg(j.uuid)}/log">Raw log</a> (${j.log_bytes} bytes)
        </p>
        ${earlierLink(p, number, j.uuid, first)} ${logPart(p, number, j, data, start, null)}
      </section>`;
    return sendPage(
      reply,
      layout({ title: `${j.name} · Run #${number} · ${p.repo.full_name}`, caller: c, repo: p.repo.full_name }, body),
    );
  });

  /** A fragment: the lines after `from` (the live log), or the window before `before` (earlier lines). */
  repoRoute(
    app,
    'GET',
    '/runs/:number/jobs/:job/log-part',
    { params: JobParams, querystring: PartQuery },
    async (request, reply) => {
      const c = requirePage(request);
      const q = request.query as { from?: number; before?: number; line?: number };
      if (q.before !== undefined) {
        const { p, number, j, start, data } = await window(deps, c, request, q.before);
        const { lines, first } = logLines(data, start);
        return sendPage(reply, html`${earlierLink(p, number, j.uuid, first)}${logHtml(lines, start === 0 ? 1 : null)}`);
      }
      const { p, number, j, start, data } = await window(deps, c, request, undefined, q.from ?? 0);
      // a finished job refreshes the page: its steps and state are final
      if (j.status === 'completed') reply.header('hx-refresh', 'true');
      return sendPage(reply, logPart(p, number, j, data, start, start === 0 ? 1 : (q.line ?? null), true));
    },
  );
}

/** The repo's API path (`/users/{u}/repos/{slug}` or `/teams/{t}/repos/{slug}`). */
const repoApiPath = (repo: RepoJson) =>
  `/${repo.owner.kind === 'team' ? 'teams' : 'users'}/${seg(repo.owner.slug_or_username)}/repos/${seg(repo.slug)}`;
