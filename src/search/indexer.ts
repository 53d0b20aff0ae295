/**
 * The code index of a repo's default branch (docs/search.md "Indexing"). A push that moves the
 * default branch, a change of default branch, a fork and `weft reindex` queue a `search-index` job
 * (in their own transaction) and bump the repo's `generation`; the job:
 * 1. takes the repo (`state = 'indexing'` with a lease, one indexer per repo across instances; a
 *    job finding it taken queues a check for when the lease ends and stops: the holder sees the
 *    bumped generation and runs again);
 * 2. reads the changed paths since the commit the index holds (`git diff-tree`, so a force push
 *    that removed files removes their rows), or every file when it holds none, and their text
 *    through the object reader (src/git/objects.ts): binary files (a NUL in the first 8,000
 *    bytes), files over 1 MiB, symlinks and submodules are skipped;
 * 3. writes them in transactions of up to 200 files, and the new commits' messages;
 * 4. finishes (`ready`, the commit, files and bytes) only if no request came meanwhile, else runs again.
 */
import type { Insertable, Kysely } from 'kysely';
import type { SearchCodeFilesTable } from '../db/tables/search.ts';
import { sql } from 'kysely';
import type { Deps } from '../deps.ts';
import type { DB } from '../db/types.ts';
import { codeReaders } from '../git/readers.ts';
import { git } from '../git/run.ts';
import { nowIso } from '../time.ts';

export const JOB_SEARCH_INDEX = 'search-index';

/** Files above this size are not indexed. */
export const MAX_INDEXED_BYTES = 1024 * 1024;
const LEASE_MS = 120_000;
const BATCH = 200;
const MAX_COMMITS = 10_000;

const LANGUAGES: Record<string, string> = {
  ts: 'typescript',
  tsx: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  js: 'javascript',
  jsx: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  py: 'python',
  rb: 'ruby',
  go: 'go',
  rs: 'rust',
  java: 'java',
  kt: 'kotlin',
  swift: 'swift',
  c: 'c',
  h: 'c',
  cc: 'cpp',
  cpp: 'cpp',
  cxx: 'cpp',
  hpp: 'cpp',
  cs: 'csharp',
  php: 'php',
  sh: 'shell',
  bash: 'shell',
  zsh: 'shell',
  sql: 'sql',
  html: 'html',
  htm: 'html',
  css: 'css',
  scss: 'scss',
  md: 'markdown',
  markdown: 'markdown',
  json: 'json',
  yaml: 'yaml',
  yml: 'yaml',
  toml: 'toml',
  xml: 'xml',
  txt: 'text',
  scala: 'scala',
  lua: 'lua',
  pl: 'perl',
  r: 'r',
  ex: 'elixir',
  exs: 'elixir',
  erl: 'erlang',
  hs: 'haskell',
  ml: 'ocaml',
  clj: 'clojure',
  dart: 'dart',
  vue: 'vue',
};

/** The language of a path, by its extension (lower case; null when unknown). */
export function languageOf(path: string): string | null {
  const name = path.slice(path.lastIndexOf('/') + 1);
  if (name === 'Makefile') return 'makefile';
  if (name === 'Dockerfile') return 'dockerfile';
  const dot = name.lastIndexOf('.');
  if (dot <= 0) return null;
  return LANGUAGES[name.slice(dot + 1).toLowerCase()] ?? null;
}

/**
 * Asks for the repo's index to follow its default branch, with `db` (the caller's transaction
 * when one is open): bumps its generation and queues the job.
 */
export async function scheduleSearchIndex(deps: Deps, db: Kysely<DB>, repoUuid: string, full = false): Promise<void> {
  const now = nowIso();
  await db
    .insertInto('search_index_state')
    .values({ repo_uuid: repoUuid, state: 'pending', updated_at: now, generation: 1, files: 0, bytes: 0 })
    .onConflict((oc) =>
      oc.column('repo_uuid').doUpdateSet({
        generation: sql<number>`search_index_state.generation + 1`,
        state: sql<string>`case when search_index_state.state = 'indexing' then 'indexing' else 'pending' end`,
        ...(full ? { commit_sha: null } : {}),
      }),
    )
    .execute();
  await deps.jobs.enqueue(db, { kind: JOB_SEARCH_INDEX, payload: { repo_uuid: repoUuid } });
}

export function registerSearchIndexer(deps: Deps): void {
  deps.jobs.register(JOB_SEARCH_INDEX, async (payload) => indexRepo(deps, String(payload.repo_uuid)));
}

interface Change {
  path: string;
  /** the new blob; null when the path is gone (or no longer a file) */
  oid: string | null;
  size?: number;
}

