import { Type } from '@sinclair/typebox';
import { NullableTimestamp, PageQuery, Timestamp } from '../http/schemas.ts';

export const Session = Type.Object(
  {
    uuid: Type.String(),
    username: Type.String({ description: 'whose session it is' }),
    user_agent: Type.String({ description: 'the browser that signed in (its User-Agent, at most 200 characters)' }),
    created_at: Timestamp,
    last_used_at: { ...Timestamp, description: 'kept to the minute' },
    expires_at: { ...Timestamp, description: '30 days after the last use' },
    revoked_at: NullableTimestamp,
  },
  { additionalProperties: false, title: 'WebSession' },
);

export const ListSessionsQuery = Type.Object({
  username: Type.Optional(Type.String({ maxLength: 200, description: "staff only for another user's sessions" })),
  ...PageQuery,
});

export const SessionParams = Type.Object({ uuid: Type.String({ maxLength: 100 }) });
