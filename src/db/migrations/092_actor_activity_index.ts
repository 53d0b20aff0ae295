import { type Kysely, sql } from 'kysely';

/**
 * A user's activity by who may read it (src/events/actor-index.ts, README "Performance"): each
 * existing event with an actor gets its `actor:<actor>:<class>` rows, as src/events/service.ts
 * writes them for new events.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  // a repo's owner class, and `pub` for a public repo
  await sql`
    insert into event_scopes (event_id, scope, kind)
    select e.id, 'actor:' || e.actor_uuid || ':' || (case when r.owner_kind = 'team' then 't:' else 'u:' end) || r.owner_uuid, e.kind
      from repos r join event_scopes s on s.scope = 'repo:' || r.uuid join events e on e.id = s.event_id
      where e.actor_uuid is not null
    union
    select e.id, 'actor:' || e.actor_uuid || ':pub', e.kind
      from repos r join event_scopes s on s.scope = 'repo:' || r.uuid join events e on e.id = s.event_id
      where e.actor_uuid is not null and r.visibility = 'public'
    union
    select e.id, 'actor:' || e.actor_uuid || ':' || (case when s.scope like 'team:%' then 't:' else 'u:' end) || substr(s.scope, 6), e.kind
      from event_scopes s join events e on e.id = s.event_id
      where e.actor_uuid is not null and (s.scope like 'team:%' or s.scope like 'user:%')`.execute(db);
  // none of those: every caller scans it
  await sql`
    insert into event_scopes (event_id, scope, kind)
    select e.id, 'actor:' || e.actor_uuid || ':any', e.kind from events e
      where e.actor_uuid is not null
        and not exists (select 1 from event_scopes x where x.event_id = e.id and x.scope like 'actor:%')`.execute(db);
}
