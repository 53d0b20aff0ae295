import type { Kysely } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * Releases (docs/releases.md): one per repo and tag, with Markdown notes, and their assets, whose
 * bytes live in the blob store (counted in the repo's `disk_usage_bytes`).
 */
export async function up(db: Kysely<unknown>, _ctx: MigrationContext): Promise<void> {
  await db.schema
    .createTable('releases')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('tag_name', 'text', (c) => c.notNull())
    .addColumn('target_commitish', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('draft', 'integer', (c) => c.notNull())
    .addColumn('prerelease', 'integer', (c) => c.notNull())
    .addColumn('author_uuid', 'text', (c) => c.notNull().references('users.uuid'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('published_at', 'text')
    .addUniqueConstraint('releases_tag_unique', ['repo_uuid', 'tag_name'])
    .execute();
  await db.schema.createIndex('releases_repo_idx').on('releases').columns(['repo_uuid', 'created_at', 'uuid']).execute();
  await db.schema
    .createTable('release_assets')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('release_uuid', 'text', (c) => c.notNull().references('releases.uuid').onDelete('cascade'))
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('download_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('uploader_uuid', 'text', (c) => c.notNull().references('users.uuid'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('release_assets_name_unique', ['release_uuid', 'name'])
    .execute();
  await db.schema.createIndex('release_assets_sha_idx').on('release_assets').column('sha256').execute();
}
