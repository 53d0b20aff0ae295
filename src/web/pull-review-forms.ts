import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { applySuggestions, deleteComment, editComment, replyToComment, setResolution } from '../pulls/comments-service.ts';
import { createReview } from '../pulls/reviews-service.ts';
import { getRepo } from '../repos/service.ts';
import { requirePage, seeOther } from './context.ts';
import { repoHref } from './home-pages.ts';
import type { ReviewRefusal } from './pull-review.ts';
import { NumberParam, pageRepoRef, repoRoute } from './repo-common.ts';
import { inWords } from './words.ts';

/**
 * The review forms of the pull page (README "Code review"): a new line comment, a reply, an edit,
 * a deletion, a resolution, applying a suggestion. Each posts, then goes back to the tab (and the
 * Files tab's screen) it was sent from; a refusal a person can act on shows that tab again with the
 * error beside the form and what was typed (`show`). The conversation's forms carry htmx
 * attributes that swap the conversation in place; without JavaScript they post and redirect.
 */

/** A refused review action, for the pull page: the tab it came from and the error beside its form. */
export interface PageRefusal {
  tab: 'files' | 'conversation';
  from: number;
  review: ReviewRefusal;
  status: number;
}

export type ShowRefused = (request: FastifyRequest, reply: FastifyReply, refused: PageRefusal) => Promise<FastifyReply>;

const Csrf = Type.Optional(Type.String({ maxLength: 100 }));
const Back = {
  tab: Type.Optional(Type.Union([Type.Literal('files'), Type.Literal('conversation')])),
  from: Type.Optional(Type.String({ pattern: '^[0-9]{0,7}$' })),
};
const CommentUuid = Type.String({ minLength: 36, maxLength: 36, pattern: '^[0-9a-fA-F-]{36}$' });
const NewCommentForm = Type.Object(
  {
    _csrf: Csrf,
    ...Back,
    path: Type.String({ minLength: 1, maxLength: 4096 }),
    line: Type.String({ pattern: '^[0-9]{1,9}$' }),
    side: Type.Union([Type.Literal('LEFT'), Type.Literal('RIGHT')]),
    start_line: Type.Optional(Type.String({ pattern: '^[0-9]{0,9}$' })),
    body: Type.String({ minLength: 1, maxLength: 65_536 }),
    mode: Type.Union([Type.Literal('review'), Type.Literal('single')]),
  },
  { additionalProperties: false },
);
const BodyForm = Type.Object(
  { _csrf: Csrf, ...Back, body: Type.String({ minLength: 1, maxLength: 65_536 }) },
  { additionalProperties: false },
);
const BackForm = Type.Object({ _csrf: Csrf, ...Back }, { additionalProperties: false });
const ResolveForm = Type.Object(
  { _csrf: Csrf, ...Back, resolved: Type.Union([Type.Literal('true'), Type.Literal('false')]) },
  { additionalProperties: false },
);
const ApplyForm = Type.Object({ _csrf: Csrf, ...Back, comment_uuid: CommentUuid }, { additionalProperties: false });

/** A refusal a person can act on (4xx but not "not found" or "sign in"): shown beside its form. */
const actionable = (err: unknown): err is AppError =>
  err instanceof AppError && err.status >= 400 && err.status < 500 && err.status !== 404 && err.status !== 401;

interface BackValue {
  tab?: 'files' | 'conversation';
  from?: string;
}

