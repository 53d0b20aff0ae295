import { Type } from '@sinclair/typebox';
import { NoControl, NullableString, PageQuery, StrictObject, Timestamp, UserRef } from '../http/schemas.ts';

export const PING_MENTIONS = ['everyone', 'team_only', 'disabled'] as const;

export const User = Type.Object(
  {
    uuid: Type.String(),
    username: Type.String(),
    display_name: Type.String(),
    email: NullableString({ description: 'shown only to the user themself and to staff; null otherwise' }),
    is_staff: Type.Boolean(),
    is_active: Type.Boolean(),
    ping_mentions: Type.Union(PING_MENTIONS.map((v) => Type.Literal(v))),
    created_at: Timestamp,
  },
  { additionalProperties: false, title: 'User' },
);

const Email = Type.String({ format: 'email', maxLength: 254 });
const Password = Type.String({ minLength: 8, maxLength: 256, description: '8-256 characters' });
const DisplayName = Type.String({ maxLength: 255, ...NoControl });

export const CreateUserBody = StrictObject({
  username: Type.String({ minLength: 1, maxLength: 39 }),
  email: Email,
  display_name: Type.Optional(DisplayName),
  is_staff: Type.Optional(Type.Boolean()),
  password: Type.Optional(Password),
});

export const UpdateUserBody = StrictObject({
  display_name: Type.Optional(DisplayName),
  email: Type.Optional(Email),
  ping_mentions: Type.Optional(Type.Union(PING_MENTIONS.map((v) => Type.Literal(v)))),
  password: Type.Optional(Password),
  is_staff: Type.Optional(Type.Boolean({ description: 'staff only' })),
  is_active: Type.Optional(Type.Boolean({ description: 'staff only' })),
});

export const ListUsersQuery = Type.Object({
  search: Type.Optional(Type.String({ maxLength: 100, description: 'matches username, display name or email' })),
  ...PageQuery,
});

export const UsernameParams = Type.Object({ username: Type.String({ maxLength: 200 }) });

export const CheckUsernameQuery = Type.Object({ username: Type.String({ minLength: 1, maxLength: 200 }) });

export const LoginBody = StrictObject({
  username: Type.String({ minLength: 1, maxLength: 200 }),
  password: Type.String({ minLength: 1, maxLength: 256 }),
  token_name: Type.String({ minLength: 1, maxLength: 100, ...NoControl }),
  otp: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 40,
      description: 'a code of the authenticator app or a recovery code (accounts with a second factor)',
    }),
  ),
});

export const PingBody = StrictObject(
  {
    body: Type.Optional(
      Type.String({
        maxLength: 1000,
        description: 'Markdown, at most 1,000 characters (400 beyond); empty or absent sends a bare ping',
      }),
    ),
  },
  { title: 'PingBody' },
);

export const PingResult = Type.Object(
  {
    event_id: Type.String({ description: 'the id of the user-mention event' }),
    kind: Type.Literal('user-mention'),
    from: UserRef,
    to: UserRef,
    body: Type.String(),
    body_html: Type.String({
      description: 'the body rendered by the Markdown renderer of replies (sanitised, @mentions linked)',
    }),
    created_at: Timestamp,
  },
  { additionalProperties: false, title: 'PingResult' },
);
