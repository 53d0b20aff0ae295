import type { Kysely } from 'kysely';

/**
 * Auto-merge (docs/ci.md "Auto-merge"): at most one row per open pull, who turned it on, with
 * which strategy and when. The row goes when the pull merges or auto-merge is turned off.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('pull_auto_merges')
    .addColumn('pull_uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull())
    .addColumn('enabled_by_uuid', 'text', (c) => c.notNull())
    .addColumn('merge_strategy', 'text', (c) => c.notNull())
    .addColumn('enabled_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('pull_auto_merges_repo_idx').on('pull_auto_merges').column('repo_uuid').execute();
}
