import { Type } from '@sinclair/typebox';
import { NoControl, NullableString, StrictObject, Timestamp } from '../http/schemas.ts';

export const Event = Type.Object(
  {
    id: Type.String({ description: 'decimal string, increases with every event' }),
    kind: Type.String(),
    scopes: Type.Array(Type.String({ description: 'KIND:UUID' })),
    actor: Type.Union([Type.Object({ uuid: Type.String(), username: Type.String() }), Type.Null()]),
    payload: Type.Object({}, { additionalProperties: true }),
    created_at: Timestamp,
  },
  { additionalProperties: false, title: 'Event' },
);

export const Cursor = Type.String({ pattern: '^[0-9]{1,16}$', description: 'an event id' });

export const EventsQuery = Type.Object({
  scope: Type.String({
    maxLength: 100,
    description: 'user:UUID, team:UUID, repo:UUID, thread:UUID, reply:UUID, pull:UUID, review:UUID or timer:UUID',
  }),
  kind: Type.Optional(Type.String({ maxLength: 100 })),
  before_id: Type.Optional(Cursor),
  after_id: Type.Optional(Cursor),
  per_page: Type.Optional(Type.Integer({ minimum: 1, description: 'default 30, larger values clamp to 100' })),
});

export const CursorPage = Type.Object(
  {
    results: Type.Array(Event),
    next: NullableString({ description: 'newer events (after_id), or null when none exist now' }),
    previous: NullableString({ description: 'older events (before_id), or null when none exist now' }),
  },
  { additionalProperties: false },
);

export const EventParams = Type.Object({ id: Type.String({ maxLength: 40 }) });

export const TailQuery = Type.Object({
  scope: Type.String({
    maxLength: 400,
    description:
      'user:UUID, team:UUID, repo:UUID, thread:UUID, reply:UUID, pull:UUID, review:UUID, timer:UUID, or actor:UUID (the ' +
      "events whose actor is that user, wherever they happened: that user's own stream only); several (at most 8) " +
      'separated by commas make one stream, each event sent once',
  }),
  kind: Type.Optional(
    Type.String({ maxLength: 100, description: 'only events of this kind (an unknown kind: an empty stream)' }),
  ),
  last_event_id: Type.Optional(
    Type.String({ pattern: '^[0-9]{1,16}$', description: 'resume after this event id (the Last-Event-ID header wins)' }),
  ),
  html: Type.Optional(Type.Boolean({ description: 'true: each `data` is a sanitised HTML fragment, one `data:` line per line' })),
  ticket: Type.Optional(
    Type.String({
      maxLength: 200,
      description: 'a stream ticket (POST /tail-events/tickets) instead of the Authorization header: for pages on other origins',
    }),
  ),
});

export const TicketBody = StrictObject({
  scope: Type.String({
    maxLength: 100,
    description: 'one scope, as for GET /tail-events (actor:UUID included: your own)',
  }),
  kind: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, pattern: NoControl.pattern, description: 'the stream keeps only this kind' }),
  ),
});

export const Ticket = Type.Object(
  {
    ticket: Type.String({ description: 'opens GET /tail-events?ticket=… for the same scope (and kind) within 60 s' }),
    expires_at: Type.String({ format: 'date-time', description: 'the ticket opens no stream after this' }),
  },
  { additionalProperties: false, title: 'StreamTicket' },
);
