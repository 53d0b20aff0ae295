import type { Kysely } from 'kysely';

/**
 * Reviews get a per-pull sequence number so "the latest review of each user" (docs/behaviour.md "Protections, pulls and reviews") is
 * exact even when two reviews share a millisecond timestamp. `pulls.review_seq` is the counter,
 * bumped in the same transaction as the review insert.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('pulls')
    .addColumn('review_seq', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await db.schema
    .alterTable('reviews')
    .addColumn('seq', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}
