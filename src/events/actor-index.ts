/**
 * The index of a user's activity by who may read it (README "Performance", "Event privacy").
 *
 * Every event with an actor gets `event_scopes` rows keyed `actor:<actor uuid>:<class>`, one per
 * reader class of its scopes:
 *
 * - `pub`: a scope of a public repo (any signed-in user may read it);
 * - `t:<team uuid>`: a team scope, or a scope of a repo the team owns (its members);
 * - `u:<user uuid>`: a user scope, or a scope of a repo the user owns (that user);
 * - `any`: none of the above (an event whose scopes are all parts, such as a pull or a timer,
 *   without their repo or owner; none is recorded today): every caller scans these.
 *
 * A non-staff caller may read an event only through one of its scopes (its subject is one of them:
 * kinds.ts `assertDeclaredEvent`), and may read a scope only as a member of its class: a repo's
 * readers are its owner team's members or its owner user, or anyone when it is public; a team's
 * readers are its members; a user scope is that user's. So the caller's classes (`pub`, `any`,
 * `u:<self>`, `t:<each of their teams>`) select a superset of the events they may see, and the
 * event viewer (access/events.ts) still decides each one. An outsider's page of someone's
 * activity then reads only the index ranges of the classes they belong to, whatever the size of
 * the history they may not see.
 *
 * Classes are written with the event from the repo's visibility at that time; a repo made public
 * adds `pub` rows to its events, and one made private removes them (`reindexRepoVisibility`).
 * Repos never change owner, and team membership is read at request time, so nothing else moves.
 * These keys are no scope a client can name (GET /events answers 400) and never appear in an
 * event's `scopes`. (The live stream's `actor:UUID`, two parts where these have three, is the
 * caller's own actions as they happen: events/scopes.ts `parseStreamScope`, read by the events'
 * own index on their actor, not through these rows.)
 */
import { type Kysely, type Transaction, sql } from 'kysely';
import type { DB } from '../db/types.ts';
import type { Viewer } from '../viewer.ts';

export const ACTOR_KEY_PREFIX = 'actor:';

export const actorClassKey = (actorUuid: string, cls: string): string => `${ACTOR_KEY_PREFIX}${actorUuid}:${cls}`;

/** What `actorClasses` needs to know of a repo the event names. */
export interface RepoOwnerInfo {
  owner_kind: string;
  owner_uuid: string;
  visibility: string;
}

/** The reader classes of one event's scopes (see the module comment). */
export function actorClasses(scopes: string[], repos: Map<string, RepoOwnerInfo>): string[] {
  const classes = new Set<string>();
  for (const scope of scopes) {
    const colon = scope.indexOf(':');
    const kind = scope.slice(0, colon);
    const id = scope.slice(colon + 1);
    if (kind === 'team') classes.add(`t:${id}`);
    else if (kind === 'user') classes.add(`u:${id}`);
    else if (kind === 'repo') {
      const repo = repos.get(id);
      if (!repo) continue; // gone: nobody but staff reads it
      classes.add(`${repo.owner_kind === 'team' ? 't' : 'u'}:${repo.owner_uuid}`);
      if (repo.visibility === 'public') classes.add('pub');
    }
  }
  if (classes.size === 0) classes.add('any');
  return [...classes];
}

/** The index keys a non-staff caller reads of one actor's activity: the caller's classes. */
export async function callerActorKeys(db: Kysely<DB>, viewer: Viewer, actorUuid: string): Promise<string[]> {
  const teams = await db.selectFrom('team_members').select('team_uuid').where('user_uuid', '=', viewer.uuid).execute();
  return ['pub', 'any', `u:${viewer.uuid}`, ...teams.map((t) => `t:${t.team_uuid}`)].map((cls) => actorClassKey(actorUuid, cls));
}

/**
 * A repo's visibility changed: its events' `pub` rows follow. Made public: every event in the
 * repo's scope with an actor gains its `pub` row. Made private: they lose it, unless another of
 * the event's scopes is a public repo.
 */
export async function reindexRepoVisibility(db: Transaction<DB>, repoUuid: string, visibility: string): Promise<void> {
  const scope = `repo:${repoUuid}`;
  if (visibility === 'public') {
    await sql`
      insert into event_scopes (event_id, scope, kind)
      select e.id, ${ACTOR_KEY_PREFIX} || e.actor_uuid || ':pub', e.kind
      from event_scopes s join events e on e.id = s.event_id
      where s.scope = ${scope} and e.actor_uuid is not null
      on conflict do nothing`.execute(db);
    return;
  }
  await sql`
    delete from event_scopes
    where (scope, event_id) in (
      select ${ACTOR_KEY_PREFIX} || e.actor_uuid || ':pub', e.id
      from event_scopes s join events e on e.id = s.event_id
      where s.scope = ${scope} and e.actor_uuid is not null
        and not exists (
          select 1 from event_scopes o join repos r on r.uuid = substr(o.scope, 6)
          where o.event_id = e.id and o.scope like 'repo:%' and r.uuid <> ${repoUuid} and r.visibility = 'public'))`.execute(db);
}
