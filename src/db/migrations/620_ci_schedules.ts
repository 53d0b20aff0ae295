import type { Kysely } from 'kysely';

/**
 * `schedule` triggers of CI workflows (docs/ci.md "Schedules"): one row per workflow file of a
 * repo's default branch that has `on.schedule`, written when a push moves the default branch.
 * `crons`: the file's cron texts (JSON list); `next_at`: the slot whose job is queued, the token a
 * firing takes with a conditional update, so a slot makes one run across instances; `last_slot`:
 * the slot of the last run; `actor_uuid`: the user whose push last changed the schedule.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('ci_schedules')
    .addColumn('repo_uuid', 'text', (c) => c.notNull())
    .addColumn('workflow_path', 'text', (c) => c.notNull())
    .addColumn('crons', 'text', (c) => c.notNull())
    .addColumn('actor_uuid', 'text', (c) => c.notNull())
    .addColumn('next_at', 'text')
    .addColumn('last_slot', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('ci_schedules_pk', ['repo_uuid', 'workflow_path'])
    .execute();
}
