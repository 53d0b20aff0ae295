import { type Kysely, sql } from 'kysely';

/**
 * A team's activity (the events of the team's scope and of its repos' scopes) becomes one index
 * range: each such event gets an `event_scopes` row keyed `team-activity:<team uuid>` (written by
 * src/events/service.ts from now on; README "Performance"). Existing events are indexed here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    insert into event_scopes (event_id, scope, kind)
    select s.event_id, 'team-activity:' || substr(s.scope, 6), s.kind from event_scopes s where s.scope like 'team:%'
    union
    select s.event_id, 'team-activity:' || r.owner_uuid, s.kind
      from repos r join event_scopes s on s.scope = 'repo:' || r.uuid
      where r.owner_kind = 'team'`.execute(db);
}
