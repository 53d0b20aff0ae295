import { type Kysely, sql } from 'kysely';

/**
 * The issue list's `sort=replies` (README "Issue tracker", bench/README.md "Issue lists"): a
 * thread's replies not removed, stored on the thread (kept by reply creation and removal) and
 * indexed in the list's order, so the list reads a page of index entries instead of counting every
 * thread's replies. Also the `sort=updated` order without a state (`state=all`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('threads')
    .addColumn('reply_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update threads set reply_count = (select count(*) from replies r where r.thread_uuid = threads.uuid and r.removed_at is null)`.execute(
    db,
  );
  const INDEXES: Array<[string, string[]]> = [
    ['threads_state_replies_idx', ['repo_uuid', 'state', 'reply_count', 'number']],
    ['threads_replies_idx', ['repo_uuid', 'reply_count', 'number']],
    ['threads_updated_idx', ['repo_uuid', 'updated_at', 'number']],
  ];
  for (const [name, columns] of INDEXES) await db.schema.createIndex(name).on('threads').columns(columns).execute();
}
