import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { NoResultError } from 'kysely';
import { listAttachments } from '../attachments/service.ts';
import type { Deps } from '../deps.ts';
import { listBranches } from '../code/refs.ts';
import { mergePull } from '../pulls/merge.ts';
import { type AutoMergeJson, disableAutoMerge, enableAutoMerge } from '../pulls/auto-merge.ts';
import { getPullProtection } from '../pulls/protection-status.ts';
import { createReview, listReviews, submitReview } from '../pulls/reviews-service.ts';
import { listComments, sourceAccess } from '../pulls/comments-service.ts';
import { reviewCommentCount } from '../pulls/comments-store.ts';
import { mayApplySuggestions } from '../access/review-comments.ts';
import { filesSince } from '../pulls/diff-range.ts';
import { listPullCommits } from '../code/refs.ts';
import { type PageRefusal, pullReviewForms } from './pull-review-forms.ts';
import {
  commentMarks,
  FILES_PER_SCREEN,
  newCommentForm,
  reviewDiff,
  type ReviewView,
  type Selected,
  threadHtml,
  threadsOf,
} from './pull-review.ts';
import { MERGE_STRATEGIES, PULL_STATUSES, REVIEW_STATUSES } from '../pulls/schemas.ts';
import { type PullStatus, createPull, getPull, listPulls, pullEventShape, updatePull, withBranchTips } from '../pulls/service.ts';
import { changeReviewRequests } from '../tracker/pulls.ts';
import { deleteBranch } from '../code/branches.ts';
import { type StatusJson, combinedState, latestStatuses } from '../statuses/service.ts';
import type { PullProtectionJson } from '../pulls/protection-status.ts';
import { getRepo } from '../repos/service.ts';
import { type RepoJson, loadRepoJson } from '../repos/view.ts';
import type { RepoContext, RepoRef, Viewer } from '../viewer.ts';
import { readRepoPull } from '../access/repo-read.ts';
import { AppError } from '../errors.ts';
import { pullAbilities } from '../access/abilities.ts';
import { pullSide, type PullSideRefusal, pullSideRoutes } from './tracker/pull-side.ts';
import { inWords } from './words.ts';
import { getForkIn, getOwnFork, listForks } from '../forks/service.ts';
import type { MergeStrategy } from '../git/store.ts';
import { activityOfScope } from './activity.ts';
import { isSignedOut, pageWindow, readerPage, requirePage, seeOther, sendPage } from './context.ts';
import { type Html, html, pager, seg, trusted, when } from './html.ts';
import { repoHref } from './home-pages.ts';
import { csrfField, layout } from './layout.ts';
import { markdownHtml } from './render-cache.ts';
import { liveFeed, resumeState } from './live.ts';
import { PULL_STATE_KINDS, liveState } from './live-state.ts';
import { NumberParam, pageRepoRef, repoHeader, repoRoute, pageRepo } from './repo-common.ts';
import { subscribeControl } from './notifications/controls.ts';
import { getPullSubscription } from '../notifications/subscriptions.ts';
import { pullFiles } from '../code/pulls.ts';
import { linkReferences } from '../references/render.ts';
import { type CheckJob, checkJobs, jobOfTargetUrl } from '../ci/checks.ts';
import { duration, jobHref, stateBadge } from './ci-pages.ts';

