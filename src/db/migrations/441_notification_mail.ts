import type { Kysely } from 'kysely';

/**
 * Notification mail (docs/notifications.md "Mail"): each user's mail settings (kept beside the
 * user record, so the hot user reads stay as they are), and per notification the last event a
 * mail already told of.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('user_mail_settings')
    .addColumn('user_uuid', 'text', (c) => c.primaryKey())
    .addColumn('email_notifications', 'text', (c) => c.notNull().defaultTo('instant'))
    .addColumn('timezone', 'text', (c) => c.notNull().defaultTo('UTC'))
    .addColumn('email_bouncing', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('bounce_detail', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .alterTable('notifications')
    .addColumn('mailed_event_id', 'bigint', (c) => c.notNull().defaultTo(0))
    .execute();
}
