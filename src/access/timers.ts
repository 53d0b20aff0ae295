/**
 * Timer access (README "Timers"): a user's timers are private to that user; a team's timers are
 * for the team's owners (403 to other members, 404 to outsiders); a repo's timers are read with
 * read access and managed at maintain level. A timer is reachable only through its owning scope.
 */
import type { Kysely } from 'kysely';
import type { DB } from '../db/types.ts';
import { notFound } from '../errors.ts';
import type { Viewer } from '../viewer.ts';
import { levelAtLeast, roleAtLeast, teamRole } from './levels.ts';
import { type RepoRef, itemWrite, repoAccessLevel, requireRepo } from './repos.ts';
import { assertTeamManageable, requireTeam } from './teams.ts';

export type TimerScopeRef =
  { kind: 'user'; username: string } | { kind: 'team'; teamSlug: string } | { kind: 'repo'; repo: RepoRef };

export interface TimerOwner {
  scope: 'user' | 'team' | 'repo';
  uuid: string;
  /** an archived repo, named by a change of one timer: refuse with `assertNotArchived` once the timer is found */
  archived?: true;
}

/**
 * The owner a timer path names, when the viewer may read (`manage: false`) or change
 * (`manage: true`) its timers. Another user's timers are 404, staff included: they are private.
 * Changing a team's timers under an inactive team is 403 team_inactive (staff excepted); a repo's
 * under an archived repo 403 repo_archived.
 */
export async function requireTimerScope(
  db: Kysely<DB>,
  viewer: Viewer,
  ref: TimerScopeRef,
  manage: boolean,
  /** the request names one timer: another user's is "Timer not found.", as an unknown one is */
  item = false,
): Promise<TimerOwner> {
  if (ref.kind === 'user') {
    const user = await db
      .selectFrom('users')
      .select(['uuid', 'is_active'])
      .where('username', '=', ref.username.toLowerCase())
      .executeTakeFirst();
    if (!user || user.uuid !== viewer.uuid) throw notFound(item && user ? 'Timer' : 'User');
    return { scope: 'user', uuid: user.uuid };
  }
  if (ref.kind === 'team') {
    const { team } = await requireTeam(db, viewer, ref.teamSlug, 'owner');
    if (manage) assertTeamManageable(team, viewer);
    return { scope: 'team', uuid: team.uuid };
  }
  if (manage && item) {
    // one timer: a missing one is 404 before 403 repo_archived (the caller checks `archived` after its lookup)
    const { repo } = await requireRepo(db, viewer, ref.repo, itemWrite({ level: 'maintain', write: true }));
    return { scope: 'repo', uuid: repo.uuid, ...(repo.is_archived === 1 ? { archived: true } : {}) };
  }
  const { repo } = await requireRepo(db, viewer, ref.repo, manage ? { level: 'maintain', write: true } : { level: 'read' });
  return { scope: 'repo', uuid: repo.uuid };
}

/** Who may read a `timer:<uuid>` event scope: whoever may read the timer through its owning scope. */
export async function timerReadable(db: Kysely<DB>, viewer: Viewer, timerUuid: string): Promise<boolean> {
  const timer = await db.selectFrom('timers').select(['scope', 'owner_uuid']).where('uuid', '=', timerUuid).executeTakeFirst();
  if (!timer) return false;
  if (timer.scope === 'user') return timer.owner_uuid === viewer.uuid;
  if (timer.scope === 'team') {
    const team = await db.selectFrom('teams').select('uuid').where('uuid', '=', timer.owner_uuid).executeTakeFirst();
    return team !== undefined && (viewer.isStaff || roleAtLeast(await teamRole(db, viewer, team.uuid), 'owner'));
  }
  const repo = await db.selectFrom('repos').selectAll().where('uuid', '=', timer.owner_uuid).executeTakeFirst();
  return repo !== undefined && levelAtLeast(await repoAccessLevel(db, viewer, repo), 'read');
}

/**
 * Whether a timer's owner can still receive firings: an active user, an active team, an
 * existing repo. 'gone' means the owner no longer exists at all (a deleted repo).
 */
export type TimerOwnerState = 'ok' | 'inactive' | 'gone';

/** The states of the owners of a batch of due timers, keyed `scope:owner_uuid`, in at most three queries. */
export async function timerOwnerStates(
  db: Kysely<DB>,
  owners: { scope: string; owner_uuid: string }[],
): Promise<Map<string, TimerOwnerState>> {
  const states = new Map<string, TimerOwnerState>();
  const of = (scope: string) => [...new Set(owners.filter((o) => o.scope === scope).map((o) => o.owner_uuid))];
  const users = of('user');
  const teams = of('team');
  const repos = of('repo');
  for (const o of owners) states.set(`${o.scope}:${o.owner_uuid}`, 'gone');
  if (users.length) {
    const rows = await db.selectFrom('users').select(['uuid', 'is_active']).where('uuid', 'in', users).execute();
    for (const r of rows) states.set(`user:${r.uuid}`, r.is_active === 1 ? 'ok' : 'inactive');
  }
  if (teams.length) {
    const rows = await db.selectFrom('teams').select(['uuid', 'is_active']).where('uuid', 'in', teams).execute();
    for (const r of rows) states.set(`team:${r.uuid}`, r.is_active === 1 ? 'ok' : 'inactive');
  }
  if (repos.length) {
    const rows = await db.selectFrom('repos').select('uuid').where('uuid', 'in', repos).execute();
    for (const r of rows) states.set(`repo:${r.uuid}`, 'ok');
  }
  return states;
}
