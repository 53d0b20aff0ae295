import { requireTeam } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { sql } from 'kysely';
import { callerActorKeys } from '../events/actor-index.ts';
import { type FeedWindow, type ScanRow, visibleEventsNewestFirst } from './feed.ts';
import { readableBound } from '../events/order.ts';
import { type EventRecord, eventFromRow, teamActivityKey } from '../events/service.ts';
import { getUser } from '../users/service.ts';
import type { Viewer } from '../viewer.ts';

export { FEED_SCAN_BUDGET, type FeedWindow, MAX_FEED_DEPTH, assertFeedDepth } from './feed.ts';

export interface Window {
  offset: number;
  limit: number;
  /** only events with a smaller id (the `before_id` cursor); null: from the newest */
  beforeId?: number | null;
}

/**
 * docs/behaviour.md "Teams and access": events in the team's scope and in the scopes of the repos it owns now, newest
 * first; members and staff only (404 to anyone else). Each event passes the caller's event viewer
 * (README "Event privacy"): an event about a repo the caller may not read (a deactivated repo,
 * below maintain level) is left out even though it carries the team's scope, and what else it
 * names that the caller may not read is set to null.
 */
export async function teamActivity(deps: Deps, viewer: Viewer, teamSlug: string, page: Window): Promise<FeedWindow> {
  const { team } = await requireTeam(deps.db, viewer, teamSlug);
  const settled = await readableBound(deps.db, deps.dialect);
  const scanBatch = async (beforeId: number | null, size: number): Promise<ScanRow[]> => {
    // One index range: the team's activity key (events/service.ts writeScopeRows); the ids from
    // the index alone (a subquery with its own limit), then their rows by id (a join under the
    // range could read every newer event row: README "Performance").
    let q = deps.db.selectFrom('event_scopes').select('event_id').where('scope', '=', teamActivityKey(team.uuid));
    if (beforeId !== null) q = q.where('event_id', '<', beforeId);
    if (settled !== null) q = q.where('event_id', '<', settled);
    return deps.db
      .selectFrom('events')
      .select(['id', 'scopes'])
      .where('id', 'in', q.orderBy('event_id', 'desc').limit(size))
      .orderBy('id', 'desc')
      .execute();
  };
  return visibleEventsNewestFirst(deps, viewer, scanBatch, (ids) => loadEvents(deps, ids), page);
}

/** The most index ranges one user-activity page merges (the caller's classes). */
export const MAX_MERGED_RANGES = 64;

/** The ids and scopes of some events, newest first (a feed's scan). */
async function scanRows(deps: Deps, ids: number[]): Promise<ScanRow[]> {
  if (ids.length === 0) return [];
  return deps.db.selectFrom('events').select(['id', 'scopes']).where('id', 'in', ids).orderBy('id', 'desc').execute();
}

/** Full events by id (the rows a feed's scan found the caller may see). */
async function loadEvents(deps: Deps, ids: number[]): Promise<EventRecord[]> {
  return (await deps.db.selectFrom('events').selectAll().where('id', 'in', ids).execute()).map(eventFromRow);
}

/**
 * docs/behaviour.md "Users and tokens": events whose actor is the user and that the caller may see (README "Event
 * privacy"), newest first. An unknown user, or an inactive one for non-staff, is 404.
 *
 * Staff may see nearly every event, so their scan walks the actor's events. Anyone else reads only
 * the actor's activity index ranges of the classes of callers they belong to (events/actor-index.ts),
 * merged newest first: a superset of what they may see, which the event viewer then decides, so an
 * outsider's page costs a few index seeks whatever the size of the history hidden from them.
 */
export async function userActivity(deps: Deps, viewer: Viewer, username: string, page: Window): Promise<FeedWindow> {
  const user = await getUser(deps, viewer, username);
  const settled = await readableBound(deps.db, deps.dialect);
  const load = (ids: number[]) => loadEvents(deps, ids);
  // Staff, and a caller in very many teams (one range per team: SQLite allows at most 500 terms in
  // a compound select), scan the actor's events instead; the viewer decides each event either way.
  const keys = viewer.isStaff ? [] : await callerActorKeys(deps.db, viewer, user.uuid);
  if (viewer.isStaff || keys.length > MAX_MERGED_RANGES) {
    // The scan reads ids and scopes; full rows only of the events the caller may see (feed.ts).
    const scanBatch = async (beforeId: number | null, size: number) => {
      let q = deps.db.selectFrom('events').select(['id', 'scopes']).where('actor_uuid', '=', user.uuid);
      if (beforeId !== null) q = q.where('id', '<', beforeId);
      if (settled !== null) q = q.where('id', '<', settled);
      return q.orderBy('id', 'desc').limit(size).execute();
    };
    return visibleEventsNewestFirst(deps, viewer, scanBatch, load, page);
  }
  const scanBatch = async (beforeId: number | null, size: number): Promise<ScanRow[]> => {
    const bound = Math.min(beforeId ?? Number.MAX_SAFE_INTEGER, settled ?? Number.MAX_SAFE_INTEGER);
    // each class's range read newest first and bounded, then merged: never a sort of a whole range
    const ranges = keys.map(
      (key, i) =>
        sql`select event_id from (select event_id from event_scopes where scope = ${key} and event_id < ${bound} order by event_id desc limit ${size}) as ${sql.raw(`r${i}`)}`,
    );
    const ids = await sql<{
      event_id: number | string;
    }>`${sql.join(ranges, sql` union `)} order by event_id desc limit ${size}`.execute(deps.db);
    return scanRows(
      deps,
      ids.rows.map((r) => Number(r.event_id)),
    );
  };
  return visibleEventsNewestFirst(deps, viewer, scanBatch, load, page);
}
