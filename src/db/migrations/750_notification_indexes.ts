import type { Kysely } from 'kysely';

/**
 * Fewer index entries per fan-out update (docs/notifications.md "Bounded", bench/README.md
 * "Fewer index entries"): every update of a notification changes `updated_at`, which the inbox's
 * ordering index holds, so PostgreSQL writes a new row version with an entry in every index of
 * the table. `(user_uuid, subject_uuid)` (unique) and `(subject_uuid, user_uuid)` held the same
 * pairs: one unique index on `(subject_uuid, user_uuid)` serves both (the upserts' conflict
 * target `(user_uuid, subject_uuid)` names its columns, in any order, on both databases; a
 * (user, subject) lookup reads it as well; a user's rows are read from the inbox's index). Three
 * indexes instead of four: the primary key, the inbox's `(user_uuid, updated_at, uuid)` and this.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('notifications_subject_user_unique')
    .on('notifications')
    .columns(['subject_uuid', 'user_uuid'])
    .unique()
    .execute();
  await db.schema.dropIndex('notifications_user_subject').execute();
  await db.schema.dropIndex('notifications_subject_user').execute();
}
