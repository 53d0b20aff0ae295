import { type Kysely, sql } from 'kysely';
import { threadTerms } from '../terms.ts';

/**
 * The pull list's filters read indexes, as the thread list's do (README "Issue tracker",
 * docs/tracker.md "How a list is read", bench/README.md "Pull lists"):
 *
 * - `pull_terms`: the words and @-mentions of each pull's title and body and of its submitted
 *   reviews not removed, one row per (repo, term, pull, source) as `thread_terms` (migration 400),
 *   so `q` and `mentioned` read an index instead of every body. Existing pulls are indexed here.
 * - `pulls.review_count`: the reviews not removed, pending ones included (what `sort=replies`
 *   counted per row before), kept by review creation and removal.
 * - the list indexes of `sort=updated` and `sort=replies`, with and without a status, and for
 *   `state=closed` (closed or merged) partial indexes on `status <> 'open'`, which the list names
 *   as that literal condition: the index reads its rows in the list's order, where `status in
 *   ('closed', 'merged')` reads two ranges that would have to be sorted.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('pull_terms')
    .addColumn('repo_uuid', 'text', (c) => c.notNull())
    .addColumn('term', 'text', (c) => c.notNull())
    .addColumn('pull_uuid', 'text', (c) => c.notNull())
    .addColumn('source_uuid', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('pull_terms_pk', ['repo_uuid', 'term', 'pull_uuid', 'source_uuid'])
    .execute();
  await db.schema.createIndex('pull_terms_source_idx').on('pull_terms').columns(['source_uuid']).execute();

  await db.schema
    .alterTable('pulls')
    .addColumn('review_count', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  const INDEXES: Array<[string, string[]]> = [
    ['pulls_status_updated_idx', ['repo_uuid', 'status', 'updated_at', 'number']],
    ['pulls_updated_idx', ['repo_uuid', 'updated_at', 'number']],
    ['pulls_status_reviews_idx', ['repo_uuid', 'status', 'review_count', 'number']],
    ['pulls_reviews_idx', ['repo_uuid', 'review_count', 'number']],
  ];
  for (const [name, columns] of INDEXES) await db.schema.createIndex(name).on('pulls').columns(columns).execute();
  for (const [name, key] of [
    ['pulls_closed_created_idx', 'created_at'],
    ['pulls_closed_updated_idx', 'updated_at'],
    ['pulls_closed_reviews_idx', 'review_count'],
  ] as const) {
    await sql`create index ${sql.id(name)} on pulls (repo_uuid, ${sql.id(key)}, number) where status <> 'open'`.execute(db);
  }

  await backfill(db);
}

/**
 * Fills `pulls.review_count` and `pull_terms` from their sources (the pulls already there when the
 * migration runs; test/pull-lists.test.ts checks it rebuilds what the writes keep).
 */
export async function backfill(db: Kysely<unknown>): Promise<void> {
  await sql`update pulls set review_count = (select count(*) from reviews r where r.pull_uuid = pulls.uuid and r.removed_at is null)`.execute(
    db,
  );
  const d = db as unknown as Kysely<{
    pulls: { uuid: string; repo_uuid: string; title: string; body: string };
    reviews: { uuid: string; pull_uuid: string; body: string; status: string; removed_at: string | null };
    pull_terms: { repo_uuid: string; term: string; pull_uuid: string; source_uuid: string };
  }>;
  let after = '';
  for (;;) {
    const pulls = await d
      .selectFrom('pulls')
      .select(['uuid', 'repo_uuid', 'title', 'body'])
      .where('uuid', '>', after)
      .orderBy('uuid')
      .limit(500)
      .execute();
    if (pulls.length === 0) break;
    after = pulls.at(-1)!.uuid;
    const reviews = await d
      .selectFrom('reviews')
      .select(['uuid', 'pull_uuid', 'body'])
      .where(
        'pull_uuid',
        'in',
        pulls.map((p) => p.uuid),
      )
      .where('removed_at', 'is', null)
      .where('status', '<>', 'pending')
      .execute();
    const repoOf = new Map(pulls.map((p) => [p.uuid, p.repo_uuid]));
    const rows = [
      ...pulls.flatMap((p) =>
        threadTerms(`${p.title}\n${p.body}`).map((term) => ({
          repo_uuid: p.repo_uuid,
          term,
          pull_uuid: p.uuid,
          source_uuid: p.uuid,
        })),
      ),
      ...reviews.flatMap((r) =>
        threadTerms(r.body).map((term) => ({
          repo_uuid: repoOf.get(r.pull_uuid)!,
          term,
          pull_uuid: r.pull_uuid,
          source_uuid: r.uuid,
        })),
      ),
    ];
    for (let i = 0; i < rows.length; i += 500)
      await d
        .insertInto('pull_terms')
        .values(rows.slice(i, i + 500))
        .execute();
  }
}
