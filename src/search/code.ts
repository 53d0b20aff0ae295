/**
 * GET /search/code (docs/search.md "Code"): literals and regexes over the default branches of every
 * repo the caller may read, each result verified against the file's text.
 */
import { type Expression, type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import { repoReadableBy } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import type { DB } from '../db/types.ts';
import { AppError } from '../errors.ts';
import type { Viewer } from '../viewer.ts';
import { type CodePattern, type FileMatches, type Need, codePattern, matchText, RegexClock, tooBroad } from './pattern.ts';
import { COUNT_CAP, type Counted, type PageWindow, likeEscape, one, ownerName, repoNamed, takeQualifiers } from './query.ts';

/** A regex search may spend this long matching (RegexClock), then 400 query_too_broad. */
const REGEX_BUDGET_MS = 2000;

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

// eslint-disable-next-line no-control-regex
const isAscii = (s: string) => /^[\x00-\x7f]*$/.test(s);

/**
 * PostgreSQL's case-insensitive check of an ASCII literal: `~*` with the literal escaped (every
 * character but a letter or digit after a backslash: a plain character in an ARE). pg_trgm answers
 * it from the same GIN index as `ilike`, and it folds the pattern's ASCII letters only, as
 * JavaScript's `i` flag does, where `ilike` lowers the whole text first in the database's
 * collation (about twice the CPU per file).
 */
const pgAsciiMatch = (content: RawBuilder<unknown>, lit: string): RawBuilder<SqlBool> =>
  sql<SqlBool>`(${content} ~* ${lit.replace(/[^A-Za-z0-9]/g, '\\$&')})`;

/** PostgreSQL condition of a need (pg_trgm answers `~*` and `ilike` from its GIN index). */
function pgNeed(need: Need, content: RawBuilder<unknown> = sql`f.content`): RawBuilder<SqlBool> {
  if ('lit' in need)
    return isAscii(need.lit) ? pgAsciiMatch(content, need.lit) : sql<SqlBool>`(${content} ilike ${`%${likeEscape(need.lit)}%`})`;
  const parts = ('and' in need ? need.and : need.or).map((n) => pgNeed(n, content));
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
  // on a SQLite file the reader is a pool of read-only connections on worker threads
  // (db/sqlite-reader.ts), so a search does not hold the server's thread; on PostgreSQL it is `db`
  const reader = deps.database.reader;
  if (deps.dialect !== 'postgres') return searchCodeOn(deps, reader, viewer, query, page);
  // PostgreSQL prices a scan of the table low (the text is TOASTed apart) and would read every
  // file's text instead of asking the trigram index: the search runs with scans off, its
  // statements in one snapshot (the probe's files below are those the page is taken from)
  return reader
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      await sql`set local enable_seqscan = off`.execute(trx);
      return searchCodeOn(deps, trx, viewer, query, page);
    });
}

/** A query's parts, as the plans below use them. */
interface Plan {
  pattern: CodePattern;
  caseSensitive: boolean;
  pg: boolean;
  path: string | undefined;
  lang: string | undefined;
  /** access, the repo qualifier, forks (over `repos`) */
  conditions: Expression<SqlBool>[];
}

/**
 * A search whose trigrams are in many files is read in result order, one window of files at a
 * time, and stops once its page is full and this many files were examined: its count is then "at
 * least" (`N+`) unless the end came first. A search whose trigrams are in few files verifies them
 * all, so its count is exact (up to COUNT_CAP).
 */
export const CODE_SEARCH_LIMITS = {
  /** files examined at most once a page is full */
  examineBudget: 1000,
  /** SQLite: at most this many trigram candidates are verified all at once (the exact count) */
  sparseCandidates: 1000,
  /** PostgreSQL: the first this many files in order holding no match means the literal is rare */
  denseProbe: 100,
  /**
   * PostgreSQL: the trigram index is first asked for this many + 1 matching files (a limit, so a
   * common literal costs no more); as few as this are all the matches, and the search takes its
   * page from them without going through the files in order
   */
  rareProbe: 100,
  /** files in a first window (doubling to 512) */
  window: 64,
  /**
   * SQLite, a literal's files in order: ask FTS5 for each window's trigram candidates `always`,
   * `never` (check every file's text), or `auto`: whichever the walk measured as cheaper
   */
  windowTrigrams: 'auto' as 'auto' | 'always' | 'never',
};

