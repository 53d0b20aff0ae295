/**
 * The one place that answers "what may this user do to this team / repo / pull". Routes and
 * services ask here; nothing re-derives access inline. Invisible things are 404, never 403.
 */
import { type Expression, type Kysely, type Selectable, type SqlBool, sql } from 'kysely';
import type { DB, ReposTable, TeamsTable, UsersTable } from './db/types.ts';
import type { Deps } from './deps.ts';
import { forbidden, notFound } from './errors.ts';
import { registerScopeReader } from './events/scopes.ts';
import type { Viewer } from './viewer.ts';

export type TeamRow = Selectable<TeamsTable>;
export type RepoRow = Selectable<ReposTable>;
export type UserRow = Selectable<UsersTable>;

export const TEAM_ROLES = ['owner', 'maintainer', 'member', 'reader'] as const;
export type TeamRole = (typeof TEAM_ROLES)[number];
const ROLE_RANK: Record<TeamRole, number> = { reader: 1, member: 2, maintainer: 3, owner: 4 };

export type RepoLevel = 'none' | 'read' | 'write' | 'maintain' | 'owner';
const LEVEL_RANK: Record<RepoLevel, number> = { none: 0, read: 1, write: 2, maintain: 3, owner: 4 };

export const roleAtLeast = (role: TeamRole | null, min: TeamRole): boolean => role !== null && ROLE_RANK[role] >= ROLE_RANK[min];
export const levelAtLeast = (level: RepoLevel, min: RepoLevel): boolean => LEVEL_RANK[level] >= LEVEL_RANK[min];

export async function teamRole(db: Kysely<DB>, viewer: Viewer | null, teamUuid: string): Promise<TeamRole | null> {
  if (!viewer) return null;
  const row = await db
    .selectFrom('team_members')
    .select('role')
    .where('team_uuid', '=', teamUuid)
    .where('user_uuid', '=', viewer.uuid)
    .executeTakeFirst();
  return (row?.role as TeamRole | undefined) ?? null;
}

// ---------------------------------------------------------------- teams

export interface TeamAccess {
  team: TeamRow;
  /** the viewer's role; null for staff who are not members */
  role: TeamRole | null;
}

/**
 * A team is visible to its members and to staff; to anyone else it is 404. `min` is the role
 * the action needs (403 below it); staff pass every check.
 */
export async function requireTeam(db: Kysely<DB>, viewer: Viewer, slug: string, min: TeamRole = 'reader'): Promise<TeamAccess> {
  const team = await db.selectFrom('teams').selectAll().where('slug', '=', slug.toLowerCase()).executeTakeFirst();
  if (!team) throw notFound('Team');
  const role = await teamRole(db, viewer, team.uuid);
  if (viewer.isStaff) return { team, role };
  if (role === null) throw notFound('Team');
  if (!roleAtLeast(role, min)) throw forbidden(`This needs the ${min} role in the team.`);
  return { team, role };
}

/** Writes under an inactive team are refused (decisions §3). */
export function assertTeamActive(team: TeamRow | null): void {
  if (team && team.is_active !== 1) throw forbidden('The team is inactive: its repos are read-only.', 'team_inactive');
}

/**
 * Team settings and membership changes: the team's owners and staff (403 below owner, 404 to
 * outsiders). An inactive team refuses them with 403 team_inactive unless the caller is staff,
 * who may still change it (and reactivate it).
 */
export async function requireTeamManager(db: Kysely<DB>, viewer: Viewer, slug: string): Promise<TeamAccess> {
  const access = await requireTeam(db, viewer, slug, 'owner');
  assertTeamManageable(access.team, viewer);
  return access;
}

export function assertTeamManageable(team: TeamRow, viewer: Viewer): void {
  if (team.is_active !== 1 && !viewer.isStaff) {
    throw forbidden('The team is inactive: only staff can change it.', 'team_inactive');
  }
}

/**
 * Removing a member: owners and staff may remove anyone; any member may remove themself
 * (leave the team, as on GitHub), also from an inactive team. The last-owner rule still applies.
 */
