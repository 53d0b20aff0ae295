import type { Kysely } from 'kysely';

/**
 * Company sign-in and a second factor (docs/signin.md).
 *
 * - `auth_sources`: staff-managed OIDC and LDAP sign-in sources. `settings` is the JSON of the
 *   kind's non-secret fields; `secret` is the client secret or bind password sealed with the
 *   server secret (purpose `auth-source-secret`, listed in src/secrets/columns.ts).
 * - `user_totp`: one TOTP secret per user, sealed (purpose `totp-secret`); active once
 *   `confirmed_at` is set; `last_step` is the RFC 6238 time step of the last accepted code, so a
 *   code is accepted once.
 * - `recovery_codes`: ten single-use codes per user, stored as SHA-256.
 * - `user_identities`: an identity `(source, subject)` of a sign-in source linked to a user.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('auth_sources')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('display_name', 'text', (c) => c.notNull())
    .addColumn('enabled', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('auto_create_users', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('satisfies_two_factor', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('settings', 'text', (c) => c.notNull())
    .addColumn('secret', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('user_totp')
    .addColumn('user_uuid', 'text', (c) => c.primaryKey().references('users.uuid').onDelete('cascade'))
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('confirmed_at', 'text')
    .addColumn('last_step', 'bigint')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('recovery_codes')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
    .addColumn('code_hash', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('recovery_codes_user_idx').on('recovery_codes').columns(['user_uuid', 'code_hash']).execute();
  await db.schema
    .createTable('user_identities')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
    .addColumn('source_uuid', 'text', (c) => c.notNull().references('auth_sources.uuid').onDelete('cascade'))
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .addUniqueConstraint('user_identities_source_subject', ['source_uuid', 'subject'])
    .execute();
  await db.schema.createIndex('user_identities_user_idx').on('user_identities').columns(['user_uuid']).execute();
}
