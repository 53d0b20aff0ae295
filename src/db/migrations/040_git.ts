import type { Kysely } from 'kysely';

/**
 * Real git (src/git/): a merge claims its pull (`merge_pending`, `merge_claimed_at`), runs git
 * outside any transaction, records the new tip it is about to write (`merge_claim_sha`), then
 * finishes. A claim left by a crash is recovered from these columns and the branch itself.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('pulls')
    .addColumn('merge_pending', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('pulls').addColumn('merge_claimed_at', 'text').execute();
  await db.schema.alterTable('pulls').addColumn('merge_claim_sha', 'text').execute();
}
