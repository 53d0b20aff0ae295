import { type Kysely, sql } from 'kysely';

/**
 * Pulls from forks (README "Pulls from forks"): a pull names the repo its source branch lives in,
 * this repo or one of its fork network. Existing pulls are pulls inside their own repo. The index
 * finds the open pulls of a pushed branch (their kept heads `refs/pull/N/head` follow it).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('pulls').addColumn('source_repo_uuid', 'text').execute();
  await sql`update pulls set source_repo_uuid = repo_uuid`.execute(db);
  await db.schema
    .createIndex('pulls_source_branch_idx')
    .on('pulls')
    .columns(['source_repo_uuid', 'source_branch', 'status'])
    .execute();
}
