import type { Kysely } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * Commit statuses and required checks (README "Commit statuses and required checks"). `id`
 * orders a commit's statuses (the latest per context wins, even within one millisecond). The
 * combined status of a commit reads the latest id of each context from (repo_uuid, sha,
 * context, id): one index-only scan, whatever the number of statuses; the list pages over
 * (repo_uuid, sha, id). A protection lists the contexts it requires (a JSON array).
 */
export async function up(db: Kysely<unknown>, ctx: MigrationContext): Promise<void> {
  await db.schema
    .createTable('commit_statuses')
    .addColumn('id', ctx.dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
      ctx.dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('sha', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('context', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('target_url', 'text')
    .addColumn('creator_uuid', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('commit_statuses_context_idx')
    .on('commit_statuses')
    .columns(['repo_uuid', 'sha', 'context', 'id'])
    .execute();
  await db.schema.createIndex('commit_statuses_list_idx').on('commit_statuses').columns(['repo_uuid', 'sha', 'id']).execute();
  await db.schema
    .alterTable('protections')
    .addColumn('required_status_contexts', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
}
