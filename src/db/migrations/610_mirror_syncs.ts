import type { Kysely } from 'kysely';

/**
 * A pull mirror's sync history (docs/bring-in.md "Pull mirrors"): one row per sync that began
 * (the import's, a timed one with the due time of its `slot`, one on demand), with the instance
 * that ran it, when it ended (null: still running, or cut short by a crash) and what it did. The
 * newest 50 of a repo are kept.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mirror_syncs')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('slot', 'text')
    .addColumn('instance', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('finished_at', 'text')
    .addColumn('error', 'text')
    .addColumn('refs_moved', 'integer')
    .execute();
  await db.schema.createIndex('mirror_syncs_repo_idx').on('mirror_syncs').columns(['repo_uuid', 'started_at']).execute();
}
