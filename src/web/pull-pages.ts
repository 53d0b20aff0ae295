import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { NoResultError } from 'kysely';
import { listAttachments } from '../attachments/service.ts';
import type { Deps } from '../deps.ts';
import { listBranches } from '../code/refs.ts';
import { mergePull } from '../pulls/merge.ts';
import { getPullProtection } from '../pulls/protection-status.ts';
import { createReview, listReviews } from '../pulls/reviews-service.ts';
import { MERGE_STRATEGIES, PULL_STATUSES, REVIEW_STATUSES } from '../pulls/schemas.ts';
import { type PullJson, type PullStatus, createPull, getPull, listPulls, withBranchTips } from '../pulls/service.ts';
import { pullHeadSha } from '../pulls/heads.ts';
import { type StatusJson, combinedState, latestStatuses } from '../statuses/service.ts';
import type { PullProtectionJson } from '../pulls/protection-status.ts';
import { getRepo } from '../repos/service.ts';
import { type RepoJson, loadRepoJson } from '../repos/view.ts';
import type { RepoAt, RepoContext, RepoRef, Viewer } from '../viewer.ts';
import { readRepoPull } from '../access/repo-read.ts';
import { AppError } from '../errors.ts';
import { pullAbilities } from '../access/abilities.ts';
import { inWords } from './words.ts';
import { getForkIn, getOwnFork, listForks } from '../forks/service.ts';
import type { MergeStrategy } from '../git/store.ts';
import { activityOfScope } from './activity.ts';
import { pageWindow, requirePage, seeOther, sendPage } from './context.ts';
import { type Html, html, pager, seg, trusted, when } from './html.ts';
import { repoHref } from './home-pages.ts';
import { csrfField, layout } from './layout.ts';
import { RenderCache, markdownHtml } from './render-cache.ts';
import { liveFeed, resumePoint } from './live.ts';
import { NumberParam, pageRepoRef, repoHeader, repoRoute, pageRepo } from './repo-common.ts';
import { renderDiff } from './diff.ts';
import { linkReferences } from '../references/render.ts';
import { pullFiles } from '../code/pulls.ts';

/** The session's CSRF token (or the X-CSRF-Token header instead: web/plugin.ts checks either). */
const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
const union = (values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)));
const ListQuery = Type.Object(
  { status: Type.Optional(union(PULL_STATUSES)), page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) },
  { additionalProperties: false },
);
const PullQuery = Type.Object(
  { page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) },
  { additionalProperties: false },
);
const Uuid = Type.String({ minLength: 36, maxLength: 36, pattern: '^[0-9a-fA-F-]{36}$' });
const NewPullQuery = Type.Object(
  { source: Type.Optional(Type.String({ maxLength: 255 })), source_repo: Type.Optional(Uuid) },
  { additionalProperties: false },
);
const NewPullForm = Type.Object(
  {
    _csrf: Csrf,
    title: Type.String({ maxLength: 4096 }),
    body: Type.String({ maxLength: 65_536 }),
    source_branch: Type.String({ minLength: 1, maxLength: 255 }),
    target_branch: Type.String({ minLength: 1, maxLength: 255 }),
    source_repo: Type.Optional(Uuid),
  },
  { additionalProperties: false },
);
const ReviewForm = Type.Object(
  { _csrf: Csrf, status: union(REVIEW_STATUSES), body: Type.Optional(Type.String({ maxLength: 65_536 })) },
  { additionalProperties: false },
);
const MergeForm = Type.Object({ _csrf: Csrf, merge_strategy: union(MERGE_STRATEGIES) }, { additionalProperties: false });
const REVIEW_LABELS: Record<string, string> = { approved: 'Approve', changes_requested: 'Request changes', commented: 'Comment' };
const REVIEWS_PER_PAGE = 100;
/** Changed files shown on the pull page at most (the API's files route pages through all). */
const MAX_FILES = 100;
/** The pull page's rendered diffs, by the shas of the target's tip and the pull's head. */
const diffCache = new RenderCache(32 * 1024 * 1024, 8 * 1024 * 1024);