export async function requireMemberRemoval(
  db: Kysely<DB>,
  viewer: Viewer,
  slug: string,
  targetUserUuid: string | null,
): Promise<TeamAccess> {
  const access = await requireTeam(db, viewer, slug, 'reader');
  if (targetUserUuid !== null && targetUserUuid === viewer.uuid && access.role !== null) return access;
  if (!viewer.isStaff && !roleAtLeast(access.role, 'owner')) throw forbidden('This needs the owner role in the team.');
  assertTeamManageable(access.team, viewer);
  return access;
}

/** Whether a (possibly anonymous) caller may see a team: its members and staff. */
export async function teamVisibleTo(db: Kysely<DB>, viewer: Viewer | null, team: TeamRow): Promise<boolean> {
  if (!viewer) return false;
  return viewer.isStaff || (await teamRole(db, viewer, team.uuid)) !== null;
}

// ---------------------------------------------------------------- repos

export interface RepoRef {
  ownerKind: 'team' | 'user';
  /** team slug or username, as given in the path */
  ownerName: string;
  repoSlug: string;
}

export interface RepoOwner {
  kind: 'team' | 'user';
  uuid: string;
  /** team slug or username */
  name: string;
  team: TeamRow | null;
  user: UserRow | null;
}

/** Resolves the owner in a repo path; 404 when it does not exist (or is an inactive user). */
export async function resolveOwner(db: Kysely<DB>, viewer: Viewer, kind: 'team' | 'user', name: string): Promise<RepoOwner> {
  const key = name.toLowerCase();
  if (kind === 'team') {
    const team = await db.selectFrom('teams').selectAll().where('slug', '=', key).executeTakeFirst();
    if (!team) throw notFound('Team');
    return { kind, uuid: team.uuid, name: team.slug, team, user: null };
  }
  const user = await db.selectFrom('users').selectAll().where('username', '=', key).executeTakeFirst();
  if (!user || (user.is_active !== 1 && !viewer.isStaff)) throw notFound('User');
  return { kind, uuid: user.uuid, name: user.username, team: null, user };
}

/** The viewer's level on a repo (decisions §3 table); staff are owners everywhere. */
export async function repoAccessLevel(db: Kysely<DB>, viewer: Viewer | null, repo: RepoRow): Promise<RepoLevel> {
  if (viewer?.isStaff) return 'owner';
  let level: RepoLevel = 'none';
  if (viewer && repo.owner_kind === 'user' && repo.owner_uuid === viewer.uuid) level = 'owner';
  if (viewer && repo.owner_kind === 'team') {
    const role = await teamRole(db, viewer, repo.owner_uuid);
    if (role === 'owner') level = 'owner';
    else if (role === 'maintainer') level = 'maintain';
    else if (role === 'member') level = 'write';
    else if (role === 'reader') level = 'read';
  }
  if (level === 'none' && viewer && repo.visibility === 'public') {
    // A deactivated user's repos are absent for everyone but staff (as the user is: resolveOwner).
    if (repo.owner_kind === 'user' && !(await userIsActive(db, repo.owner_uuid))) return 'none';
    level = 'read';
  }
  // A deactivated repo is hidden from everyone below maintain level.
  if (repo.is_active !== 1 && !levelAtLeast(level, 'maintain')) return 'none';
  return level;
}

async function userIsActive(db: Kysely<DB>, uuid: string): Promise<boolean> {
  const row = await db.selectFrom('users').select('is_active').where('uuid', '=', uuid).executeTakeFirst();
  return row?.is_active === 1;
}

/**
 * A fork record names its source (`source_full_name`): it is visible only to callers who can
 * read both the fork repo and the source repo, so a fork made public never reveals a private
 * source. Staff read everything.
 */
export async function forkRecordReadable(
  db: Kysely<DB>,
  viewer: Viewer,
  fork: { repo_uuid: string; source_repo_uuid: string },
): Promise<boolean> {
  for (const uuid of [fork.repo_uuid, fork.source_repo_uuid]) {
    const repo = await db.selectFrom('repos').selectAll().where('uuid', '=', uuid).executeTakeFirst();
    if (!repo || !levelAtLeast(await repoAccessLevel(db, viewer, repo), 'read')) return false;
  }
  return true;
}

