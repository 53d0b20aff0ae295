import { sql, type Kysely } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * PostgreSQL's text-search parser is quadratic in a run of words joined by `_` (`'_a'.repeat(32768)`,
 * a 64 KB body, took 59 s in `to_tsvector`), which held a thread's insert, and the search trigger's
 * transaction, for a minute. `_` already separates words for the parser ('foo_bar' is 'foo' and
 * 'bar'), so the text is parsed with each `_` read as U+FF3F (a fullwidth low line, also a separator,
 * parsed in linear time): the same lexemes and positions. Search reads through the same expression
 * (src/search/text.ts `tsText`). SQLite's FTS5 tokenizers are linear already: nothing changes there.
 */
export async function up(db: Kysely<unknown>, ctx: MigrationContext): Promise<void> {
  if (ctx.dialect !== 'postgres') return;
  await sql`drop index if exists search_docs_tsv`.execute(db);
  await sql`alter table search_docs drop column tsv`.execute(db);
  await sql`alter table search_docs add column tsv tsvector generated always as
    (setweight(to_tsvector('simple', translate(title, '_', U&'\\FF3F')), 'A') ||
     setweight(to_tsvector('simple', translate(body, '_', U&'\\FF3F')), 'B')) stored`.execute(db);
  await sql`create index search_docs_tsv on search_docs using gin (tsv)`.execute(db);
  await sql`drop index if exists search_commits_tsv`.execute(db);
  await sql`create index search_commits_tsv on search_commits
    using gin (to_tsvector('simple', translate(message, '_', U&'\\FF3F')))`.execute(db);
}
