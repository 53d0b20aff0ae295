import { type Kysely, sql } from 'kysely';

/**
 * Watchers' notifications written when they read (docs/notifications.md "Watchers read their
 * repos' activity"): the fan-out records each subject's latest activity once in `watch_activity`
 * (a row per thread, pull or run, whatever the number of watchers), and a watcher's inbox takes
 * what is new for it (`seq` past its `caught_up` on `repo_subscriptions`) into its own
 * notifications when it next reads them. `seq` is the fan-out's cursor after the batch that wrote
 * the activity (monotonic: batches are taken one at a time across instances); `caught_up` starts
 * at the cursor when a user starts watching (the repo's past is not news to them).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('watch_activity')
    .addColumn('subject_uuid', 'text', (c) => c.primaryKey())
    .addColumn('subject_kind', 'text', (c) => c.notNull())
    .addColumn('repo_uuid', 'text', (c) => c.notNull())
    .addColumn('event_id', 'bigint', (c) => c.notNull())
    .addColumn('actor_uuid', 'text')
    .addColumn('actor_username', 'text')
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('watch_activity_repo_seq').on('watch_activity').columns(['repo_uuid', 'seq']).execute();
  await db.schema
    .alterTable('repo_subscriptions')
    .addColumn('caught_up', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
  // today's watchers hold their notifications already (the fan-out wrote them): news from here on
  await sql`update repo_subscriptions set caught_up = (select last_event_id from notification_dispatch where id = 1)
    where exists (select 1 from notification_dispatch where id = 1)`.execute(db);
}
