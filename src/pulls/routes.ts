import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RepoRef } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pullAt, repoAt } from '../http/repo-routes.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { errors } from '../http/route-schemas.ts';
import { Page, PageQuery } from '../http/schemas.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import { sendPullDiff, wantsDiff } from '../code/pulls.ts';
import { mergePull } from './merge.ts';
import { disableAutoMerge, enableAutoMerge } from './auto-merge.ts';
import { getPullProtection, PROTECTION_MATCHING_RULES } from './protection-status.ts';
import {
  createPull,
  getPull,
  listPulls,
  listPullsFiltered,
  type PullFilters,
  pullEventShape,
  updatePull,
  listWithBranchTips,
  withBranchTips,
} from './service.ts';
import { changePullSet, changeReviewRequests } from '../tracker/pulls.ts';
import { timelinePage } from '../tracker/timeline.ts';
import { requireRepoPull } from '../access/index.ts';
import { SetBodies, TimelineEntry, UsernamesBody } from '../threads/schemas.ts';
import { createReview, getReview, listReviews, removeReview } from './reviews-service.ts';
import { commentRoutes } from './comments-routes.ts';
import {
  AutoMergeBody,
  CreatePullBody,
  CreateReviewBody,
  ListPullsQuery,
  MergeBody,
  MergeResponse,
  Pull,
  PullNumber,
  PullProtection,
  Review,
  ReviewUuid,
  UpdatePullBody,
} from './schemas.ts';

const OPEN_RULES =
  "Who may open a pull, under the repo's public_repo_pull_policy (public and private repos alike): `any` — anyone " +
  'with read access; `team` — members of the owning team, any role; `owner` — maintain level only (write level is ' +
  'not enough). Maintain level and staff may under every policy. Refused: 403 forbidden (404 without read access). ' +
  'Branches must be valid git branch names (git check-ref-format --branch) and differ from each other within one repo ' +
  '(400); they need not exist yet. `source_repo` (a repo uuid, optional: absent means this repo) names the repo the ' +
  'source branch lives in: this repo or one of its fork network (its source, its forks, their forks) that the caller ' +
  "can read (404 for one they cannot, 400 for an unrelated one); a fork's `main` into this repo's `main` is allowed. " +
  "The target repo's pull policy applies to the opener. The pull's head is kept in this repo under " +
  '`refs/pull/{number}/head` (`git fetch origin pull/N/head`), brought up to date on every push to the source branch, so ' +
  'a pull from a fork stays mergeable when the fork or its branch is deleted. Numbers are per repo, from 1, without ' +
  'gaps. Archived repo: 403 repo_archived; inactive team: 403 team_inactive.';

const UPDATE_RULES =
  'Author or maintain level (403 otherwise). `status` may be `open` (reopen: closed_at cleared) or `closed` ' +
  '(closed_at set); `merged` is 400 (use the merge endpoint). Any PUT on a merged pull is 409 pull_merged, even one ' +
  'that would change nothing. A PUT that changes nothing returns the pull unchanged and emits no event.';

const REVIEW_RULES =
  'Read access is enough to review. The pull author may only comment (403 cannot_approve_own_pull). A merged pull ' +
  'takes no reviews (409 pull_merged); a closed pull still does. Archived repo: 403 repo_archived. Without `status` ' +
  'the review is pending (visible to its author only, left out of approvals) and collects `comments` until ' +
  'POST .../reviews/{uuid}/submit; a second pending review of the same author adds its comments to the first. Each ' +
  "comment anchors to the pull's diff at its head now (`commit_sha`): `line` (and `start_line` for a range, in the " +
  'same hunk, not after it) must be a line of that diff on its `side` (RIGHT default: the head; LEFT: the merge ' +
  'base), else 400 naming it. At most 100 comments.';

const REMOVE_RULES =
  'Soft removal by the review author or maintain level (403 otherwise): the review keeps its record with removed_at ' +
  'set, is left out of the list and stops counting towards protection. Removing an already removed review is a ' +
  'no-op 204. Reviews of a merged pull cannot be removed (409 pull_merged).';

const MERGE_RULES =
  'Write access (403 otherwise). Closed: 409 pull_closed; already merged: 409 pull_merged; branch protection not ' +
  'satisfied: 409 protection_unsatisfied; conflicting changes: 409 merge_conflict with conflict_paths. A merge always ' +
  'lands commits: a source branch that does not exist (and, from a fork, no kept head) is 409 source_branch_missing; a ' +
  'source with no commit the target lacks is 409 nothing_to_merge (checked before the strategy, so a fast_forward of a ' +
  'source behind its target is nothing_to_merge); a source that shares no commit with its target is 409 ' +
  'unrelated_histories (under every strategy); nothing changes in any of these cases. A pull from a fork merges its head ' +
  'fetched from the fork into `refs/pull/{number}/head` just before, or its kept head when the fork or its branch is ' +
  'gone; write access to the target repo is all it needs. The merge commit message names the source branch only ' +
  "(never a fork's name). A merged pull also gets closed_at = merged_at (as GitHub does). An empty body means the " +
  'default strategy `merge`.';

