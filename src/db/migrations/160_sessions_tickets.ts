import type { Kysely } from 'kysely';

/**
 * Web sessions (README "Web interface"): a signed-in browser's cookie secret, stored as its
 * SHA-256 like API tokens, revocable and listed beside them; and stream tickets, short-lived
 * secrets that open one scope's live stream without a header (`GET /api/v1/tail-events?ticket=`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('web_sessions')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('user_uuid', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_agent', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_used_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .execute();
  await db.schema.createIndex('web_sessions_user_idx').on('web_sessions').columns(['user_uuid', 'created_at', 'uuid']).execute();

  await db.schema
    .createTable('stream_tickets')
    .addColumn('uuid', 'text', (c) => c.primaryKey())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_uuid', 'text', (c) => c.notNull())
    // the credential the ticket was made with: 'token' or 'session', and its uuid
    .addColumn('credential_kind', 'text', (c) => c.notNull())
    .addColumn('credential_uuid', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('kind', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('stream_tickets_expiry_idx').on('stream_tickets').columns(['expires_at']).execute();
}
