import type { Kysely } from 'kysely';

/**
 * Storage hardening (README "Storage lifetimes and crash recovery"):
 * - `blob_holds`: pending references to upload blobs, so a refused twin never deletes the bytes
 *   of an upload about to commit;
 * - `git_push_records`: pushes already recorded, so a push marker left by a crash is recorded
 *   exactly once;
 * - `pulls.merge_claim_instance`: which instance holds a merge claim; a claim whose instance no
 *   longer holds its lease is recovered at once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('blob_holds')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('blob_holds_sha_idx').on('blob_holds').column('sha256').execute();
  await db.schema
    .createTable('git_push_records')
    .addColumn('push_id', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('pulls').addColumn('merge_claim_instance', 'text').execute();
}