export interface RepoAccess {
  repo: RepoRow;
  owner: RepoOwner;
  level: RepoLevel;
}

export interface RepoNeed {
  /** the level the action needs; 403 below it (404 when the repo is not readable at all) */
  level: Exclude<RepoLevel, 'none'>;
  /**
   * The action changes something under the repo: refused on an archived repo (403
   * repo_archived) and under an inactive team (403 team_inactive).
   */
  write?: boolean;
  /** archive/unarchive and delete stay possible on an archived repo */
  allowArchived?: boolean;
}

export async function requireRepo(db: Kysely<DB>, viewer: Viewer, ref: RepoRef, need: RepoNeed): Promise<RepoAccess> {
  const owner = await resolveOwner(db, viewer, ref.ownerKind, ref.ownerName);
  const repo = await db
    .selectFrom('repos')
    .selectAll()
    .where('owner_kind', '=', ref.ownerKind)
    .where('owner_uuid', '=', owner.uuid)
    .where('slug', '=', ref.repoSlug.toLowerCase())
    .executeTakeFirst();
  if (!repo) throw notFound('Repo');
  const level = await repoAccessLevel(db, viewer, repo);
  if (level === 'none') throw notFound('Repo');
  if (!levelAtLeast(level, need.level)) throw forbidden(`This needs ${need.level} access to the repo.`);
  if (need.write) {
    assertTeamActive(owner.team);
    if (repo.is_archived === 1 && !need.allowArchived) {
      throw forbidden('The repo is archived and read-only.', 'repo_archived');
    }
  }
  return { repo, owner, level };
}

/**
 * The SQL twin of `repoAccessLevel(...) >= read`, for lists that must page over only the repos
 * a viewer may read. It refers to the table as `repos` (unaliased). Keep the two in step.
 */
export function repoReadableBy(viewer: Viewer | null): Expression<SqlBool> {
  if (!viewer) return sql<SqlBool>`1 = 0`;
  if (viewer.isStaff) return sql<SqlBool>`1 = 1`;
  return sql<SqlBool>`(
    (repos.visibility = 'public' and repos.is_active = 1 and (repos.owner_kind = 'team' or exists (
      select 1 from users ou where ou.uuid = repos.owner_uuid and ou.is_active = 1
    )))
    or (repos.owner_kind = 'user' and repos.owner_uuid = ${viewer.uuid})
    or (repos.owner_kind = 'team' and exists (
      select 1 from team_members tm
      where tm.team_uuid = repos.owner_uuid and tm.user_uuid = ${viewer.uuid}
        and (repos.is_active = 1 or tm.role in ('maintainer', 'owner'))
    ))
  )`;
}

/**
 * Who may create a repo in a namespace (decisions §4): a team's maintainers and owners (the team
 * is invisible, 404, to non-members; an inactive team refuses with 403 team_inactive), or the
 * user themself; staff anywhere.
 */
export async function requireRepoCreation(
  db: Kysely<DB>,
  viewer: Viewer,
  kind: 'team' | 'user',
  name: string,
): Promise<RepoOwner> {
  if (kind === 'team') {
    const { team } = await requireTeam(db, viewer, name, 'maintainer');
    assertTeamActive(team);
    return { kind, uuid: team.uuid, name: team.slug, team, user: null };
  }
  const owner = await resolveOwner(db, viewer, kind, name);
  if (!viewer.isStaff && owner.uuid !== viewer.uuid) throw forbidden('You can only create repos in your own namespace.');
  return owner;
}

/**
 * Who may inspect a namespace's repo slugs (check-repo-slug): a team's members (the team is
 * 404 to anyone else) or the user themself (403 for another user's namespace); staff anywhere.
 */
export async function requireNamespaceInsight(
  db: Kysely<DB>,
  viewer: Viewer,
  kind: 'team' | 'user',
  name: string,
): Promise<RepoOwner> {
  if (kind === 'team') {
    const { team } = await requireTeam(db, viewer, name, 'reader');
    return { kind, uuid: team.uuid, name: team.slug, team, user: null };
  }
  const owner = await resolveOwner(db, viewer, kind, name);
  if (!viewer.isStaff && owner.uuid !== viewer.uuid)
    throw forbidden("You can only check slugs in your own namespace or your teams'.");
  return owner;
}