async function searchCodeOn(
  deps: Deps,
  db: Kysely<DB>,
  viewer: Viewer,
  query: CodeQuery,
  page: PageWindow,
): Promise<Counted<CodeHit>> {
  const { text, quals } = takeQualifiers(query.q, ['repo', 'path', 'lang']);
  const repo = query.repo ?? one(quals, 'repo');
  const caseSensitive = query.case === 'sensitive';
  const conditions: Expression<SqlBool>[] = [repoReadableBy(viewer)];
  if (repo) conditions.push(repoNamed(repo));
  else if (!query.forks) conditions.push(sql<SqlBool>`repos.fork_of_uuid is null`);
  const plan: Plan = {
    pattern: codePattern(text, caseSensitive),
    caseSensitive,
    pg: deps.dialect === 'postgres',
    path: query.path ?? one(quals, 'path'),
    lang: query.lang ?? one(quals, 'lang'),
    conditions,
  };
  // SQLite: the trigram candidates, once: as few as sparseCandidates are all verified (the exact
  // count). PostgreSQL: the GIN index, asked first with a limit: a rare literal (or a regex's rare
  // literal runs) is known rare without reading the files in order, and its few files are the candidates
  const exact = plan.pg ? exactCondition(plan.pattern, caseSensitive, true, sql`f.content`, true) : null;
  const [probe, most] = plan.pg
    ? [
        sql<{ id: number }>`select f.id from search_code_files f
          where ${pgNeed(plan.pattern.need)}${exact ? sql` and ${exact}` : sql``}
          limit ${CODE_SEARCH_LIMITS.rareProbe + 1}`,
        CODE_SEARCH_LIMITS.rareProbe,
      ]
    : [
        sql<{ id: number }>`select rowid as id from search_code_fts
          where search_code_fts match ${ftsQuery(plan.pattern.need)} limit ${CODE_SEARCH_LIMITS.sparseCandidates + 1}`,
        CODE_SEARCH_LIMITS.sparseCandidates,
      ];
  const ids = (await probe.execute(db)).rows;
  if (ids.length <= most)
    return sparse(
      db,
      plan,
      query.after ?? null,
      page,
      ids.map((r) => Number(r.id)),
    );
  return (await dense(db, plan, query.after ?? null, page)) ?? sparse(db, plan, query.after ?? null, page);
}

/** The `[from, to)` range of paths a prefix covers (binary order), for an index to seek. */
function prefixRange(path: string | undefined): [string, string] | null {
  const trimmed = path?.replace(/^\/+/, '');
  if (!trimmed || /[*?]/.test(trimmed)) return null;
  const last = trimmed.codePointAt(trimmed.length - 1)!;
  if (last >= 0xffff) return null;
  return [trimmed, trimmed.slice(0, -1) + String.fromCodePoint(last + 1)];
}

/** SQLite's walk of a literal: asks FTS5 once a window's checks of files without a match cost more */
const WASTED_MS = 5;

/**
 * In result order: the readable repos by `full_name`, in each its files by path (the (repo, path)
 * index, the path and language qualifiers, on SQLite the trigram candidates), a window at a time,
 * each window's texts checked in the statement (a literal) or here (a regex). Null on PostgreSQL
 * when the first `denseProbe` files hold no match: the trigram index is then the better way in.
 */
