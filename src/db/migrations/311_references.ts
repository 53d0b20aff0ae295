import type { Kysely } from 'kysely';

/**
 * References between threads, pulls, replies, reviews and commits (README "Issue tracker"): one
 * row per (source, target), so a source edited or a commit pushed again to another branch makes
 * its `referenced` entry once. `source_key` names the source (`thread:<uuid>`, `commit:<repo>:<sha>`, ...).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('item_references')
    .addColumn('source_key', 'text', (c) => c.notNull())
    .addColumn('target_uuid', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('item_references_pk', ['source_key', 'target_uuid'])
    .execute();
}
