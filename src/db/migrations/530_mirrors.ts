import type { Kysely } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * Imports and mirrors (docs/bring-in.md): `repo_imports` holds a repo's source (one row for a repo
 * imported from a URL; `mirror` 1 keeps following it), `push_mirrors` the remotes a repo is pushed
 * to. Credentials are sealed with the server secret (src/secrets/columns.ts) and never returned.
 */
export async function up(db: Kysely<unknown>, _ctx: MigrationContext): Promise<void> {
  await db.schema
    .createTable('repo_imports')
    .addColumn('repo_uuid', 'text', (c) => c.primaryKey().references('repos.uuid').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('credentials', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('progress', 'text')
    .addColumn('mirror', 'integer', (c) => c.notNull())
    .addColumn('interval_seconds', 'integer', (c) => c.notNull())
    .addColumn('last_sync_at', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_by_uuid', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('push_mirrors')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('credentials', 'text')
    .addColumn('sync_on_push', 'integer', (c) => c.notNull())
    .addColumn('last_sync_at', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  // on the repo row, so reading a repo needs no second statement to know it has a source
  await db.schema.alterTable('repos').addColumn('source_kind', 'text').execute();
  await db.schema.createIndex('push_mirrors_repo_idx').on('push_mirrors').columns(['repo_uuid', 'created_at']).execute();
}