/** The session's CSRF token (or the X-CSRF-Token header instead: web/plugin.ts checks either). */
const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
const union = (values: readonly string[]) => Type.Union(values.map((v) => Type.Literal(v)));
const ListQuery = Type.Object(
  { status: Type.Optional(union(PULL_STATUSES)), page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })) },
  { additionalProperties: false },
);
const PullQuery = Type.Object(
  {
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    tab: Type.Optional(union(['conversation', 'commits', 'files'])),
    since: Type.Optional(Type.Literal('review')),
    from: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
    path: Type.Optional(Type.String({ maxLength: 4096 })),
    line: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647 })),
    start_line: Type.Optional(Type.Integer({ minimum: 1, maximum: 2_147_483_647 })),
    side: Type.Optional(union(['LEFT', 'RIGHT'])),
  },
  { additionalProperties: false },
);
interface PullQueryValue {
  page?: number;
  tab?: 'conversation' | 'commits' | 'files';
  since?: 'review';
  from?: number;
  path?: string;
  line?: number;
  start_line?: number;
  side?: 'LEFT' | 'RIGHT';
}
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
const EditForm = Type.Object(
  { _csrf: Csrf, title: Type.String({ maxLength: 4096 }), body: Type.String({ maxLength: 65_536 }) },
  { additionalProperties: false },
);
const StateForm = Type.Object({ _csrf: Csrf, status: union(['open', 'closed']) }, { additionalProperties: false });
const RerequestForm = Type.Object(
  { _csrf: Csrf, username: Type.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: false },
);
const CsrfOnly = Type.Object({ _csrf: Csrf }, { additionalProperties: false });
const MergeForm = Type.Object({ _csrf: Csrf, merge_strategy: union(MERGE_STRATEGIES) }, { additionalProperties: false });
const REVIEW_LABELS: Record<string, string> = { approved: 'Approve', changes_requested: 'Request changes', commented: 'Comment' };
const REVIEWS_PER_PAGE = 100;

