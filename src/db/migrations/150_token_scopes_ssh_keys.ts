import type { Kysely } from 'kysely';

/**
 * Scoped tokens and SSH keys (README "Scoped tokens", "Git over SSH").
 * - `api_tokens.scopes` / `api_tokens.repos`: JSON arrays (scope names; repo uuids), null when the
 *   token is unrestricted. Read with the token on every request, so they sit on its row.
 * - `ssh_keys`: one row per registered public key. `fingerprint` (SHA256 of the key blob, as
 *   `ssh-keygen -lf` prints it) is unique across users: the same key material is registered once,
 *   whatever its comment, and it is how the SSH server finds the user of a key.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('api_tokens').addColumn('scopes', 'text').execute();
  await db.schema.alterTable('api_tokens').addColumn('repos', 'text').execute();

  await db.schema
    .createTable('ssh_keys')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('key_type', 'text', (c) => c.notNull())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .execute();
  await db.schema.createIndex('ssh_keys_user_idx').on('ssh_keys').columns(['user_uuid', 'created_at', 'uuid']).execute();
}
