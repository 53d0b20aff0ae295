import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { REPO_FORMS, type RepoParams, repoParamsSchema, repoRef } from '../http/repo-paths.ts';
import { type RepoRequest, pagedRepoList, repoRequest } from '../http/repo-routes.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { errors } from '../http/route-schemas.ts';
import { Page } from '../http/schemas.ts';
import { Type } from '@sinclair/typebox';
import {
  CreateReplyBody,
  CreateThreadBody,
  ListQuery,
  SetBodies,
  ThreadListQuery,
  TimelineEntry,
  UsernamesBody,
  VersionsQuery,
  Participant,
  Reply,
  ReplyParam,
  ReplyVersion,
  Thread,
  ThreadParam,
  UpdateReplyBody,
  UpdateThreadBody,
} from './schemas.ts';
import {
  createReply,
  createThread,
  getReply,
  getThread,
  listParticipants,
  listReplies,
  listReplyVersions,
  VERSION_PAGE_MAX_CHARS,
  listThreads,
  threadCursor,
  threadTimeline,
  changeThreadSet,
  type ThreadFilters,
  removeReply,
  removeThread,
  updateReply,
  updateThread,
} from './service.ts';

type ThreadParams = RepoParams & { number: number };

/** The list filters out of a parsed query (the page fields are ignored). */
const FILTER_KEYS = [
  'state',
  'labels',
  'assignee',
  'milestone',
  'author',
  'mentioned',
  'q',
  'sort',
  'direction',
  'after',
] as const;
function filtersOf(query: unknown): ThreadFilters {
  const q = query as Record<string, string | undefined>;
  const out: Record<string, string> = {};
  for (const k of FILTER_KEYS) if (q[k] !== undefined) out[k] = q[k];
  return out as ThreadFilters;
}
type ReplyParams = ThreadParams & { reply_number: number };

