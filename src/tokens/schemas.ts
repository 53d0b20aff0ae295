import { Type } from '@sinclair/typebox';
import { NoControl, NullableString, NullableTimestamp, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';

const tokenFields = {
  uuid: Type.String(),
  name: Type.String(),
  username: Type.String({ description: 'the owner of the token' }),
  expires_at: NullableTimestamp,
  created_at: Timestamp,
  last_used_at: { ...NullableTimestamp, description: 'kept to the minute' },
  revoked_at: NullableTimestamp,
};

export const Token = Type.Object(tokenFields, { additionalProperties: false, title: 'ApiToken' });

export const CreatedToken = Type.Object(
  { ...tokenFields, token: Type.String({ description: 'the secret: shown once, never again' }) },
  { additionalProperties: false, title: 'CreatedApiToken' },
);

export const CreateTokenBody = StrictObject({
  name: Type.String({ minLength: 1, maxLength: 100, ...NoControl }),
  expires_at: Type.Optional(NullableString({ description: 'future ISO 8601 timestamp, or null for no expiry' })),
  username: Type.Optional(NullableString({ description: 'owner of the new token; another user needs staff' })),
});

export const ListTokensQuery = Type.Object({
  username: Type.Optional(Type.String({ maxLength: 200, description: "staff only for another user's tokens" })),
  name: Type.Optional(Type.String({ maxLength: 100, description: 'only tokens with exactly this name' })),
  ordering: Type.Optional(
    Type.String({
      description: 'created_at (default), -created_at, name, -name, last_used_at, -last_used_at (never used last)',
    }),
  ),
  ...PageQuery,
});

export const TokenParams = Type.Object({ uuid: Type.String({ maxLength: 100 }) });
