import { Type } from '@sinclair/typebox';
import { NoControl, NullableString, PageQuery, StrictObject, Timestamp } from '../http/schemas.ts';

export const VISIBILITIES = ['public', 'private'] as const;
export const PULL_POLICIES = ['any', 'team', 'owner'] as const;

const Visibility = Type.Union(
  VISIBILITIES.map((v) => Type.Literal(v)),
  { description: 'public or private' },
);
const PullPolicy = Type.Union(
  PULL_POLICIES.map((v) => Type.Literal(v)),
  {
    description:
      'any: anyone with read access opens pulls; team: members of the owning team (public team repos only); owner: maintain level only',
  },
);

export const RepoOwner = Type.Object(
  {
    kind: Type.Union([Type.Literal('team'), Type.Literal('user')]),
    slug_or_username: Type.String(),
    uuid: Type.String(),
  },
  { additionalProperties: false },
);

export const Repo = Type.Object(
  {
    uuid: Type.String(),
    name: Type.String(),
    slug: Type.String({ description: 'unique within the owner' }),
    description: NullableString(),
    about: Type.String({ description: 'Markdown' }),
    clone_url: Type.String({ description: '{PUBLIC_URL}/git/teams/{team}/{slug}.git or /git/users/{user}/{slug}.git' }),
    ssh_url: NullableString({
      description:
        'ssh://git@{host of PUBLIC_URL}:{SSH_PUBLIC_PORT}/teams/{team}/{slug}.git (or /users/{user}/…); null when SSH is off (SSH_PORT=0)',
    }),
    visibility: Visibility,
    default_branch: Type.String(),
    public_repo_pull_policy: PullPolicy,
    max_disk_bytes: Type.Integer({ description: 'absolute bytes; writable by staff only' }),
    is_active: Type.Boolean(),
    created_at: Timestamp,
    owner: RepoOwner,
    full_name: Type.String({ description: 'owner/slug' }),
    is_archived: Type.Boolean(),
    fork_of_uuid: NullableString({
      description: 'the source repo when this repo is a fork; null also when the caller may not read the source',
    }),
    disk_usage_bytes: Type.Integer(),
    updated_at: Timestamp,
    created_by_uuid: Type.String(),
    created_by_username: Type.String(),
    import_status: Type.Optional(
      Type.Union([Type.Literal('importing'), Type.Literal('done'), Type.Literal('failed')], {
        description: 'only on a repo imported from a URL (docs/bring-in.md)',
      }),
    ),
    import_error: Type.Optional(NullableString({ description: 'why the import failed (credentials never appear)' })),
    import_progress: Type.Optional(NullableString({ description: "git's last progress line while importing" })),
    mirror: Type.Optional(
      Type.Union([
        Type.Object(
          {
            url: Type.String({ description: 'the source, without credentials' }),
            interval_seconds: Type.Integer(),
            last_sync_at: NullableString(),
            last_error: NullableString(),
          },
          { additionalProperties: false },
        ),
        Type.Null(),
      ]),
    ),
  },
  { additionalProperties: false, title: 'Repo' },
);

const Name = Type.String({
  minLength: 1,
  maxLength: 255,
  ...NoControl,
  description: 'display name, 1-255 characters, trimmed; no control characters',
});
const SlugInput = Type.String({
  minLength: 1,
  maxLength: 200,
  description: '1-100 characters of a-z, 0-9, "-" and "_", starting with a letter or digit; lower-cased',
});
const Description = NullableString({ maxLength: 2000, description: 'at most 2,000 characters, or null' });

export const ImportBody = StrictObject({
  url: Type.String({
    minLength: 1,
    maxLength: 2000,
    description: 'http://, https://, ssh:// or git:// (no file:// or other transports)',
  }),
  username: Type.Optional(NullableString({ maxLength: 255 })),
  password: Type.Optional(
    NullableString({ maxLength: 4096, description: 'stored sealed with the server secret, never returned' }),
  ),
  mirror: Type.Optional(Type.Boolean({ description: 'keep following the source (a pull mirror, read-only to pushes)' })),
  interval_seconds: Type.Optional(
    Type.Integer({ minimum: 600, maximum: 31_536_000, description: 'pull mirrors: at least 600; default 28,800' }),
  ),
});

export const CreateRepoBody = StrictObject({
  name: Name,
  slug: SlugInput,
  description: Type.Optional(Description),
  visibility: Type.Optional(Visibility),
  import: Type.Optional(ImportBody),
});

export const UpdateRepoBody = StrictObject({
  name: Type.Optional(Name),
  slug: Type.Optional(SlugInput),
  description: Type.Optional(Description),
  about: Type.Optional(Type.String({ maxLength: 65536, description: 'Markdown, at most 65,536 characters' })),
  visibility: Type.Optional(Visibility),
  default_branch: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'a valid git branch name' })),
  public_repo_pull_policy: Type.Optional(PullPolicy),
  max_disk_bytes: Type.Optional(
    Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'absolute bytes; staff only (403 otherwise)' }),
  ),
  is_active: Type.Optional(Type.Boolean({ description: 'false hides the repo from everyone below maintain level' })),
});

const OwnerName = Type.String({ minLength: 1, maxLength: 100 });
export const TeamOwnerParams = Type.Object({ team_slug: OwnerName });
export const UserOwnerParams = Type.Object({ username: OwnerName });

export const ListReposQuery = Type.Object({ ...PageQuery });

export const CheckRepoSlugQuery = Type.Object({ slug: Type.String({ minLength: 1, maxLength: 200 }) });
