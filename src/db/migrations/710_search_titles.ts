import { type Kysely, sql } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * A title-only index for thread search (docs/search.md "Issues and pulls"). Title hits of any age
 * rank first, so thread search reads the newest documents whose title matches; through the index
 * of titles and bodies that meant reading every document matching the words (FTS5's `{title}:`
 * column filter decodes each match's positions; PostgreSQL's `:A` weight is rechecked on the heap,
 * the GIN index holding no weights): O(matches). Titles get an index of their own, kept in the
 * write's own transaction like `search_docs` itself:
 * - SQLite: `search_titles_fts`, an FTS5 table (`unicode61`, as `search_docs_fts`) over
 *   `search_docs.title` (external content), kept by triggers on `search_docs`; the documents
 *   without a title (replies, reviews, removed threads) are not in it;
 * - PostgreSQL: a GIN index on the title's `tsvector`, through the same `translate` of `_` as the
 *   other text indexes (migration 540, src/search/query.ts `tsText`).
 * What exists already is indexed here.
 */
export async function up(db: Kysely<unknown>, ctx: MigrationContext): Promise<void> {
  if (ctx.dialect === 'postgres') {
    await sql`create index search_docs_title_tsv on search_docs
      using gin (to_tsvector('simple', translate(title, '_', U&'\\FF3F')))`.execute(db);
    return;
  }
  await sql`create virtual table search_titles_fts using fts5(title, content='search_docs', content_rowid='id', tokenize='unicode61 remove_diacritics 2')`.execute(
    db,
  );
  const add = (row: string) =>
    `insert into search_titles_fts (rowid, title) select ${row}.id, ${row}.title where ${row}.title <> '';`;
  const remove = (row: string) =>
    `insert into search_titles_fts (search_titles_fts, rowid, title) select 'delete', ${row}.id, ${row}.title where ${row}.title <> '';`;
  await sql.raw(`create trigger search_docs_title_ai after insert on search_docs begin ${add('new')} end`).execute(db);
  await sql.raw(`create trigger search_docs_title_ad after delete on search_docs begin ${remove('old')} end`).execute(db);
  await sql
    .raw(`create trigger search_docs_title_au after update on search_docs begin ${remove('old')} ${add('new')} end`)
    .execute(db);
  await sql`insert into search_titles_fts (rowid, title) select id, title from search_docs where title <> ''`.execute(db);
}
