/**
 * The candidates of a thread search with words (docs/search.md "Issues and pulls"): the newest
 * documents matching the words and the newest whose title matches, access and qualifiers inside
 * each statement (before its limit), each with its rank (lower is better). Every statement stops
 * at `rankedDocs` + 1 rows; the ranking over them is in threads.ts.
 */
import { type Expression, type RawBuilder, type SqlBool, sql } from 'kysely';
import { repoReadableBy } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import type { Viewer } from '../viewer.ts';
import { one, repoNamed, type textQuery, tsText } from './query.ts';

export const THREAD_SEARCH_LIMITS = {
  /** matching documents ranked at most (the newest), and as many title matches */
  rankedDocs: 1000,
  /** PostgreSQL: the newest documents read first, before the words' GIN index is asked */
  recentDocs: 5000,
};

/** How the words' statement reads (PostgreSQL; SQLite's FTS5 gives the newest first anyway). */
export type WordsScan = 'recent' | 'index' | 'newest';

export type TextQuery = NonNullable<ReturnType<typeof textQuery>>;

export interface ItemRow {
  kind: 'thread' | 'pull';
  uuid: string;
  repo_uuid: string;
  number: number;
  title: string;
  state: string;
  updated_at: string;
  rank: number;
  doc_id: number | null;
}

/** The columns of an item, as SQL over `t` (threads), `p` (pulls) and the document's `kind`/`item_uuid`. */
interface ItemColumns {
  kind: RawBuilder<unknown>;
  uuid: RawBuilder<unknown>;
  state: RawBuilder<unknown>;
  author: RawBuilder<unknown>;
}

/** Access and the qualifiers as conditions (over `repos` and an item's columns). */
export function conditionsOf(viewer: Viewer, quals: Map<string, string[]>, c: ItemColumns): Expression<SqlBool>[] {
  const conditions: Expression<SqlBool>[] = [repoReadableBy(viewer)];
  const repo = one(quals, 'repo');
  if (repo) conditions.push(repoNamed(repo));
  for (const is of quals.get('is') ?? []) {
    const v = is.toLowerCase();
    if (v === 'thread' || v === 'issue') conditions.push(sql<SqlBool>`${c.kind} = 'thread'`);
    else if (v === 'pull' || v === 'pr') conditions.push(sql<SqlBool>`${c.kind} = 'pull'`);
    else if (v === 'open' || v === 'closed' || v === 'merged') conditions.push(sql<SqlBool>`${c.state} = ${v}`);
    else throw new AppError(400, 'invalid_request', `is:${is} is not a known qualifier (is:open, closed, merged, thread, pull).`);
  }
  for (const label of quals.get('label') ?? []) {
    conditions.push(sql<SqlBool>`exists (select 1 from item_labels il join labels l on l.uuid = il.label_uuid
      where il.item_uuid = ${c.uuid} and l.name_key = ${label.toLowerCase()})`);
  }
  for (const author of quals.get('author') ?? []) {
    conditions.push(sql<SqlBool>`${c.author} = (select u.uuid from users u where u.username = ${author})`);
  }
  for (const assignee of quals.get('assignee') ?? []) {
    conditions.push(sql<SqlBool>`exists (select 1 from item_assignees ia join users u on u.uuid = ia.user_uuid
      where ia.item_uuid = ${c.uuid} and u.username = ${assignee})`);
  }
  return conditions;
}

