/** Team access: who may see, manage and leave a team. Invisible teams are 404, never 403. */
import { type Kysely } from 'kysely';
import { type RowLock, withRowLock } from '../db/tx.ts';
import type { DB } from '../db/types.ts';
import { forbidden, notFound } from '../errors.ts';
import type { Viewer } from '../viewer.ts';
import { type TeamRow, type TeamRole, roleAtLeast, teamRole } from './levels.ts';
import { teamTwoFactorRefusal } from './two-factor.ts';

// ---------------------------------------------------------------- teams

export interface TeamAccess {
  team: TeamRow;
  /** the viewer's role; null for staff who are not members */
  role: TeamRole | null;
}

/**
 * A team is visible to its members and to staff; to anyone else it is 404. `min` is the role
 * the action needs (403 below it); staff pass every check. A write passes `lock` and its
 * transaction as `db`, so the team row and the viewer's membership cannot change under it.
 */
export async function requireTeam(
  db: Kysely<DB>,
  viewer: Viewer,
  slug: string,
  min: TeamRole = 'reader',
  opts: { lock?: RowLock; twoFactorExempt?: boolean } = {},
): Promise<TeamAccess> {
  const query = db.selectFrom('teams').selectAll().where('slug', '=', slug.toLowerCase());
  const team = await withRowLock(db, query, opts.lock).executeTakeFirst();
  if (!team) throw notFound('Team');
  const role = await teamRole(db, viewer, team.uuid, opts.lock);
  // a member without the second factor the team requires (leaving the team stays possible)
  const refused = opts.twoFactorExempt ? null : teamTwoFactorRefusal(viewer, team, role);
  if (refused) throw refused;
  if (viewer.isStaff) return { team, role };
  if (role === null) throw notFound('Team');
  if (!roleAtLeast(role, min)) throw forbidden(`This needs the ${min} role in the team.`);
  return { team, role };
}

/** Writes under an inactive team are refused (docs/behaviour.md "Teams and access"). */
export function assertTeamActive(team: TeamRow | null): void {
  if (team && team.is_active !== 1) throw forbidden('The team is inactive: its repos are read-only.', 'team_inactive');
}

/**
 * Team settings and membership changes: the team's owners and staff (403 below owner, 404 to
 * outsiders). An inactive team refuses them with 403 team_inactive unless the caller is staff,
 * who may still change it (and reactivate it).
 */
export async function requireTeamManager(db: Kysely<DB>, viewer: Viewer, slug: string): Promise<TeamAccess> {
  const access = await requireTeam(db, viewer, slug, 'owner', { lock: 'update' });
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
  const leaving = targetUserUuid !== null && targetUserUuid === viewer.uuid;
  const access = await requireTeam(db, viewer, slug, 'reader', { lock: 'update', twoFactorExempt: leaving });
  if (leaving && access.role !== null) return access;
  if (!viewer.isStaff && !roleAtLeast(access.role, 'owner')) throw forbidden('This needs the owner role in the team.');
  assertTeamManageable(access.team, viewer);
  return access;
}

/** Listing every team (not only one's own) is for staff. */
export function assertCanListAllTeams(viewer: Viewer): void {
  if (!viewer.isStaff) throw forbidden('Only staff can list every team.');
}

/**
 * Changing a team's settings: its owners and staff; only staff change `is_active`; an inactive
 * team's owners may not change it (staff may, and may reactivate it). Call inside the write's
 * transaction: the team row is locked for the update that follows.
 */
export async function requireTeamSettingsChange(
  db: Kysely<DB>,
  viewer: Viewer,
  slug: string,
  changes: { is_active?: unknown },
): Promise<TeamAccess> {
  const access = await requireTeam(db, viewer, slug, 'owner', { lock: 'update' });
  if (changes.is_active !== undefined && !viewer.isStaff) throw forbidden('Only staff can change is_active.');
  assertTeamManageable(access.team, viewer);
  return access;
}

/** Whether a (possibly anonymous) caller may see a team: its members and staff. */
export async function teamVisibleTo(db: Kysely<DB>, viewer: Viewer | null, team: TeamRow): Promise<boolean> {
  if (!viewer) return false;
  return viewer.isStaff || (await teamRole(db, viewer, team.uuid)) !== null;
}

/**
 * A team's CI secrets and variables (docs/ci.md "Secrets and variables"), at the team's maintain
 * level: the maintainer role (or owner; staff) reads a secret's names and writes secrets and
 * variables; any member reads variables. Writes lock the team row shared and are refused under
 * an inactive team (403 team_inactive), whose repos are read-only. `owner`: the team owner only
 * (a team runner's registration token, as the API documents).
 */
export async function requireTeamCiValues(
  db: Kysely<DB>,
  viewer: Viewer,
  slug: string,
  need: { secret: boolean; write: boolean; owner?: boolean },
): Promise<TeamAccess> {
  const min: TeamRole = need.owner ? 'owner' : need.write || need.secret ? 'maintainer' : 'reader';
  const access = await requireTeam(db, viewer, slug, min, need.write ? { lock: 'share' } : {});
  if (need.write) assertTeamActive(access.team);
  return access;
}
