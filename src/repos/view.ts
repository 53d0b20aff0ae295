import type { Kysely, Selectable } from 'kysely';
import type { Config } from '../config.ts';
import type { DB, ReposTable } from '../db/types.ts';

/** What a repo's URLs are made from: PUBLIC_URL, and the SSH ports (README "Git over SSH"). */
export type RepoUrls = Pick<Config, 'publicUrl' | 'sshPort' | 'sshPublicPort'>;

/**
 * `ssh://git@{host of PUBLIC_URL}:{SSH_PUBLIC_PORT}`, the start of every `ssh_url`, or null when
 * SSH is off (SSH_PORT=0).
 */
export function sshUrlBase(urls: RepoUrls): string | null {
  if (urls.sshPort === 0) return null;
  return `ssh://git@${new URL(urls.publicUrl).hostname}:${urls.sshPublicPort}`;
}

/**
 * The repo as the API shows it (docs/behaviour.md "Repos and forks"), and the one query that loads what it needs: the
 * repo row with its owner's slug or username and its creator's username.
 */
export interface RepoJson {
  uuid: string;
  name: string;
  slug: string;
  description: string | null;
  about: string;
  clone_url: string;
  ssh_url: string | null;
  visibility: 'public' | 'private';
  default_branch: string;
  public_repo_pull_policy: 'any' | 'team' | 'owner';
  max_disk_bytes: number;
  is_active: boolean;
  created_at: string;
  owner: { kind: 'team' | 'user'; slug_or_username: string; uuid: string };
  full_name: string;
  is_archived: boolean;
  fork_of_uuid: string | null;
  disk_usage_bytes: number;
  updated_at: string;
  created_by_uuid: string;
  created_by_username: string;
}

export type RepoViewRow = Selectable<ReposTable> & {
  owner_team_slug: string | null;
  owner_username: string | null;
  creator_username: string | null;
};

/**
 * Repos with their owner and creator names. The repos table keeps its own name (`repos`), so
 * `repoReadableBy` (src/access/repos.ts) applies to this query as it is.
 */
export function repoViewQuery(db: Kysely<DB>) {
  return db
    .selectFrom('repos')
    .leftJoin('teams as owner_team', (j) =>
      j.onRef('owner_team.uuid', '=', 'repos.owner_uuid').on('repos.owner_kind', '=', 'team'),
    )
    .leftJoin('users as owner_user', (j) =>
      j.onRef('owner_user.uuid', '=', 'repos.owner_uuid').on('repos.owner_kind', '=', 'user'),
    )
    .leftJoin('users as creator', 'creator.uuid', 'repos.created_by_uuid')
    .selectAll('repos')
    .select([
      'owner_team.slug as owner_team_slug',
      'owner_user.username as owner_username',
      'creator.username as creator_username',
    ]);
}

export function ownerPath(kind: string, name: string): string {
  return kind === 'team' ? `teams/${name}` : `users/${name}`;
}

/** `urls`: the server's config (a bare PUBLIC_URL string gives `ssh_url` null). */
export function repoToJson(row: RepoViewRow, urls: string | RepoUrls): RepoJson {
  const publicUrl = typeof urls === 'string' ? urls : urls.publicUrl;
  const ssh = typeof urls === 'string' ? null : sshUrlBase(urls);
  const kind = row.owner_kind as 'team' | 'user';
  const ownerName = (kind === 'team' ? row.owner_team_slug : row.owner_username) ?? '';
  return {
    uuid: row.uuid,
    name: row.name,
    slug: row.slug,
    description: row.description,
    about: row.about,
    clone_url: `${publicUrl}/git/${ownerPath(kind, ownerName)}/${row.slug}.git`,
    ssh_url: ssh === null ? null : `${ssh}/${ownerPath(kind, ownerName)}/${row.slug}.git`,
    visibility: row.visibility as RepoJson['visibility'],
    default_branch: row.default_branch,
    public_repo_pull_policy: row.public_repo_pull_policy as RepoJson['public_repo_pull_policy'],
    max_disk_bytes: Number(row.max_disk_bytes),
    is_active: row.is_active === 1,
    created_at: row.created_at,
    owner: { kind, slug_or_username: ownerName, uuid: row.owner_uuid },
    full_name: `${ownerName}/${row.slug}`,
    is_archived: row.is_archived === 1,
    fork_of_uuid: row.fork_of_uuid,
    disk_usage_bytes: Number(row.disk_usage_bytes),
    updated_at: row.updated_at,
    created_by_uuid: row.created_by_uuid,
    created_by_username: row.creator_username ?? '',
  };
}

export async function loadRepoJson(db: Kysely<DB>, uuid: string, urls: string | RepoUrls): Promise<RepoJson> {
  const row = await repoViewQuery(db).where('repos.uuid', '=', uuid).executeTakeFirstOrThrow();
  return repoToJson(row, urls);
}

/** The event scopes of a repo: its own and its owner's (docs/behaviour.md "Events and scopes"). */
export function repoScopes(repo: { uuid: string; owner_kind: string; owner_uuid: string }): string[] {
  return [`repo:${repo.uuid}`, `${repo.owner_kind === 'team' ? 'team' : 'user'}:${repo.owner_uuid}`];
}
