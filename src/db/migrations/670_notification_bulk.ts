import type { Kysely } from 'kysely';

/**
 * The set-based fan-out (src/notifications/fanout.ts, docs/notifications.md "Bounded"): a
 * subject's notifications by user (the holders of one subject in a range of users, updated in
 * one statement) and a repo's watchers in user order (the ranges a large batch is cut in, and
 * the watchers of one range read from the index alone).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('notifications_subject_user').on('notifications').columns(['subject_uuid', 'user_uuid']).execute();
  await db.schema
    .createIndex('repo_subscriptions_repo_level_user')
    .on('repo_subscriptions')
    .columns(['repo_uuid', 'level', 'user_uuid'])
    .execute();
  await db.schema.dropIndex('repo_subscriptions_repo').execute();
}
