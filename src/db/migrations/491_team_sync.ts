import type { Kysely } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * Group sync (docs/signin.md "Group sync"): `team_members.origin` ("manual" or "sync"; sync
 * changes only its own), and `team_sync_rules`: a group of a sign-in source gives a team role.
 */
export async function up(db: Kysely<unknown>, _ctx: MigrationContext): Promise<void> {
  await db.schema
    .alterTable('team_members')
    .addColumn('origin', 'text', (c) => c.notNull().defaultTo('manual'))
    .execute();
  await db.schema
    .createTable('team_sync_rules')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('team_uuid', 'text', (c) => c.notNull().references('teams.uuid').onDelete('cascade'))
    .addColumn('source_uuid', 'text', (c) => c.notNull().references('auth_sources.uuid').onDelete('cascade'))
    .addColumn('group_name', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('team_sync_rules_unique', ['team_uuid', 'source_uuid', 'group_name', 'role'])
    .execute();
  await db.schema.createIndex('team_sync_rules_source_idx').on('team_sync_rules').columns(['source_uuid']).execute();
}
