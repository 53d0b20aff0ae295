import { Type } from '@sinclair/typebox';
import { TEAM_ROLES } from '../access/index.ts';
import { NoControl, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';

export const Team = Type.Object(
  {
    uuid: Type.String(),
    name: Type.String(),
    slug: Type.String(),
    is_active: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false, title: 'Team' },
);

export const Role = Type.Union(
  TEAM_ROLES.map((r) => Type.Literal(r)),
  { description: 'owner > maintainer > member > reader' },
);

export const Member = Type.Object(
  {
    user_uuid: Type.String(),
    username: Type.String(),
    display_name: Type.String(),
    role: Role,
    origin: Type.Union([Type.Literal('manual'), Type.Literal('sync')], {
      description:
        'manual: added through the API or the pages (group sync never changes it); sync: made by group sync at sign-in (docs/signin.md "Group sync")',
    }),
    created_at: Timestamp,
  },
  { additionalProperties: false, title: 'TeamMember' },
);

const TeamName = Type.String({
  minLength: 1,
  maxLength: 100,
  ...NoControl,
  description: '1-100 characters, not blank, no control characters',
});
const TeamSlug = Type.String({
  minLength: 1,
  maxLength: 39,
  description: '1-39 characters of a-z, 0-9, "-" and "_", starting with a letter or digit; lower-cased',
});

export const CreateTeamBody = StrictObject({ name: TeamName, slug: TeamSlug });

export const UpdateTeamBody = StrictObject({
  name: TeamName,
  slug: TeamSlug,
  is_active: Type.Optional(Type.Boolean({ description: 'staff only (403 otherwise, even when unchanged)' })),
});

export const ListTeamsQuery = Type.Object({
  all: Type.Optional(Type.Boolean({ description: 'true: every team (staff only, 403 otherwise)' })),
  ...PageQuery,
});

export const TeamParams = Type.Object({ team_slug: Type.String({ maxLength: 200 }) });
export const MemberParams = Type.Object({
  team_slug: Type.String({ maxLength: 200 }),
  username: Type.String({ maxLength: 200 }),
});

export const AddMemberBody = StrictObject({ username: Type.String({ minLength: 1, maxLength: 200 }), role: Role });
export const UpdateMemberBody = StrictObject({ role: Role });

export const PagedQuery = Type.Object({ ...PageQuery });

export const CheckTeamSlugQuery = Type.Object({ slug: Type.String({ minLength: 1, maxLength: 200 }) });

export const SuggestUsersQuery = Type.Object({
  name: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: 'prefix of the username or display name, case-insensitive' }),
  ),
  email: Type.Optional(
    Type.String({ minLength: 1, maxLength: 254, description: 'the whole email address (compared case-insensitively)' }),
  ),
  team_slug: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'only members of this team' })),
});

export const SuggestedUser = Type.Object(
  { uuid: Type.String(), username: Type.String(), display_name: Type.String() },
  { additionalProperties: false, title: 'SuggestedUser' },
);

export const SuggestedUsers = Type.Object(
  { results: Type.Array(SuggestedUser, { maxItems: 10 }) },
  { additionalProperties: false, title: 'SuggestedUsers' },
);
