/** Repo access levels (none, read, write, maintain, owner) and the checks built on them. */
import { type Kysely } from 'kysely';
import { type RowLock, withRowLock } from '../db/tx.ts';
import type { DB } from '../db/types.ts';
import { forbidden, notFound } from '../errors.ts';
import type { RepoRef, Viewer } from '../viewer.ts';
import { type TeamRow, type RepoRow, type UserRow, type RepoLevel, levelAtLeast, teamRole } from './levels.ts';
import { checkAccess, hasAccess } from './check.ts';
import { repoLevelFrom, tokenReachesRepo } from './repo-level.ts';
import { requireTeam, assertTeamActive } from './teams.ts';
import { noteDecision } from './decisions.ts';
import { hasTwoFactor, teamTwoFactorRefusal } from './two-factor.ts';

// ---------------------------------------------------------------- repos

export type { RepoRef } from '../viewer.ts';

export interface RepoOwner {
  kind: 'team' | 'user';
  uuid: string;
  /** team slug or username */
  name: string;
  team: TeamRow | null;
  user: UserRow | null;
}

/** Resolves the owner in a repo path; 404 when it does not exist (or is an inactive user). */
export async function resolveOwner(
  db: Kysely<DB>,
  viewer: Viewer,
  kind: 'team' | 'user',
  name: string,
  lock?: RowLock,
): Promise<RepoOwner> {
  const key = name.toLowerCase();
  if (kind === 'team') {
    const team = await withRowLock(db, db.selectFrom('teams').selectAll().where('slug', '=', key), lock).executeTakeFirst();
    if (!team) throw notFound('Team');
    return { kind, uuid: team.uuid, name: team.slug, team, user: null };
  }
  const user = await db.selectFrom('users').selectAll().where('username', '=', key).executeTakeFirst();
  if (!user || (user.is_active !== 1 && !viewer.isStaff)) throw notFound('User');
  return { kind, uuid: user.uuid, name: user.username, team: null, user };
}

/** The viewer's level on a repo (docs/behaviour.md "Teams and access"); staff are owners everywhere. */
export async function repoAccessLevel(db: Kysely<DB>, viewer: Viewer | null, repo: RepoRow, lock?: RowLock): Promise<RepoLevel> {
  noteDecision('level');
  if (!tokenReachesRepo(viewer, repo.uuid)) return 'none';
  if (viewer?.isStaff) return 'owner';
  const role = viewer && repo.owner_kind === 'team' ? await teamRole(db, viewer, repo.owner_uuid, lock) : null;
  return repoLevelFrom(viewer, repo, role, await ownerActiveFor(db, viewer, repo));
}

/** Whether a repo's user owner is active, where the rule needs it: only a public repo of another user. */
async function ownerActiveFor(
  db: Kysely<DB>,
  viewer: Viewer | null,
  repo: Pick<RepoRow, 'owner_kind' | 'owner_uuid' | 'visibility'>,
): Promise<boolean> {
  return viewer && repo.owner_kind === 'user' && repo.visibility === 'public' && repo.owner_uuid !== viewer.uuid
    ? userIsActive(db, repo.owner_uuid)
    : true;
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
  const readable = await checkAccess(db, viewer, 'repo.read', [fork.repo_uuid, fork.source_repo_uuid]);
  return readable.has(fork.repo_uuid) && readable.has(fork.source_repo_uuid);
}

/**
 * Whether the viewer may read the repo with this uuid (false when there is none): `checkAccess`
 * of one repo (check.ts). Prefer `checkAccess` with every id at once where there are several.
 */
export async function repoUuidReadable(db: Kysely<DB>, viewer: Viewer, uuid: string): Promise<boolean> {
  return hasAccess(db, viewer, 'repo.read', uuid);
}

/**
 * A repo record names its fork source (`fork_of_uuid`) only to callers who may read the source
 * (docs/behaviour.md "Repos and forks"), as the fork record is shown only to callers who can
 * read both: a public fork of a private repo, or of a deactivated user's, does not reveal it.
 * Sets it to null on the records where it must not be shown (one `checkAccess` for all the sources).
 */
export async function hideUnreadableForkSources<T extends { fork_of_uuid: string | null }>(
  db: Kysely<DB>,
  viewer: Viewer,
  repos: T[],
): Promise<T[]> {
  if ((viewer.isStaff && !viewer.repos) || repos.every((r) => r.fork_of_uuid === null)) return repos;
  const sources = repos.flatMap((r) => (r.fork_of_uuid === null ? [] : [r.fork_of_uuid]));
  const readable = await checkAccess(db, viewer, 'repo.read', sources);
  return repos.map((r) => (r.fork_of_uuid === null || readable.has(r.fork_of_uuid) ? r : { ...r, fork_of_uuid: null }));
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
  /**
   * Lock what the decision reads (PostgreSQL) even when `write` is not set: a write whose
   * remaining checks come later (404 before 403, `assertRepoNeed`) still decides on locked rows.
   * `command` (src/core/command.ts) always sets it.
   */
  lock?: boolean;
}

/**
 * Resolves a repo path and checks the viewer's level (404 when unreadable, 403 below `need`).
 * A write calls it inside its transaction with `tx.db`: on PostgreSQL the check then locks what
 * it read (the repo row for update, the owning team's row, the viewer's membership), so an
 * archive, a deactivation or a member removal committed concurrently either waits for the write
 * or is seen by the check. SQLite runs write transactions one at a time.
 */