/** Pulls list, opening a pull, the pull page, reviewing and merging (README "Web interface"). */
export async function pullPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  repoRoute(app, 'GET', '/pulls', { querystring: ListQuery }, async (request, reply) => {
    const c = requirePage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const q = request.query as { status?: PullStatus; page?: number };
    const status = q.status ?? 'open';
    const w = pageWindow(q);
    const pulls = await listPulls(deps, c.viewer, ref, { status, offset: w.offset, limit: w.limit });
    const base = `${repoHref(repo)}/pulls`;
    // a fork offers a pull into the repo it was forked from (when the caller may read that one)
    const upstream = repo.fork_of_uuid ? await forkSource(deps, c.viewer, ref.ref) : null;
    const body = html`${repoHeader(repo, 'pulls', can)}
      <div class="row">
        <nav class="row" aria-label="Pull states">
          ${PULL_STATUSES.map((s) => html`<a href="${base}?status=${s}" ${s === status ? html` aria-current="page"` : ''}>${s}</a>`)}
        </nav>
        ${repo.is_archived ? '' : html`<a href="${base}/new" class="badge">New pull</a>`}
        ${upstream ? html`<a href="${repoHref(upstream)}/pulls/new?source_repo=${repo.uuid}" class="badge">New pull into ${upstream.full_name}</a>` : ''}
      </div>
      ${
        pulls.length
          ? html`<ul class="plain">
              ${pulls.slice(0, w.perPage).map((p) => html`<li><a href="${base}/${p.number}">#${p.number} ${p.title}</a> <span class="badge ${p.status}">${p.status}</span> <span class="muted">${p.source_branch} &rarr; ${p.target_branch}, by ${p.author_username} ${when(p.created_at)}</span></li>`)}
            </ul>`
          : html`<p class="muted">No ${status} pulls.</p>`
      }
      ${pager(base, w.page, pulls.length > w.perPage, { status })}`;
    return sendPage(reply, layout({ title: `Pulls · ${repo.full_name}`, caller: c }, body));
  });

  repoRoute(app, 'GET', '/pulls/new', { querystring: NewPullQuery }, async (request, reply) => {
    const c = requirePage(request);
    const { at: ref, repo, can } = await pageRepo(deps, c.viewer, request);
    const q = request.query as { source?: string; source_repo?: string };
    const heads = await headRepos(deps, c.viewer, ref, repo);
    // the head repo chosen (this repo unless another readable one of its forks is named)
    const head = heads.find((h) => h.uuid === q.source_repo) ?? heads[0]!;
    const own = head.uuid === repo.uuid;
    const [targets, sources] = await Promise.all([
      listBranches(deps, c.viewer, ref, { offset: 0, limit: 100 }),
      own ? null : listBranches(deps, c.viewer, head.ref, { offset: 0, limit: 100 }),
    ]);
    const branches = sources ?? targets;
    const options = (list: typeof branches, selected: string | undefined) =>
      list.map((b) => html`<option value="${b.name}" ${b.name === selected ? html` selected` : ''}>${b.name}</option>`);
    const preselected = q.source ?? (own ? branches.find((b) => b.name !== repo.default_branch)?.name : head.default_branch);
    const body = html`${repoHeader(repo, 'pulls', can)}
      <h2>Open a pull</h2>
      ${
        heads.length > 1
          ? html`<form class="row" method="get" action="${repoHref(repo)}/pulls/new">
              <label for="source_repo">From repo</label>
              <select id="source_repo" name="source_repo">
                ${heads.map((h) => html`<option value="${h.uuid}" ${h.uuid === head.uuid ? html` selected` : ''}>${h.label}</option>`)}
              </select>
              <button type="submit">Show its branches</button>
            </form>`
          : ''
      }
      ${own && branches.length < 2 ? html`<p class="muted">Push a branch besides ${repo.default_branch} first, or open a pull from a fork.</p>` : ''}
      ${!own && branches.length === 0 ? html`<p class="muted">${head.full_name} has no branches yet.</p>` : ''}
      ${
        repo.is_archived
          ? html`<p class="muted">This repo is archived: no new pulls.</p>`
          : html`<form class="stack" method="post" action="${repoHref(repo)}/pulls/new">
              ${csrfField(c)} ${own ? '' : html`<input type="hidden" name="source_repo" value="${head.uuid}" />`}
              <label for="source_branch">From branch${own ? '' : html` of ${head.full_name}`}</label>
              <select id="source_branch" name="source_branch" required>
                ${options(branches, preselected)}
              </select>
              <label for="target_branch">Into branch of ${repo.full_name}</label>
              <select id="target_branch" name="target_branch" required>
                ${options(targets, repo.default_branch)}
              </select>
              <label for="title">Title</label>
              <input id="title" name="title" type="text" required maxlength="256" />
              <label for="body">Description (Markdown)</label>
              <textarea id="body" name="body"></textarea>
              <div><button type="submit" class="primary">Open pull</button></div>
            </form>`
      }`;
    return sendPage(reply, layout({ title: `New pull · ${repo.full_name}`, caller: c }, body));
  });

  repoRoute(app, 'POST', '/pulls/new', { body: NewPullForm }, async (request, reply) => {
    const c = requirePage(request);
    const { at: ref, repo } = await pageRepo(deps, c.viewer, request);
    const { _csrf, ...input } = request.body as {
      _csrf: string;
      title: string;
      body: string;
      source_branch: string;
      target_branch: string;
      source_repo?: string;
    };
    void _csrf;
    // as POST {repo}/pulls: source_repo names the fork the branch lives in (absent: this repo)
    const pull = await createPull(deps, c.viewer, ref.ref, input);
    return seeOther(reply, `${repoHref(repo)}/pulls/${pull.number}`);
  });

  /**
   * The pull page; `refused` re-renders it after a refused merge or review, the error beside that
   * form (the typed review kept). Actions show only when the viewer may take them, decided by the
   * repo level the routes check (merge: write; the author may only comment; nothing on a merged pull).
   */
  const pullPage = async (
    request: FastifyRequest,
    reply: FastifyReply,
    refused?: { form: 'merge' | 'review'; err: AppError; body?: string; status?: string },
  ) => {
    const c = requirePage(request);
    const ref = pageRepoRef(request);
    const number = (request.params as { number: number }).number;
    const w = pageWindow((request.method === 'GET' ? request.query : {}) as { page?: number }, REVIEWS_PER_PAGE);
    // The one access decision of the page: the repo, the viewer's level and the pull, in one
    // statement; every part below receives it and decides nothing again.
    const at = await readRepoPull(deps.database, c.viewer, ref, number);
    const [repo, pull] = await Promise.all([getRepo(deps, c.viewer, at), getPull(deps, c.viewer, at, number)]);
    // what the viewer may read, known from that decision (the activity feed checks no scope again)
    const can = pullAbilities(c.viewer, at);
    const verdicts = REVIEW_STATUSES.filter((s) => can.verdicts.includes(s));
    const refusal = (form: 'merge' | 'review') =>
      refused?.form === form ? html`<p class="error" role="alert" id="${form}-error">${inWords(refused.err.detail)}</p>` : '';
    const known = [`pull:${pull.uuid}`, `repo:${repo.uuid}`];
    // the page's independent parts, concurrently
    const [after, [tips, statuses, changes], reviews, protection, attachments, events] = await Promise.all([
      resumePoint(deps),
      withBranchTips(deps, c.viewer, ref, pull).then(async (t) => {
        // the head's statuses (the pull was read above: the caller may read the repo) and its diff
        const [s, d] = await Promise.all([
          t.head_sha ? latestStatuses(deps.db, pull.repo_uuid, t.head_sha) : [],
          pullChanges(deps, c.viewer, at, pull, t),
        ]);
        return [t, s, d] as const;
      }),
      listReviews(deps, c.viewer, at, number, w),
      getPullProtection(deps, c.viewer, at, number),
      listAttachments(deps, c.viewer, at, { kind: 'pull', number }, { offset: 0, limit: 100 }),
      activityOfScope(deps, c.viewer, `pull:${pull.uuid}`, 20, known),
    ]);
    const base = `${repoHref(repo)}/pulls/${pull.number}`;
    // the description and reviews with their references linked for this reader (references/render.ts)
    const shownReviews = reviews.slice(0, w.perPage);
    const [descriptionHtml, ...reviewHtmls] = (
      await linkReferences(deps.db, c.viewer, { uuid: repo.uuid, path: repoHref(repo) }, [
        markdownHtml(pull.body).text,
        ...shownReviews.map((rv) => markdownHtml(rv.body).text),
      ])
    ).map(trusted);
    const body = html`${repoHeader(repo, 'pulls', can)}
      <h2>#${pull.number} ${pull.title} <span class="badge ${pull.status}" id="pull-status">${pull.status}</span></h2>
      <p class="muted">
        ${pull.author_username} wants to merge
        <code
          >${tips.source_repo.uuid !== pull.repo_uuid ? `${tips.source_repo.full_name ?? '(a repo you cannot read)'}:` : ''}${pull.source_branch}</code
        >
        into <code>${pull.target_branch}</code>${tips.head_sha ? html` (head <code>${tips.head_sha.slice(0, 10)}</code>)` : ''} ·
        opened
        ${when(pull.created_at)}${pull.merged_at ? html` · merged by ${pull.merged_by_username} ${when(pull.merged_at)}${pull.merge_commit_sha ? html` as <code>${pull.merge_commit_sha.slice(0, 10)}</code>` : ''}` : ''}
      </p>
      <div class="grid">
        <div>
          <section class="box markdown" aria-label="Description">
            ${pull.body.trim() ? descriptionHtml : html`<p class="muted">No description.</p>`}
          </section>
          <section class="box" aria-labelledby="checks-h">
            <h2 id="checks-h">Protection and checks</h2>
            ${protection.protected ? html`<p>Branch protection <code>${protection.branch_pattern}</code>: ${protection.approved_by.length} of ${protection.required_approvals} required approvals${protection.approved_by.length ? html` (${protection.approved_by.join(', ')})` : ''}. <span class="badge ${protection.satisfied ? 'approved' : 'changes_requested'}">${protection.satisfied ? 'satisfied' : 'not satisfied'}</span></p>` : html`<p class="muted">No protection matches <code>${pull.target_branch}</code>.</p>`}
            ${checksView(statuses, protection)}
            ${
              can.merge
                ? html`${refusal('merge')}
                    <form class="row" method="post" action="${base}/merge">
                      ${csrfField(c)}
                      <label for="merge_strategy">Strategy</label>
                      <select id="merge_strategy" name="merge_strategy">
                        ${MERGE_STRATEGIES.map((s) => html`<option value="${s}">${s.replace('_', ' ')}</option>`)}
                      </select>
                      <button type="submit" class="primary">Merge</button>
                    </form>`
                : ''
            }
          </section>
          <section class="box" aria-labelledby="reviews-h">
            <h2 id="reviews-h">Reviews</h2>
            ${
              reviews.length
                ? html`<ul class="plain">
                    ${shownReviews.map((rv, i) => html`<li id="review-${rv.uuid}"><strong>${rv.author_username}</strong> <span class="badge ${rv.status}">${rv.status.replace('_', ' ')}</span> ${when(rv.created_at)}${rv.body.trim() ? html`<div class="markdown">${reviewHtmls[i]}</div>` : ''}</li>`)}
                  </ul>`
                : html`<p class="muted">No reviews yet.</p>`
            }
            ${pager(base, w.page, reviews.length > w.perPage)}
            ${
              can.review
                ? html`${refusal('review')}
                    <form class="stack" method="post" action="${base}/reviews">
                      ${csrfField(c)}
                      <label for="review-body">Review (Markdown)</label>
                      <textarea id="review-body" name="body">${refused?.form === 'review' ? (refused.body ?? '') : ''}</textarea>
                      <fieldset class="row">
                        <legend>Verdict</legend>
                        ${verdicts.map((s) => html`<label><input type="radio" name="status" value="${s}" ${(refused?.form === 'review' && refused.status ? s === refused.status : s === 'commented') ? html` checked` : ''} /> ${REVIEW_LABELS[s]}</label>`)}
                      </fieldset>
                      <div><button type="submit">Submit review</button></div>
                    </form>`
                : ''
            }
          </section>
          <section class="box" aria-labelledby="att-h">
            <h2 id="att-h">Attachments</h2>
            ${
              attachments.length
                ? html`<ul class="plain">
                    ${attachments.map((a) => html`<li>${a.upload.filename} <span class="muted">${a.upload.size_bytes} bytes, by ${a.created_by_username}</span></li>`)}
                  </ul>`
                : html`<p class="muted">No attachments.</p>`
            }
            ${
              !can.attach
                ? ''
                : html`<form class="row" method="post" action="${base}/attachments" enctype="multipart/form-data">
                    <input type="hidden" name="_csrf" value="${c.csrf}" />
                    <label for="attach-file">Attach a file</label><input id="attach-file" name="file" type="file" required />
                    <button type="submit">Attach</button>
                  </form>`
            }
          </section>
        </div>
        ${liveFeed({ id: 'pull-feed', label: 'Activity', scopes: [`pull:${pull.uuid}`], after, events })}
      </div>
      <section aria-labelledby="files-h">
        <h2 id="files-h">Files changed (${changes.count > MAX_FILES ? `${MAX_FILES}+` : changes.count})</h2>
        ${trusted(changes.html)}
      </section>`;
    return sendPage(reply, layout({ title: `#${pull.number} ${pull.title}`, caller: c }, body), refused?.err.status ?? 200);
  };

  repoRoute(app, 'GET', '/pulls/:number', { params: { number: NumberParam }, querystring: PullQuery }, (request, reply) =>
    pullPage(request, reply),
  );

  /** A refusal a person can act on (4xx but not "not found" or "sign in"): the pull page again, the error beside its form. */
  const actionable = (err: unknown): err is AppError =>
    err instanceof AppError && err.status >= 400 && err.status < 500 && err.status !== 404 && err.status !== 401;

  repoRoute(
    app,
    'POST',
    '/pulls/:number/reviews',
    { params: { number: NumberParam }, body: ReviewForm },
    async (request, reply) => {
      const c = requirePage(request);
      const { at: ref, repo } = await pageRepo(deps, c.viewer, request);
      const number = (request.params as { number: number }).number;
      const form = request.body as { status: (typeof REVIEW_STATUSES)[number]; body?: string };
      try {
        await createReview(deps, c.viewer, ref.ref, number, { status: form.status, body: form.body ?? '' });
      } catch (err) {
        if (!actionable(err)) throw err;
        return pullPage(request, reply, { form: 'review', err, body: form.body ?? '', status: form.status });
      }
      return seeOther(reply, `${repoHref(repo)}/pulls/${number}`);
    },
  );

  repoRoute(app, 'POST', '/pulls/:number/merge', { params: { number: NumberParam }, body: MergeForm }, async (request, reply) => {
    const c = requirePage(request);
    const { at: ref, repo } = await pageRepo(deps, c.viewer, request);
    const number = (request.params as { number: number }).number;
    try {
      await mergePull(deps, c.viewer, ref.ref, number, (request.body as { merge_strategy: MergeStrategy }).merge_strategy);
    } catch (err) {
      if (!actionable(err)) throw err;
      return pullPage(request, reply, { form: 'merge', err });
    }
    return seeOther(reply, `${repoHref(repo)}/pulls/${number}`);
  });
  void seg;
}

