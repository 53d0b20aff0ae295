import { Type } from '@sinclair/typebox';
import { CreatedToken } from '../tokens/schemas.ts';
import { User } from '../users/schemas.ts';
import { NoControl, NullableString, NullableTimestamp, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';

export const INVITE_STATUSES = ['pending', 'accepted', 'expired'] as const;
export const INVITE_SORTS = ['created_at', '-created_at', 'expires_at', '-expires_at', 'email', '-email'] as const;

export const SignupInvite = Type.Object(
  {
    uuid: Type.String(),
    email: NullableString({
      description: 'when set, only a signup with this email (compared case-insensitively) may use the invite',
    }),
    expires_at: Timestamp,
    status: Type.Union(
      INVITE_STATUSES.map((v) => Type.Literal(v)),
      { description: 'accepted once used; otherwise expired from expires_at on, else pending' },
    ),
    created_at: Timestamp,
    created_by_username: Type.String(),
    accepted_at: NullableTimestamp,
    accepted_by_uuid: NullableString(),
    accepted_by_username: NullableString(),
  },
  { additionalProperties: false, title: 'SignupInvite' },
);

const Email = Type.String({ format: 'email', maxLength: 254 });
const ExpiresAt = Type.String({ maxLength: 64, description: 'ISO 8601 timestamp in the future (400 otherwise)' });

export const CreateInviteBody = StrictObject({
  expires_at: ExpiresAt,
  email: Type.Optional(NullableString({ format: 'email', maxLength: 254 })),
});
export const UpdateInviteBody = StrictObject({
  expires_at: Type.Optional(ExpiresAt),
  email: Type.Optional(NullableString({ format: 'email', maxLength: 254, description: 'null removes the email restriction' })),
});
export const ListInvitesQuery = Type.Object({
  search: Type.Optional(
    Type.String({
      maxLength: 100,
      description: "matches the invite's uuid (exactly), its email, or the accepted user's username, display name or email",
    }),
  ),
  status: Type.Optional(Type.Union(INVITE_STATUSES.map((v) => Type.Literal(v)))),
  sort: Type.Optional(
    Type.Union(
      INVITE_SORTS.map((v) => Type.Literal(v)),
      { description: 'default created_at (oldest first); a leading - reverses; ties by uuid' },
    ),
  ),
  ...PageQuery,
});
export const InviteParams = Type.Object({ uuid: Type.String({ maxLength: 100 }) });

export const SignupBody = StrictObject({
  username: Type.String({ minLength: 1, maxLength: 39 }),
  email: Email,
  display_name: Type.Optional(Type.String({ maxLength: 255, ...NoControl })),
  password: Type.Optional(Type.String({ minLength: 8, maxLength: 256, description: '8-256 characters' })),
  invite_uuid: Type.Optional(Type.String({ maxLength: 100 })),
});

export const SignupResult = Type.Object(
  { user: User, token: CreatedToken },
  { additionalProperties: false, title: 'SignupResult' },
);
