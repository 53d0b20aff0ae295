import { type Kysely, sql } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/** Users, tokens and the event store. */
export async function up(db: Kysely<unknown>, ctx: MigrationContext): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('username', 'text', (c) => c.notNull().unique())
    .addColumn('display_name', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('is_staff', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('is_active', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('ping_mentions', 'text', (c) => c.notNull().defaultTo('everyone'))
    .addColumn('password_hash', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('api_tokens')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('user_uuid', 'text', (c) => c.notNull().references('users.uuid').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('expires_at', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text')
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('api_tokens_user_idx').on('api_tokens').column('user_uuid').execute();

  await db.schema
    .createTable('events')
    .addColumn('id', ctx.dialect === 'postgres' ? 'bigserial' : 'integer', (c) =>
      ctx.dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('actor_uuid', 'text')
    .addColumn('actor_username', 'text')
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('events_actor_idx').on('events').columns(['actor_uuid', 'id']).execute();

  await db.schema
    .createTable('event_scopes')
    .addColumn('event_id', 'bigint', (c) => c.notNull().references('events.id').onDelete('cascade'))
    .addColumn('scope', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('event_scopes_pk', ['scope', 'event_id'])
    .execute();
  await db.schema.createIndex('event_scopes_event_idx').on('event_scopes').column('event_id').execute();
  void sql;
}
