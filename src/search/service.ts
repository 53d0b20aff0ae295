/**
 * Search (docs/search.md): code, issues and pulls, commits and repos, across every repo the
 * caller may read, in the database Weft already runs. Access is part of every statement
 * (`repoReadableBy`), so a page is full and a count counts nothing unreadable.
 */
import { type Expression, type Kysely, type SqlBool, sql } from 'kysely';
import { repoContextOf, repoReadableBy } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import type { DB } from '../db/types.ts';
import { AppError } from '../errors.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import { indexRepo, scheduleSearchIndex } from './indexer.ts';
import {
  COUNT_CAP,
  type Counted,
  MARK_CLOSE,
  MARK_OPEN,
  type PageWindow,
  likeEscape,
  markSnippet,
  one,
  ownerName,
  repoNamed,
  takeQualifiers,
  textQuery,
  tsText,
  untsText,
} from './query.ts';

export { scheduleSearchIndex, registerSearchIndexer, JOB_SEARCH_INDEX } from './indexer.ts';
export { COUNT_CAP, type Counted, type PageWindow, markSnippet, takeQualifiers, textSnippet, totalHeader } from './query.ts';
export { type CodeCursor, type CodeHit, type CodeQuery, decodeCodeCursor, encodeCodeCursor, searchCode } from './code.ts';
export { type ThreadHit, type ThreadQuery, searchThreads } from './threads.ts';

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
  // the reads run on the reader (on a SQLite file a worker thread's read-only connection, db/sqlite-reader.ts)
  const reader = deps.database.reader;
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
    sql<{ n: number }>`select count(*) as n from (select 1 ${from} limit ${COUNT_CAP + 1}) x`.execute(reader),
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
      order by c.committed_at desc, c.sha limit ${page.limit} offset ${page.offset}`.execute(reader),
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
  const reader = deps.database.reader;
  const like = pg ? sql.raw('ilike') : sql.raw('like');
  const hay = sql`(repos.name || ' ' || repos.slug || ' ' || coalesce(repos.description, '') || ' ' || repos.about || ' ' || ${ownerName()})`;
  const conditions: Expression<SqlBool>[] = [
    repoReadableBy(viewer),
    ...words.map((w) => sql<SqlBool>`${hay} ${like} ${`%${likeEscape(w)}%`} escape '\\'`),
  ];
  const first = sql`${sql.ref('repos.slug')} ${like} ${`%${likeEscape(words[0]!)}%`} escape '\\'`;
  const from = sql`from repos where ${sql.join(conditions, sql` and `)}`;
  const [countRow, rows] = await Promise.all([
    sql<{ n: number }>`select count(*) as n from (select 1 ${from} limit ${COUNT_CAP + 1}) x`.execute(reader),
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
      order by case when ${first} then 0 else 1 end, full_name limit ${page.limit} offset ${page.offset}`.execute(reader),
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

/**
 * `weft reindex [REPO]`: rebuilds the index of one repo (uuid) or of every repo, now, and returns
 * when each is rebuilt. The rebuild asked for runs in this process, unless an indexer (a job of a
 * server, on any instance) holds the repo: then it waits for that indexer, which sees the new
 * request when it finishes and runs again (or for its lease to end, when it died).
 */
export async function reindex(deps: Deps, repoUuids: string[] | null): Promise<number> {
  const uuids = repoUuids ?? (await deps.db.selectFrom('repos').select('uuid').orderBy('uuid').execute()).map((r) => r.uuid);
  const stateOf = (uuid: string) =>
    deps.db.selectFrom('search_index_state').select(['state', 'generation']).where('repo_uuid', '=', uuid).executeTakeFirst();
  for (const uuid of uuids) {
    await scheduleSearchIndex(deps, deps.db as Kysely<DB>, uuid, true);
    const asked = Number((await stateOf(uuid))?.generation ?? 0);
    for (;;) {
      await indexRepo(deps, uuid);
      const now = await stateOf(uuid);
      // gone with its repo, or done (or failed) at the generation asked for or later
      if (!now || (now.state !== 'pending' && now.state !== 'indexing' && Number(now.generation) >= asked)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return uuids.length;
}
