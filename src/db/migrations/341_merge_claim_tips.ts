import type { Kysely } from 'kysely';

/**
 * A merge claim also records, with the tip it is about to write (`merge_claim_sha`), the target
 * branch's tip it moves from (`merge_claim_before`, null when the branch is new) and the head it
 * merges (`merge_claim_head`), so the `branch-pushed` and `pull-merged` of a merge finished by
 * crash recovery carry them as a merge finished at once does (README "Events a CI can build from").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('pulls').addColumn('merge_claim_before', 'text').execute();
  await db.schema.alterTable('pulls').addColumn('merge_claim_head', 'text').execute();
}
