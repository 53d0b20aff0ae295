import { Type } from '@sinclair/typebox';
import { PageQuery, Timestamp } from '../http/schemas.ts';
import { Repo } from '../repos/schemas.ts';

export const Fork = Type.Object(
  {
    uuid: Type.String(),
    source_repo_uuid: Type.String(),
    source_full_name: Type.String({ description: 'the source repo as owner/slug, at the time of the request' }),
    repo: Repo,
    created_at: Timestamp,
    created_by_username: Type.String(),
  },
  { additionalProperties: false, title: 'Fork' },
);

export const CreateForkQuery = Type.Object({
  team: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 100,
      description:
        "fork into this team (the caller must be a maintainer or owner of it); without it, into the caller's user namespace",
    }),
  ),
});

export const ListForksQuery = Type.Object({ ...PageQuery });

export const ForkUuidParams = Type.Object({ fork_uuid: Type.String({ maxLength: 100 }) });

const OwnerName = Type.String({ minLength: 1, maxLength: 100 });
export const ForkTeamParam = { fork_team_slug: OwnerName };
export const ForkUserParam = { fork_username: OwnerName };
