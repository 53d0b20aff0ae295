import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { DEFAULT_PER_PAGE, MAX_PER_PAGE, cursorLinks, linkWith } from '../http/paging.ts';
import { CursorPage, Event, EventParams, EventsQuery } from './schemas.ts';
import { eventPage, getEvent } from './feed.ts';

export async function eventsRoutes(app: FastifyInstance, { deps }: { deps: Deps }): Promise<void> {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['events'];

  r.get(
    '/events',
    {
      schema: {
        tags,
        summary: 'Events of one scope, by cursor; every page ascending by id',
        description:
          'No cursor: the newest per_page events. before_id=X: the per_page events just before X; after_id=X: just after X. ' +
          '`previous` (older) and `next` (newer) are null when nothing older or newer exists at the time of the request. ' +
          'A malformed scope is 400; an unknown or invisible one 404.',
        querystring: EventsQuery,
        response: { 200: CursorPage },
      },
    },
    async (request, reply) => {
      const viewer = requireViewer(request);
      const perPage = Math.min(request.query.per_page ?? DEFAULT_PER_PAGE, MAX_PER_PAGE);
      const page = await eventPage(deps, viewer, { ...request.query, perPage });
      const pp = String(perPage);
      const next = page.nextAfterId ? linkWith(request, { after_id: page.nextAfterId, before_id: null, per_page: pp }) : null;
      const previous = page.previousBeforeId
        ? linkWith(request, { before_id: page.previousBeforeId, after_id: null, per_page: pp })
        : null;
      cursorLinks(reply, next, previous);
      return { results: page.results, next, previous };
    },
  );

  r.get(
    '/events/:id',
    {
      schema: {
        tags,
        summary: 'One event; 404 unless the caller may read one of its scopes',
        params: EventParams,
        response: { 200: Event },
      },
    },
    async (request) => getEvent(deps, requireViewer(request), request.params.id),
  );
}
