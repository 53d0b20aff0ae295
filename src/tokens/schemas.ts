import { Type } from '@sinclair/typebox';
import { NoControl, NullableString, NullableTimestamp, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';
import { TOKEN_SCOPES } from '../token-scopes.ts';

const UUID_RE = '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
const nullableList = (items: Record<string, unknown>, opts: Record<string, unknown>) =>
  Type.Unsafe<string[] | null>({ type: ['array', 'null'], items, ...opts });

const tokenFields = {
  uuid: Type.String(),
  name: Type.String(),
  username: Type.String({ description: 'the owner of the token' }),
  scopes: nullableList(
    { type: 'string' },
    { description: 'the scopes the token carries; null: every scope (an unrestricted token). Fixed at creation.' },
  ),
  repos: nullableList(
    { type: 'string' },
    { description: 'uuids of the only repos the token reaches (others are 404 to it); null: no restriction. Fixed at creation.' },
  ),
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
  scopes: Type.Optional(
    nullableList(
      { type: 'string', enum: [...TOKEN_SCOPES] },
      {
        maxItems: TOKEN_SCOPES.length * 2,
        description:
          'scopes of the new token (write:X implies read:X); null or absent: every scope. A scoped caller may only grant scopes it has, and omitting scopes then copies its own.',
      },
    ),
  ),
  repos: Type.Optional(
    nullableList(
      { type: 'string', pattern: UUID_RE },
      {
        maxItems: 100,
        description:
          'restrict the new token to these repos (uuids; 404 when the caller cannot read one); null or absent: no restriction. A caller restricted to repos may only name some of its own, and omitting repos then copies its list.',
      },
    ),
  ),
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
