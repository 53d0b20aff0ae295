import { type Kysely, sql } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * Lists read their page's keys from an index in the list's order (README "Performance").
 *
 * A non-staff caller's `GET /teams` is ordered by the TEAM's created_at, uuid: a member row now
 * carries its team's created_at (`team_created_at`, written with the row; a team's created_at
 * never changes), so the caller's page of team uuids is one range of the index below instead of
 * a sort of all the caller's teams. Filled here from `teams.created_at`; NOT NULL on PostgreSQL
 * (SQLite cannot add a NOT NULL column without a default: the column is always written there).
 * The old (user_uuid) index is a prefix of the new one.
 *
 * A repo's forks: the index also holds the fork repo's uuid, so the page's keys (filtered by
 * the caller's read access on the joined repo) are read from index entries, never fork rows.
 */
const INDEXES: Array<[name: string, table: string, columns: string[]]> = [
  ['team_members_user_team_order_idx', 'team_members', ['user_uuid', 'team_created_at', 'team_uuid']],
  ['forks_source_keys_idx', 'forks', ['source_repo_uuid', 'created_at', 'uuid', 'repo_uuid']],
];

/** Superseded: each is a prefix of one above. */
const DROPPED = ['team_members_user_idx', 'forks_source_list_idx'];

export async function up(db: Kysely<unknown>, ctx: MigrationContext): Promise<void> {
  await db.schema.alterTable('team_members').addColumn('team_created_at', 'text').execute();
  await sql`update team_members set team_created_at = (select t.created_at from teams t where t.uuid = team_members.team_uuid)`.execute(
    db,
  );
  if (ctx.dialect === 'postgres') {
    await db.schema
      .alterTable('team_members')
      .alterColumn('team_created_at', (c) => c.setNotNull())
      .execute();
  }
  for (const [name, table, columns] of INDEXES) await db.schema.createIndex(name).on(table).columns(columns).execute();
  for (const name of DROPPED) await db.schema.dropIndex(name).execute();
}
