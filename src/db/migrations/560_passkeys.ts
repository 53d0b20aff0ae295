import type { Kysely } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * Passkeys (docs/signin.md "Passkeys"): a user's WebAuthn credentials (public key, signature
 * counter), and the challenges handed out, stored server-side, each used once before it expires.
 */
export async function up(db: Kysely<unknown>, _ctx: MigrationContext): Promise<void> {
  await db.schema
    .createTable('passkeys')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
    .addColumn('credential_id', 'text', (c) => c.notNull().unique())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('counter', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('transports', 'text', (c) => c.notNull().defaultTo('[]'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .execute();
  await db.schema.createIndex('passkeys_user_idx').on('passkeys').columns(['user_uuid']).execute();
  await db.schema
    .createTable('webauthn_challenges')
    .addColumn('challenge', 'text', (c) => c.primaryKey())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('user_uuid', 'text')
    .addColumn('bound', 'text')
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
}