export async function threadsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['threads'];
  const post =
    'Read access opens threads and replies; an archived repo is 403 repo_archived, an inactive team 403 team_inactive.';
  const edit = `Only the author or maintain level (403 otherwise). ${post} A removed thread or reply is 409 target_read_only.`;

  for (const form of REPO_FORMS) {
    const base = `${form.prefix}/threads`;
    const repoParams = repoParamsSchema(form);
    const threadParams = repoParamsSchema(form, ThreadParam);
    const replyParams = repoParamsSchema(form, ReplyParam);

    r.get(
      base,
      {
        schema: {
          tags,
          summary: "The repo's threads, filtered and sorted (removed ones left out; read access)",
          description:
            'Filters (README "Issue tracker"): state (open default, closed, all), labels (comma-separated, every one on it), ' +
            'assignee and milestone (a value, none or *), author, mentioned, q (words in the title, body or replies); ' +
            'sort created (default), updated or replies; direction desc (default) or asc. An unknown value, label, milestone or user is 400. ' +
            'Paging is by keyset: `next` carries `after` (the last row\u2019s cursor), so every page costs what the first does; `page` still works.',
          params: repoParams,
          querystring: ThreadListQuery,
          response: { 200: Page(Thread) },
        },
      },
      async (request, reply) => {
        const { viewer, ref } = repoRequest(request);
        const p = pageParams(request.query);
        const filters = filtersOf(request.query);
        const rows = await listThreads(deps, viewer, ref, p, filters);
        // the next page by keyset (after the last row), so a deep page costs what the first does
        const last = rows.length > p.perPage ? rows[p.perPage - 1] : undefined;
        const next = last ? { after: threadCursor(last, filters.sort), page: '1' } : undefined;
        return pageOf(request, reply, p, rows, undefined, next);
      },
    );

    r.post(
      base,
      {
        config: { rateLimit: 'api:create-thread' },
        schema: {
          tags,
          summary: 'Open a thread; it gets the next per-repo number',
          description: `${post} The title is trimmed (1-256 characters); the body is Markdown, rendered into body_html.`,
          params: repoParams,
          body: CreateThreadBody,
          response: { 201: Thread, ...errors(403) },
        },
      },
      async (request, reply) => {
        const thread = await createThread(deps, requireViewer(request), repoRef(request.params as RepoParams), request.body);
        return reply.status(201).send(thread);
      },
    );

    r.get(
      `${base}/:number`,
      {
        schema: {
          tags,
          summary: 'Get a thread by number; a removed thread stays readable with removed_at set',
          params: threadParams,
          response: { 200: Thread },
        },
      },
      async (request) => {
        const params = request.params as ThreadParams;
        return getThread(deps, requireViewer(request), repoRef(params), params.number);
      },
    );

    r.patch(
      `${base}/:number`,
      {
        schema: {
          tags,
          summary: "Change a thread's title, body, state, labels, assignees, milestone or lock; omitted fields stay unchanged",
          description:
            `${edit} The author may also close and reopen their own thread; others' state, labels (names, replacing the set), ` +
            'assignees (usernames with write access, replacing the set), milestone (a number or null) and locked need write access. ' +
            'state_reason (completed default, not_planned, duplicate) goes only with state closed. Unknown labels, milestones or assignees are 400 naming them; ' +
            'more than 10 assignees or 50 labels is 400.',
          params: threadParams,
          body: UpdateThreadBody,
          response: { 200: Thread, ...errors(403, 409) },
        },
      },
      async (request) => {
        const params = request.params as ThreadParams;
        return updateThread(deps, requireViewer(request), repoRef(params), params.number, request.body);
      },
    );

    r.delete(
      `${base}/:number`,
      {
        schema: {
          tags,
          summary: 'Remove a thread (soft: it stays readable, leaves lists and refuses replies, edits and attachments)',
          description: `Only the author or maintain level. Removing a removed thread is 204 and changes nothing. ${post}`,
          params: threadParams,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        const params = request.params as ThreadParams;
        await removeThread(deps, requireViewer(request), repoRef(params), params.number);
        return reply.status(204).send();
      },
    );

    for (const [what, body, key] of SetBodies) {
      r.post(
        `${base}/:number/${what}`,
        {
          schema: {
            tags,
            summary: `Add ${what} to a thread (keeping every other, also a concurrent change): 200 with the thread`,
            description: 'Write access. Those already on it stay; an unknown one is 400 naming it.',
            params: threadParams,
            body,
            response: { 200: Thread, ...errors(403, 409) },
          },
        },
        async (request) => {
          const { viewer, ref, params } = repoRequest<ThreadParams>(request);
          const names = (request.body as Record<string, string[]>)[key]!;
          return changeThreadSet(deps, viewer, ref, params.number, what, 'add', names);
        },
      );
    }
    r.delete(
      `${base}/:number/labels/:name`,
      {
        schema: {
          tags,
          summary: 'Remove a label from a thread: 200 with the thread',
          description: 'Write access. A label the repo does not have is 404; one not on the thread changes nothing.',
          params: repoParamsSchema(form, { ...ThreadParam, name: Type.String({ minLength: 1, maxLength: 50 }) }),
          response: { 200: Thread, ...errors(403, 409) },
        },
      },
      async (request) => {
        const { viewer, ref, params } = repoRequest<ThreadParams & { name: string }>(request);
        return changeThreadSet(deps, viewer, ref, params.number, 'labels', 'remove', [params.name]);
      },
    );
    r.delete(
      `${base}/:number/assignees`,
      {
        schema: {
          tags,
          summary: 'Remove assignees from a thread: 200 with the thread',
          description: 'Write access. A user not assigned changes nothing.',
          params: threadParams,
          body: UsernamesBody,
          response: { 200: Thread, ...errors(403, 409) },
        },
      },
      async (request) => {
        const { viewer, ref, params } = repoRequest<ThreadParams>(request);
        return changeThreadSet(deps, viewer, ref, params.number, 'assignees', 'remove', request.body.usernames);
      },
    );

    r.get(
      `${base}/:number/timeline`,
      {
        schema: {
          tags,
          summary: "The thread's timeline, oldest first, built from its events",
          description:
            'Entries {kind, actor, created_at, ...}: reply, closed, reopened, renamed {from, to}, labeled/unlabeled {label}, ' +
            'assigned/unassigned {assignee}, milestoned/demilestoned {milestone}, locked/unlocked, referenced. Read access; ' +
            'an entry the caller may not see (README "Event privacy") is left out.',
          params: threadParams,
          querystring: ListQuery,
          response: { 200: Page(TimelineEntry) },
        },
      },
      pagedRepoList(({ viewer, ref, params }: RepoRequest<ThreadParams>, p) =>
        threadTimeline(deps, viewer, ref, params.number, p),
      ),
    );

    r.get(
      `${base}/:number/participants`,
      {
        schema: {
          tags,
          summary: "The thread's author and repliers, in order of first participation",
          description: 'reply_count counts replies not removed; the author is listed from the thread creation.',
          params: threadParams,
          querystring: ListQuery,
          response: { 200: Page(Participant) },
        },
      },
      pagedRepoList(({ viewer, ref, params }: RepoRequest<ThreadParams>, p) =>
        listParticipants(deps, viewer, ref, params.number, p),
      ),
    );

    r.get(
      `${base}/:number/replies`,
      {
        schema: {
          tags,
          summary: "The thread's replies by number (removed ones left out; read access)",
          params: threadParams,
          querystring: ListQuery,
          response: { 200: Page(Reply) },
        },
      },
      pagedRepoList(({ viewer, ref, params }: RepoRequest<ThreadParams>, p) => listReplies(deps, viewer, ref, params.number, p)),
    );

    r.post(
      `${base}/:number/replies`,
      {
        config: { rateLimit: 'api:create-reply' },
        schema: {
          tags,
          summary: 'Reply to a thread',
          description: `${post} A removed thread is 409 target_read_only. kind defaults to comment, status to open; at most 50 links, each target 1-2000 characters.`,
          params: threadParams,
          body: CreateReplyBody,
          response: { 201: Reply, ...errors(403, 409) },
        },
      },
      async (request, reply) => {
        const params = request.params as ThreadParams;
        const created = await createReply(deps, requireViewer(request), repoRef(params), params.number, request.body);
        return reply.status(201).send(created);
      },
    );

    r.get(
      `${base}/:number/replies/:reply_number`,
      {
        schema: {
          tags,
          summary: 'Get a reply; a removed reply stays readable with removed_at set',
          params: replyParams,
          response: { 200: Reply },
        },
      },
      async (request) => {
        const params = request.params as ReplyParams;
        return getReply(deps, requireViewer(request), repoRef(params), params.number, params.reply_number);
      },
    );

    r.patch(
      `${base}/:number/replies/:reply_number`,
      {
        schema: {
          tags,
          summary: 'Edit a reply: 200 with the new reply version',
          description:
            `Omitted fields stay unchanged; links, when sent, replace the whole array. Every edit stores a full snapshot as the next version; ` +
            `created_at stays the reply's creation time and updated_at is this version's. A PATCH that changes nothing stores no version. ${edit}`,
          params: replyParams,
          body: UpdateReplyBody,
          response: { 200: Reply, ...errors(403, 409) },
        },
      },
      async (request) => {
        const params = request.params as ReplyParams;
        return updateReply(deps, requireViewer(request), repoRef(params), params.number, params.reply_number, request.body);
      },
    );

    r.delete(
      `${base}/:number/replies/:reply_number`,
      {
        schema: {
          tags,
          summary: 'Remove a reply (soft)',
          description: `Only the author or maintain level. Removing a removed reply is 204 and changes nothing. ${post}`,
          params: replyParams,
          response: { 204: { type: 'null' }, ...errors(403) },
        },
      },
      async (request, reply) => {
        const params = request.params as ReplyParams;
        await removeReply(deps, requireViewer(request), repoRef(params), params.number, params.reply_number);
        return reply.status(204).send();
      },
    );

    r.get(
      `${base}/:number/replies/:reply_number/versions`,
      {
        schema: {
          tags,
          summary: "A reply's versions, oldest first; each is a full snapshot",
          description:
            `A page is bounded in size as well as in count: it holds at most ${VERSION_PAGE_MAX_CHARS} characters of ` +
            'bodies and their HTML (always at least one version). A page cut short by its size has a next link that ' +
            'continues after its last version (after_version, page=1). A reply holds at most max_reply_versions versions ' +
            '(site settings; default 1000).',
          params: replyParams,
          querystring: VersionsQuery,
          response: { 200: Page(ReplyVersion) },
        },
      },
      async (request, reply) => {
        const { viewer, ref, params } = repoRequest<ReplyParams>(request);
        const p = pageParams(request.query);
        const afterVersion = request.query.after_version;
        const page = await listReplyVersions(deps, viewer, ref, params.number, params.reply_number, { ...p, afterVersion });
        const go = page.continueAfter === null ? undefined : { after_version: String(page.continueAfter), page: '1' };
        return pageOf(request, reply, p, page.versions, undefined, go);
      },
    );
  }
}
