import { type Kysely, sql } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/** Webhooks (src/hooks): hooks, their deliveries and attempts, the dispatch cursor, the allow-list setting. */
export async function up(db: Kysely<unknown>, ctx: MigrationContext): Promise<void> {
  const serial = ctx.dialect === 'postgres' ? 'bigserial' : 'integer';
  await db.schema
    .createTable('hooks')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('scope', 'text', (c) => c.notNull()) // 'repo' | 'team' | 'site'
    .addColumn('owner_uuid', 'text') // the repo or team; null for site hooks
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('events', 'text', (c) => c.notNull()) // JSON array
    .addColumn('branch_filter', 'text')
    .addColumn('active', 'integer', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_until', 'text')
    .addColumn('created_by_uuid', 'text', (c) => c.notNull())
    .addColumn('since_event_id', 'bigint', (c) => c.notNull())
    .addColumn('last_delivery_at', 'text')
    .addColumn('last_status', 'text')
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('disabled_reason', 'text')
    .addColumn('sender_until', 'text')
    .addColumn('sender_token', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('hooks_owner_idx').on('hooks').columns(['scope', 'owner_uuid', 'created_at', 'uuid']).execute();

  await db.schema
    .createTable('hook_deliveries')
    .addColumn('id', serial, (c) => (ctx.dialect === 'postgres' ? c.primaryKey() : c.primaryKey().autoIncrement()))
    .addColumn('uuid', 'text', (c) => c.notNull().unique())
    .addColumn('hook_uuid', 'text', (c) => c.notNull())
    .addColumn('event_id', 'bigint')
    .addColumn('event_kind', 'text', (c) => c.notNull())
    .addColumn('ping', 'text') // a ping's event (JSON); null for stored events
    .addColumn('status', 'text', (c) => c.notNull()) // pending | success | failed
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text')
    .addColumn('locked_until', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  // the deliveries page; the sender's question (a hook's pending first attempts in order) and the status filter
  await db.schema.createIndex('hook_deliveries_hook_idx').on('hook_deliveries').columns(['hook_uuid', 'id']).execute();
  await db.schema
    .createIndex('hook_deliveries_status_idx')
    .on('hook_deliveries')
    .columns(['hook_uuid', 'status', 'attempts', 'id'])
    .execute();
  await db.schema.createIndex('hook_deliveries_created_idx').on('hook_deliveries').columns(['created_at']).execute();

  await db.schema
    .createTable('hook_attempts')
    .addColumn('delivery_uuid', 'text', (c) => c.notNull())
    .addColumn('n', 'integer', (c) => c.notNull())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('request_headers', 'text', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('response_headers', 'text')
    .addColumn('response_body', 'text')
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('hook_attempts_pk', ['delivery_uuid', 'n'])
    .execute();

  await db.schema
    .createTable('hook_dispatch')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('last_event_id', 'bigint', (c) => c.notNull())
    .execute();
  await sql`insert into hook_dispatch (id, last_event_id) select 1, coalesce(max(id), 0) from events`.execute(db);

  await db.schema
    .alterTable('site_settings')
    .addColumn('webhook_allowed_hosts', 'text', (c) => c.notNull().defaultTo('[]'))
    .execute();
}
