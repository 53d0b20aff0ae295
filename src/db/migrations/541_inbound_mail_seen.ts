import type { Kysely } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * Reply by mail exactly once (docs/notifications.md "Reply by mail"): the key of each inbound mail
 * that became a reply or a review (a hash of its Message-ID and the notification it answers),
 * written in the reply's own transaction, so a sender that sends again after a lost `250` answer
 * (the reply committed, the answer never arrived) finds it and nothing is posted twice.
 */
export async function up(db: Kysely<unknown>, _ctx: MigrationContext): Promise<void> {
  await db.schema
    .createTable('inbound_mail_seen')
    .addColumn('mail_key', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}
