import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { Cursor, Event } from './schemas.ts';
import { requireViewer } from '../http/auth.ts';
import { type PageParams, pageOf, pageParams } from '../http/paging.ts';
import { Page, PageQuery } from '../http/schemas.ts';
import { FEED_SCAN_BUDGET, type FeedWindow, MAX_FEED_DEPTH, assertFeedDepth, teamActivity, userActivity } from './service.ts';

const PagedQuery = Type.Object({
  ...PageQuery,
  before_id: Type.Optional({
    ...Cursor,
    description:
      'Only events older than this event id; page and per_page then count from there. A page reads every event the ' +
      'caller may see before it, so a deep page costs in proportion to its depth: to read far back, pass the last id of ' +
      'a page as before_id with page=1 instead (each such page reads about per_page events). The Link and next/previous ' +
      'URLs keep before_id as given. A page reaching past the first ' +
      String(MAX_FEED_DEPTH) +
      ' events (page × per_page) is 400: use ' +
      'before_id. One request scans at most ' +
      String(FEED_SCAN_BUDGET) +
      ' events; a page whose scan stops there may hold fewer ' +
      'than per_page events and its next link continues from where the scan stopped (before_id, page=1).',
  }),
});

const cursorOf = (query: { before_id?: string }) => (query.before_id === undefined ? null : Number(query.before_id));

/** The page parameters of a feed; a page deeper than MAX_FEED_DEPTH events is 400 (README "Activity feeds"). */
function feedPage(query: { page?: number; per_page?: number }): PageParams {
  const p = pageParams(query);
  assertFeedDepth(p.page, p.perPage);
  return p;
}

/** The page envelope of a feed; a page whose scan ran out of budget continues from where it stopped. */
function feedPageOf(request: FastifyRequest, reply: FastifyReply, p: PageParams, feed: FeedWindow) {
  const go = feed.continueBefore === null ? undefined : { before_id: feed.continueBefore, page: '1' };
  return pageOf(request, reply, p, feed.events, undefined, go);
}

export async function activityRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['activity'];

  r.get(
    '/teams/:team_slug/activity',
    {
      schema: {
        tags,
        summary: "Team activity: events in the team's scope and its repos' scopes, newest first",
        description:
          'Members (any role) and staff only; anyone else gets 404, as for an unknown team. Repo events are those ' +
          'of the repos the team owns now; each event is shown only when the caller may read one of its scopes and its subject ' +
          '(README "Event privacy": an is_active=false repo\'s events only from maintain level up), with what else it names ' +
          'that the caller may not read set to null.',
        params: Type.Object({ team_slug: Type.String({ maxLength: 200 }) }),
        querystring: PagedQuery,
        response: { 200: Page(Event) },
      },
    },
    async (request, reply) => {
      const viewer = requireViewer(request);
      const p = feedPage(request.query);
      const feed = await teamActivity(deps, viewer, request.params.team_slug, { ...p, beforeId: cursorOf(request.query) });
      return feedPageOf(request, reply, p, feed);
    },
  );

  r.get(
    '/users/:username/activity',
    {
      schema: {
        tags,
        summary: 'User activity: events whose actor is this user and that the caller may read, newest first',
        description:
          'An event is listed when the caller may read at least one of its scopes and its subject (README "Event privacy"), ' +
          'with what else it names that the caller may not read set to null. An unknown user, or an inactive ' +
          'one for non-staff callers, is 404.',
        params: Type.Object({ username: Type.String({ maxLength: 200 }) }),
        querystring: PagedQuery,
        response: { 200: Page(Event) },
      },
    },
    async (request, reply) => {
      const viewer = requireViewer(request);
      const p = feedPage(request.query);
      const feed = await userActivity(deps, viewer, request.params.username, { ...p, beforeId: cursorOf(request.query) });
      return feedPageOf(request, reply, p, feed);
    },
  );
}
