import { type Kysely, sql } from 'kysely';
import type { MigrationContext } from '../dialect.ts';

/**
 * Search (docs/search.md), kept in the database Weft already runs:
 * - `search_index_state`: per repo, the commit of its default branch the code index holds;
 * - `search_code_files`: one row per indexed file of a repo's default branch (text up to 1 MiB,
 *   not binary), searched through a trigram index: SQLite FTS5 `tokenize='trigram'` (external
 *   content, `detail='none'`: candidates only, every hit is verified against the text), or
 *   PostgreSQL `pg_trgm` with a GIN index;
 * - `search_commits`: commit messages of the default branch (FTS5 `unicode61` / `tsvector`);
 * - `search_docs`: titles and bodies of threads, pulls, replies and reviews, kept by triggers on
 *   those tables, so every write updates it in its own transaction (FTS5 `unicode61` with bm25 /
 *   a weighted `tsvector` with `ts_rank_cd`).
 * Every table names its repo with `on delete cascade`: a deleted repo leaves no index rows.
 */
export async function up(db: Kysely<unknown>, ctx: MigrationContext): Promise<void> {
  const pg = ctx.dialect === 'postgres';
  const id = pg ? sql.raw('id bigserial primary key') : sql.raw('id integer primary key autoincrement');
  const repo = sql.raw('repo_uuid text not null references repos(uuid) on delete cascade');

  // pg_trgm's operator class, qualified by the schema the extension lives in (created in `public`
  // when absent, so a Weft schema of its own, or several, share it)
  let trgmOps = sql.raw('gin_trgm_ops');
  if (pg) {
    try {
      await sql`create extension if not exists pg_trgm schema public`.execute(db);
    } catch (err) {
      throw new Error(
        'Migration 450_search needs the PostgreSQL extension pg_trgm (code search) and could not enable it: ' +
          `${(err as Error).message}. Run "create extension pg_trgm schema public;" in this database as a superuser ` +
          '(Debian/Ubuntu: it ships with postgresql-contrib), then start Weft again.',
      );
    }
    const where = await sql<{ nspname: string }>`select n.nspname from pg_extension e
      join pg_namespace n on n.oid = e.extnamespace where e.extname = 'pg_trgm'`.execute(db);
    trgmOps = sql`${sql.id(where.rows[0]!.nspname)}.gin_trgm_ops`;
  }

  await sql`create table search_index_state (
    repo_uuid text primary key references repos(uuid) on delete cascade,
    branch text,
    commit_sha text,
    state text not null,
    files integer not null default 0,
    bytes bigint not null default 0,
    error text,
    lease_until text,
    generation integer not null default 0,
    updated_at text not null
  )`.execute(db);

  await sql`create table search_code_files (
    ${id},
    ${repo},
    path text not null,
    blob_sha text not null,
    language text,
    size integer not null,
    content text not null
  )`.execute(db);
  await sql`create unique index search_code_files_repo_path on search_code_files (repo_uuid, path)`.execute(db);

  await sql`create table search_commits (
    ${id},
    ${repo},
    sha text not null,
    message text not null,
    author_name text not null,
    committed_at text not null
  )`.execute(db);
  await sql`create unique index search_commits_repo_sha on search_commits (repo_uuid, sha)`.execute(db);

  await sql`create table search_docs (
    ${id},
    doc_key text not null unique,
    kind text not null,
    item_uuid text not null,
    ${repo},
    title text not null,
    body text not null
  )`.execute(db);
  await sql`create index search_docs_item on search_docs (item_uuid)`.execute(db);

  if (pg) {
    await sql`create index search_code_files_trgm on search_code_files using gin (content ${trgmOps})`.execute(db);
    await sql`create index search_commits_tsv on search_commits using gin (to_tsvector('simple', message))`.execute(db);
    await sql`alter table search_docs add column tsv tsvector generated always as
      (setweight(to_tsvector('simple', title), 'A') || setweight(to_tsvector('simple', body), 'B')) stored`.execute(db);
    await sql`create index search_docs_tsv on search_docs using gin (tsv)`.execute(db);
    for (const [table, kind, item, repoOf, title, removed, cols] of DOC_SOURCES) {
      await sql
        .raw(
          `create function search_doc_${table}() returns trigger language plpgsql as $$
          begin
            if tg_op in ('UPDATE', 'DELETE') then delete from search_docs where doc_key = '${table}:' || old.uuid; end if;
            if tg_op in ('INSERT', 'UPDATE') then
              insert into search_docs (doc_key, kind, item_uuid, repo_uuid, title, body)
              select '${table}:' || new.uuid, '${kind}', new.${item}, ${repoOf.replaceAll('ROW', 'new')},
                case when ${removed.replaceAll('ROW', 'new')} is null then ${title.replaceAll('ROW', 'new')} else '' end,
                case when ${removed.replaceAll('ROW', 'new')} is null then new.body else '' end
              where ${repoOf.replaceAll('ROW', 'new')} is not null;
            end if;
            return null;
          end $$`,
        )
        .execute(db);
      await sql
        .raw(
          `create trigger search_doc_${table} after insert or delete or update of ${cols}
           on ${table} for each row execute function search_doc_${table}()`,
        )
        .execute(db);
    }
  } else {
    await sql`create virtual table search_code_fts using fts5(content, content='search_code_files', content_rowid='id', tokenize='trigram', detail='none')`.execute(
      db,
    );
    await sql`create virtual table search_commits_fts using fts5(message, content='search_commits', content_rowid='id', tokenize='unicode61 remove_diacritics 2')`.execute(
      db,
    );
    await sql`create virtual table search_docs_fts using fts5(title, body, content='search_docs', content_rowid='id', tokenize='unicode61 remove_diacritics 2')`.execute(
      db,
    );
    // the external-content tables follow their tables (the FTS5 documentation's triggers)
    for (const [table, fts, cols] of [
      ['search_code_files', 'search_code_fts', ['content']],
      ['search_commits', 'search_commits_fts', ['message']],
      ['search_docs', 'search_docs_fts', ['title', 'body']],
    ] as const) {
      const list = cols.join(', ');
      const vals = (row: string) => cols.map((c) => `${row}.${c}`).join(', ');
      await sql
        .raw(
          `create trigger ${table}_ai after insert on ${table} begin
        insert into ${fts} (rowid, ${list}) values (new.id, ${vals('new')}); end`,
        )
        .execute(db);
      await sql
        .raw(
          `create trigger ${table}_ad after delete on ${table} begin
        insert into ${fts} (${fts}, rowid, ${list}) values ('delete', old.id, ${vals('old')}); end`,
        )
        .execute(db);
      await sql
        .raw(
          `create trigger ${table}_au after update on ${table} begin
        insert into ${fts} (${fts}, rowid, ${list}) values ('delete', old.id, ${vals('old')});
        insert into ${fts} (rowid, ${list}) values (new.id, ${vals('new')}); end`,
        )
        .execute(db);
    }
    for (const [table, kind, item, repoOf, title, removed, cols] of DOC_SOURCES) {
      const insert = `insert into search_docs (doc_key, kind, item_uuid, repo_uuid, title, body)
        select '${table}:' || new.uuid, '${kind}', new.${item}, ${repoOf.replaceAll('ROW', 'new')},
          case when ${removed.replaceAll('ROW', 'new')} is null then ${title.replaceAll('ROW', 'new')} else '' end,
          case when ${removed.replaceAll('ROW', 'new')} is null then new.body else '' end
        where ${repoOf.replaceAll('ROW', 'new')} is not null;`;
      const del = `delete from search_docs where doc_key = '${table}:' || old.uuid;`;
      await sql.raw(`create trigger search_doc_${table}_ai after insert on ${table} begin ${insert} end`).execute(db);
      await sql
        .raw(`create trigger search_doc_${table}_au after update of ${cols} on ${table} begin ${del} ${insert} end`)
        .execute(db);
      await sql.raw(`create trigger search_doc_${table}_ad after delete on ${table} begin ${del} end`).execute(db);
    }
  }

  // what exists already
  for (const [table, kind, item, repoOf, title, removed] of DOC_SOURCES) {
    await sql
      .raw(
        `insert into search_docs (doc_key, kind, item_uuid, repo_uuid, title, body)
         select '${table}:' || x.uuid, '${kind}', x.${item}, ${repoOf.replaceAll('ROW', 'x')}, ${title.replaceAll('ROW', 'x')}, x.body
         from ${table} x where ${removed.replaceAll('ROW', 'x')} is null and ${repoOf.replaceAll('ROW', 'x')} is not null`,
      )
      .execute(db);
  }
}

/**
 * [table, kind of the item, the item's uuid column, the repo (SQL over ROW), the title (SQL over
 * ROW), the removal (SQL over ROW), the columns whose update rewrites the document]
 */
const DOC_SOURCES: [string, string, string, string, string, string, string][] = [
  ['threads', 'thread', 'uuid', 'ROW.repo_uuid', 'ROW.title', 'ROW.removed_at', 'title, body, removed_at'],
  ['pulls', 'pull', 'uuid', 'ROW.repo_uuid', 'ROW.title', 'null', 'title, body'],
  [
    'replies',
    'thread',
    'thread_uuid',
    '(select t.repo_uuid from threads t where t.uuid = ROW.thread_uuid)',
    "''",
    'ROW.removed_at',
    'body, removed_at',
  ],
  [
    'reviews',
    'pull',
    'pull_uuid',
    '(select p.repo_uuid from pulls p where p.uuid = ROW.pull_uuid)',
    "''",
    'ROW.removed_at',
    'body, removed_at',
  ],
];