const AUTO_MERGE_RULES =
  'Auto-merge (docs/ci.md "Auto-merge"): the server merges the pull with `merge_strategy` (default merge), as the caller, ' +
  'as soon as its approvals and required checks are satisfied: checked again on each status posted (by a CI job or ' +
  'through the statuses API), each approving review and each protection change, through the job queue (one merge ' +
  'across instances). The access of the user who turned it on is checked again then. It goes off, with an ' +
  '`auto-merge-disabled` event giving the reason, when the pull is closed (closed), the user can no longer merge ' +
  '(access_lost), the source conflicts (conflict) or the merge is refused otherwise (merge_refused, with the code). ' +
  'Write access (403 for a reader, 404 without read access); archived repo 403 repo_archived (after the 404s). A merged ' +
  'pull is 409 pull_merged, a closed one 409 pull_closed, a draft 409 pull_is_draft. A pull already mergeable is merged ' +
  'at once: the answer then shows it merged (auto_merge null). Turning it on again replaces who and how.';

type PullPath = RepoParams & { number: number; review_uuid: string };

const TRACKER_FILTERS = [
  'state',
  'labels',
  'assignee',
  'milestone',
  'author',
  'mentioned',
  'q',
  'sort',
  'direction',
  'draft',
  'review_requested',
  'after',
];

/** Caller, repo and pull number of a request (the per-form params schemas validated them). */
function callerPull(request: FastifyRequest): [Viewer, RepoRef, number] {
  const p = request.params as PullPath;
  return [requireViewer(request), repoRef(p), p.number];
}

const callerRepo = (request: FastifyRequest): [Viewer, RepoRef] => [requireViewer(request), repoRef(request.params as PullPath)];

/** Caller and the repo the route declared (`config.repo`), as the auth hook resolved it. */
const atRepo = (request: FastifyRequest): [Viewer, RepoAt] => [requireViewer(request), repoAt(request)];

/** Caller, the pull the route declared (`config.repo: 'pull'`) and its number. */
const atPull = (request: FastifyRequest): [Viewer, RepoAt, number] => [
  requireViewer(request),
  pullAt(request),
  (request.params as PullPath).number,
];
const reviewUuidOf = (request: FastifyRequest) => (request.params as PullPath).review_uuid;