async function dense(
  db: Kysely<DB>,
  plan: Plan,
  cursor: CodeCursor | null,
  page: PageWindow,
  /** count only, up to and including this result, examining at most `budget` files */
  until: CodeCursor | null = null,
  budget = CODE_SEARCH_LIMITS.examineBudget,
): Promise<Counted<CodeHit> | null> {
  const { pattern, pg } = plan;
  const upTo = until ? sql`(r.full_name < ${until.full_name} or r.full_name = ${until.full_name})` : null;
  const repos = await sql<{ uuid: string; full_name: string; commit_sha: string | null }>`select r.* from (
      select repos.uuid, ${ownerName()} || '/' || repos.slug as full_name, s.commit_sha
      from repos join search_index_state s on s.repo_uuid = repos.uuid where ${sql.join(plan.conditions, sql` and `)}) r
    ${cursor ? sql`where r.full_name >= ${cursor.full_name}` : upTo ? sql`where ${upTo}` : sql``}
    order by r.full_name`.execute(db);
  const windowConditions: Expression<SqlBool>[] = [];
  if (plan.path) windowConditions.push(pathCondition(plan.path));
  const range = pg ? null : prefixRange(plan.path);
  if (range) windowConditions.push(sql<SqlBool>`f.path >= ${range[0]} and f.path < ${range[1]}`);
  if (plan.lang) windowConditions.push(sql<SqlBool>`f.language = ${plan.lang.toLowerCase()}`);
  const fts = pg ? null : ftsQuery(pattern.need);
  const exact = exactCondition(pattern, plan.caseSensitive, pg, sql`c.content`);
  // PostgreSQL: a regex's texts come back only when its trigram literals are in them
  const check = exact ?? (pg ? pgNeed(pattern.need, sql`c.content`) : null);
  const clock = exact ? null : new RegexClock(REGEX_BUDGET_MS);
  // SQLite, a literal: a window's trigram candidates cost an FTS5 query that reads the trigrams'
  // doclists up to the window (about 15 ms at 50,000 files whatever the window's size), a file's
  // text check costs about its length. The walk starts by checking the files directly, asks FTS5
  // once the last window's checks of files without a match cost more than WASTED_MS, then takes
  // whichever way its last timings say is cheaper (bench/README.md "The contract's size on the
  // current code"). A regex's files are checked here, in JavaScript: always narrowed by FTS5.
  const costs = {
    ftsMs: null as number | null,
    checkMsPerFile: null as number | null,
    candidateShare: 1,
    hitShare: 1,
  };
  const askFts = (files: number) => {
    const mode = CODE_SEARCH_LIMITS.windowTrigrams;
    if (mode !== 'auto' || exact === null) return mode !== 'never' || exact === null;
    if (costs.checkMsPerFile === null) return costs.ftsMs !== null;
    const wasted = (share: number) => files * costs.checkMsPerFile! * (1 - share);
    if (costs.ftsMs === null) return wasted(costs.hitShare) > WASTED_MS;
    return wasted(costs.candidateShare) >= costs.ftsMs;
  };
  const found: CodeHit[] = [];
  let skip = cursor ? 0 : page.offset;
  let hits = 0;
  let examined = 0;
  let size = CODE_SEARCH_LIMITS.window;
  for (const repo of repos.rows) {
    let after = cursor && repo.full_name === cursor.full_name ? cursor.path : null;
    for (;;) {
      const conds = [sql<SqlBool>`f.repo_uuid = ${repo.uuid}`, ...windowConditions];
      if (after !== null) conds.push(sql<SqlBool>`f.path > ${after}`);
      if (until && repo.full_name === until.full_name) conds.push(sql<SqlBool>`f.path <= ${until.path}`);
      // the text comes back only while the page takes rows (a regex: always, it is verified here);
      // past a full page a literal's files are only counted
      const wantText = !exact || found.length < page.limit;
      const select = sql`select c.id, c.path, c.language, c.blob_sha, ${
        wantText
          ? sql`${check ? sql`case when ${check} then c.content end` : sql`c.content`} as content`
          : sql`null as content, ${check} as hit`
      }`;
      const window = sql`select f.id, f.path from search_code_files f where ${sql.join(conds, sql` and `)} order by f.path limit ${size}`;
      type Row = { id: number; path: string; language: string | null; blob_sha: string; content: string | null; hit?: unknown };
      let rows: Row[] = [];
      let seen: number;
      let narrowed = true;
      let last: string | undefined;
      if (fts === null) {
        rows = (await sql<Row>`${select} from (${window}) w join search_code_files c on c.id = w.id order by c.path`.execute(db))
          .rows;
        seen = rows.length;
        last = rows.at(-1)?.path;
      } else {
        // SQLite: the window's paths (the (repo, path) index, no text), the trigram candidates among
        // them (the FTS5 query bounded to the window's rowids, so it reads that part of each
        // trigram's doclist, not all of it), then those candidates' rows
        const paths = (await sql<{ id: number; path: string }>`${window}`.execute(db)).rows;
        seen = paths.length;
        last = paths.at(-1)?.path;
        const ids = paths.map((r) => Number(r.id));
        if (ids.length) {
          let chosen = ids;
          narrowed = askFts(ids.length);
          if (narrowed) {
            const t0 = performance.now();
            const inFts = await sql<{ id: number }>`select rowid as id from search_code_fts where search_code_fts match ${fts}
              and rowid between ${Math.min(...ids)} and ${Math.max(...ids)}`.execute(db);
            costs.ftsMs = performance.now() - t0;
            const candidates = new Set(inFts.rows.map((r) => Number(r.id)));
            chosen = ids.filter((id) => candidates.has(id));
            costs.candidateShare = chosen.length / ids.length;
          }
          if (chosen.length) {
            const t0 = performance.now();
            rows = (
              await sql<Row>`${select} from search_code_files c
                where c.id in (select value from json_each(${JSON.stringify(chosen)})) order by c.path`.execute(db)
            ).rows;
            costs.checkMsPerFile = (performance.now() - t0) / chosen.length;
          }
        }
      }
      // the budget counts the files walked, on either way in (so a count is the same whichever
      // way the walk took, and a window ends where the budget does)
      examined += seen;
      const hitsBefore = hits;
      for (const row of rows) {
        if (row.content === null && !(wantText ? false : truthy(row.hit))) continue;
        const content = row.content ?? '';
        let matched: FileMatches | null = null;
        const onPage = skip === 0 && found.length < page.limit;
        if (!exact || onPage) {
          if (clock === null) matched = matchText(pattern.regex, content);
          else if (!clock.run(() => void (matched = matchText(pattern.regex, content))))
            throw tooBroad('This regex ran past the 2 s limit.');
          if (!matched) continue;
        }
        hits++;
        if (skip > 0) skip--;
        else if (onPage) {
          const m = matched as FileMatches | null;
          found.push({
            repo: { uuid: repo.uuid, full_name: repo.full_name },
            path: row.path,
            language: row.language,
            commit_sha: repo.commit_sha,
            blob_sha: row.blob_sha,
            matches: m?.matches ?? [],
            match_count: m?.match_count ?? 0,
          });
        }
      }
      if (!narrowed && seen > 0) costs.hitShare = (hits - hitsBefore) / seen;
      // PostgreSQL: matches too sparse in order to fill the page within the budget (none in the
      // first files, or fewer than a page per budget): the trigram index is the better way in
      if (pg && !until && found.length < page.limit && examined >= CODE_SEARCH_LIMITS.denseProbe) {
        if (hits * CODE_SEARCH_LIMITS.examineBudget < page.limit * examined) return null;
      }
      if (found.length >= page.limit && examined >= budget) return { rows: found, total: hits, atLeast: true };
      if (seen < size) break;
      after = last!;
      size = Math.min(size * 2, 512);
      // a full page: the next window reads no further than the budget
      if (found.length >= page.limit) size = Math.max(1, Math.min(size, budget - examined));
    }
  }
  // the end: every file after the cursor was examined; the count adds those before it, if the budget allows
  if (!cursor) return { rows: found, total: hits };
  const before = await dense(db, plan, null, { offset: 0, limit: 0 }, cursor, budget - examined);
  return { rows: found, total: hits + (before?.total ?? 0), ...(before && !before.atLeast ? {} : { atLeast: true }) };
}