export async function requireRepo(db: Kysely<DB>, viewer: Viewer, ref: RepoRef, need: RepoNeed): Promise<RepoAccess> {
  const locking = need.write || need.lock;
  const lock: RowLock | undefined = locking ? 'share' : undefined;
  const owner = await resolveOwner(db, viewer, ref.ownerKind, ref.ownerName, lock);
  const query = db
    .selectFrom('repos')
    .selectAll()
    .where('owner_kind', '=', ref.ownerKind)
    .where('owner_uuid', '=', owner.uuid)
    .where('slug', '=', ref.repoSlug.toLowerCase());
  const repo = await withRowLock(db, query, locking ? 'update' : undefined).executeTakeFirst();
  if (!repo) throw notFound('Repo');
  const level = await repoAccessLevel(db, viewer, repo, lock);
  if (level === 'none') throw notFound('Repo');
  if (owner.team && owner.team.require_two_factor === 1 && !hasTwoFactor(viewer)) {
    const refused = teamTwoFactorRefusal(viewer, owner.team, await teamRole(db, viewer, owner.team.uuid));
    if (refused) throw refused;
  }
  const access = { repo, owner, level };
  assertRepoNeed(access, need);
  return access;
}

/**
 * The checks of `requireRepo` past "readable", on an access already resolved: 403 below
 * `need.level`; for a write, 403 team_inactive and repo_archived. A write that must answer 404
 * for a missing sub-resource before 403 resolves the repo at read level, finds the sub-resource,
 * then calls this (threads, replies).
 */
export function assertRepoNeed(access: RepoAccess, need: RepoNeed): void {
  if (!levelAtLeast(access.level, need.level)) throw forbidden(`This needs ${need.level} access to the repo.`);
  if (need.write) {
    assertTeamActive(access.owner.team);
    if (access.repo.is_archived === 1 && !need.allowArchived) {
      throw forbidden('The repo is archived and read-only.', 'repo_archived');
    }
  }
}

/**
 * A write to a sub-resource of the repo (a protection, a pull, a hook, ...), which must answer
 * 404 for a missing sub-resource before 403 repo_archived (docs/behaviour.md "Errors"): resolve
 * the repo with `itemWrite(need)` (every check but the archive one), find the sub-resource, then
 * call `assertNotArchived`.
 */
export const itemWrite = <N extends RepoNeed>(need: N): N => ({ ...need, allowArchived: true });

/** 403 repo_archived on an archived repo (the check `itemWrite` leaves for after the lookup). */
export function assertNotArchived(access: { repo: { is_archived: number } }): void {
  if (access.repo.is_archived === 1) throw forbidden('The repo is archived and read-only.', 'repo_archived');
}

/**
 * The repo uuids a list must keep to for this viewer (a token restricted to `repos`), or null
 * when the token is not restricted. Lists filtered by `namespaceReadFilter` add it themselves.
 */
export const tokenRepoFilter = (viewer: Viewer): readonly string[] | null => viewer.repos ?? null;

/**
 * Which of ONE namespace's repos the viewer may read, as a filter on plain columns: the
 * viewer's relation to the owner is the same for every repo there, so `repoReadableBy` reduces
 * to `all` (staff, the user themself, the team's maintainers and owners), `active` (the team's
 * members and readers: deactivated repos are hidden below maintain) or `public` (anyone else:
 * public, active repos; an inactive user owner is already 404 by `resolveOwner`). Each is served
 * by an index in the list's order (migration 080). The rule is `repoLevelFrom` (repo-level.ts).
 */
export async function namespaceReadFilter(
  db: Kysely<DB>,
  viewer: Viewer,
  owner: RepoOwner,
): Promise<'all' | 'active' | 'public'> {
  if (viewer.isStaff) return 'all';
  if (owner.kind === 'user') return owner.uuid === viewer.uuid ? 'all' : 'public';
  const level = repoLevelFrom(
    viewer,
    { owner_kind: 'team', owner_uuid: owner.uuid, visibility: 'private', is_active: 1 },
    await teamRole(db, viewer, owner.uuid),
    true,
  );
  if (levelAtLeast(level, 'maintain')) return 'all';
  return level === 'none' ? 'public' : 'active';
}

/**
 * The repo slug check (`GET …/check-repo-slug`) is for creating a repo: a token restricted to
 * repos creates none (requireRepoCreation), and the answer would tell it which slugs the repos
 * outside its list hold. 403 for such a token.
 */
export function assertMayCheckRepoSlugs(viewer: Viewer): void {
  if (viewer.repos) throw forbidden('A token restricted to repos cannot create repos, so it checks no repo slugs.');
}

/**
 * Who may create a repo in a namespace (docs/behaviour.md "Repos and forks"): a team's maintainers and owners (the team
 * is invisible, 404, to non-members; an inactive team refuses with 403 team_inactive), or the
 * user themself; staff anywhere.
 */
export async function requireRepoCreation(
  db: Kysely<DB>,
  viewer: Viewer,
  kind: 'team' | 'user',
  name: string,
): Promise<RepoOwner> {
  // a token restricted to repos reaches those only: a new repo would be outside them
  if (viewer.repos) throw forbidden('A token restricted to repos cannot create repos.');
  if (kind === 'team') {
    const { team } = await requireTeam(db, viewer, name, 'maintainer', { lock: 'share' });
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
 * Whether a user may open pulls on a repo under its public_repo_pull_policy (docs/behaviour.md "Repos and forks"), on
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

/** A repo's disk quota (`max_disk_bytes`) is set by staff only. */
export function assertCanSetDiskQuota(viewer: Viewer): void {
  if (!viewer.isStaff) throw forbidden('Only staff can change max_disk_bytes.');
}
