import { type Kysely, sql } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * Requiring a second factor (docs/signin.md "Requiring it"):
 *
 * - `teams.require_two_factor` (team owners) and `site_settings.require_two_factor` (staff);
 * - `users.has_two_factor`: 1 while the user has an active second factor (a confirmed TOTP), kept
 *   by the two-factor service, so the token and session lookups read it with the user's row;
 * - `web_sessions.two_factor`: 1 when the session was started through a sign-in source that
 *   satisfies the second factor (`satisfies_two_factor`).
 */
export async function up(db: Kysely<unknown>, _ctx: MigrationContext): Promise<void> {
  await db.schema
    .alterTable('teams')
    .addColumn('require_two_factor', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('site_settings')
    .addColumn('require_two_factor', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('users')
    .addColumn('has_two_factor', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('web_sessions')
    .addColumn('two_factor', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update users set has_two_factor = 1 where exists (select 1 from user_totp t where t.user_uuid = users.uuid and t.confirmed_at is not null)`.execute(
    db,
  );
}
