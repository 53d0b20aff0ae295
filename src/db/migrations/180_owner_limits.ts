import type { Kysely } from 'kysely';

/**
 * Per-owner limits on what a user can make without bound (README "Limits"): unfinished (active
 * or paused) timers per owner, and versions per reply. Site settings, so staff can change them;
 * the defaults are far above what a real team makes. (An owner's timers by status are counted
 * from timers_owner_status_list_idx.)
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('site_settings')
    .addColumn('max_timers_per_owner', 'integer', (c) => c.notNull().defaultTo(1000))
    .execute();
  await db.schema
    .alterTable('site_settings')
    .addColumn('max_reply_versions', 'integer', (c) => c.notNull().defaultTo(1000))
    .execute();
}
