/**
 * GET /search/threads (docs/search.md "Issues and pulls"): words and phrases over the titles,
 * bodies, replies and reviews of every thread and pull the caller may read, ranked by relevance.
 *
 * The cost is bounded by a page, not by the number of matches: the ranking runs over at most
 * `rankedDocs` + 1 of the newest matching documents (read in the index's own order, newest first,
 * access and qualifiers applied before the limit) plus as many of the newest documents whose
 * title matches, so title hits of any age rank first. When more documents match than that, the
 * results are the best of those candidates and the count says "at least" (`N+`).
 */
import { type Expression, type RawBuilder, type SqlBool, sql } from 'kysely';
import { repoReadableBy } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import type { Viewer } from '../viewer.ts';
import {
  COUNT_CAP,
  type Counted,
  MARK_CLOSE,
  MARK_OPEN,
  type PageWindow,
  markSnippet,
  one,
  ownerName,
  repoNamed,
  takeQualifiers,
  textQuery,
  textSnippet,
  tsText,
  untsText,
} from './query.ts';

export const THREAD_SEARCH_LIMITS = {
  /** matching documents ranked at most (the newest), and as many title matches */
  rankedDocs: 1000,
};

export interface ThreadHit {
  kind: 'thread' | 'pull';
  repo: { uuid: string; full_name: string };
  number: number;
  title: string;
  state: string;
  /** HTML: the text escaped, the matched words in `<mark>` */
  snippet: string;
  updated_at: string;
}

export interface ThreadQuery {
  q: string;
}