/**
 * Whether a user may open pulls on a repo under its public_repo_pull_policy (decisions §4), on
 * public and private repos alike: `any` — anyone with read access; `team` — members of the owning
 * team, any role; `owner` — maintain level only (write level is not enough). Maintain level and
 * staff may under every policy.
 */
export async function canOpenPull(db: Kysely<DB>, viewer: Viewer, access: RepoAccess): Promise<boolean> {
  if (!levelAtLeast(access.level, 'read')) return false;
  if (viewer.isStaff || levelAtLeast(access.level, 'maintain')) return true;
  const policy = access.repo.public_repo_pull_policy;
  if (policy === 'any') return true;
  if (policy === 'team') return access.owner.kind === 'team' && (await teamRole(db, viewer, access.owner.uuid)) !== null;
  return false; // 'owner'
}

/** A user known from a stored record (a reviewer), not the caller. */
export interface StoredUser {
  uuid: string;
  username: string;
  is_staff: number;
  is_active: number;
}

/** A stored user's level on a repo now; a deactivated user has none. */
export async function storedUserRepoLevel(db: Kysely<DB>, user: StoredUser, repo: RepoRow): Promise<RepoLevel> {
  if (user.is_active !== 1) return 'none';
  return repoAccessLevel(db, { uuid: user.uuid, username: user.username, isStaff: user.is_staff === 1, tokenUuid: '' }, repo);
}

/**
 * Whether an approving review by `reviewer` counts towards a pull's branch protection (decisions
 * §5), with access evaluated now, not when the review was written: with an approver list, a
 * listed user who can still read the repo; without one, any user with write access (staff
 * included). A deactivated user's approval never counts. (That the pull's author never counts is
 * the caller's rule.)
 */
export async function approvalCounts(
  db: Kysely<DB>,
  reviewer: StoredUser,
  repo: RepoRow,
  approverUuids: ReadonlySet<string>,
): Promise<boolean> {
  if (approverUuids.size > 0 && !approverUuids.has(reviewer.uuid)) return false;
  const level = await storedUserRepoLevel(db, reviewer, repo);
  return levelAtLeast(level, approverUuids.size > 0 ? 'read' : 'write');
}

// ---------------------------------------------------------------- event scopes

async function repoReadable(deps: Deps, viewer: Viewer, repoUuid: string): Promise<boolean> {
  const repo = await deps.db.selectFrom('repos').selectAll().where('uuid', '=', repoUuid).executeTakeFirst();
  return repo !== undefined && levelAtLeast(await repoAccessLevel(deps.db, viewer, repo), 'read');
}

registerScopeReader('user', async (deps, viewer, id) => {
  if (!viewer.isStaff && viewer.uuid !== id) return false;
  return (await deps.db.selectFrom('users').select('uuid').where('uuid', '=', id).executeTakeFirst()) !== undefined;
});

registerScopeReader('team', async (deps, viewer, id) => {
  const team = await deps.db.selectFrom('teams').select('uuid').where('uuid', '=', id).executeTakeFirst();
  if (!team) return false;
  return viewer.isStaff || (await teamRole(deps.db, viewer, id)) !== null;
});

registerScopeReader('repo', (deps, viewer, id) => repoReadable(deps, viewer, id));

registerScopeReader('pull', async (deps, viewer, id) => {
  const pull = await deps.db.selectFrom('pulls').select('repo_uuid').where('uuid', '=', id).executeTakeFirst();
  return pull !== undefined && repoReadable(deps, viewer, pull.repo_uuid);
});

registerScopeReader('review', async (deps, viewer, id) => {
  const row = await deps.db
    .selectFrom('reviews as r')
    .innerJoin('pulls as p', 'p.uuid', 'r.pull_uuid')
    .select('p.repo_uuid')
    .where('r.uuid', '=', id)
    .executeTakeFirst();
  return row !== undefined && repoReadable(deps, viewer, row.repo_uuid);
});
