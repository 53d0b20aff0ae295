/**
 * GET /search/threads (docs/search.md "Issues and pulls"): words and phrases over the titles,
 * bodies, replies and reviews of every thread and pull the caller may read, ranked by relevance.
 *
 * The cost is bounded by a page, not by the number of matches: the ranking runs over at most
 * `rankedDocs` + 1 of the newest matching documents (access and qualifiers applied before the
 * limit; thread-candidates.ts) plus as many of the newest documents whose title matches, so title
 * hits of any age rank first. When more documents match than that, the results are the best of
 * those candidates and the count says "at least" (`N+`).
 */
import { sql } from 'kysely';
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
  ownerName,
  takeQualifiers,
  textQuery,
  textSnippet,
  tsText,
  untsText,
} from './query.ts';
import {
  type ItemRow,
  THREAD_SEARCH_LIMITS,
  type TextQuery,
  candidateStatements,
  conditionsOf,
  readCandidates,
} from './thread-candidates.ts';

export { THREAD_SEARCH_LIMITS };

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
      from repos where repos.uuid in (${sql.join(repoUuids)})`.execute(deps.database.reader);
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
          from search_docs d where d.id in (${sql.join(docIds)})`.execute(deps.database.reader)
        : await sql<{ id: number; title: string; body: string }>`select d.id, d.title, d.body from search_docs d
          where d.id in (${sql.join(docIds)})`
            .execute(deps.database.reader)
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
 * With words: the candidates (thread-candidates.ts), every statement reading at most `rankedDocs`
 * + 1 documents. The items whose title holds the words come first, by their title's rank; then the
 * others, by their best document's rank (then newest first). When the title matches fill the page,
 * the others are only counted (their statement computes no rank: on SQLite bm25 would read every
 * match of each word again).
 */
async function ranked(
  deps: Deps,
  viewer: Viewer,
  quals: Map<string, string[]>,
  tq: TextQuery,
  page: PageWindow,
): Promise<Counted<ItemRow>> {
  const statements = candidateStatements(deps, viewer, quals, tq);
  const limit = THREAD_SEARCH_LIMITS.rankedDocs;
  const bestOf = (rows: ItemRow[], into = new Map<string, ItemRow>()) => {
    for (const r of rows.slice(0, limit)) {
      const rank = Number(r.rank);
      const had = into.get(r.uuid);
      if (!had || rank < had.rank) into.set(r.uuid, { ...r, rank });
    }
    return into;
  };
  const order = (a: ItemRow, b: ItemRow) =>
    a.rank - b.rank || (a.updated_at < b.updated_at ? 1 : a.updated_at > b.updated_at ? -1 : 0) || (a.uuid < b.uuid ? -1 : 1);
  const read = await readCandidates(deps, statements, (rows) => bestOf(rows).size >= page.offset + page.limit);
  const titled = bestOf(read.titled);
  const filled = titled.size >= page.offset + page.limit;
  const any = read.words;
  // more documents match than were read: the ranking is over the newest and the title matches
  const more = any.length > limit;
  const others = [...bestOf(any).values()].filter((r) => !titled.has(r.uuid));
  const items = [...[...titled.values()].sort(order), ...(filled ? others : others.sort(order))];
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
    sql<{ n: number }>`select count(*) as n from (select 1 ${from} limit ${COUNT_CAP + 1}) x`.execute(deps.database.reader),
    sql<ItemRow>`select i.kind, i.uuid, i.repo_uuid, i.number, i.title, i.state, i.updated_at, 0 as rank, null as doc_id ${from}
      order by i.updated_at desc, i.uuid limit ${page.limit} offset ${page.offset}`.execute(deps.database.reader),
  ]);
  return { rows: rows.rows, total: Number(countRow.rows[0]?.n ?? 0) };
}