/**
 * The head commit's status checks: the combined state and the latest status of each context (its
 * state, description and link), then the protection's required contexts that are missing or not
 * `success` (what keeps the merge at 409 checks_unsatisfied).
 */
export function checksView(statuses: StatusJson[], protection: PullProtectionJson): Html {
  const combined = combinedState(statuses);
  const notMet = protection.status_checks.filter((c) => c.state !== 'success');
  const list = statuses.length
    ? html`<ul class="plain checks">
        ${statuses.map(
          (st) =>
            html`<li>
              <span class="badge ${st.state}">${st.state}</span>
              <strong>${st.context}</strong
              >${st.description ? html` <span class="muted">${st.description}</span>` : ''}${st.target_url ? html` <a href="${st.target_url}" rel="nofollow noopener noreferrer">Details</a>` : ''}${protection.required_status_contexts.includes(st.context) ? html` <span class="badge">required</span>` : ''}
            </li>`,
        )}
      </ul>`
    : html`<p class="muted">No status checks are reported for the head commit.</p>`;
  const required = protection.required_status_contexts.length
    ? notMet.length
      ? html`<p id="checks-required">
          Required checks not passed:
          ${notMet.map((c, i) => html`${i ? ', ' : ''}<code>${c.context}</code> <span class="badge ${c.state}">${c.state}</span>`)}
        </p>`
      : html`<p id="checks-required">All ${protection.required_status_contexts.length} required checks passed.</p>`
    : '';
  return html`<h3 id="status-h">Status checks <span class="badge ${combined}" id="checks-state">${combined}</span></h3>
    ${list} ${required}`;
}