/** Brings the repo's index to its default branch's tip (the job's handler; idempotent). */
export async function indexRepo(deps: Deps, repoUuid: string): Promise<void> {
  for (let round = 0; round < 20; round++) {
    const now = deps.clock.now();
    const lease = new Date(now.getTime() + LEASE_MS).toISOString();
    const claimed = await deps.db
      .updateTable('search_index_state')
      .set({ state: 'indexing', lease_until: lease, updated_at: now.toISOString() })
      .where('repo_uuid', '=', repoUuid)
      .where((eb) =>
        eb.or([eb('state', '!=', 'indexing'), eb('lease_until', '<', now.toISOString()), eb('lease_until', 'is', null)]),
      )
      .returning(['generation', 'commit_sha'])
      .executeTakeFirst();
    if (!claimed) {
      const state = await deps.db
        .selectFrom('search_index_state')
        .select('lease_until')
        .where('repo_uuid', '=', repoUuid)
        .executeTakeFirst();
      if (!state) return; // the repo is gone (its state row went with it)
      // another instance holds it: look again when its lease ends (it also sees our generation)
      const runAt = new Date(Math.max(Date.parse(state.lease_until ?? '') || 0, now.getTime()) + 1000).toISOString();
      await deps.jobs.enqueue(deps.db, { kind: JOB_SEARCH_INDEX, payload: { repo_uuid: repoUuid }, runAt });
      return;
    }
    let result: { sha: string | null; branch: string | null };
    try {
      result = await indexPass(deps, repoUuid, claimed.commit_sha, lease);
    } catch (err) {
      // the repo was deleted meanwhile: its rows went with it, nothing to record
      if (!(await deps.db.selectFrom('repos').select('uuid').where('uuid', '=', repoUuid).executeTakeFirst())) return;
      await deps.db
        .updateTable('search_index_state')
        .set({
          state: 'failed',
          error: String((err as Error).message ?? err).slice(0, 2000),
          lease_until: null,
          updated_at: nowIso(),
        })
        .where('repo_uuid', '=', repoUuid)
        .execute();
      throw err;
    }
    const totals = await deps.db
      .selectFrom('search_code_files')
      .select([sql<number>`count(*)`.as('files'), sql<number>`coalesce(sum(size), 0)`.as('bytes')])
      .where('repo_uuid', '=', repoUuid)
      .executeTakeFirstOrThrow();
    const done = await deps.db
      .updateTable('search_index_state')
      .set({
        state: 'ready',
        commit_sha: result.sha,
        branch: result.branch,
        files: Number(totals.files),
        bytes: Number(totals.bytes),
        error: null,
        lease_until: null,
        updated_at: nowIso(),
      })
      .where('repo_uuid', '=', repoUuid)
      .where('generation', '=', claimed.generation)
      .executeTakeFirst();
    if (Number(done.numUpdatedRows) > 0) return;
    // asked again meanwhile: keep what is done, release and run again
    await deps.db
      .updateTable('search_index_state')
      .set({ commit_sha: result.sha, branch: result.branch, state: 'pending', lease_until: null })
      .where('repo_uuid', '=', repoUuid)
      .execute();
  }
}

