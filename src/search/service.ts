/**
 * Search (docs/search.md): code, issues and pulls, commits and repos, across every repo the
 * caller may read, in the database Weft already runs. Access is part of every statement
 * (`repoReadableBy`), so a page is full and a count counts nothing unreadable.
 */
import { type Expression, type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import { repoContextOf, repoReadableBy } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import type { DB } from '../db/types.ts';
import { AppError } from '../errors.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import { indexRepo, scheduleSearchIndex } from './indexer.ts';
import { type CodePattern, type FileMatches, type Need, codePattern, matchText, tooBroad, withinTime } from './pattern.ts';

export { scheduleSearchIndex, registerSearchIndexer, JOB_SEARCH_INDEX } from './indexer.ts';

/** X-Total-Count is exact up to this many, then `10000+`. */
export const COUNT_CAP = 10_000;
/** A regex search (verification included) may run this long, then 400 query_too_broad. */
const REGEX_BUDGET_MS = 2000;

export interface PageWindow {
  offset: number;
  /** one more than a page, so the caller knows whether a next page exists */
  limit: number;
}

/** Where a code page continues: after this repo `full_name` and path (the order of the results). */
export interface CodeCursor {
  full_name: string;
  path: string;
}

/** A code page's `after` cursor: opaque to clients (base64url of the last result's repo and path). */
export const encodeCodeCursor = (c: CodeCursor): string =>
  Buffer.from(JSON.stringify([c.full_name, c.path])).toString('base64url');

export function decodeCodeCursor(after: string): CodeCursor {
  try {
    const v: unknown = JSON.parse(Buffer.from(after, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string')
      return { full_name: v[0], path: v[1] };
  } catch {
    // reported below
  }
  throw new AppError(400, 'invalid_request', "after is not a cursor this search gave (take it from a page's next link).");
}

export interface Counted<T> {
  rows: T[];
  /** exact up to COUNT_CAP; COUNT_CAP + 1 means "more" */
  total: number;
}

export const totalHeader = (total: number): string => (total > COUNT_CAP ? `${COUNT_CAP}+` : String(total));

/** `repo:`, `path:`, `lang:` and friends taken out of `q`; the rest, trimmed, is the text. */
export function takeQualifiers(q: string, names: readonly string[]): { text: string; quals: Map<string, string[]> } {
  const quals = new Map<string, string[]>();
  const re = new RegExp(`(^|\\s)(${names.join('|')}):("[^"]*"|\\S+)`, 'gi');
  const text = q
    .replace(re, (_all, lead: string, name: string, value: string) => {
      const key = name.toLowerCase();
      const v = value.startsWith('"') && value.endsWith('"') && value.length >= 2 ? value.slice(1, -1) : value;
      quals.set(key, [...(quals.get(key) ?? []), v]);
      return lead;
    })
    .trim();
  return { text, quals };
}

const one = (quals: Map<string, string[]>, name: string): string | undefined => quals.get(name)?.at(-1);

/** `owner/slug` as a condition on `repos` and its owner's name (`owner_name` below). */
function repoNamed(full: string): RawBuilder<SqlBool> {
  const slash = full.indexOf('/');
  if (slash < 1) throw new AppError(400, 'invalid_request', 'repo must be owner/slug.');
  const owner = full.slice(0, slash);
  const slug = full.slice(slash + 1);
  return sql<SqlBool>`(repos.slug = ${slug} and ${ownerName()} = ${owner})`;
}

/** The owner's name of `repos` (a team's slug or a user's username). */
const ownerName = (): RawBuilder<string> =>
  sql<string>`(case when repos.owner_kind = 'team' then (select t.slug from teams t where t.uuid = repos.owner_uuid)
    else (select u.username from users u where u.uuid = repos.owner_uuid) end)`;

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** A path qualifier: a glob (`*`, `?`) or a prefix. */
function pathCondition(path: string): RawBuilder<SqlBool> {
  const trimmed = path.replace(/^\/+/, '');
  if (/[*?]/.test(trimmed)) {
    const like = likeEscape(trimmed).replace(/\*+/g, '%').replace(/\?/g, '_');
    return sql<SqlBool>`(f.path like ${like} escape '\\')`;
  }
  return sql<SqlBool>`(f.path like ${`${likeEscape(trimmed)}%`} escape '\\')`;
}

/** FTS5 query of a need: each literal as the AND of its trigrams. */
function ftsQuery(need: Need): string {
  if ('lit' in need) {
    const chars = [...need.lit];
    const grams = new Set<string>();
    for (let i = 0; i + 3 <= chars.length; i++) grams.add(chars.slice(i, i + 3).join(''));
    return [...grams].map((g) => `"${g.replace(/"/g, '""')}"`).join(' AND ');
  }
  if ('and' in need) return need.and.map((n) => `(${ftsQuery(n)})`).join(' AND ');
  return need.or.map((n) => `(${ftsQuery(n)})`).join(' OR ');
}

/** PostgreSQL condition of a need (pg_trgm answers `ilike` from its GIN index). */
function pgNeed(need: Need): RawBuilder<SqlBool> {
  if ('lit' in need) return sql<SqlBool>`(f.content ilike ${`%${likeEscape(need.lit)}%`})`;
  const parts = ('and' in need ? need.and : need.or).map(pgNeed);
  return sql<SqlBool>`(${sql.join(parts, sql.raw('and' in need ? ' and ' : ' or '))})`;
}

export interface CodeQuery {
  q: string;
  repo?: string;
  path?: string;
  lang?: string;
  case?: 'sensitive' | 'insensitive';
  forks?: boolean;
  /** keyset paging: the page starts after this result (the `next` link carries it), `offset` is then ignored */
  after?: CodeCursor;
}

export interface CodeHit extends FileMatches {
  repo: { uuid: string; full_name: string };
  path: string;
  language: string | null;
  commit_sha: string | null;
  blob_sha: string;
}

interface Candidate {
  id: number;
  repo_uuid: string;
  full_name: string;
  path: string;
  language: string | null;
  blob_sha: string;
  commit_sha: string | null;
}

/** GET /search/code. */
export async function searchCode(deps: Deps, viewer: Viewer, query: CodeQuery, page: PageWindow): Promise<Counted<CodeHit>> {
  if (deps.dialect !== 'postgres') return searchCodeOn(deps, deps.db, viewer, query, page);
  // PostgreSQL prices a scan of the table low (the text is TOASTed apart) and would read every
  // file's text instead of asking the trigram index: the search runs with scans off
  return deps.db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    return searchCodeOn(deps, trx, viewer, query, page);
  });
}

async function searchCodeOn(
  deps: Deps,
  db: Kysely<DB>,
  viewer: Viewer,
  query: CodeQuery,
  page: PageWindow,
): Promise<Counted<CodeHit>> {
  const { text, quals } = takeQualifiers(query.q, ['repo', 'path', 'lang']);
  const repo = query.repo ?? one(quals, 'repo');
  const path = query.path ?? one(quals, 'path');
  const lang = query.lang ?? one(quals, 'lang');
  const caseSensitive = query.case === 'sensitive';
  const pattern = codePattern(text, caseSensitive);
  const pg = deps.dialect === 'postgres';

  const conditions: Expression<SqlBool>[] = [repoReadableBy(viewer)];
  if (repo) conditions.push(repoNamed(repo));
  else if (!query.forks) conditions.push(sql<SqlBool>`repos.fork_of_uuid is null`);
  const fileConditions: Expression<SqlBool>[] = [];
  if (path) fileConditions.push(pathCondition(path));
  if (lang) fileConditions.push(sql<SqlBool>`f.language = ${lang.toLowerCase()}`);
  if (pg) fileConditions.push(pgNeed(pattern.need));
  else
    fileConditions.push(
      sql<SqlBool>`f.id in (select rowid from search_code_fts where search_code_fts match ${ftsQuery(pattern.need)})`,
    );

  // a literal is decided by the statement itself; a regex (or a case-insensitive literal beyond
  // ASCII on SQLite, whose LIKE folds ASCII only) is decided by verification
  const exact = exactCondition(pattern, caseSensitive, pg);
  if (exact) fileConditions.push(exact);
  // PostgreSQL: the files first, from the trigram index (`offset 0` keeps the planner from
  // reading every file of a repo through the repo's index instead)
  const files = pg
    ? sql`(select f.id, f.repo_uuid, f.path, f.language, f.blob_sha from search_code_files f
        where ${sql.join(fileConditions, sql` and `)} offset 0) f`
    : sql`search_code_files f`;
  const where = sql.join(pg ? conditions : [...conditions, ...fileConditions], sql` and `);
  const base = sql`from ${files}
    join repos on repos.uuid = f.repo_uuid
    left join search_index_state s on s.repo_uuid = f.repo_uuid
    where ${where}`;
  // keyset: rows after a cursor, compared in the database's own collation (the order's)
  const beyond = (c: CodeCursor) =>
    sql<SqlBool>`(c.full_name > ${c.full_name} or (c.full_name = ${c.full_name} and c.path > ${c.path}))`;
  const cursor = query.after ?? null;
  const candidates = (after: CodeCursor | null, limit: number, offset = 0) =>
    sql<Candidate & { beyond: unknown }>`select c.*, ${cursor ? beyond(cursor) : sql`1 = 1`} as beyond
      from (select f.id, f.repo_uuid, ${ownerName()} || '/' || repos.slug as full_name, f.path, f.language,
        f.blob_sha, s.commit_sha ${base}) c
      ${after ? sql`where ${beyond(after)}` : sql``}
      order by c.full_name, c.path limit ${limit} offset ${offset}`;

  if (exact) {
    // the page's rows with their text (read after the limit, for those rows only): one statement
    const rows = await sql<Candidate & { content: string }>`select p.*,
        (select x.content from search_code_files x where x.id = p.id) as content
      from (${candidates(cursor, page.limit, cursor ? 0 : page.offset)}) p order by p.full_name, p.path`.execute(db);
    // a first page that is not full is the whole result: its count is known without counting
    const total =
      !cursor && page.offset === 0 && rows.rows.length < page.limit
        ? rows.rows.length
        : Number(
            (await sql<{ n: number }>`select count(*) as n from (select 1 ${base} limit ${COUNT_CAP + 1}) x`.execute(db)).rows[0]
              ?.n ?? 0,
          );
    const hits = await verify(db, pattern, rows.rows, Infinity);
    return { rows: hits.filter((h): h is CodeHit => h !== null), total };
  }

  // verified one chunk at a time, in order, until the page is full and the count known (from the
  // start, so the count is the whole result's; the page is taken past the cursor or the offset)
  const deadline = Date.now() + REGEX_BUDGET_MS;
  const found: CodeHit[] = [];
  let total = 0;
  let skip = cursor ? 0 : page.offset;
  let after: CodeCursor | null = null;
  for (;;) {
    const chunk: (Candidate & { beyond: unknown })[] = (await candidates(after, 200).execute(db)).rows;
    if (chunk.length === 0) break;
    after = chunk.at(-1)!;
    const hits = await verify(db, pattern, chunk, deadline);
    hits.forEach((hit, k) => {
      if (!hit) return;
      total++;
      if (cursor && !truthy(chunk[k]!.beyond)) return;
      if (skip > 0) skip--;
      else if (found.length < page.limit) found.push(hit);
    });
    if (total > COUNT_CAP) break;
    if (chunk.length < 200) break;
  }
  return { rows: found, total };
}

/** A boolean column as either database returns it (SQLite: 0/1, PostgreSQL: true/false). */
const truthy = (v: unknown): boolean => v === true || v === 1 || v === '1' || v === 't';

function exactCondition(pattern: CodePattern, caseSensitive: boolean, pg: boolean): RawBuilder<SqlBool> | null {
  const lit = pattern.literal;
  if (lit === null) return null;
  // on PostgreSQL the need's `ilike` already decides a case-insensitive literal
  if (pg) return caseSensitive ? sql<SqlBool>`(f.content like ${`%${likeEscape(lit)}%`})` : sql<SqlBool>`1 = 1`;
  if (caseSensitive) return sql<SqlBool>`(instr(f.content, ${lit}) > 0)`;
  // eslint-disable-next-line no-control-regex
  if (/^[\x00-\x7f]*$/.test(lit)) return sql<SqlBool>`(f.content like ${`%${likeEscape(lit)}%`} escape '\\')`;
  return null;
}

/** Each candidate verified against its text (null when it does not match); throws query_too_broad past the deadline. */
async function verify(
  db: Kysely<DB>,
  pattern: CodePattern,
  rows: (Candidate & { content?: string })[],
  deadline: number,
): Promise<(CodeHit | null)[]> {
  const out: (CodeHit | null)[] = [];
  for (let i = 0; i < rows.length; i += 25) {
    const part = rows.slice(i, i + 25);
    // the rows' texts, unless the candidates' statement brought them
    const unread = part.filter((r) => r.content === undefined).map((r) => Number(r.id));
    const texts = unread.length
      ? await db.selectFrom('search_code_files').select(['id', 'content']).where('id', 'in', unread).execute()
      : [];
    const byId = new Map([
      ...part.map((r) => [Number(r.id), r.content] as const),
      ...texts.map((t) => [Number(t.id), t.content] as const),
    ]);
    for (const row of part) {
      const content = byId.get(Number(row.id));
      let result: FileMatches | null = null;
      if (content !== undefined) {
        const ran =
          deadline === Infinity
            ? ((result = matchText(pattern.regex, content)), true)
            : withinTime(() => {
                result = matchText(pattern.regex, content);
              }, deadline - Date.now());
        if (!ran) throw tooBroad('This regex ran past the 2 s limit.');
      }
      const matched = result as FileMatches | null;
      out.push(
        matched
          ? {
              repo: { uuid: row.repo_uuid, full_name: row.full_name },
              path: row.path,
              language: row.language,
              commit_sha: row.commit_sha,
              blob_sha: row.blob_sha,
              matches: matched.matches,
              match_count: matched.match_count,
            }
          : null,
      );
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// issues and pulls

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

/**
 * PostgreSQL's text-search parser is quadratic in words joined by `_`; text is parsed with `_` read as
 * U+FF3F, a separator too (the same lexemes; migration 540 indexes the same expression), and snippets
 * turn it back.
 */
const tsText = (text: RawBuilder<unknown>) => sql`translate(${text}, '_', U&'\\FF3F')`;
const untsText = (text: RawBuilder<unknown>) => sql`translate(${text}, U&'\\FF3F', '_')`;

const MARK_OPEN = '\u0002';
const MARK_CLOSE = '\u0003';
const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A snippet with sentinel marks as HTML: escaped, the marks as `<mark>`. */
export function markSnippet(raw: string): string {
  return escapeHtml(raw.replace(/\s+/g, ' ').trim()).replaceAll(MARK_OPEN, '<mark>').replaceAll(MARK_CLOSE, '</mark>');
}

const fold = (w: string) =>
  w
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase();

/**
 * SQLite's snippet of a document, made here: FTS5's `snippet()` would run the full-text query
 * over every matching document again (it cannot seek the page's rows). The words are FTS5
 * `unicode61`'s (letters and digits, case and diacritics folded); a single query word also
 * matches as a prefix, as the query does. About 24 words around the first match, the matches
 * between the sentinel marks.
 */
export function textSnippet(doc: string, query: string): string {
  const exact = new Set<string>();
  const prefixes: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  for (let m = re.exec(query); m; m = re.exec(query)) {
    const words = (m[1] ?? m[2]!)
      .split(/[^\p{L}\p{N}]+/u)
      .filter(Boolean)
      .map(fold);
    if (words.length === 1) prefixes.push(words[0]!);
    else for (const w of words) exact.add(w);
  }
  const tokens = [...doc.matchAll(/[\p{L}\p{N}]+/gu)];
  const hit = (w: string) => {
    const f = fold(w);
    return exact.has(f) || prefixes.some((p) => f.startsWith(p));
  };
  const first = Math.max(
    0,
    tokens.findIndex((t) => hit(t[0])),
  );
  const from = Math.max(0, first - 6);
  const to = Math.min(tokens.length, from + 24);
  if (to <= from) return doc.slice(0, 200);
  let out = from > 0 ? '\u2026' : '';
  let at = tokens[from]!.index!;
  for (let k = from; k < to; k++) {
    const t = tokens[k]!;
    out += doc.slice(at, t.index!);
    out += hit(t[0]) ? `${MARK_OPEN}${t[0]}${MARK_CLOSE}` : t[0];
    at = t.index! + t[0].length;
  }
  return to < tokens.length ? `${out}\u2026` : out;
}

/** Words and "phrases" of `text` as an FTS5 query and as a PostgreSQL tsquery (null: nothing to search). */
function textQuery(text: string): { fts: string; ts: string } | null {
  const parts: string[][] = [];
  const re = /"([^"]*)"|(\S+)/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const words = (m[1] ?? m[2]!).split(/[^\p{L}\p{N}_]+/u).filter(Boolean);
    if (words.length) parts.push(words);
  }
  if (parts.length === 0) return null;
  const fts = parts.map((w) => `"${w.join(' ').replace(/"/g, '""')}"${w.length === 1 ? '*' : ''}`).join(' AND ');
  const ts = parts
    .map((w) =>
      w.length === 1
        ? `'${w[0]!.toLowerCase().replace(/'/g, "''")}':*`
        : w.map((x) => `'${x.toLowerCase().replace(/'/g, "''")}'`).join(' <-> '),
    )
    .join(' & ');
  return { fts, ts };
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
  const conditions: Expression<SqlBool>[] = [repoReadableBy(viewer)];
  const repo = one(quals, 'repo');
  if (repo) conditions.push(repoNamed(repo));
  for (const is of quals.get('is') ?? []) {
    const v = is.toLowerCase();
    if (v === 'thread' || v === 'issue') conditions.push(sql<SqlBool>`i.kind = 'thread'`);
    else if (v === 'pull' || v === 'pr') conditions.push(sql<SqlBool>`i.kind = 'pull'`);
    else if (v === 'open' || v === 'closed' || v === 'merged') conditions.push(sql<SqlBool>`i.state = ${v}`);
    else throw new AppError(400, 'invalid_request', `is:${is} is not a known qualifier (is:open, closed, merged, thread, pull).`);
  }
  for (const label of quals.get('label') ?? []) {
    conditions.push(sql<SqlBool>`exists (select 1 from item_labels il join labels l on l.uuid = il.label_uuid
      where il.item_uuid = i.uuid and l.name_key = ${label.toLowerCase()})`);
  }
  for (const author of quals.get('author') ?? []) {
    conditions.push(sql<SqlBool>`i.author_uuid = (select u.uuid from users u where u.username = ${author})`);
  }
  for (const assignee of quals.get('assignee') ?? []) {
    conditions.push(sql<SqlBool>`exists (select 1 from item_assignees ia join users u on u.uuid = ia.user_uuid
      where ia.item_uuid = i.uuid and u.username = ${assignee})`);
  }
  if (!tq && conditions.length === 1) throw new AppError(400, 'invalid_request', 'q needs words or a qualifier.');
  const pg = deps.dialect === 'postgres';
  // `i`: the items with their rank and best document. With words, from the matching documents
  // (an item's best one: its title, body, a reply or a review), each item then looked up by its
  // key; without words, every thread (not removed) and pull. The count's `i` leaves out the
  // ranking; snippets are made for the page's rows only.
  const items = (ranked: boolean): RawBuilder<unknown> => {
    if (!tq)
      return sql`(select 'thread' as kind, t.uuid, t.repo_uuid, t.number, t.title, t.state, t.author_uuid, t.updated_at,
          0 as rank, null as doc_id from threads t where t.removed_at is null
        union all
        select 'pull' as kind, p.uuid, p.repo_uuid, p.number, p.title, p.status as state, p.author_uuid, p.updated_at,
          0 as rank, null as doc_id from pulls p)`;
    let m: RawBuilder<unknown>;
    if (pg) {
      const tsq = sql`to_tsquery('simple', ${tsText(sql`${tq.ts}`)})`;
      m = ranked
        ? sql`(select distinct on (d.item_uuid) d.item_uuid, d.kind, d.id as doc_id, -ts_rank_cd(d.tsv, ${tsq}) as rank
            from search_docs d where d.tsv @@ ${tsq} order by d.item_uuid, ts_rank_cd(d.tsv, ${tsq}) desc)`
        : sql`(select distinct d.item_uuid, d.kind, 0 as doc_id, 0 as rank from search_docs d where d.tsv @@ ${tsq})`;
    } else {
      // bm25 weighs a title hit 10 times a body hit; lower is better. An auxiliary function cannot
      // sit in an aggregate or window: ranked per document first (`limit -1` keeps that subquery
      // apart), then the best document of each item
      m = ranked
        ? sql`(select h.item_uuid, h.kind, h.doc_id, h.rank from (
              select x.*, row_number() over (partition by x.item_uuid order by x.rank) as rn from (
                select d.item_uuid, d.kind, d.id as doc_id, bm25(search_docs_fts, 10.0, 1.0) as rank
                from search_docs_fts join search_docs d on d.id = search_docs_fts.rowid
                where search_docs_fts match ${tq.fts} limit -1) x) h
            where h.rn = 1)`
        : sql`(select distinct d.item_uuid, d.kind, 0 as doc_id, 0 as rank
            from search_docs_fts join search_docs d on d.id = search_docs_fts.rowid where search_docs_fts match ${tq.fts})`;
    }
    return sql`(select m.kind, m.item_uuid as uuid, coalesce(t.repo_uuid, p.repo_uuid) as repo_uuid,
        coalesce(t.number, p.number) as number, coalesce(t.title, p.title) as title, coalesce(t.state, p.status) as state,
        coalesce(t.author_uuid, p.author_uuid) as author_uuid, coalesce(t.updated_at, p.updated_at) as updated_at,
        m.rank, m.doc_id
      from ${m} m
      left join threads t on m.kind = 'thread' and t.uuid = m.item_uuid and t.removed_at is null
      left join pulls p on m.kind = 'pull' and p.uuid = m.item_uuid
      where t.uuid is not null or p.uuid is not null)`;
  };
  const from = (ranked: boolean) => sql`from ${items(ranked)} i join repos on repos.uuid = i.repo_uuid
    where ${sql.join(conditions, sql` and `)}`;
  const [countRow, rows] = await Promise.all([
    sql<{ n: number }>`select count(*) as n from (select 1 ${from(false)} limit ${COUNT_CAP + 1}) x`.execute(deps.db),
    sql<{
      kind: 'thread' | 'pull';
      repo_uuid: string;
      full_name: string;
      number: number;
      title: string;
      state: string;
      doc_id: number | null;
      updated_at: string;
    }>`select i.kind, i.repo_uuid, ${ownerName()} || '/' || repos.slug as full_name, i.number, i.title, i.state,
        i.doc_id, i.updated_at ${from(true)}
      order by i.rank, i.updated_at desc, i.uuid limit ${page.limit} offset ${page.offset}`.execute(deps.db),
  ]);
  const snippets = new Map<number, string>();
  const docIds = rows.rows.map((r) => Number(r.doc_id)).filter((id) => id > 0);
  if (tq && docIds.length) {
    const found = pg
      ? await sql<{ id: number; snippet: string }>`select d.id, ${untsText(
          sql`ts_headline('simple', ${tsText(sql`d.title || ' ' || d.body`)}, to_tsquery('simple', ${tsText(sql`${tq.ts}`)}),
            ${`StartSel=${MARK_OPEN}, StopSel=${MARK_CLOSE}, MaxWords=30, MinWords=10, MaxFragments=1`})`,
        )} as snippet
          from search_docs d where d.id in (${sql.join(docIds)})`.execute(deps.db)
      : await sql<{ id: number; title: string; body: string }>`select d.id, d.title, d.body from search_docs d
          where d.id in (${sql.join(docIds)})`
          .execute(deps.db)
          .then((r) => ({ rows: r.rows.map((d) => ({ id: d.id, snippet: textSnippet(`${d.title} ${d.body}`, text) })) }));
    for (const r of found.rows) snippets.set(Number(r.id), r.snippet);
  }
  return {
    total: Number(countRow.rows[0]?.n ?? 0),
    rows: rows.rows.map((r) => ({
      kind: r.kind,
      repo: { uuid: r.repo_uuid, full_name: r.full_name },
      number: Number(r.number),
      title: r.title,
      state: r.state,
      snippet: markSnippet(snippets.get(Number(r.doc_id)) ?? ''),
      updated_at: r.updated_at,
    })),
  };
}

// ---------------------------------------------------------------------------------------------
// commits and repos

export interface CommitHit {
  repo: { uuid: string; full_name: string };
  sha: string;
  message: string;
  author_name: string;
  committed_at: string;
  snippet: string;
}

/** GET /search/commits: messages of the default branches' commits. */
export async function searchCommits(
  deps: Deps,
  viewer: Viewer,
  query: { q: string; repo?: string },
  page: PageWindow,
): Promise<Counted<CommitHit>> {
  const { text, quals } = takeQualifiers(query.q, ['repo']);
  const tq = textQuery(text);
  if (!tq) throw new AppError(400, 'invalid_request', 'q needs words.');
  const conditions: Expression<SqlBool>[] = [repoReadableBy(viewer)];
  const repo = query.repo ?? one(quals, 'repo');
  if (repo) conditions.push(repoNamed(repo));
  else conditions.push(sql<SqlBool>`repos.fork_of_uuid is null`);
  const pg = deps.dialect === 'postgres';
  const tsq = sql`to_tsquery('simple', ${tsText(sql`${tq.ts}`)})`;
  const from = pg
    ? sql`from search_commits c join repos on repos.uuid = c.repo_uuid
        where to_tsvector('simple', ${tsText(sql`c.message`)}) @@ ${tsq} and ${sql.join(conditions, sql` and `)}`
    : sql`from search_commits_fts join search_commits c on c.id = search_commits_fts.rowid join repos on repos.uuid = c.repo_uuid
        where search_commits_fts match ${tq.fts} and ${sql.join(conditions, sql` and `)}`;
  const snippet = pg
    ? untsText(
        sql`ts_headline('simple', ${tsText(sql`c.message`)}, ${tsq}, ${`StartSel=${MARK_OPEN}, StopSel=${MARK_CLOSE}, MaxWords=30, MinWords=10`})`,
      )
    : sql`snippet(search_commits_fts, 0, ${MARK_OPEN}, ${MARK_CLOSE}, '\u2026', 24)`;
  const [countRow, rows] = await Promise.all([
    sql<{ n: number }>`select count(*) as n from (select 1 ${from} limit ${COUNT_CAP + 1}) x`.execute(deps.db),
    sql<{
      repo_uuid: string;
      full_name: string;
      sha: string;
      message: string;
      author_name: string;
      committed_at: string;
      snippet: string;
    }>`
      select c.repo_uuid, ${ownerName()} || '/' || repos.slug as full_name, c.sha, c.message, c.author_name, c.committed_at,
        ${snippet} as snippet ${from}
      order by c.committed_at desc, c.sha limit ${page.limit} offset ${page.offset}`.execute(deps.db),
  ]);
  return {
    total: Number(countRow.rows[0]?.n ?? 0),
    rows: rows.rows.map((r) => ({
      repo: { uuid: r.repo_uuid, full_name: r.full_name },
      sha: r.sha,
      message: r.message,
      author_name: r.author_name,
      committed_at: r.committed_at,
      snippet: markSnippet(r.snippet ?? ''),
    })),
  };
}

export interface RepoHit {
  uuid: string;
  full_name: string;
  description: string | null;
  visibility: string;
  fork: boolean;
  updated_at: string;
}

/** GET /search/repos: every word of `q` in the name, slug, description or about; name hits first. */
export async function searchRepos(deps: Deps, viewer: Viewer, query: { q: string }, page: PageWindow): Promise<Counted<RepoHit>> {
  const words = query.q.split(/\s+/).filter(Boolean);
  if (words.length === 0) throw new AppError(400, 'invalid_request', 'q needs words.');
  const pg = deps.dialect === 'postgres';
  const like = pg ? sql.raw('ilike') : sql.raw('like');
  const hay = sql`(repos.name || ' ' || repos.slug || ' ' || coalesce(repos.description, '') || ' ' || repos.about || ' ' || ${ownerName()})`;
  const conditions: Expression<SqlBool>[] = [
    repoReadableBy(viewer),
    ...words.map((w) => sql<SqlBool>`${hay} ${like} ${`%${likeEscape(w)}%`} escape '\\'`),
  ];
  const first = sql`${sql.ref('repos.slug')} ${like} ${`%${likeEscape(words[0]!)}%`} escape '\\'`;
  const from = sql`from repos where ${sql.join(conditions, sql` and `)}`;
  const [countRow, rows] = await Promise.all([
    sql<{ n: number }>`select count(*) as n from (select 1 ${from} limit ${COUNT_CAP + 1}) x`.execute(deps.db),
    sql<{
      uuid: string;
      full_name: string;
      description: string | null;
      visibility: string;
      fork_of_uuid: string | null;
      updated_at: string;
    }>`
      select repos.uuid, ${ownerName()} || '/' || repos.slug as full_name, repos.description, repos.visibility, repos.fork_of_uuid,
        repos.updated_at ${from}
      order by case when ${first} then 0 else 1 end, full_name limit ${page.limit} offset ${page.offset}`.execute(deps.db),
  ]);
  return {
    total: Number(countRow.rows[0]?.n ?? 0),
    rows: rows.rows.map((r) => ({
      uuid: r.uuid,
      full_name: r.full_name,
      description: r.description,
      visibility: r.visibility,
      fork: r.fork_of_uuid !== null,
      updated_at: r.updated_at,
    })),
  };
}

// ---------------------------------------------------------------------------------------------
// index state

export interface SearchIndexJson {
  commit_sha: string | null;
  state: 'pending' | 'indexing' | 'ready' | 'failed';
  files: number;
  bytes: number;
  updated_at: string | null;
}

/** GET {repo}/search-index. */
export async function searchIndexState(deps: Deps, viewer: Viewer, at: RepoAt): Promise<SearchIndexJson> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const row = await deps.db.selectFrom('search_index_state').selectAll().where('repo_uuid', '=', repo.uuid).executeTakeFirst();
  if (!row) return { commit_sha: null, state: 'pending', files: 0, bytes: 0, updated_at: null };
  return {
    commit_sha: row.commit_sha,
    state: row.state as SearchIndexJson['state'],
    files: Number(row.files),
    bytes: Number(row.bytes),
    updated_at: row.updated_at,
  };
}

/** `weft reindex [REPO]`: rebuilds the index of one repo (uuid) or of every repo, now, in this process. */
export async function reindex(deps: Deps, repoUuids: string[] | null): Promise<number> {
  const uuids = repoUuids ?? (await deps.db.selectFrom('repos').select('uuid').orderBy('uuid').execute()).map((r) => r.uuid);
  for (const uuid of uuids) {
    await scheduleSearchIndex(deps, deps.db as Kysely<DB>, uuid, true);
    await indexRepo(deps, uuid);
  }
  return uuids.length;
}
