import type { Kysely } from 'kysely';

/** Timers in four scopes (src/timers). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('timers')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('owner_uuid', 'text', (c) => c.notNull())
    .addColumn('created_by_uuid', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('schedule_kind', 'text', (c) => c.notNull())
    .addColumn('run_at', 'text')
    .addColumn('every_seconds', 'integer')
    .addColumn('time_of_day', 'text', (c) => c.notNull())
    .addColumn('days_of_week', 'text', (c) => c.notNull())
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('next_run_at', 'text', (c) => c.notNull())
    .addColumn('last_run_at', 'text')
    .addColumn('run_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  // The scheduler's one question: the active timers due first.
  await db.schema.createIndex('timers_due_idx').on('timers').columns(['status', 'next_run_at']).execute();
  await db.schema.createIndex('timers_owner_idx').on('timers').columns(['scope', 'owner_uuid', 'created_at']).execute();
}
