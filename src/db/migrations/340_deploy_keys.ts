import type { Kysely } from 'kysely';

/**
 * Deploy keys (README "Deploy keys"): an SSH public key that reaches one repo only, read-only
 * unless `read_only` is 0. `fingerprint` is unique here, and the services refuse a fingerprint
 * that `ssh_keys` holds (and the other way round), so one key material names one principal.
 * `created_by_uuid` is the maintainer who added it: a push with the key is recorded as theirs.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('deploy_keys')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('repo_uuid', 'text', (c) => c.notNull().references('repos.uuid').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('key_type', 'text', (c) => c.notNull())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull().unique())
    .addColumn('read_only', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('created_by_uuid', 'text', (c) => c.notNull().references('users.uuid'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .execute();
  await db.schema.createIndex('deploy_keys_repo_idx').on('deploy_keys').columns(['repo_uuid', 'created_at', 'uuid']).execute();
}
