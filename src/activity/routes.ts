import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { Cursor, Event } from '../events/schemas.ts';
import { requireViewer } from '../http/auth.ts';
import { pageOf, pageParams } from '../http/paging.ts';
import { Page, PageQuery } from '../http/schemas.ts';
import { teamActivity, userActivity } from './service.ts';

const PagedQuery = Type.Object({
  ...PageQuery,
  before_id: Type.Optional({
    ...Cursor,
    description:
      'Only events older than this event id; page and per_page then count from there. A page reads every event the ' +
      'caller may see before it, so a deep page costs in proportion to its depth: to read far back, pass the last id of ' +
      'a page as before_id with page=1 instead (each such page reads about per_page events). The Link and next/previous ' +
      'URLs keep before_id as given.',
  }),
});

const cursorOf = (query: { before_id?: string }) => (query.before_id === undefined ? null : Number(query.before_id));

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
      const p = pageParams(request.query);
      const rows = await teamActivity(deps, viewer, request.params.team_slug, { ...p, beforeId: cursorOf(request.query) });
      return pageOf(request, reply, p, rows);
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
      const p = pageParams(request.query);
      const rows = await userActivity(deps, viewer, request.params.username, { ...p, beforeId: cursorOf(request.query) });
      return pageOf(request, reply, p, rows);
    },
  );
}