interface ItemRow {
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
function conditionsOf(viewer: Viewer, quals: Map<string, string[]>, c: ItemColumns): Expression<SqlBool>[] {
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

/** GET /search/threads. */
export async function searchThreads(
  deps: Deps,
  viewer: Viewer,
  query: ThreadQuery,
  page: PageWindow,
): Promise<Counted<ThreadHit>> {
  const { text, quals } = takeQualifiers(query.q, ['repo', 'is', 'label', 'author', 'assignee']);
  const tq = textQuery(text);
  const found = tq ? await ranked(deps, viewer, quals, tq, page) : await unranked(deps, viewer, quals, page);
  const { rows } = found;
  const names = new Map<string, string>();
  const repoUuids = [...new Set(rows.map((r) => r.repo_uuid))];
  if (repoUuids.length) {
    const named = await sql<{
      uuid: string;
      full_name: string;
    }>`select repos.uuid, ${ownerName()} || '/' || repos.slug as full_name
      from repos where repos.uuid in (${sql.join(repoUuids)})`.execute(deps.db);
    for (const r of named.rows) names.set(r.uuid, r.full_name);
  }
  // snippets for the page's rows only
  const snippets = new Map<number, string>();
  const docIds = rows.map((r) => Number(r.doc_id)).filter((id) => id > 0);
  if (tq && docIds.length) {
    const made =
      deps.dialect === 'postgres'
        ? await sql<{ id: number; snippet: string }>`select d.id, ${untsText(
            sql`ts_headline('simple', ${tsText(sql`d.title || ' ' || d.body`)}, to_tsquery('simple', ${tsText(sql`${tq.ts}`)}),
            ${`StartSel=${MARK_OPEN}, StopSel=${MARK_CLOSE}, MaxWords=30, MinWords=10, MaxFragments=1`})`,
          )} as snippet
          from search_docs d where d.id in (${sql.join(docIds)})`.execute(deps.db)
        : await sql<{ id: number; title: string; body: string }>`select d.id, d.title, d.body from search_docs d
          where d.id in (${sql.join(docIds)})`
            .execute(deps.db)
            .then((r) => ({ rows: r.rows.map((d) => ({ id: d.id, snippet: textSnippet(`${d.title} ${d.body}`, text) })) }));
    for (const r of made.rows) snippets.set(Number(r.id), r.snippet);
  }
  return {
    total: found.total,
    ...(found.atLeast ? { atLeast: true } : {}),
    rows: rows.map((r) => ({
      kind: r.kind,
      repo: { uuid: r.repo_uuid, full_name: names.get(r.repo_uuid) ?? '' },
      number: Number(r.number),
      title: r.title,
      state: r.state,
      snippet: markSnippet(snippets.get(Number(r.doc_id)) ?? ''),
      updated_at: r.updated_at,
    })),
  };
}

/**
 * With words: the newest matching documents (access and qualifiers inside the statement, before
 * its limit), and the newest whose title matches, each with its rank (lower is better); the items'
 * best documents ranked here. Every statement reads at most `rankedDocs` + 1 documents.
 */
async function ranked(
  deps: Deps,
  viewer: Viewer,
  quals: Map<string, string[]>,
  tq: NonNullable<ReturnType<typeof textQuery>>,
  page: PageWindow,
): Promise<Counted<ItemRow>> {
  const pg = deps.dialect === 'postgres';
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
  const newest = (titleOnly: boolean) => {
    if (pg) {
      const tsq = sql`to_tsquery('simple', ${tsText(sql`${titleOnly ? tq.tsTitle : tq.ts}`)})`;
      // the title matches through the titles' own GIN index (migration 710: the same expression),
      // not through the `:A` weight of the whole document's vector, which the heap must recheck
      const match = titleOnly
        ? sql`to_tsvector('simple', ${tsText(sql`d.title`)}) @@ to_tsquery('simple', ${tsText(sql`${tq.ts}`)})`
        : sql`d.tsv @@ ${tsq}`;
      // ts_rank_cd weighs a title (A) over a body (B); higher is better, so negated
      return sql<ItemRow>`select ${item}, -ts_rank_cd(d.tsv, ${tsq}) as rank
        from search_docs d ${joins}
        where ${match} and ${where}
        order by d.id desc limit ${THREAD_SEARCH_LIMITS.rankedDocs + 1}`.execute(deps.db);
    }
    // bm25 weighs a title hit 10 times a body hit; lower is better. FTS5 gives its rows newest
    // (highest rowid) first without sorting, and the limit stops it. The title matches come from
    // the titles' own index (migration 710), ranked by bm25 over titles (weighed 10 as well)
    if (titleOnly)
      return sql<ItemRow>`select ${item}, bm25(search_titles_fts, 10.0) as rank
        from search_titles_fts join search_docs d on d.id = search_titles_fts.rowid ${joins}
        where search_titles_fts match ${tq.fts} and ${where}
        order by search_titles_fts.rowid desc limit ${THREAD_SEARCH_LIMITS.rankedDocs + 1}`.execute(deps.db);
    return sql<ItemRow>`select ${item}, bm25(search_docs_fts, 10.0, 1.0) as rank
      from search_docs_fts join search_docs d on d.id = search_docs_fts.rowid ${joins}
      where search_docs_fts match ${tq.fts} and ${where}
      order by search_docs_fts.rowid desc limit ${THREAD_SEARCH_LIMITS.rankedDocs + 1}`.execute(deps.db);
  };
  const [any, titled] = await Promise.all([newest(false), newest(true)]);
  // more documents match than were read: the ranking is over the newest and the title matches
  const more = any.rows.length > THREAD_SEARCH_LIMITS.rankedDocs;
  const best = new Map<string, ItemRow>();
  for (const r of [
    ...any.rows.slice(0, THREAD_SEARCH_LIMITS.rankedDocs),
    ...titled.rows.slice(0, THREAD_SEARCH_LIMITS.rankedDocs),
  ]) {
    const rank = Number(r.rank);
    const had = best.get(r.uuid);
    if (!had || rank < had.rank) best.set(r.uuid, { ...r, rank });
  }
  const items = [...best.values()].sort(
    (a, b) =>
      a.rank - b.rank || (a.updated_at < b.updated_at ? 1 : a.updated_at > b.updated_at ? -1 : 0) || (a.uuid < b.uuid ? -1 : 1),
  );
  return { rows: items.slice(page.offset, page.offset + page.limit), total: items.length, ...(more ? { atLeast: true } : {}) };
}

/** Without words (qualifiers only): every thread (not removed) and pull, newest first. */
async function unranked(deps: Deps, viewer: Viewer, quals: Map<string, string[]>, page: PageWindow): Promise<Counted<ItemRow>> {
  const conditions = conditionsOf(viewer, quals, {
    kind: sql`i.kind`,
    uuid: sql`i.uuid`,
    state: sql`i.state`,
    author: sql`i.author_uuid`,
  });
  if (conditions.length === 1) throw new AppError(400, 'invalid_request', 'q needs words or a qualifier.');
  const from = sql`from (select 'thread' as kind, t.uuid, t.repo_uuid, t.number, t.title, t.state, t.author_uuid, t.updated_at
        from threads t where t.removed_at is null
      union all
      select 'pull' as kind, p.uuid, p.repo_uuid, p.number, p.title, p.status as state, p.author_uuid, p.updated_at
        from pulls p) i
    join repos on repos.uuid = i.repo_uuid
    where ${sql.join(conditions, sql` and `)}`;
  const [countRow, rows] = await Promise.all([
    sql<{ n: number }>`select count(*) as n from (select 1 ${from} limit ${COUNT_CAP + 1}) x`.execute(deps.db),
    sql<ItemRow>`select i.kind, i.uuid, i.repo_uuid, i.number, i.title, i.state, i.updated_at, 0 as rank, null as doc_id ${from}
      order by i.updated_at desc, i.uuid limit ${page.limit} offset ${page.offset}`.execute(deps.db),
  ]);
  return { rows: rows.rows, total: Number(countRow.rows[0]?.n ?? 0) };
}