export function pullReviewForms(app: FastifyInstance, deps: Deps, show: ShowRefused): void {
  const numberOf = (request: { params: unknown }) => (request.params as { number: number }).number;
  const uuidOf = (request: { params: unknown }) => (request.params as { uuid: string }).uuid;
  const backOf = (request: FastifyRequest) => {
    const b = request.body as BackValue;
    return { tab: b.tab ?? 'files', from: Number(b.from || 0) };
  };
  /** Where a form's answer goes: its tab (and screen) at `anchor`. */
  const back = async (request: FastifyRequest, anchor: string) => {
    const c = requirePage(request);
    const repo = await getRepo(deps, c.viewer, pageRepoRef(request));
    const { tab, from } = backOf(request);
    return `${repoHref(repo)}/pulls/${numberOf(request)}?tab=${tab}${from ? `&from=${from}` : ''}#${anchor}`;
  };
  /** Runs the action; a refusal shows the pull page again with the error beside the form. */
  const attempt = async (
    request: FastifyRequest,
    reply: FastifyReply,
    refusal: Omit<ReviewRefusal, 'message'>,
    act: () => Promise<string>,
  ) => {
    let anchor: string;
    try {
      anchor = await act();
    } catch (err) {
      if (!actionable(err)) throw err;
      return show(request, reply, {
        ...backOf(request),
        review: { ...refusal, message: inWords(err.detail) },
        status: err.status,
      });
    }
    return seeOther(reply, await back(request, anchor));
  };

  repoRoute(
    app,
    'POST',
    '/pulls/:number/comments',
    { params: { number: NumberParam }, body: NewCommentForm },
    async (request, reply) => {
      const c = requirePage(request);
      const f = request.body as {
        path: string;
        line: string;
        side: 'LEFT' | 'RIGHT';
        start_line?: string;
        body: string;
        mode: string;
      };
      const line = Number(f.line);
      const start = f.start_line ? Number(f.start_line) : undefined;
      const comment = {
        path: f.path,
        line,
        side: f.side,
        body: f.body,
        ...(start !== undefined && start !== line ? { start_line: start, start_side: f.side } : {}),
      };
      const selected = { path: f.path, line, side: f.side, ...(start !== undefined ? { start_line: start } : {}) };
      return attempt(request, reply, { action: 'comment', body: f.body, selected }, async () => {
        const review = await createReview(deps, c.viewer, pageRepoRef(request), numberOf(request), {
          ...(f.mode === 'single' ? { status: 'commented' as const } : {}),
          comments: [comment],
        });
        return `review-${review.uuid}`;
      });
    },
  );

  repoRoute(
    app,
    'POST',
    '/pulls/:number/comments/:uuid/reply',
    { params: { number: NumberParam, uuid: CommentUuid }, body: BodyForm },
    async (request, reply) => {
      const c = requirePage(request);
      const body = (request.body as { body: string }).body;
      return attempt(request, reply, { action: 'reply', target: uuidOf(request), body }, async () => {
        const made = await replyToComment(deps, c.viewer, pageRepoRef(request), numberOf(request), uuidOf(request), body);
        return `c-${made.uuid}`;
      });
    },
  );

  repoRoute(
    app,
    'POST',
    '/pulls/:number/comments/:uuid/edit',
    { params: { number: NumberParam, uuid: CommentUuid }, body: BodyForm },
    async (request, reply) => {
      const c = requirePage(request);
      const body = (request.body as { body: string }).body;
      return attempt(request, reply, { action: 'edit', target: uuidOf(request), body }, async () => {
        const made = await editComment(deps, c.viewer, pageRepoRef(request), numberOf(request), uuidOf(request), body);
        return `c-${made.uuid}`;
      });
    },
  );

  repoRoute(
    app,
    'POST',
    '/pulls/:number/comments/:uuid/delete',
    { params: { number: NumberParam, uuid: CommentUuid }, body: BackForm },
    async (request, reply) => {
      const c = requirePage(request);
      return attempt(request, reply, { action: 'delete', target: uuidOf(request) }, async () => {
        await deleteComment(deps, c.viewer, pageRepoRef(request), numberOf(request), uuidOf(request));
        return backOf(request).tab === 'files' ? 'files-h' : 'conv-h';
      });
    },
  );

  repoRoute(
    app,
    'POST',
    '/pulls/:number/comments/:uuid/resolution',
    { params: { number: NumberParam, uuid: CommentUuid }, body: ResolveForm },
    async (request, reply) => {
      const c = requirePage(request);
      const resolved = (request.body as { resolved: string }).resolved === 'true';
      return attempt(request, reply, { action: 'resolve', target: uuidOf(request) }, async () => {
        const first = await setResolution(deps, c.viewer, pageRepoRef(request), numberOf(request), uuidOf(request), resolved);
        return `t-${first.uuid}`;
      });
    },
  );

  repoRoute(
    app,
    'POST',
    '/pulls/:number/suggestions/apply',
    { params: { number: NumberParam }, body: ApplyForm },
    async (request, reply) => {
      const c = requirePage(request);
      const uuid = (request.body as { comment_uuid: string }).comment_uuid;
      return attempt(request, reply, { action: 'apply', target: uuid }, async () => {
        await applySuggestions(deps, c.viewer, pageRepoRef(request), numberOf(request), [uuid]);
        return `t-${uuid}`;
      });
    },
  );
}