interface HeadRepo {
  uuid: string;
  full_name: string;
  default_branch: string;
  label: string;
  ref: RepoRef;
}

const refOf = (r: RepoJson): RepoRef => ({ ownerKind: r.owner.kind, ownerName: r.owner.slug_or_username, repoSlug: r.slug });

/**
 * The repos a pull into `repo` may come from, as the new-pull form offers them: this repo, the
 * caller's own fork of it, then the other forks of it the caller may read (the first 100) (README
 * "Pulls from forks").
 */
async function headRepos(deps: Deps, viewer: Viewer, at: RepoContext, repo: RepoJson): Promise<HeadRepo[]> {
  const ref = at.ref;
  const out: HeadRepo[] = [
    {
      uuid: repo.uuid,
      full_name: repo.full_name,
      default_branch: repo.default_branch,
      label: `${repo.full_name} (this repo)`,
      ref,
    },
  ];
  const add = (r: RepoJson, note: string) => {
    if (out.some((h) => h.uuid === r.uuid)) return;
    out.push({
      uuid: r.uuid,
      full_name: r.full_name,
      default_branch: r.default_branch,
      label: `${r.full_name}${note}`,
      ref: refOf(r),
    });
  };
  const mine = await getForkIn(deps, viewer, ref, 'user', viewer.username).catch(notFoundAsNull);
  if (mine) add(mine.repo, ' (your fork)');
  for (const f of await listForks(deps, viewer, ref, { offset: 0, limit: 100 })) add(f.repo, ' (fork)');
  return out;
}

