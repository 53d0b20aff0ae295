import type { Kysely } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/** Site settings (one row), rate-limit rules and their hit log, signup invites. */
export async function up(db: Kysely<unknown>, ctx: MigrationContext): Promise<void> {
  await db.schema
    .createTable('site_settings')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('rate_limits_enabled', 'integer', (c) => c.notNull())
    .addColumn('signup_invite_creators', 'text', (c) => c.notNull())
    .addColumn('signup_invite_max_per_24h', 'integer', (c) => c.notNull())
    .addColumn('signup_invite_min_account_age', 'text', (c) => c.notNull())
    .addColumn('signups_enabled', 'integer', (c) => c.notNull())
    .addColumn('signups_require_invite', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db
    .insertInto('site_settings' as never)
    .values({
      id: 1,
      rate_limits_enabled: 1,
      signup_invite_creators: 'staff',
      signup_invite_max_per_24h: 10,
      signup_invite_min_account_age: '7d',
      signups_enabled: 1,
      signups_require_invite: 0,
      updated_at: new Date().toISOString(),
    } as never)
    .execute();

  await db.schema
    .createTable('rate_limit_rules')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('scope', 'text', (c) => c.notNull().unique())
    .addColumn('max_requests', 'integer', (c) => c.notNull())
    .addColumn('window_seconds', 'integer', (c) => c.notNull())
    .addColumn('is_enabled', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  // One row per counted request: an exact sliding window is a count of rows newer than now - window.
  await db.schema
    .createTable('rate_limit_hits')
    .addColumn('id', ctx.dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
      ctx.dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('caller', 'text', (c) => c.notNull())
    .addColumn('at_ms', ctx.dialect === 'postgres' ? 'double precision' : 'integer', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('rate_limit_hits_key_idx').on('rate_limit_hits').columns(['scope', 'caller', 'at_ms']).execute();

  await db.schema
    .createTable('signup_invites')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text')
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('created_by_uuid', 'text', (c) => c.notNull().references('users.uuid'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('accepted_at', 'text')
    .addColumn('accepted_by_uuid', 'text', (c) => c.references('users.uuid'))
    .execute();
  await db.schema
    .createIndex('signup_invites_creator_idx')
    .on('signup_invites')
    .columns(['created_by_uuid', 'created_at'])
    .execute();
}
