/**
 * Webhook access (README "Webhooks"): a repo's hooks are for its maintainers (maintain level), a
 * team's for the team's owners, the site's for staff. A hook is reachable only through its own
 * scope. A hook sends only while its creator may still read that scope.
 */
import type { Kysely } from 'kysely';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { forbidden } from '../errors.ts';
import { canReadScope } from '../events/scopes.ts';
import type { RepoRef, Viewer } from '../viewer.ts';
import { itemWrite, requireRepo } from './repos.ts';
import { requireTeam, requireTeamManager } from './teams.ts';

export type HookScopeRef = { kind: 'repo'; repo: RepoRef } | { kind: 'team'; teamSlug: string } | { kind: 'site' };

export interface HookOwner {
  scope: 'repo' | 'team' | 'site';
  /** the repo or team uuid; null for the site */
  uuid: string | null;
  /** an archived repo, named by a change of one hook: refuse with `assertNotArchived` once the hook is found */
  archived?: true;
}

/**
 * The owner a hooks path names, when the viewer may manage its hooks. `write` (inside the
 * write's transaction) locks what it read: the repo row (refusing archived repos and inactive
 * teams) or the team row and the viewer's membership.
 */
export async function requireHookScope(
  db: Kysely<DB>,
  viewer: Viewer,
  ref: HookScopeRef,
  write: boolean,
  /** the write names one hook: an archived repo is refused after the hook is found (404 first) */
  item = false,
): Promise<HookOwner> {
  if (ref.kind === 'site') {
    if (!viewer.isStaff) throw forbidden('Only staff can manage site hooks.');
    return { scope: 'site', uuid: null };
  }
  if (ref.kind === 'team') {
    const { team } = write
      ? await requireTeamManager(db, viewer, ref.teamSlug)
      : await requireTeam(db, viewer, ref.teamSlug, 'owner');
    return { scope: 'team', uuid: team.uuid };
  }
  if (write && item) {
    const { repo } = await requireRepo(db, viewer, ref.repo, itemWrite({ level: 'maintain', write }));
    return { scope: 'repo', uuid: repo.uuid, ...(repo.is_archived === 1 ? { archived: true } : {}) };
  }
  const { repo } = await requireRepo(db, viewer, ref.repo, { level: 'maintain', write });
  return { scope: 'repo', uuid: repo.uuid };
}

/**
 * The hook's creator as a viewer, when they may still read the hook's scope (an active user who
 * reads the repo or the team; staff for a site hook); null when they lost that access.
 */
export async function hookCreator(
  deps: Deps,
  hook: { scope: string; owner_uuid: string | null; created_by_uuid: string },
): Promise<Viewer | null> {
  const user = await deps.db
    .selectFrom('users')
    .select(['uuid', 'username', 'is_staff', 'is_active'])
    .where('uuid', '=', hook.created_by_uuid)
    .executeTakeFirst();
  if (!user || user.is_active !== 1) return null;
  const viewer: Viewer = { uuid: user.uuid, username: user.username, isStaff: user.is_staff === 1, tokenUuid: '' };
  if (hook.scope === 'site') return viewer.isStaff ? viewer : null;
  return (await canReadScope(deps, viewer, `${hook.scope}:${hook.owner_uuid}`)) ? viewer : null;
}
