import type { Kysely } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * Git LFS (docs/lfs.md): the objects a repo holds (`lfs_objects`, one row per repo and oid; the
 * bytes live once in the blob store under the oid, which is their SHA-256, and each repo holding
 * them counts their size once in `disk_usage_bytes`), and the file locks (`lfs_locks`, one per
 * repo and path).
 */
export async function up(db: Kysely<unknown>, _ctx: MigrationContext): Promise<void> {
  await db.schema
    .createTable('lfs_objects')
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('oid', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('lfs_objects_pk', ['repo_uuid', 'oid'])
    .execute();
  await db.schema.createIndex('lfs_objects_oid_idx').on('lfs_objects').column('oid').execute();
  await db.schema
    .createTable('lfs_locks')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('path', 'text', (c) => c.notNull())
    .addColumn('owner_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
    .addColumn('locked_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('lfs_locks_path_unique', ['repo_uuid', 'path'])
    .execute();
}
