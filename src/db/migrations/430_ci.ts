import type { Kysely } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * CI (docs/ci.md): runs (one per workflow and event, numbered per repo), their jobs (one per
 * matrix combination; the claim reads `ci_jobs_queue_idx`), runners and their single-use
 * registration tokens (stored hashed).
 */
export async function up(db: Kysely<unknown>, ctx: MigrationContext): Promise<void> {
  await db.schema
    .createTable('ci_runs')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('workflow_path', 'text', (c) => c.notNull())
    .addColumn('workflow_name', 'text', (c) => c.notNull())
    .addColumn('event', 'text', (c) => c.notNull())
    .addColumn('ref', 'text', (c) => c.notNull())
    .addColumn('head_sha', 'text', (c) => c.notNull())
    .addColumn('head_branch', 'text')
    .addColumn('pull_number', 'integer')
    .addColumn('actor_uuid', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('conclusion', 'text')
    .addColumn('attempt', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('fork', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('inputs', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('workflow_json', 'text')
    .addColumn('error', 'text')
    .addColumn('concurrency_group', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('completed_at', 'text')
    .addUniqueConstraint('ci_runs_repo_number_uq', ['repo_uuid', 'number'])
    .execute();
  await db.schema.createIndex('ci_runs_group_idx').on('ci_runs').columns(['repo_uuid', 'concurrency_group', 'status']).execute();

  await db.schema
    .createTable('ci_jobs')
    .addColumn('id', ctx.dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
      ctx.dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('run_uuid', 'text', (c) => c.notNull().references('ci_runs.uuid').onDelete('cascade'))
    .addColumn('repo_uuid', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('job_key', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('context', 'text', (c) => c.notNull())
    .addColumn('matrix', 'text')
    .addColumn('needs', 'text', (c) => c.notNull())
    .addColumn('runs_on', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('conclusion', 'text')
    .addColumn('runner_uuid', 'text')
    .addColumn('runner_name', 'text')
    .addColumn('timeout_minutes', 'integer', (c) => c.notNull())
    .addColumn('token_uuid', 'text')
    .addColumn('log_bytes', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('outputs', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('steps', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('completed_at', 'text')
    .execute();
  await db.schema.createIndex('ci_jobs_queue_idx').on('ci_jobs').columns(['status', 'id']).execute();
  await db.schema.createIndex('ci_jobs_run_idx').on('ci_jobs').columns(['run_uuid', 'id']).execute();
  await db.schema.createIndex('ci_jobs_runner_idx').on('ci_jobs').columns(['runner_uuid', 'status']).execute();

  // a job's log: chunks as the runner sent them, each at its byte offset (a retried upload is a no-op)
  await db.schema
    .createTable('ci_log_chunks')
    .addColumn('job_uuid', 'text', (c) => c.notNull().references('ci_jobs.uuid').onDelete('cascade'))
    .addColumn('start_offset', 'integer', (c) => c.notNull())
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('ci_log_chunks_pk', ['job_uuid', 'start_offset'])
    .execute();

  await db.schema
    .createTable('ci_runners')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('labels', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('scope_uuid', 'text')
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('capacity', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('last_seen_at', 'text', (c) => c.notNull())
    .addColumn('created_by_uuid', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('ci_registration_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('scope_uuid', 'text')
    .addColumn('created_by_uuid', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
}