/** Pulls list, opening a pull, the pull page, reviewing and merging (README "Web interface"). */
export async function pullPages(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  repoRoute(app, 'GET', '/pulls', { querystring: ListQuery }, async (request, reply) => {
    const c = readerPage(request);
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
        ${can.takePart ? html`<a href="${base}/new" class="badge">New pull</a>` : ''}
        ${upstream && can.takePart ? html`<a href="${repoHref(upstream)}/pulls/new?source_repo=${repo.uuid}" class="badge">New pull into ${upstream.full_name}</a>` : ''}
      </div>
      ${
        pulls.length
          ? html`<ul class="plain">
              ${pulls.slice(0, w.perPage).map((p) => html`<li><a href="${base}/${p.number}">#${p.number} ${p.title}</a> <span class="badge ${p.status}">${p.status}</span> <span class="muted">${p.source_branch} &rarr; ${p.target_branch}, by ${p.author_username} ${when(p.created_at)}</span></li>`)}
            </ul>`
          : html`<p class="muted">No ${status} pulls.</p>`
      }
      ${pager(base, w.page, pulls.length > w.perPage, { status })}`;
    return sendPage(reply, layout({ title: `Pulls · ${repo.full_name}`, caller: c, repo: repo.full_name }, body));
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
    return sendPage(reply, layout({ title: `New pull · ${repo.full_name}`, caller: c, repo: repo.full_name }, body));
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
    refused?:
      | { form: 'merge' | 'review' | 'auto-merge'; err: AppError; body?: string; status?: string }
      | { form: 'line'; line: PageRefusal }
      | PullSideRefusal,
  ) => {
    const c = readerPage(request);
    const ref = pageRepoRef(request);
    const number = (request.params as { number: number }).number;
    const q = (request.method === 'GET' ? request.query : {}) as PullQueryValue;
    const line = refused?.form === 'line' ? refused.line : null;
    const tab = line?.tab ?? q.tab ?? 'conversation';
    const w = pageWindow(q, REVIEWS_PER_PAGE);
    // The one access decision of the page: the repo, the viewer's level and the pull, in one
    // statement; every part below receives it and decides nothing again.
    const at = await readRepoPull(deps.database, c.viewer, ref, number);
    const [repo, pull] = await Promise.all([getRepo(deps, c.viewer, at), getPull(deps, c.viewer, at, number)]);
    // what the viewer may read, known from that decision (the activity feed checks no scope again)
    const can = pullAbilities(c.viewer, at);
    const verdicts = REVIEW_STATUSES.filter((s) => can.verdicts.includes(s));
    const isAuthor = pull.author_uuid === c.viewer.uuid;
    const canWrite = can.write;
    const canEdit = can.edit;
    const refusal = (form: 'merge' | 'review' | 'auto-merge') =>
      refused && refused.form === form
        ? html`<p class="error" role="alert" id="${form}-error">${inWords(refused.err.detail)}</p>`
        : '';
    const known = [`pull:${pull.uuid}`, `repo:${repo.uuid}`];
    const base = `${repoHref(repo)}/pulls/${pull.number}`;
    const from = line?.from ?? q.from ?? 0;
    // a pull from a fork: its suggestions are applied by those who may write to the fork
    const source = await sourceAccess(deps.db, c.viewer, at.pull);
    const view: ReviewView = {
      c,
      base,
      tab: tab === 'files' ? 'files' : 'conversation',
      from: tab === 'files' ? from : 0,
      canComment: can.review,
      canApply: pull.status === 'open' && can.takePart && source !== 'gone' && mayApplySuggestions(at, source),
      canResolve: (author) => can.takePart && (isAuthor || author === c.viewer.uuid || can.write),
      // as the API decides (src/access/review-comments.ts): its author edits; its author or maintain level deletes
      canEdit: (author) => can.takePart && author === c.viewer.uuid,
      canDelete: (author) => can.takePart && (author === c.viewer.uuid || can.manage),
      refused: line?.review ?? null,
      linked: new Map(),
    };
    /**
     * These rendered texts and the comments' with their references linked for the reader
     * (references/render.ts; the comments' into `view.linked`), in one pass.
     */
    const linkFor = async (texts: string[], shown: typeof comments): Promise<Html[]> => {
      const marks = commentMarks(shown);
      const linked = await linkReferences(deps.db, c.viewer, { uuid: repo.uuid, path: repoHref(repo) }, [...texts, ...marks]);
      marks.forEach((m, i) => view.linked.set(m, linked[texts.length + i]!));
      return linked.slice(0, texts.length).map(trusted);
    };
    // the page's independent parts, concurrently (the Files tab reads the diff, the others do not)
    const [resume, tips, reviews, protection, listed, subscription] = await Promise.all([
      resumeState(deps),
      withBranchTips(deps, c.viewer, ref, pull),
      listReviews(deps, c.viewer, at, number, w),
      getPullProtection(deps, c.viewer, at, number),
      // the Files tab reads the comments of the files it shows, once it knows them
      tab === 'conversation' ? listComments(deps, c.viewer, at, number, { offset: 0, limit: 10_000 }, false) : [],
      getPullSubscription(deps, c.viewer, at, number),
    ]);
    let comments = listed;
    let threads = threadsOf(comments);
    const pendingReview = reviews.find((rv) => rv.status === 'pending' && rv.author_uuid === c.viewer.uuid) ?? null;
    const pendingCount = pendingReview ? await reviewCommentCount(deps.db, pendingReview.uuid) : 0;
    const lastReview = [...reviews]
      .reverse()
      .find((rv) => rv.author_uuid === c.viewer.uuid && rv.status !== 'pending' && rv.commit_sha);
    const tabLink = (t: string, label: string) =>
      html`<a href="${base}?tab=${t}" ${t === tab ? html` aria-current="page"` : ''}>${label}</a>`;
    const header = html`${repoHeader(repo, 'pulls', can)}
      <h2>#${pull.number} ${pull.title} <span class="badge ${pull.status}" id="pull-status">${pull.status}</span></h2>
      <p class="muted" id="pull-meta">
        ${pull.author_username} wants to merge
        <code
          >${tips.source_repo.uuid !== pull.repo_uuid ? `${tips.source_repo.full_name ?? '(a repo you cannot read)'}:` : ''}${pull.source_branch}</code
        >
        into <code>${pull.target_branch}</code>${tips.head_sha ? html` (head <code>${tips.head_sha.slice(0, 10)}</code>)` : ''} ·
        opened
        ${when(pull.created_at)}${pull.merged_at ? html` · merged by ${pull.merged_by_username} ${when(pull.merged_at)}${pull.merge_commit_sha ? html` as <code>${pull.merge_commit_sha.slice(0, 10)}</code>` : ''}` : ''}
      </p>
      ${isSignedOut(c) ? '' : subscribeControl(base, c.csrf, subscription)}
      <nav class="row tabs" aria-label="Pull tabs">
        ${tabLink('conversation', 'Conversation')} ${tabLink('commits', 'Commits')} ${tabLink('files', 'Files changed')}
      </nav>`;

    let main: Html;
    if (tab === 'commits') {
      const commits = await listPullCommits(deps, c.viewer, ref, number, { offset: 0, limit: 250 });
      main = html`<section aria-labelledby="commits-h">
        <h2 id="commits-h">Commits (${commits.length})</h2>
        ${
          commits.length
            ? html`<ol class="plain">
                ${commits.map(
                  (cm) =>
                    html`<li>
                      <a href="${repoHref(repo)}/commit/${cm.sha}"><code>${cm.sha.slice(0, 10)}</code></a>
                      ${cm.message.split('\n')[0]} <span class="muted">by ${cm.author_name} ${when(cm.authored_at)}</span>
                    </li>`,
                )}
              </ol>`
            : html`<p class="muted">No commits.</p>`
        }
      </section>`;
    } else if (tab === 'files') {
      const since = q.since === 'review' && lastReview ? lastReview.commit_sha! : null;
      const all = since
        ? ((await filesSince(deps, repo.uuid, at.pull, since).catch(() => null)) ?? [])
        : await pullFiles(deps, c.viewer, at, number, { offset: 0, limit: 3000 });
      const first = Math.min(from, Math.max(0, all.length - 1));
      const shown = all.slice(first, first + FILES_PER_SCREEN);
      const selected: Selected | null = line?.review.selected
        ? line.review.selected
        : q.path && q.line && view.canComment && !since
          ? { path: q.path, line: q.line, side: q.side ?? 'RIGHT', ...(q.start_line ? { start_line: q.start_line } : {}) }
          : null;
      const href = (extra: Record<string, string>) =>
        `${base}?${new URLSearchParams({ tab: 'files', ...(first ? { from: String(first) } : {}), ...extra })}`;
      if (!since) {
        comments = await listComments(
          deps,
          c.viewer,
          at,
          number,
          { offset: 0, limit: 10_000 },
          true,
          shown.map((f) => f.path),
        );
        threads = threadsOf(comments);
        await linkFor([], comments);
      }
      const diff = reviewDiff(view, shown, threads, { selected, pending: pendingReview !== null, inline: !since, href });
      // a refused comment on a line this screen does not show: its form (and error) above the files
      const unplaced = selected && !diff.placed && line ? newCommentForm(view, selected, pendingReview !== null) : '';
      const rest = all.length > first + FILES_PER_SCREEN;
      main = html`<section aria-labelledby="files-h">
        <h2 id="files-h">Files changed (${all.length})</h2>
        <p class="row">
          ${
            since
              ? html`Showing the changes since your last review (<code>${since.slice(0, 10)}</code>).
                  <a href="${base}?tab=files">Show all changes</a>`
              : lastReview && lastReview.commit_sha !== tips.head_sha
                ? html`<a href="${base}?tab=files&amp;since=review">Show only the changes since your last review</a>`
                : ''
          }
        </p>
        ${trusted(unplaced)} ${trusted(diff.html)}
        ${
          first > 0 || rest
            ? html`<nav class="row" aria-label="More files">
                ${first > 0 ? html`<a href="${base}?tab=files${since ? '&since=review' : ''}&amp;from=${Math.max(0, first - FILES_PER_SCREEN)}">Previous files</a>` : ''}
                ${
                  rest
                    ? html`<span class="muted">${all.length - first - FILES_PER_SCREEN} more files:</span>
                        <a href="${base}?tab=files${since ? '&since=review' : ''}&amp;from=${first + FILES_PER_SCREEN}"
                          >Load the next files</a
                        >`
                    : ''
                }
              </nav>`
            : ''
        }
        ${reviewForm(pendingCount)}
      </section>`;
    } else {
      // the description, the reviews and the conversations with their references linked for this reader
      const shownReviews = reviews.slice(0, w.perPage);
      const [descriptionHtml, ...reviewHtmls] = await linkFor(
        [markdownHtml(pull.body).text, ...shownReviews.map((rv) => markdownHtml(rv.body).text)],
        comments,
      );
      const [statuses, attachments, events] = await Promise.all([
        tips.head_sha ? latestStatuses(deps.db, pull.repo_uuid, tips.head_sha) : [],
        listAttachments(deps, c.viewer, at, { kind: 'pull', number }, { offset: 0, limit: 100 }),
        activityOfScope(deps, c.viewer, `pull:${pull.uuid}`, 20, known, resume.settled),
      ]);
      const jobUuids = statuses.flatMap((st) => jobOfTargetUrl(st.target_url)?.uuid ?? []);
      const jobs = await checkJobs(deps.db, pull.repo_uuid, jobUuids);
      const canRequest = can.requestReviews;
      const requested = new Set(tips.requested_reviewers.map((u) => u.username));
      const reviewers = [
        ...new Set(
          reviews.filter((rv) => rv.status !== 'pending' && rv.author_uuid !== pull.author_uuid).map((rv) => rv.author_username),
        ),
      ];
      const canDeleteBranch =
        pull.status === 'merged' &&
        canWrite &&
        pull.source_repo.uuid === pull.repo_uuid &&
        tips.head_sha !== null &&
        pull.source_branch !== repo.default_branch;
      main = html`<div class="grid">
        <div>
          <section class="box markdown" aria-label="Description">
            ${pull.body.trim() ? descriptionHtml : html`<p class="muted">No description.</p>`}
          </section>
          ${
            canEdit
              ? html`<details class="box">
                  <summary>Edit title and description</summary>
                  <form class="stack" method="post" action="${base}/edit">
                    ${csrfField(c)}
                    <label for="edit-title">Title</label>
                    <input id="edit-title" name="title" type="text" required maxlength="256" value="${pull.title}" />
                    <label for="edit-body">Description (Markdown)</label>
                    <textarea id="edit-body" name="body">${pull.body}</textarea>
                    <div><button type="submit">Save</button></div>
                  </form>
                </details>`
              : ''
          }
          ${
            canEdit
              ? html`<form class="row" method="post" action="${base}/state">
                  ${csrfField(c)}<input type="hidden" name="status" value="${pull.status === 'open' ? 'closed' : 'open'}" />
                  <button type="submit">${pull.status === 'open' ? 'Close pull' : 'Reopen pull'}</button>
                </form>`
              : ''
          }
          ${
            canDeleteBranch
              ? html`<form class="row" method="post" action="${base}/delete-branch">
                  ${csrfField(c)}<span class="muted">The pull is merged.</span>
                  <button type="submit">Delete branch ${pull.source_branch}</button>
                </form>`
              : ''
          }
          ${pullSide({ c, base, pull: tips, can, refused: refused?.form === 'reviewers' || refused?.form === 'draft' ? refused : undefined })}
          <section class="box" aria-labelledby="checks-h" id="pull-checks">
            <h2 id="checks-h">Protection and checks</h2>
            ${protection.protected ? html`<p>Branch protection <code>${protection.branch_pattern}</code>: ${protection.approved_by.length} of ${protection.required_approvals} required approvals${protection.approved_by.length ? html` (${protection.approved_by.join(', ')})` : ''}${protection.require_conversation_resolution ? html`; every conversation resolved` : ''}. <span class="badge ${protection.satisfied ? 'approved' : 'changes_requested'}">${protection.satisfied ? 'satisfied' : 'not satisfied'}</span></p>` : html`<p class="muted">No protection matches <code>${pull.target_branch}</code>.</p>`}
            ${checksView(statuses, protection, { repo, jobs, rerun: canWrite ? csrfField(c) : null })}
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
            ${autoMergeControl(tips.auto_merge)}
          </section>
          <section class="box" aria-labelledby="reviews-h">
            <h2 id="reviews-h">Reviews</h2>
            <div id="pull-reviews">
              ${
                reviews.length
                  ? html`<ul class="plain">
                      ${shownReviews.map((rv, i) => html`<li id="review-${rv.uuid}"><strong>${rv.author_username}</strong> <span class="badge ${rv.status}">${rv.status.replace('_', ' ')}</span> ${when(rv.created_at)}${rv.body.trim() ? html`<div class="markdown">${reviewHtmls[i]}</div>` : ''}</li>`)}
                    </ul>`
                  : html`<p class="muted">No reviews yet.</p>`
              }
            </div>
            ${pager(base, w.page, reviews.length > w.perPage)}
            ${
              canRequest && reviewers.some((u) => !requested.has(u))
                ? html`<div class="row">
                    ${reviewers
                      .filter((u) => !requested.has(u))
                      .map(
                        (u) =>
                          html`<form method="post" action="${base}/rerequest" class="row">
                            ${csrfField(c)}<input type="hidden" name="username" value="${u}" />
                            <button type="submit">Re-request review from ${u}</button>
                          </form>`,
                      )}
                  </div>`
                : ''
            }
            ${requested.size ? html`<p class="muted">Review requested from ${[...requested].join(', ')}.</p>` : ''}
            ${reviewForm(pendingCount)}
          </section>
          <section class="box" aria-labelledby="conv-h">
            <h2 id="conv-h">Conversations on the code (${threads.length})</h2>
            ${threads.length ? threads.map((t) => threadHtml(view, t, null, true)) : html`<p class="muted">No comments on lines yet.</p>`}
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
        ${liveFeed({ id: 'pull-feed', label: 'Activity', scopes: isSignedOut(c) ? [] : [`pull:${pull.uuid}`], after: resume.after, events })}
        ${isSignedOut(c) ? '' : liveState({ scope: `repo:${repo.uuid}`, after: resume.after, kinds: PULL_STATE_KINDS, href: base, parts: ['pull-checks', 'pull-status', 'pull-meta', 'pull-reviews'] })}
      </div>`;
    }

    /**
     * Auto-merge (docs/ci.md "Auto-merge"): its state for every reader; "Enable auto-merge" or
     * "Disable auto-merge" for who may use it, posted with htmx (the checks part swapped in, a
     * refusal beside the control) or as a plain form.
     */
    function autoMergeControl(on: AutoMergeJson | null): Html {
      const swap = (action: string) =>
        html`hx-post="${action}" hx-target="#pull-checks" hx-select="#pull-checks" hx-swap="outerHTML" data-refusals="inline"`;
      const state = on
        ? html`<p id="auto-merge-state">
            Auto-merge is on: ${on.enabled_by.username} turned it on ${when(on.enabled_at)}; the pull merges
            (${on.merge_strategy.replace('_', ' ')}) once its approvals and required checks are in.
          </p>`
        : '';
      if (!can.autoMerge) return html`<div id="pull-auto-merge">${state}</div>`;
      const control = on
        ? html`<form class="row" method="post" action="${base}/auto-merge/disable" ${swap(`${base}/auto-merge/disable`)}>
            ${csrfField(c)}<button type="submit" id="auto-merge-button">Disable auto-merge</button>
          </form>`
        : html`<form class="row" method="post" action="${base}/auto-merge" ${swap(`${base}/auto-merge`)}>
            ${csrfField(c)}
            <label for="auto_merge_strategy">Strategy</label>
            <select id="auto_merge_strategy" name="merge_strategy">
              ${MERGE_STRATEGIES.map((s) => html`<option value="${s}">${s.replace('_', ' ')}</option>`)}
            </select>
            <button type="submit" id="auto-merge-button">Enable auto-merge</button>
          </form>`;
      return html`<div id="pull-auto-merge">${state}${refusal('auto-merge')}${control}</div>`;
    }

    function reviewForm(pending: number): Html | string {
      if (!can.review) return '';
      return html`${refusal('review')}
        <form class="stack" method="post" action="${base}/reviews">
          ${csrfField(c)}
          <label for="review-body">Review (Markdown)</label>
          <textarea id="review-body" name="body">${refused && refused.form === 'review' ? (refused.body ?? '') : ''}</textarea>
          <fieldset class="row">
            <legend>Verdict</legend>
            ${verdicts.map((s) => html`<label><input type="radio" name="status" value="${s}" ${(refused && refused.form === 'review' && refused.status ? s === refused.status : s === 'commented') ? html` checked` : ''} /> ${REVIEW_LABELS[s]}</label>`)}
          </fieldset>
          <div>
            <button type="submit">
              ${pending ? `Submit review (${pending} pending comment${pending === 1 ? '' : 's'})` : 'Submit review'}
            </button>
          </div>
        </form>`;
    }

    return sendPage(
      reply,
      layout({ title: `#${pull.number} ${pull.title}`, caller: c }, html`${header}${main}`),
      refused ? (refused.form === 'line' ? refused.line.status : refused.err.status) : 200,
    );
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
        // a pending review (line comments collected on the Files tab) is submitted; else a new review
        const pending = (await listReviews(deps, c.viewer, ref, number, { offset: 0, limit: 100 })).find(
          (rv) => rv.status === 'pending' && rv.author_uuid === c.viewer.uuid,
        );
        if (pending)
          await submitReview(deps, c.viewer, ref.ref, number, pending.uuid, { status: form.status, body: form.body ?? '' });
        else await createReview(deps, c.viewer, ref.ref, number, { status: form.status, body: form.body ?? '' });
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
  // auto-merge on and off (docs/ci.md "Auto-merge"), as PUT/DELETE {repo}/pulls/{n}/auto-merge
  repoRoute(
    app,
    'POST',
    '/pulls/:number/auto-merge',
    { params: { number: NumberParam }, body: MergeForm },
    async (request, reply) => {
      const c = requirePage(request);
      const { at: ref, repo } = await pageRepo(deps, c.viewer, request);
      const number = (request.params as { number: number }).number;
      try {
        await enableAutoMerge(
          deps,
          c.viewer,
          ref.ref,
          number,
          (request.body as { merge_strategy: MergeStrategy }).merge_strategy,
        );
      } catch (err) {
        if (!actionable(err)) throw err;
        return pullPage(request, reply, { form: 'auto-merge', err });
      }
      return seeOther(reply, `${repoHref(repo)}/pulls/${number}`);
    },
  );
  repoRoute(
    app,
    'POST',
    '/pulls/:number/auto-merge/disable',
    { params: { number: NumberParam }, body: CsrfOnly },
    async (request, reply) => {
      const c = requirePage(request);
      const { at: ref, repo } = await pageRepo(deps, c.viewer, request);
      const number = (request.params as { number: number }).number;
      try {
        await disableAutoMerge(deps, c.viewer, ref.ref, number);
      } catch (err) {
        if (!actionable(err)) throw err;
        return pullPage(request, reply, { form: 'auto-merge', err });
      }
      return seeOther(reply, `${repoHref(repo)}/pulls/${number}`);
    },
  );
  repoRoute(app, 'POST', '/pulls/:number/edit', { params: { number: NumberParam }, body: EditForm }, async (request, reply) => {
    const c = requirePage(request);
    const number = (request.params as { number: number }).number;
    const { title, body } = request.body as { title: string; body: string };
    await updatePull(deps, c.viewer, pageRepoRef(request), number, { title, body });
    return seeOther(reply, await pullHref(request, number));
  });

  repoRoute(app, 'POST', '/pulls/:number/state', { params: { number: NumberParam }, body: StateForm }, async (request, reply) => {
    const c = requirePage(request);
    const number = (request.params as { number: number }).number;
    await updatePull(deps, c.viewer, pageRepoRef(request), number, {
      status: (request.body as { status: 'open' | 'closed' }).status,
    });
    return seeOther(reply, await pullHref(request, number));
  });

  repoRoute(
    app,
    'POST',
    '/pulls/:number/rerequest',
    { params: { number: NumberParam }, body: RerequestForm },
    async (request, reply) => {
      const c = requirePage(request);
      const number = (request.params as { number: number }).number;
      const username = (request.body as { username: string }).username;
      await changeReviewRequests(deps, c.viewer, pageRepoRef(request), number, 'add', [username], pullEventShape);
      return seeOther(reply, await pullHref(request, number));
    },
  );

  repoRoute(
    app,
    'POST',
    '/pulls/:number/delete-branch',
    { params: { number: NumberParam }, body: CsrfOnly },
    async (request, reply) => {
      const c = requirePage(request);
      const ref = pageRepoRef(request);
      const number = (request.params as { number: number }).number;
      const pull = await getPull(deps, c.viewer, ref, number);
      // only a merged pull's branch of this repo (DELETE {repo}/branches/{name} decides the rest)
      if (pull.status !== 'merged' || pull.source_repo.uuid !== pull.repo_uuid) {
        throw new AppError(409, 'pull_not_merged', 'Only the branch of a merged pull of this repo is deleted here.');
      }
      await deleteBranch(deps, c.viewer, ref, pull.source_branch);
      return seeOther(reply, await pullHref(request, number));
    },
  );

  pullReviewForms(app, deps, (request, reply, line) => pullPage(request, reply, { form: 'line', line }));
  pullSideRoutes(app, deps, pullPage, pullHref);

  async function pullHref(request: FastifyRequest, number: number): Promise<string> {
    const repo = await getRepo(deps, requirePage(request).viewer, pageRepoRef(request));
    return `${repoHref(repo)}/pulls/${number}`;
  }
  void seg;
}

/**
 * The head commit's status checks: the combined state and the latest status of each context (its
 * state, description and link), then the protection's required contexts that are missing or not
 * `success` (what keeps the merge at 409 checks_unsatisfied).
 */
export function checksView(
  statuses: StatusJson[],
  protection: PullProtectionJson,
  /** `rerun`: the CSRF field of the re-run forms, for write access (null: no forms) */
  ci?: { repo: RepoJson; jobs: Map<string, CheckJob>; rerun: Html | null },
): Html {
  /** a CI job's own state, duration and page (src/ci/checks.ts), else the status's link */
  const details = (st: StatusJson) => {
    const j = ci?.jobs.get(jobOfTargetUrl(st.target_url)?.uuid ?? '');
    if (ci && j)
      return html` ${stateBadge(j.status, j.conclusion)} <span class="muted">${duration(j.started_at, j.completed_at)}</span>
        <a href="${jobHref(ci.repo, j.run_number, j.uuid)}">Details</a>${
          ci.rerun && j.status === 'completed' && j.conclusion !== 'success' && j.conclusion !== 'skipped'
            ? html` <form method="post" action="${repoHref(ci.repo)}/runs/${j.run_number}/rerun" class="inline">
                ${ci.rerun}<input type="hidden" name="failed_only" value="true" /><button type="submit">Re-run</button>
              </form>`
            : ''
        }`;
    return st.target_url ? html` <a href="${st.target_url}" rel="nofollow noopener noreferrer">Details</a>` : '';
  };
  const combined = combinedState(statuses);
  const notMet = protection.status_checks.filter((c) => c.state !== 'success');
  const list = statuses.length
    ? html`<ul class="plain checks">
        ${statuses.map(
          (st) =>
            html`<li>
              <span class="badge ${st.state}">${st.state}</span>
              <strong>${st.context}</strong
              >${st.description ? html` <span class="muted">${st.description}</span>` : ''}${details(st)}${protection.required_status_contexts.includes(st.context) ? html` <span class="badge">required</span>` : ''}
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
