import { type Kysely, sql } from 'kysely';

/**
 * Event pages read through the scope index in id order (README "Performance"). The event's kind
 * is copied beside each of its scopes, so `GET /events?scope=…&kind=…` and the live stream's
 * replay read exactly a page of index entries even when the kind is rare or absent in the scope;
 * without it a kind filter walked every event of the scope. Existing rows are filled from
 * `events.kind`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('event_scopes').addColumn('kind', 'text').execute();
  await sql`update event_scopes set kind = (select e.kind from events e where e.id = event_scopes.event_id)`.execute(db);
  await db.schema.createIndex('event_scopes_kind_idx').on('event_scopes').columns(['scope', 'kind', 'event_id']).execute();
}
