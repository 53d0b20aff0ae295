import { type Kysely, sql } from 'kysely';

/**
 * Notifications (docs/notifications.md): one row per (user, subject) written by the fan-out
 * (src/notifications/fanout.ts), which follows the event store from the cursor in
 * `notification_dispatch` and moves it in the transaction that writes the rows; the repo watch
 * levels and the per-thread/pull subscriptions that decide who is concerned.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('notifications')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('user_uuid', 'text', (c) => c.notNull())
    .addColumn('subject_kind', 'text', (c) => c.notNull())
    .addColumn('subject_uuid', 'text', (c) => c.notNull())
    .addColumn('repo_uuid', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('reasons', 'text', (c) => c.notNull())
    .addColumn('unread', 'integer', (c) => c.notNull())
    .addColumn('done', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('last_event_id', 'bigint', (c) => c.notNull())
    .addColumn('last_actor_uuid', 'text')
    .addColumn('last_actor_username', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('notifications_user_subject')
    .on('notifications')
    .columns(['user_uuid', 'subject_uuid'])
    .unique()
    .execute();
  // the inbox: a user's rows newest first (O(page))
  await db.schema
    .createIndex('notifications_user_updated')
    .on('notifications')
    .columns(['user_uuid', 'updated_at', 'uuid'])
    .execute();

  await db.schema
    .createTable('notification_dispatch')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('last_event_id', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into notification_dispatch (id, last_event_id) select 1, coalesce(max(id), 0) from events`.execute(db);

  await db.schema
    .createTable('repo_subscriptions')
    .addColumn('user_uuid', 'text', (c) => c.notNull())
    .addColumn('repo_uuid', 'text', (c) => c.notNull())
    .addColumn('level', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('repo_subscriptions_pk', ['user_uuid', 'repo_uuid'])
    .execute();
  await db.schema.createIndex('repo_subscriptions_repo').on('repo_subscriptions').columns(['repo_uuid', 'level']).execute();

  await db.schema
    .createTable('subject_subscriptions')
    .addColumn('user_uuid', 'text', (c) => c.notNull())
    .addColumn('subject_uuid', 'text', (c) => c.notNull())
    .addColumn('subscribed', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('subject_subscriptions_pk', ['user_uuid', 'subject_uuid'])
    .execute();
  await db.schema.createIndex('subject_subscriptions_subject').on('subject_subscriptions').columns(['subject_uuid']).execute();
}
