import type { Kysely } from 'kysely';

/**
 * README "Webhooks": a delivery written while its hook was disabled is `skipped` and says why
 * (`skip_reason`: failures or gone), so a bulk redelivery can send it later; a hook keeps every
 * retired secret still inside its 24-hour overlap (`retired_secrets`, JSON `[{secret, until}]`,
 * beside `previous_secret`), so a second rotation within a day drops none. The sweep finds due
 * retries whose job has ended (src/hooks/sender.ts) through `(status, next_attempt_at)`.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('hook_deliveries').addColumn('skip_reason', 'text').execute();
  await db.schema
    .alterTable('hooks')
    .addColumn('retired_secrets', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
  await db.schema.createIndex('hook_deliveries_due_idx').on('hook_deliveries').columns(['status', 'next_attempt_at']).execute();
}
