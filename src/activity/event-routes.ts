import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { requireViewer } from '../http/auth.ts';
import { DEFAULT_PER_PAGE, MAX_PER_PAGE, cursorLinks, linkWith } from '../http/paging.ts';
import { tokenFromHeader } from '../http/auth.ts';
import { errors } from '../http/route-schemas.ts';
import { authenticate } from '../tokens/service.ts';
import { badRequest, notFound } from '../errors.ts';
import { CursorPage, Event, EventParams, EventsQuery, TailQuery, Ticket, TicketBody } from './schemas.ts';
import { createTicket, credentialViewer, redeemTicket } from './tickets.ts';
import { eventPage, getEvent } from './feed.ts';
import { eventViewer } from '../access/events.ts';
import type { EventRecord } from '../events/service.ts';
import { canReadStreamScope, parseStreamScopes } from '../events/scopes.ts';
import { AccessRecheck, TAIL, serveTail } from './tail.ts';

/** README "Event privacy", as every events route states it. */
const PRIVACY =
  'Event privacy (README "Event privacy"): an event about a thing the caller may not read (its subject) is left out, and ' +
  'other repos, teams and timers it names that the caller may not read are set to null in the payload and left out of ' +
  "`scopes`; a team timer's firing and deletion are for the team's owners (as the timer is), a deleted " +
  "is_active=false team repo's repo-deleted for its maintainers and owners (as the repo was); staff see events as " +
  'stored, while one of their scopes exists. ';

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
          'A malformed scope is 400; an unknown or invisible one 404. ' +
          PRIVACY +
          'A page may therefore hold fewer than per_page events; its cursors still lead to the next and previous ones.',
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
        summary: 'One event; 404 unless the caller may read one of its scopes and its subject',
        description: PRIVACY + 'An event hidden from the caller is 404, as an unknown one.',
        params: EventParams,
        response: { 200: Event },
      },
    },
    async (request) => getEvent(deps, requireViewer(request), request.params.id),
  );

  const recheck = new AccessRecheck();
  // Streams end when shutdown begins (clients reconnect elsewhere with Last-Event-ID), and at the latest on close.
  const endStreams = () => deps.live.close();
  app.drainHooks.push(endStreams);
  app.addHook('preClose', endStreams);

  r.post(
    '/tail-events/tickets',
    {
      schema: {
        tags,
        summary: "A stream ticket: opens one scope's live stream without a header, for pages on other origins",
        description:
          'README "Web interface". Any token that may read the scope (as for GET /tail-events: a malformed scope is 400, an ' +
          'unknown or invisible one 404) gets a ticket; `GET /tail-events?scope=S&ticket=T` (with the same scope and kind) ' +
          'then opens the stream without an Authorization header, within 60 s (also more than once: an EventSource ' +
          'reconnecting). The ticket is read-only and good for that one scope; the stream it opens ends when the token ' +
          'is revoked or expires, its user is deactivated or loses read access. Stored as its SHA-256 only.',
        body: TicketBody,
        response: { 201: Ticket },
      },
    },
    async (request, reply) => {
      const viewer = requireViewer(request);
      const kind = request.credential?.kind ?? 'token';
      const ticket = await createTicket(deps, viewer, { kind, uuid: viewer.tokenUuid }, request.body);
      return reply.status(201).send(ticket);
    },
  );

  r.get(
    '/tail-events',
    {
      // README "Web interface": an API route a web session's cookie (or a stream ticket) opens (the other: GET /notifications/count).
      config: { sessionCookie: true },
      schema: {
        tags,
        summary: 'Live events of one scope or several as server-sent events (text/event-stream)',
        description:
          'README "Live event stream". Read access as for GET /events: a malformed scope is 400, an unknown or invisible one 404. ' +
          '`scope` may also be `actor:UUID`, the events whose actor is that user in every scope they were recorded in (each ' +
          "still shown only as the caller may read it): the caller's own only (another user's is 404, staff included). " +
          'Several scopes separated by commas (at most 8) make one stream: each must be readable, an event in more than one is ' +
          'sent once, and a scope the caller loses is no longer followed while the others are. ' +
          'The stream starts with `retry: 3000`; each event is a frame `id: <id>`, `event: <kind>`, `data: <event JSON on one ' +
          'line>` and a blank line; a `: keep-alive` comment comes every 15 s. With `Last-Event-ID` (it wins) or `last_event_id`, ' +
          'every later event of the scope is replayed from the store before the live ones, with no gap and no duplicate, in id ' +
          'order; without either, only new events. `kind` keeps one kind (an unknown kind is an empty stream); a stream that ' +
          "names a kind also gets that kind's live signals: frames with no `id`, neither stored nor replayed (`job-log` on a " +
          "repo scope: `{job_uuid, size}` when a job's log grew, `{job_uuid, completed: true}` when it ended; docs/ci.md " +
          '"Events"; `notification-updated` on your user scope: `{user_uuid, notification_uuids: [], change: "activity"}` when ' +
          'a repo you watch had activity your inbox reads in; docs/notifications.md "Live"). With `html=true`, ' +
          '`data` is a sanitised HTML fragment (an `<article id="event-ID">`), one `data:` line per line of HTML, as htmx\'s SSE ' +
          'extension expects. Events written by any instance sharing the database arrive. ' +
          PRIVACY +
          'A caller whose token is revoked or who ' +
          'loses read access stops receiving within seconds (the stream ends); a client that leaves more than 1 MiB unread is ' +
          'dropped and may resume with Last-Event-ID. Besides the Authorization header, this route (and no other API route) ' +
          'accepts the web session cookie of a signed-in page, or `ticket` (POST /tail-events/tickets) for pages on other ' +
          'origins: a ticket for another scope or kind is 400, an unknown or expired one 401. Responses carry the CORS ' +
          'headers of CORS_ORIGINS.',
        querystring: TailQuery,
        headers: {
          type: 'object',
          properties: { 'last-event-id': { type: 'string', maxLength: 40, description: 'resume after this event id' } },
        },
        response: {
          200: {
            description: 'an endless text/event-stream',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          ...errors(400, 404),
        } as never,
      },
    },
    async (request, reply) => {
      const q = request.query;
      const scopes = parseStreamScopes(q.scope);
      let viewer = request.viewer;
      let ticketCredential: { kind: 'token' | 'session'; uuid: string } | null = null;
      if (!viewer && q.ticket !== undefined) {
        const opened = await redeemTicket(deps, q.ticket, { scope: q.scope, ...(q.kind === undefined ? {} : { kind: q.kind }) });
        viewer = opened.viewer;
        ticketCredential = opened.credential;
      }
      if (!viewer) viewer = requireViewer(request);
      const caller = viewer;
      const header = request.headers['last-event-id'];
      if (header !== undefined && (typeof header !== 'string' || !/^[0-9]{1,16}$/.test(header.trim()))) {
        throw badRequest('Last-Event-ID must be an event id (a decimal string).');
      }
      const resume = header !== undefined ? header.trim() : q.last_event_id;
      for (const scope of scopes) if (!(await canReadStreamScope(deps, caller, scope))) throw notFound('Scope');
      const secret = tokenFromHeader(request.headers.authorization) || '';
      // A session or a ticket lasts while its session or token does (looked up by uuid).
      const byUuid: { kind: 'token' | 'session'; uuid: string } | null =
        ticketCredential ?? (request.credential?.kind === 'session' ? { kind: 'session', uuid: caller.tokenUuid } : null);
      const stillAllowed = (scope: string) =>
        recheck.check(`${caller.tokenUuid} ${scope}`, async () => {
          const now = byUuid ? await credentialViewer(deps, byUuid) : ((await authenticate(deps, secret))?.viewer ?? null);
          return now !== null && (await canReadStreamScope(deps, now, scope));
        });
      // The caller's event viewer, rebuilt as often as access is re-checked, so a change of access
      // is seen within seconds by the events' redaction too. A stream of one scope spares the check
      // of that scope (it ends when the scope is lost); one of several checks each (one may be lost
      // while the others are still followed).
      const known = scopes.length === 1 ? scopes : [];
      let show = eventViewer(deps, caller, known);
      let shownSince = Date.now();
      const showEvent = (event: EventRecord) => {
        if (Date.now() - shownSince > TAIL.recheckMs) {
          show = eventViewer(deps, caller, known);
          shownSince = Date.now();
        }
        return show(event);
      };
      // Headers set so far (CORS for CORS_ORIGINS, the request id) go out with the hijacked stream.
      for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
      reply.hijack();
      await serveTail(deps, request.raw, reply.raw, {
        show: showEvent,
        scopes,
        ...(q.kind === undefined ? {} : { kind: q.kind }),
        resumeAfter: resume === undefined ? null : Number(resume),
        html: q.html === true,
        stillAllowed,
      });
    },
  );
  void TAIL;
}