/**
 * Every trigram candidate verified (few of them): the page in order, and the exact count.
 * `probed`: the files the PostgreSQL probe found (the need and a literal already checked on them).
 */
async function sparse(
  db: Kysely<DB>,
  plan: Plan,
  cursor: CodeCursor | null,
  page: PageWindow,
  probed?: number[],
): Promise<Counted<CodeHit>> {
  const { pattern, pg, path, lang, caseSensitive, conditions } = plan;
  if (probed && probed.length === 0) return { rows: [], total: 0 };
  const fileConditions: Expression<SqlBool>[] = [];
  if (path) fileConditions.push(pathCondition(path));
  if (lang) fileConditions.push(sql<SqlBool>`f.language = ${lang.toLowerCase()}`);
  if (probed && pg) fileConditions.push(sql<SqlBool>`f.id in (${sql.join(probed)})`);
  else if (probed) fileConditions.push(sql<SqlBool>`f.id in (select value from json_each(${JSON.stringify(probed)}))`);
  else if (pg) fileConditions.push(pgNeed(pattern.need));
  else
    fileConditions.push(
      sql<SqlBool>`f.id in (select rowid from search_code_fts where search_code_fts match ${ftsQuery(pattern.need)})`,
    );

  // a literal is decided by the statement itself; a regex (or a case-insensitive literal beyond
  // ASCII on SQLite, whose LIKE folds ASCII only) is decided by verification. PostgreSQL's probe
  // checked the literal already; SQLite's candidates are the trigram index's
  const exact = exactCondition(pattern, caseSensitive, pg, sql`f.content`, true);
  if (exact && !(probed && pg)) fileConditions.push(exact);
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
  const candidates = (after: CodeCursor | null, limit: number, offset = 0) =>
    sql<Candidate & { beyond: unknown }>`select c.*, ${cursor ? beyond(cursor) : sql`1 = 1`} as beyond
      from (select f.id, f.repo_uuid, ${ownerName()} || '/' || repos.slug as full_name, f.path, f.language,
        f.blob_sha, s.commit_sha ${base}) c
      ${after ? sql`where ${beyond(after)}` : sql``}
      order by c.full_name, c.path limit ${limit} offset ${offset}`;

  if (exact && probed) {
    // few candidates (the probe's): every matching file in order without its text (the literal
    // checked once, in the statement), so the count is the rows'; then the page's texts
    const all = (await candidates(null, probed.length + 1).execute(db)).rows;
    const rest = cursor ? all.filter((r) => truthy(r.beyond)) : all.slice(page.offset);
    const hits = await verify(db, pattern, rest.slice(0, page.limit), null);
    return { rows: hits.filter((h): h is CodeHit => h !== null), total: all.length };
  }
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
    const hits = await verify(db, pattern, rows.rows, null);
    return { rows: hits.filter((h): h is CodeHit => h !== null), total };
  }

  // verified one chunk at a time, in order, until the page is full and the count known (from the
  // start, so the count is the whole result's; the page is taken past the cursor or the offset)
  const clock = new RegexClock(REGEX_BUDGET_MS);
  const found: CodeHit[] = [];
  let total = 0;
  let skip = cursor ? 0 : page.offset;
  let after: CodeCursor | null = null;
  for (;;) {
    const chunk: (Candidate & { beyond: unknown })[] = (await candidates(after, 200).execute(db)).rows;
    if (chunk.length === 0) break;
    after = chunk.at(-1)!;
    const hits = await verify(db, pattern, chunk, clock);
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

/**
 * The SQL check of a literal over `content` (null: a regex, or a case-insensitive literal beyond
 * ASCII on SQLite, verified here). `needDone`: the trigram condition already decides a
 * case-insensitive literal (PostgreSQL's `ilike`).
 */
function exactCondition(
  pattern: CodePattern,
  caseSensitive: boolean,
  pg: boolean,
  content: RawBuilder<unknown> = sql`f.content`,
  needDone = false,
): RawBuilder<SqlBool> | null {
  const lit = pattern.literal;
  if (lit === null) return null;
  if (pg) {
    if (caseSensitive) return sql<SqlBool>`(strpos(${content}, ${lit}) > 0)`;
    return needDone ? sql<SqlBool>`1 = 1` : pgNeed({ lit }, content);
  }
  if (caseSensitive) return sql<SqlBool>`(instr(${content}, ${lit}) > 0)`;
  if (isAscii(lit)) return sql<SqlBool>`(${content} like ${`%${likeEscape(lit)}%`} escape '\\')`;
  return null;
}

/** Each candidate verified against its text (null when it does not match); throws query_too_broad when the clock runs out. */
async function verify(
  db: Kysely<DB>,
  pattern: CodePattern,
  rows: (Candidate & { content?: string })[],
  clock: RegexClock | null,
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
          clock === null
            ? ((result = matchText(pattern.regex, content)), true)
            : clock.run(() => {
                result = matchText(pattern.regex, content);
              });
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
