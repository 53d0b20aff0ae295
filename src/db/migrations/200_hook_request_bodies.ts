import type { Kysely } from 'kysely';

/**
 * A delivery attempt keeps the body it sent (README "Webhooks": the deliveries API and the
 * delivery page show the request as well as the answer). Older attempts keep null.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('hook_attempts').addColumn('request_body', 'text').execute();
}