async function indexPass(
  deps: Deps,
  repoUuid: string,
  indexed: string | null,
  lease: string,
): Promise<{ sha: string | null; branch: string | null }> {
  const repo = await deps.db.selectFrom('repos').select('default_branch').where('uuid', '=', repoUuid).executeTakeFirst();
  if (!repo) return { sha: null, branch: null };
  const readers = codeReaders(deps);
  const dir = readers.dirOf(repoUuid);
  const tip = dir ? await deps.git.branchSha(repoUuid, repo.default_branch) : null;
  if (!dir || !tip) {
    await deps.db.deleteFrom('search_code_files').where('repo_uuid', '=', repoUuid).execute();
    await deps.db.deleteFrom('search_commits').where('repo_uuid', '=', repoUuid).execute();
    return { sha: null, branch: repo.default_branch };
  }
  if (indexed === tip) return { sha: tip, branch: repo.default_branch };
  const base = indexed && (await deps.git.hasCommit(repoUuid, indexed)) ? indexed : null;

  let changes: Change[];
  if (base) {
    const out = await git(dir, ['diff-tree', '-r', '-z', '--no-renames', '--no-commit-id', base, tip], { timeoutMs: 600_000 });
    changes = [];
    const parts = out.stdout.split('\0');
    for (let i = 0; i + 1 < parts.length; i += 2) {
      // ":100644 100644 OLD NEW M" then the path
      const [, newMode, , newOid, status] = parts[i]!.slice(1).split(' ');
      const path = parts[i + 1]!;
      const isFile = newMode === '100644' || newMode === '100755';
      changes.push({ path, oid: status === 'D' || !isFile ? null : newOid! });
    }
  } else {
    await deps.db.deleteFrom('search_code_files').where('repo_uuid', '=', repoUuid).execute();
    const out = await git(dir, ['ls-tree', '-r', '-z', '-l', '--full-tree', tip], { timeoutMs: 600_000 });
    changes = [];
    for (const entry of out.stdout.split('\0')) {
      if (!entry) continue;
      const tab = entry.indexOf('\t');
      const [mode, type, oid, size] = entry.slice(0, tab).split(/ +/);
      if (type !== 'blob' || (mode !== '100644' && mode !== '100755')) continue;
      changes.push({ path: entry.slice(tab + 1), oid: oid!, size: Number(size) });
    }
  }

  for (let i = 0; i < changes.length; i += BATCH) {
    const batch = changes.slice(i, i + BATCH);
    const unsized = batch.filter((c) => c.oid && c.size === undefined);
    if (unsized.length) {
      const infos = await readers.objects.info(
        dir,
        unsized.map((c) => c.oid!),
      );
      unsized.forEach((c, k) => (c.size = infos[k]?.size ?? 0));
    }
    const wanted = batch.filter((c) => c.oid && c.size! <= MAX_INDEXED_BYTES);
    const blobs = await readers.objects.contents(
      dir,
      wanted.map((c) => c.oid!),
    );
    const rows: Insertable<SearchCodeFilesTable>[] = [];
    for (let k = 0; k < wanted.length; k++) {
      const blob = blobs[k];
      if (!blob || blob.type !== 'blob') continue;
      const head = blob.data.subarray(0, 8000);
      if (head.includes(0)) continue; // binary
      const c = wanted[k]!;
      rows.push({
        repo_uuid: repoUuid,
        path: c.path,
        blob_sha: c.oid!,
        language: languageOf(c.path),
        size: blob.data.length,
        content: blob.data.toString('utf8'),
      });
    }
    await deps.db.transaction().execute(async (trx) => {
      if (base) {
        await trx
          .deleteFrom('search_code_files')
          .where('repo_uuid', '=', repoUuid)
          .where(
            'path',
            'in',
            batch.map((c) => c.path),
          )
          .execute();
      }
      for (let r = 0; r < rows.length; r += 50)
        await trx
          .insertInto('search_code_files')
          .values(rows.slice(r, r + 50))
          .execute();
      await trx
        .updateTable('search_index_state')
        .set({ lease_until: new Date(Math.max(Date.parse(lease), deps.clock.now().getTime() + LEASE_MS)).toISOString() })
        .where('repo_uuid', '=', repoUuid)
        .execute();
    });
  }

  await indexCommits(deps, dir, repoUuid, base, tip);
  // a whole tree just written: PostgreSQL's planner needs fresh statistics to choose the trigram
  // index over a scan (autovacuum would analyze the table later)
  if (!base && changes.length >= 1000 && deps.dialect === 'postgres') await sql`analyze search_code_files`.execute(deps.db);
  return { sha: tip, branch: repo.default_branch };
}

/** The messages of the commits `tip` added since `base` (all, up to 10,000 newest, without a base or after a force push). */
async function indexCommits(deps: Deps, dir: string, repoUuid: string, base: string | null, tip: string): Promise<void> {
  const ancestor = base ? await deps.git.contains(repoUuid, tip, base) : false;
  const range = ancestor ? [tip, '--not', base!] : [tip];
  const out = await git(dir, ['log', `-n${MAX_COMMITS}`, '--format=%H%x1f%an%x1f%cI%x1f%B%x1e', ...range], {
    timeoutMs: 600_000,
  });
  const rows = out.stdout
    .split('\x1e')
    .map((r) => r.replace(/^\n/, ''))
    .filter((r) => r.length > 40)
    .map((r) => {
      const [sha, author, date, message] = r.split('\x1f');
      return {
        repo_uuid: repoUuid,
        sha: sha!,
        author_name: author ?? '',
        committed_at: new Date(date ?? 0).toISOString(),
        message: (message ?? '').replace(/\n+$/, ''),
      };
    });
  await deps.db.transaction().execute(async (trx) => {
    if (!ancestor) await trx.deleteFrom('search_commits').where('repo_uuid', '=', repoUuid).execute();
    for (let r = 0; r < rows.length; r += 200) {
      await trx
        .insertInto('search_commits')
        .values(rows.slice(r, r + 200))
        .onConflict((oc) => oc.columns(['repo_uuid', 'sha']).doNothing())
        .execute();
    }
  });
}
