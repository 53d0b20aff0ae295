import type { Kysely } from 'kysely';
import { threadTerms } from '../terms.ts';

/**
 * The words and @-mentions of threads and their replies (README "Issue tracker", lists): one row
 * per (repo, term, thread, source), the source being the thread (title and body) or a reply, so the
 * `q` and `mentioned` filters of GET {repo}/threads read an index instead of every body, and an
 * edited or removed source replaces only its own rows. Existing threads and replies are indexed here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('thread_terms')
    .addColumn('repo_uuid', 'text', (c) => c.notNull())
    .addColumn('term', 'text', (c) => c.notNull())
    .addColumn('thread_uuid', 'text', (c) => c.notNull())
    .addColumn('source_uuid', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('thread_terms_pk', ['repo_uuid', 'term', 'thread_uuid', 'source_uuid'])
    .execute();
  await db.schema.createIndex('thread_terms_source_idx').on('thread_terms').columns(['source_uuid']).execute();
  const d = db as unknown as Kysely<{
    threads: { uuid: string; repo_uuid: string; title: string; body: string; removed_at: string | null };
    replies: { uuid: string; thread_uuid: string; body: string; removed_at: string | null };
    thread_terms: { repo_uuid: string; term: string; thread_uuid: string; source_uuid: string };
  }>;
  let after = '';
  for (;;) {
    const threads = await d
      .selectFrom('threads')
      .select(['uuid', 'repo_uuid', 'title', 'body'])
      .where('uuid', '>', after)
      .orderBy('uuid')
      .limit(500)
      .execute();
    if (threads.length === 0) break;
    after = threads.at(-1)!.uuid;
    const replies = await d
      .selectFrom('replies')
      .select(['uuid', 'thread_uuid', 'body'])
      .where(
        'thread_uuid',
        'in',
        threads.map((t) => t.uuid),
      )
      .where('removed_at', 'is', null)
      .execute();
    const repoOf = new Map(threads.map((t) => [t.uuid, t.repo_uuid]));
    const rows = [
      ...threads.flatMap((t) =>
        threadTerms(`${t.title}\n${t.body}`).map((term) => ({
          repo_uuid: t.repo_uuid,
          term,
          thread_uuid: t.uuid,
          source_uuid: t.uuid,
        })),
      ),
      ...replies.flatMap((r) =>
        threadTerms(r.body).map((term) => ({
          repo_uuid: repoOf.get(r.thread_uuid)!,
          term,
          thread_uuid: r.thread_uuid,
          source_uuid: r.uuid,
        })),
      ),
    ];
    for (let i = 0; i < rows.length; i += 500)
      await d
        .insertInto('thread_terms')
        .values(rows.slice(i, i + 500))
        .execute();
  }
}
