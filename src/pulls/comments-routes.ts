import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { pullAt } from '../http/repo-routes.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { type RepoForm, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { errors } from '../http/route-schemas.ts';
import { Page, PageQuery, StrictObject } from '../http/schemas.ts';

const EmptyBody = StrictObject({});
import { applySuggestions, deleteComment, editComment, listComments, replyToComment, setResolution } from './comments-service.ts';
import { submitReview } from './reviews-service.ts';
import {
  AppliedSuggestions,
  ApplySuggestionsBody,
  CommentBody,
  CommentUuid,
  PullNumber,
  Review,
  ReviewComment,
  ReviewUuid,
  SubmitReviewBody,
} from './schemas.ts';

/** Code review on lines (README "Code review"): the routes of review comments, under one repo path form. */

type Path = RepoParams & { number: number; review_uuid: string; comment_uuid: string };
const params = (request: FastifyRequest) => request.params as Path;
const caller = (request: FastifyRequest) => [requireViewer(request), repoRef(params(request)), params(request).number] as const;

const RESOLVE_RULES =
  "The pull's author, the conversation's first comment's author, or write access (403 otherwise). Any comment of the " +
  'conversation names it; its first comment carries the state and is answered. Setting the state it already has ' +
  'changes nothing and emits no event. A comment of a pending review is 400.';

export function commentRoutes(app: FastifyInstance, deps: Deps, form: RepoForm): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['pulls'];
  const base = `${form.prefix}/pulls/:number`;
  const PullParams = repoParamsSchema(form, { number: PullNumber });
  const ReviewParams = repoParamsSchema(form, { number: PullNumber, review_uuid: ReviewUuid });
  const CommentParams = repoParamsSchema(form, { number: PullNumber, comment_uuid: CommentUuid });

  r.post(
    `${base}/reviews/:review_uuid/submit`,
    {
      schema: {
        tags,
        summary: 'Submit a pending review',
        description:
          'The pending review of the caller (404 for anyone else, whose pending reviews are invisible) becomes a review ' +
          "with this status, made on the pull's head now; its comments become visible (review-submitted, then " +
          "review-comment-created for each). The pull's author may only comment (403 cannot_approve_own_pull); an " +
          'already submitted review is 409 review_submitted; a merged pull 409 pull_merged.',
        params: ReviewParams,
        body: SubmitReviewBody,
        response: { 200: Review, ...errors(403, 409) },
      },
    },
    async (request) => submitReview(deps, ...caller(request), params(request).review_uuid, request.body),
  );

  r.get(
    `${base}/comments`,
    {
      config: { repo: 'pull' },
      schema: {
        tags,
        summary: "The review comments of a pull, by path then line, at their places on the pull's current diff",
        description:
          'Read access. Comments of a pending review are listed to their author only. A comment made on an earlier head ' +
          'moves with its hunk while the hunk is unchanged (`line`, `start_line`); once a push changes that hunk it is ' +
          '`position_outdated` for good and keeps its `commit_sha`, `original_line` and last `line`. A merged pull keeps ' +
          'the diff it merged.',
        params: PullParams,
        querystring: Type.Object(PageQuery),
        response: { 200: Page(ReviewComment) },
      },
    },
    async (request, reply) => {
      const p = pageParams(request.query);
      const rows = await listComments(deps, requireViewer(request), pullAt(request), params(request).number, p);
      return pageOf(request, reply, p, rows);
    },
  );

  r.post(
    `${base}/comments/:comment_uuid/replies`,
    {
      schema: {
        tags,
        summary: 'Reply to a review comment: the reply joins its conversation',
        description:
          "Read access, as for reviewing. The reply takes the conversation's place (path, line, side, commit) and " +
          '`in_reply_to` names its first comment. A comment of a pending review is 400. A merged pull still takes replies.',
        params: CommentParams,
        body: CommentBody,
        response: { 201: ReviewComment, ...errors(403) },
      },
    },
    async (request, reply) =>
      reply.status(201).send(await replyToComment(deps, ...caller(request), params(request).comment_uuid, request.body.body)),
  );

  r.patch(
    `${base}/comments/:comment_uuid`,
    {
      schema: {
        tags,
        summary: 'Edit a review comment',
        description: 'Its author only (403 otherwise). An unchanged body changes nothing and emits no event.',
        params: CommentParams,
        body: CommentBody,
        response: { 200: ReviewComment, ...errors(403) },
      },
    },
    async (request) => editComment(deps, ...caller(request), params(request).comment_uuid, request.body.body),
  );

  r.delete(
    `${base}/comments/:comment_uuid`,
    {
      schema: {
        tags,
        summary: 'Delete a review comment',
        description:
          'Its author or maintain level (403 otherwise). Deleting the first comment of a conversation deletes its ' +
          'replies too (review-comment-deleted for each).',
        params: CommentParams,
        response: { 204: { type: 'null' }, ...errors(403) },
      },
    },
    async (request, reply) => {
      await deleteComment(deps, ...caller(request), params(request).comment_uuid);
      return reply.status(204).send();
    },
  );

  for (const method of ['put', 'delete'] as const) {
    r[method](
      `${base}/comments/:comment_uuid/resolution`,
      {
        schema: {
          tags,
          summary: method === 'put' ? 'Resolve a conversation' : 'Unresolve a conversation',
          description: RESOLVE_RULES,
          params: CommentParams,
          ...(method === 'put' ? { body: EmptyBody } : {}),
          response: { 200: ReviewComment, ...errors(403) },
        },
        // no body at all is an empty one
        preValidation: async (request: FastifyRequest) => {
          if (method === 'put' && (request.body === undefined || request.body === null)) request.body = {};
        },
      },
      async (request: FastifyRequest) => setResolution(deps, ...caller(request), params(request).comment_uuid, method === 'put'),
    );
  }

  r.post(
    `${base}/suggestions/apply`,
    {
      schema: {
        tags,
        summary: 'Apply suggestions: one commit on the source branch',
        description:
          'Write access to the source branch: to this repo for a pull whose branch is in it; for a pull from a fork, to ' +
          "the fork, where the commit is made (403 otherwise; 409 source_branch_missing once the fork is deleted). Each comment's ```suggestion block replaces the lines it comments on (RIGHT side only, 400 " +
          'otherwise; 400 for a comment without a suggestion, or two that replace the same lines). The commit is made ' +
          "without a work tree, authored and committed by the caller (the suggestions' authors as Co-authored-by), and " +
          'recorded as a push of the branch (branch-pushed, pull-updated). 409 suggestion_outdated when the lines changed ' +
          'since the comment was made (its hunk changed, or the branch moved meanwhile); 409 pull_merged / pull_closed.',
        params: PullParams,
        body: ApplySuggestionsBody,
        response: { 200: AppliedSuggestions, ...errors(403, 409) },
      },
    },
    async (request) => applySuggestions(deps, ...caller(request), request.body.comment_uuids),
  );
}