const notFoundAsNull = (err: unknown): null => {
  if (err instanceof AppError && err.status === 404) return null;
  throw err;
};

/**
 * The pull's changed files as the page shows them: read through the API's files service
 * (`pullFiles`) and rendered, then kept by the two commits they were read at (the target's tip and
 * the pull's head: a diff between two commits never changes), so the next view of the same pull at
 * the same commits neither runs git nor renders again.
 */
async function pullChanges(
  deps: Deps,
  viewer: Viewer,
  ref: RepoAt,
  pull: PullJson,
  tips: { head_sha: string | null; base_sha: string | null },
): Promise<{ html: string; count: number }> {
  const key = tips.head_sha && tips.base_sha ? `${tips.base_sha}...${tips.head_sha}` : null;
  const hit = key ? diffCache.peek(key) : undefined;
  if (hit !== undefined) {
    const cut = hit.indexOf('\n');
    return { count: Number(hit.slice(0, cut)), html: hit.slice(cut + 1) };
  }
  const files = await pullFiles(deps, viewer, ref, pull.number, { offset: 0, limit: MAX_FILES + 1 });
  const out = { html: renderDiff(files.slice(0, MAX_FILES), files.length > MAX_FILES).text, count: files.length };
  if (key) {
    // kept only when nothing moved while it was read (a push in between: the next view reads again)
    const [head, base] = await Promise.all([
      pullHeadSha(deps, { ...pull, source_repo_uuid: pull.source_repo.uuid ?? pull.repo_uuid }),
      deps.git.branchSha(pull.repo_uuid, pull.target_branch),
    ]);
    if (`${base}...${head}` === key) diffCache.set(key, `${out.count}\n${out.html}`);
  }
  return out;
}

/** The repo a fork was made from, when the caller may read it (its fork record: `GET {repo}/fork`). */
async function forkSource(deps: Deps, viewer: Viewer, ref: RepoRef): Promise<RepoJson | null> {
  const fork = await getOwnFork(deps, viewer, ref).catch(notFoundAsNull);
  if (!fork) return null;
  // gone since the record was read: no link
  return loadRepoJson(deps.db, fork.source_repo_uuid, deps.config).catch((err: unknown) => {
    if (err instanceof NoResultError) return null;
    throw err;
  });
}