export async function pullsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['pulls'];

  for (const form of REPO_FORMS) {
    const RepoPath = repoParamsSchema(form);
    const PullParams = repoParamsSchema(form, { number: PullNumber });
    const ReviewParams = repoParamsSchema(form, { number: PullNumber, review_uuid: ReviewUuid });
    const base = `${form.prefix}/pulls`;

    r.get(
      base,
      {
        config: { repo: 'repo' },
        schema: {
          tags,
          summary: 'List pulls: by number ascending, or filtered and sorted as threads are',
          description:
            "`status` filters by open, closed or merged (other values 400). Read access. With any of the issue tracker's " +
            'parameters (README "Issue tracker": state, labels, assignee, milestone, author, mentioned, q, sort, direction, ' +
            'draft, review_requested, after) the list is filtered and sorted as GET {repo}/threads (state open and created desc by ' +
            'default; state closed covers closed and merged pulls; q matches whole words of the title, body and submitted ' +
            'reviews, not parts of words; sort replies counts the reviews not removed); an unknown value is 400. ' +
            'Filtered, paging is by keyset: `next` carries `after` (the last row\u2019s cursor), so every page costs what the first ' +
            'does; `page` still works.',
          params: RepoPath,
          querystring: ListPullsQuery,
          response: { 200: Page(Pull) },
        },
      },
      async (request, reply) => {
        const p = pageParams(request.query);
        const q = request.query as Record<string, string | undefined>;
        if (TRACKER_FILTERS.some((k) => q[k] !== undefined)) {
          const { pulls, cursors } = await listPullsFiltered(deps, ...atRepo(request), p, request.query as PullFilters);
          // the next page by keyset (after the last row), so a deep page costs what the first does
          const next = pulls.length > p.perPage ? { after: cursors[p.perPage - 1]!, page: '1' } : undefined;
          return pageOf(request, reply, p, await listWithBranchTips(deps, ...callerRepo(request), pulls), undefined, next);
        }
        const rows = await listPulls(deps, ...atRepo(request), {
          status: request.query.status,
          offset: p.offset,
          limit: p.limit,
        });
        return pageOf(request, reply, p, await listWithBranchTips(deps, ...callerRepo(request), rows));
      },
    );

    r.post(
      base,
      {
        config: { rateLimit: 'api:create-pull' },
        schema: {
          tags,
          summary: 'Open a pull',
          description: OPEN_RULES,
          params: RepoPath,
          body: CreatePullBody,
          response: { 201: Pull, ...errors(403) },
        },
      },
      async (request, reply) =>
        reply
          .status(201)
          .send(await withBranchTips(deps, ...callerRepo(request), await createPull(deps, ...callerRepo(request), request.body))),
    );

    r.get(
      `${base}/:number`,
      {
        config: { repo: 'pull' },
        schema: {
          tags,
          summary: 'Get a pull',
          description:
            'With `Accept: text/x-diff` (or `application/vnd.weft.diff`): the whole unified diff from the merge base to the ' +
            'source tip, streamed as `text/x-diff; charset=utf-8` (empty while the source branch does not exist).',
          params: PullParams,
          response: { 200: Pull },
        },
      },
      async (request, reply) => {
        if (wantsDiff(request)) return sendPullDiff(deps, ...atPull(request), reply);
        return withBranchTips(deps, ...callerRepo(request), await getPull(deps, ...atPull(request)));
      },
    );

    r.put(
      `${base}/:number`,
      {
        schema: {
          tags,
          summary: 'Edit, close or reopen a pull',
          description: UPDATE_RULES,
          params: PullParams,
          body: UpdatePullBody,
          response: { 200: Pull, ...errors(403, 409) },
        },
      },
      async (request) =>
        withBranchTips(deps, ...callerRepo(request), await updatePull(deps, ...callerPull(request), request.body)),
    );

    r.post(
      `${base}/:number/merge`,
      {
        schema: {
          tags,
          summary: 'Merge a pull',
          description: MERGE_RULES,
          params: PullParams,
          body: MergeBody,
          response: { 200: MergeResponse, ...errors(403, 409) },
        },
        // No body at all means the default strategy.
        preValidation: async (request) => {
          if (request.body === undefined || request.body === null) request.body = {};
        },
      },
      async (request) => {
        const result = await mergePull(deps, ...callerPull(request), request.body.merge_strategy);
        return { ...result, pull: await withBranchTips(deps, ...callerRepo(request), result.pull) };
      },
    );

    r.put(
      `${base}/:number/auto-merge`,
      {
        schema: {
          tags,
          summary: 'Turn auto-merge on: the pull merges by itself once its approvals and required checks are in',
          description: AUTO_MERGE_RULES,
          params: PullParams,
          body: AutoMergeBody,
          response: { 200: Pull, ...errors(403, 409) },
        },
        // No body at all means the default strategy.
        preValidation: async (request) => {
          if (request.body === undefined || request.body === null) request.body = {};
        },
      },
      async (request) => {
        await enableAutoMerge(deps, ...callerPull(request), request.body.merge_strategy);
        return withBranchTips(deps, ...callerRepo(request), await getPull(deps, ...callerPull(request)));
      },
    );

    r.delete(
      `${base}/:number/auto-merge`,
      {
        schema: {
          tags,
          summary: 'Turn auto-merge off',
          description:
            'Write access (403 for a reader, 404 without read access); archived repo 403 repo_archived. Emits ' +
            '`auto-merge-disabled` with reason turned_off; a pull without auto-merge is a no-op 204.',
          params: PullParams,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        await disableAutoMerge(deps, ...callerPull(request));
        return reply.status(204).send();
      },
    );

    r.get(
      `${base}/:number/protection`,
      {
        schema: {
          tags,
          summary: "The branch protection that applies to a pull's target branch, and whether it is satisfied",
          description: PROTECTION_MATCHING_RULES,
          params: PullParams,
          response: { 200: PullProtection },
        },
      },
      async (request) => getPullProtection(deps, ...callerPull(request)),
    );

    r.get(
      `${base}/:number/reviews`,
      {
        schema: {
          tags,
          summary: 'List the reviews of a pull, oldest first; removed reviews are left out',
          params: PullParams,
          querystring: Type.Object(PageQuery),
          response: { 200: Page(Review) },
        },
      },
      async (request, reply) => {
        const p = pageParams(request.query);
        const rows = await listReviews(deps, ...callerPull(request), p);
        return pageOf(request, reply, p, rows);
      },
    );

    r.post(
      `${base}/:number/reviews`,
      {
        schema: {
          tags,
          summary: 'Review a pull',
          description: REVIEW_RULES,
          params: PullParams,
          body: CreateReviewBody,
          response: { 201: Review, ...errors(403, 409) },
        },
      },
      async (request, reply) => reply.status(201).send(await createReview(deps, ...callerPull(request), request.body)),
    );

    r.get(
      `${base}/:number/reviews/:review_uuid`,
      {
        schema: {
          tags,
          summary: 'Get a review; a removed review stays readable with removed_at set',
          params: ReviewParams,
          response: { 200: Review },
        },
      },
      async (request) => getReview(deps, ...callerPull(request), reviewUuidOf(request)),
    );

    r.delete(
      `${base}/:number/reviews/:review_uuid`,
      {
        schema: {
          tags,
          summary: 'Remove a review (soft)',
          description: REMOVE_RULES,
          params: ReviewParams,
          response: { 204: { type: 'null' }, ...errors(403, 409) },
        },
      },
      async (request, reply) => {
        await removeReview(deps, ...callerPull(request), reviewUuidOf(request));
        return reply.status(204).send();
      },
    );

    // ---------------------------------------------------------------- code review on lines (README "Code review")
    commentRoutes(app, deps, form);

    // ---------------------------------------------------------------- the issue tracker (README "Issue tracker")
    const shown = async (request: FastifyRequest) =>
      withBranchTips(deps, ...callerRepo(request), await getPull(deps, ...callerPull(request)));
    for (const [what, body, key] of SetBodies) {
      r.post(
        `${base}/:number/${what}`,
        {
          schema: {
            tags,
            summary: `Add ${what} to a pull (keeping every other, also a concurrent change): 200 with the pull`,
            description: 'Write access. An unknown label, or an assignee without write access, is 400 naming it.',
            params: PullParams,
            body,
            response: { 200: Pull, ...errors(403) },
          },
        },
        async (request) => {
          const names = (request.body as Record<string, string[]>)[key]!;
          await changePullSet(deps, ...callerPull(request), what, 'add', names, pullEventShape);
          return shown(request);
        },
      );
    }
    r.delete(
      `${base}/:number/labels/:name`,
      {
        schema: {
          tags,
          summary: 'Remove a label from a pull: 200 with the pull',
          description: 'Write access. A label the repo does not have is 404.',
          params: repoParamsSchema(form, { number: PullNumber, name: Type.String({ minLength: 1, maxLength: 50 }) }),
          response: { 200: Pull, ...errors(403) },
        },
      },
      async (request) => {
        const name = (request.params as { name: string }).name;
        await changePullSet(deps, ...callerPull(request), 'labels', 'remove', [name], pullEventShape);
        return shown(request);
      },
    );
    r.delete(
      `${base}/:number/assignees`,
      {
        schema: {
          tags,
          summary: 'Remove assignees from a pull: 200 with the pull',
          description: 'Write access.',
          params: PullParams,
          body: UsernamesBody,
          response: { 200: Pull, ...errors(403) },
        },
      },
      async (request) => {
        await changePullSet(deps, ...callerPull(request), 'assignees', 'remove', request.body.usernames, pullEventShape);
        return shown(request);
      },
    );
    for (const method of ['post', 'delete'] as const) {
      r[method](
        `${base}/:number/requested-reviewers`,
        {
          schema: {
            tags,
            summary: method === 'post' ? 'Request reviews: 200 with the pull' : 'Withdraw review requests: 200 with the pull',
            description:
              'The pull author or write access. Each reviewer must be able to read the repo and not be the author (400 naming ' +
              'them); a review by a requested user ends their request. A merged pull is 409 pull_merged.',
            params: PullParams,
            body: UsernamesBody,
            response: { 200: Pull, ...errors(403, 409) },
          },
        },
        async (request: FastifyRequest) => {
          const { usernames } = request.body as { usernames: string[] };
          await changeReviewRequests(
            deps,
            ...callerPull(request),
            method === 'post' ? 'add' : 'remove',
            usernames,
            pullEventShape,
          );
          return shown(request);
        },
      );
    }
    r.get(
      `${base}/:number/timeline`,
      {
        schema: {
          tags,
          summary: "The pull's timeline, oldest first, built from its events",
          description:
            'Entries {kind, actor, created_at, ...}: review, pushed {before, after, commits}, closed, reopened, merged, renamed, ' +
            'labeled/unlabeled, assigned/unassigned, milestoned/demilestoned, review_requested/review_request_removed, ' +
            'ready_for_review/converted_to_draft, referenced. Read access.',
          params: PullParams,
          querystring: Type.Object({ ...PageQuery }),
          response: { 200: Page(TimelineEntry) },
        },
      },
      async (request, reply) => {
        const [viewer, ref, number] = callerPull(request);
        const { pull } = await requireRepoPull(deps.db, viewer, ref, number);
        const p = pageParams(request.query);
        return pageOf(request, reply, p, await timelinePage(deps, viewer, `pull:${pull.uuid}`, 'pull', p));
      },
    );
  }
}
