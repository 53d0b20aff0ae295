import type { Kysely } from 'kysely';

/**
 * The notification fan-out writes a large batch in chunks of recipients, each its own short
 * transaction (src/notifications/fanout.ts, docs/notifications.md "Bounded"): the cursor row keeps
 * where a batch in progress stands, so a restart resumes it after the last committed chunk
 * instead of fanning its first chunks out twice. `batch_end`: the last event of the batch in
 * progress (null: none); `done_user`: the last recipient (uuid, chunks go in uuid order) whose
 * notifications of that batch are written.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('notification_dispatch').addColumn('batch_end', 'bigint').execute();
  await db.schema.alterTable('notification_dispatch').addColumn('done_user', 'text').execute();
}
