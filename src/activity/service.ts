import { requireTeam } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { visibleEventsNewestFirst } from '../events/feed.ts';
import { readableBound } from '../events/order.ts';
import { type EventRecord, eventFromRow, teamActivityKey } from '../events/service.ts';
import { getUser } from '../users/service.ts';
import type { Viewer } from '../viewer.ts';

export interface Window {
  offset: number;
  limit: number;
}

/**
 * docs/behaviour.md "Teams and access": events in the team's scope and in the scopes of the repos it owns now, newest
 * first; members and staff only (404 to anyone else). Each event passes the caller's event viewer
 * (README "Event privacy"): an event about a repo the caller may not read (a deactivated repo,
 * below maintain level) is left out even though it carries the team's scope, and what else it
 * names that the caller may not read is set to null.
 */
export async function teamActivity(deps: Deps, viewer: Viewer, teamSlug: string, page: Window): Promise<EventRecord[]> {
  const { team } = await requireTeam(deps.db, viewer, teamSlug);
  const settled = await readableBound(deps.db, deps.dialect);
  const scanBatch = async (beforeId: number | null, size: number) => {
    // One index range: the team's activity key (events/service.ts writeScopeRows).
    let q = deps.db
      .selectFrom('event_scopes as s')
      .innerJoin('events as e', 'e.id', 's.event_id')
      .select(['e.id', 'e.scopes'])
      .where('s.scope', '=', teamActivityKey(team.uuid));
    if (beforeId !== null) q = q.where('s.event_id', '<', beforeId);
    if (settled !== null) q = q.where('s.event_id', '<', settled);
    return q.orderBy('s.event_id', 'desc').limit(size).execute();
  };
  return visibleEventsNewestFirst(deps, viewer, scanBatch, (ids) => loadEvents(deps, ids), page.offset, page.limit);
}

/** Full events by id (the rows a feed's scan found the caller may see). */
async function loadEvents(deps: Deps, ids: number[]): Promise<EventRecord[]> {
  return (await deps.db.selectFrom('events').selectAll().where('id', 'in', ids).execute()).map(eventFromRow);
}

/**
 * docs/behaviour.md "Users and tokens": events whose actor is the user and that the caller may see (README "Event
 * privacy"), newest first. An unknown user, or an inactive one for non-staff, is 404.
 */
export async function userActivity(deps: Deps, viewer: Viewer, username: string, page: Window): Promise<EventRecord[]> {
  const user = await getUser(deps, viewer, username);
  const settled = await readableBound(deps.db, deps.dialect);
  // The scan reads ids and scopes; full rows only of the events the caller may see (feed.ts).
  const scanBatch = async (beforeId: number | null, size: number) => {
    let q = deps.db.selectFrom('events').select(['id', 'scopes']).where('actor_uuid', '=', user.uuid);
    if (beforeId !== null) q = q.where('id', '<', beforeId);
    if (settled !== null) q = q.where('id', '<', settled);
    return q.orderBy('id', 'desc').limit(size).execute();
  };
  return visibleEventsNewestFirst(deps, viewer, scanBatch, (ids) => loadEvents(deps, ids), page.offset, page.limit);
}