/** The candidates' statements (exported for bench/search.ts's plans). */
export function candidateStatements(deps: Deps, viewer: Viewer, quals: Map<string, string[]>, tq: TextQuery) {
  const pg = deps.dialect === 'postgres';
  const limit = THREAD_SEARCH_LIMITS.rankedDocs + 1;
  const conditions = conditionsOf(viewer, quals, {
    kind: sql`d.kind`,
    uuid: sql`d.item_uuid`,
    state: sql`coalesce(t.state, p.status)`,
    author: sql`coalesce(t.author_uuid, p.author_uuid)`,
  });
  const item = sql`d.kind, d.item_uuid as uuid, coalesce(t.repo_uuid, p.repo_uuid) as repo_uuid,
    coalesce(t.number, p.number) as number, coalesce(t.title, p.title) as title, coalesce(t.state, p.status) as state,
    coalesce(t.updated_at, p.updated_at) as updated_at, d.id as doc_id`;
  const joins = sql`left join threads t on d.kind = 'thread' and t.uuid = d.item_uuid and t.removed_at is null
    left join pulls p on d.kind = 'pull' and p.uuid = d.item_uuid
    join repos on repos.uuid = coalesce(t.repo_uuid, p.repo_uuid)`;
  const where = sql.join([sql<SqlBool>`(t.uuid is not null or p.uuid is not null)`, ...conditions], sql` and `);
  if (pg) {
    const tsq = sql`to_tsquery('simple', ${tsText(sql`${tq.ts}`)})`;
    // ts_rank_cd weighs a title (A) over a body (B); higher is better, so negated. A title match
    // ranks with the words weighted as titles
    const tsqTitle = sql`to_tsquery('simple', ${tsText(sql`${tq.tsTitle}`)})`;
    return {
      /**
       * the documents matching the words (`ranked`: with their rank, else 0, only counted):
       * `recent` among the newest `recentDocs` documents, `index` through the GIN index (no
       * order), `newest` newest first
       */
      words: (scan: WordsScan, ranked = true) => sql<ItemRow>`select ${item},
          ${ranked ? sql`-ts_rank_cd(d.tsv, ${tsq})` : sql`0`} as rank
        from ${
          scan === 'recent'
            ? sql`(select * from search_docs order by id desc limit ${THREAD_SEARCH_LIMITS.recentDocs}) d`
            : sql`search_docs d`
        } ${joins}
        where d.tsv @@ ${tsq} and ${where}
        ${scan === 'index' ? sql`` : sql`order by d.id desc`} limit ${limit}`,
      // the title matches through the titles' own GIN index (migration 710: the same expression),
      // not through the `:A` weight of the whole document's vector, which the heap must recheck
      titles: () => sql<ItemRow>`select ${item}, -ts_rank_cd(d.tsv, ${tsqTitle}) as rank
        from search_docs d ${joins}
        where to_tsvector('simple', ${tsText(sql`d.title`)}) @@ ${tsq} and ${where}
        order by d.id desc limit ${limit}`,
    };
  }
  // bm25 weighs a title hit 10 times a body hit; lower is better. FTS5 gives its rows newest
  // (highest rowid) first without sorting, and the limit stops it. The title matches come from
  // the titles' own index (migration 710), ranked by bm25 over titles (weighed 10 as well)
  return {
    // bm25 reads every match of each phrase again (its idf: the number of documents holding it)
    words: (
      _scan: WordsScan,
      ranked = true,
    ) => sql<ItemRow>`select ${item}, ${ranked ? sql`bm25(search_docs_fts, 10.0, 1.0)` : sql`0`} as rank
      from search_docs_fts join search_docs d on d.id = search_docs_fts.rowid ${joins}
      where search_docs_fts match ${tq.fts} and ${where}
      order by search_docs_fts.rowid desc limit ${limit}`,
    titles: () => sql<ItemRow>`select ${item}, bm25(search_titles_fts, 10.0) as rank
      from search_titles_fts join search_docs d on d.id = search_titles_fts.rowid ${joins}
      where search_titles_fts match ${tq.fts} and ${where}
      order by search_titles_fts.rowid desc limit ${limit}`,
  };
}

/**
 * The title matches, then (at most `rankedDocs` + 1 of) the newest documents matching the words,
 * with their rank unless the title matches fill the page (`fills`: then 0, for counting only).
 * SQLite's FTS5 reads them newest first and stops at the limit. PostgreSQL reads, in one
 * transaction with hash and merge joins off (the joins to threads, pulls and repos go by key from
 * the few candidate documents, whatever the statistics say: a table last analyzed before a bulk
 * import is estimated at a few hundred rows and read whole into a hash): (1) the newest
 * `recentDocs` documents, backwards along the primary key, filtered by the words; a common query
 * fills the limit there. (2) When those hold too few matches for more than twice the limit to be
 * expected in all (a rare query), the words' GIN index with the limit and no order: every match
 * when no more than the limit exist, the index reading only those. (3) Else backwards along the
 * primary key without a bound, stopping at the limit (it fills when that many readable matches
 * exist). The planner cannot be left to choose (3) itself: a prefix tsquery's estimate is far too
 * low (40 rows for ~52,000), so it reads every match through a bitmap and sorts them; bitmap and
 * sequential scans are turned off for that statement, which leaves the primary key.
 */
export async function readCandidates(
  deps: Deps,
  statements: ReturnType<typeof candidateStatements>,
  fills: (titled: ItemRow[]) => boolean,
): Promise<{ titled: ItemRow[]; words: ItemRow[] }> {
  const { rankedDocs, recentDocs } = THREAD_SEARCH_LIMITS;
  const enough = (rows: ItemRow[]) => rows.length > rankedDocs;
  // on a SQLite file the reader is a worker thread's read-only connection (db/sqlite-reader.ts)
  const reader = deps.database.reader;
  if (deps.dialect !== 'postgres') {
    const titled = (await statements.titles().execute(reader)).rows;
    return { titled, words: (await statements.words('newest', !fills(titled)).execute(reader)).rows };
  }
  return reader.transaction().execute(async (trx) => {
    await sql`select set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`.execute(trx);
    const titled = (await statements.titles().execute(trx)).rows;
    const ranked = !fills(titled);
    const recent = (await statements.words('recent', ranked).execute(trx)).rows;
    if (enough(recent)) return { titled, words: recent };
    const docs = await sql<{ n: number | null }>`select max(id) as n from search_docs`.execute(trx);
    const expected = (recent.length * Number(docs.rows[0]?.n ?? 0)) / recentDocs;
    if (expected <= 2 * rankedDocs) {
      const probe = (await statements.words('index', ranked).execute(trx)).rows;
      if (!enough(probe)) return { titled, words: probe };
    }
    await sql`select set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true)`.execute(trx);
    return { titled, words: (await statements.words('newest', ranked).execute(trx)).rows };
  });
}
