/**
 * Search benchmark (`npx tsx bench/search.ts`, bench/README.md "Search"). On a generated text
 * repository (BENCH_SEARCH_FILES files, default 5,000, of about BENCH_SEARCH_MB MiB in all,
 * default 100; the contract's figure is 50,000 files and 1 GiB) plus 20 smaller repos, for each
 * database (BENCH_DATABASES, default sqlite,postgres; PostgreSQL at BENCH_DATABASE_URL or the
 * local test server), it measures:
 *
 * - the initial index of the big repo (time, and the bytes the index takes per byte indexed);
 * - the re-index of a push changing 10 files;
 * - code queries (a rare literal, a common literal, a regex, a literal with path: and lang:)
 *   with 10 concurrent clients (BENCH_CODE_CLIENTS: also 1) over HTTP for BENCH_DURATION seconds (default 5): p50 and p99,
 *   beside the same question asked of `git grep` on the bare repo and of `csearch` (Debian's
 *   codesearch, after `cindex` of the same files), each with 10 concurrent processes, as ratios;
 * - thread search at BENCH_SEARCH_THREADS threads (default 100,000): p50 and p99 with 1 and with
 *   10 clients (BENCH_TEXT_CLIENTS, default `1,10`), the title candidates' statement alone
 *   through the old way (a column filter / a weight) and through the titles' own index (migration
 *   710), and on PostgreSQL the words' candidates statement alone, the planner's choice against
 *   the GIN index with a limit then backwards (with PLAN=1 their `EXPLAIN (ANALYZE, BUFFERS)`);
 * - on PostgreSQL, the rare literal also without the probe of the trigram index (as before).
 *
 * The load runs in this process beside the server (one event loop): the figures are an upper
 * bound of what a separate client would see. "CPU/request" is this process's; on PostgreSQL the
 * CPU of the pool's backends per request (read from /proc: the database on the same machine) is
 * beside it. The load average is printed with each table. The big repo is generated and streamed
 * to `git fast-import` a file at a time, so its size costs disk, not memory.
 *
 * BENCH_WINDOW_TRIGRAMS=always|never|auto sets how SQLite's walk of a common literal narrows each
 * window (src/search/code.ts `windowTrigrams`; the server's is `auto`), for an A/B.
 *
 * With PROFILE=1 each search then runs alone too: its wall time and this process's CPU, and on
 * SQLite its statements by text, how many and their time (with PLAN=1 the slowest ones'
 * `EXPLAIN QUERY PLAN`), as a profile; with WEFT_SQLITE_READERS=0, since the statements of the
 * read-only worker connections run on other threads.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';

const FILES = Number(process.env.BENCH_SEARCH_FILES ?? 5000);
const MB = Number(process.env.BENCH_SEARCH_MB ?? 100);
const THREADS = Number(process.env.BENCH_SEARCH_THREADS ?? 100_000);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const DATABASES = (process.env.BENCH_DATABASES ?? 'sqlite,postgres').split(',');
const CLIENTS = 10;
/**
 * the code queries run with each of these client counts (default 10, the issue's figure; `1,10`
 * adds one client: the contract's literal budget names no count). git grep and csearch run with
 * 10 concurrent processes, so the ratio columns are printed for the 10-client rows only.
 */
const CODE_CLIENTS = (process.env.BENCH_CODE_CLIENTS ?? String(CLIENTS)).split(',').map(Number);
/** the thread queries run with each of these client counts (the text budget names none) */
const TEXT_CLIENTS = (process.env.BENCH_TEXT_CLIENTS ?? '1,10').split(',').map(Number);

const env = {
  PATH: process.env.PATH!,
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  LC_ALL: 'C',
};

const WORDS =
  'return const function value index buffer stream parse token write read error result config option state handle update ' +
  'create delete request response client server query table column record event message channel thread worker queue';
const VOCAB = WORDS.split(' ');

/** A deterministic pseudo-random generator (the same repo every run). */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Source-like text of about `bytes`, with rare markers in some files. */
function fileText(i: number, bytes: number, version = 0): string {
  const r = rng(i * 7919 + version);
  const lines: string[] = [];
  let size = 0;
  let n = 0;
  while (size < bytes) {
    const w = () => VOCAB[Math.floor(r() * VOCAB.length)]!;
    let line = `  ${w()}_${Math.floor(r() * 1e6)} = ${w()}(${w()}, ${Math.floor(r() * 1000)}); // ${w()} ${w()} ${w()}`;
    if (n === 3 && i % 500 === 7) line += ' zanzibarQuux';
    if (n === 5 && i % 97 === 3) line += ` fooBar${i}Baz`;
    lines.push(line);
    size += line.length + 1;
    n++;
  }
  return `// file ${i} version ${version}\n${lines.join('\n')}\n`;
}

const pathOf = (i: number) =>
  `src/d${String(Math.floor(i / 500)).padStart(3, '0')}/f${String(i).padStart(6, '0')}.${i % 3 === 0 ? 'ts' : 'go'}`;

/**
 * A bare repo from `files` (path → text, generated as they are written) through git fast-import:
 * one commit, or a child of `parent`. The text is streamed to fast-import's input a file at a time
 * (with its back-pressure), so a 1 GiB repo never is in memory at once.
 */
async function fastImport(
  dir: string,
  files: Iterable<[string, string]>,
  parent: string | null,
  message: string,
): Promise<string> {
  const child = spawn('git', [`--git-dir=${dir}`, 'fast-import', '--quiet', '--force'], {
    env,
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git fast-import exited with ${code}`))));
  });
  const write = async (chunk: string) => {
    if (!child.stdin.write(chunk)) await Promise.race([once(child.stdin, 'drain'), done]);
  };
  await write('commit refs/heads/main\ncommitter Bench <b@example.com> 1700000000 +0000\n');
  await write(`data ${Buffer.byteLength(message)}\n${message}\n`);
  if (parent) await write(`from ${parent}\n`);
  for (const [path, text] of files) await write(`M 100644 inline ${path}\ndata ${Buffer.byteLength(text)}\n${text}\n`);
  child.stdin.end();
  await done;
  return execFileSync('git', [`--git-dir=${dir}`, 'rev-parse', 'main'], { env })
    .toString()
    .trim();
}

/** The big repo's files, generated one at a time. */
function* bigFiles(count: number, bytesEach: number): Generator<[string, string]> {
  for (let i = 0; i < count; i++) yield [pathOf(i), fileText(i, bytesEach)];
}

const load1 = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');
const rssMb = () => (process.memoryUsage().rss / 2 ** 20).toFixed(0);

/** PostgreSQL: the CPU (ms) so far of the backends of the app's pool (the same machine's /proc). */
async function pgBackendCpu(db: import('kysely').Kysely<unknown>): Promise<Map<number, number>> {
  const pids = await sql<{ pid: number }>`select pid from pg_stat_activity
    where application_name = (select application_name from pg_stat_activity where pid = pg_backend_pid())`.execute(db);
  const out = new Map<number, number>();
  for (const { pid } of pids.rows) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(pid), ((Number(f[11]) + Number(f[12])) * 1000) / 100);
    } catch {
      // not on this machine, or gone
    }
  }
  return out;
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** `clients` concurrent loops of `once` for `seconds`: p50 and p99 in ms. */
async function load(
  once: () => Promise<void>,
  seconds: number,
  clients = CLIENTS,
): Promise<{ p50: number; p99: number; n: number; cpuMs: number }> {
  const warm = Date.now() + 500;
  while (Date.now() < warm) await once();
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  const end = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (Date.now() < end) {
        const t0 = performance.now();
        await once();
        times.push(performance.now() - t0);
      }
    }),
  );
  times.sort((a, b) => a - b);
  const cpu = process.cpuUsage(cpu0);
  // this process's CPU per request: the server's, plus the in-process client's (an upper bound)
  const cpuMs = (cpu.user + cpu.system) / 1000 / Math.max(1, times.length);
  return { p50: percentile(times, 50), p99: percentile(times, 99), n: times.length, cpuMs };
}

const run = (cmd: string, args: string[], extra: Record<string, string> = {}) =>
  new Promise<void>((resolve, reject) =>
    execFile(cmd, args, { env: { ...env, ...extra }, maxBuffer: 1 << 28 }, (err) =>
      // grep-like tools exit 1 when nothing matches
      err && (err as { code?: number }).code !== 1 ? reject(err) : resolve(),
    ),
  );

interface Query {
  name: string;
  q: string;
  /** the same question for git grep (args after `grep`) and csearch */
  gitGrep: string[];
  csearch: string[];
  /** git grep pathspecs */
  paths?: string[];
}

const QUERIES: Query[] = [
  {
    name: 'literal, rare',
    q: 'zanzibarQuux',
    gitGrep: ['-n', '-i', '-F', 'zanzibarQuux'],
    csearch: ['-n', '-i', 'zanzibarQuux'],
  },
  { name: 'literal, common', q: 'stream_12', gitGrep: ['-n', '-i', '-F', 'stream_12'], csearch: ['-n', '-i', 'stream_12'] },
  { name: 'regex', q: '/fooBar\\d+Baz/', gitGrep: ['-n', '-i', '-P', 'fooBar\\d+Baz'], csearch: ['-n', '-i', 'fooBar\\d+Baz'] },
  {
    name: 'qualifiers path: lang:',
    q: 'handle_4 path:src/d001/ lang:typescript',
    gitGrep: ['-n', '-i', '-F', 'handle_4'],
    paths: ['src/d001/*.ts'],
    csearch: ['-n', '-i', '-f', '^src/d001/.*\\.ts$', 'handle_4'],
  },
];

/**
 * The statements of a SQLite search, for its profile (PROFILE=1): better-sqlite3's `prepare` is
 * wrapped on its prototype before any connection opens, so statements that the connection's cache
 * (src/db/fast-path.ts) prepared during the load are timed too. Statements on the read-only worker
 * connections run on other threads and are not seen: run the profile with WEFT_SQLITE_READERS=0
 * to list a search's statements.
 */
const statementLog: { sql: string; ms: number; params: unknown[]; db: unknown }[] = [];
let recordingStatements = false;
if (process.env.PROFILE) {
  const proto = (await import('better-sqlite3')).default.prototype as unknown as { prepare: (source: string) => unknown };
  const prepare = proto.prepare;
  proto.prepare = function (this: unknown, source: string) {
    const stmt = prepare.call(this, source) as Record<string, (...a: unknown[]) => unknown>;
    for (const m of ['all', 'get', 'run', 'iterate'] as const) {
      const orig = stmt[m]!.bind(stmt);
      stmt[m] = (...args: unknown[]) => {
        const t0 = performance.now();
        const out = orig(...args);
        if (recordingStatements) statementLog.push({ sql: source, ms: performance.now() - t0, params: args.flat(), db: this });
        return out;
      };
    }
    return stmt;
  };
}

/**
 * Each search alone (PROFILE=1): wall time and CPU; on SQLite every statement over 1 ms (see
 * statementLog above), with its query plan when PLAN=1.
 */
async function profile(
  t: import('../test/helpers.ts').TestApp,
  token: string,
  searches: [string, string][],
  emit: (...lines: string[]) => void,
): Promise<void> {
  const log = statementLog;
  for (const [kind, q] of searches) {
    const url = `/api/v1/search/${kind}?q=${encodeURIComponent(q)}`;
    await t.req('GET', url, { token });
    log.length = 0;
    recordingStatements = true;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const r = await t.req('GET', url, { token });
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    recordingStatements = false;
    emit(
      `- ${kind} \`${q}\`: ${r.status}, total ${r.headers['x-total-count']}, ${wall.toFixed(1)} ms wall, ${((cpu.user + cpu.system) / 1000).toFixed(1)} ms CPU alone`,
    );
    // every statement, by its text: how many ran and their time in all
    const byText = new Map<string, { n: number; ms: number }>();
    for (const s of log) {
      const k = s.sql.replace(/\s+/g, ' ').slice(0, 160);
      const e = byText.get(k) ?? byText.set(k, { n: 0, ms: 0 }).get(k)!;
      e.n++;
      e.ms += s.ms;
    }
    const inAll = log.reduce((a, s) => a + s.ms, 0);
    // the searches' statements are the workers' unless WEFT_SQLITE_READERS=0: not listed then
    const listed = process.env.WEFT_SQLITE_READERS === '0' ? 6 : 0;
    if (log.length && listed) emit(`  statements: ${log.length}, ${inAll.toFixed(1)} ms in all; by text:`);
    for (const [k, e] of [...byText].sort((a, b) => b[1].ms - a[1].ms).slice(0, listed))
      emit(`  - ${e.n} x, ${e.ms.toFixed(1)} ms: ${k}`);
    for (const s of log.filter((x) => x.ms > 1).slice(0, process.env.PLAN && listed ? 8 : 0)) {
      emit(`  - ${s.ms.toFixed(1)} ms: ${s.sql.replace(/\s+/g, ' ').slice(0, 400)}`);
      if (process.env.PLAN) {
        const on = s.db as { prepare: (sql: string) => { all: (...a: never[]) => unknown[] } };
        const plan = on.prepare(`explain query plan ${s.sql}`).all(...(s.params as never[])) as { detail: string }[];
        for (const p of plan) emit(`      ${p.detail}`);
      }
    }
  }
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'weft-bench-search-'));
  try {
    await measure(root);
  } finally {
    // the generated repo, its checkout and cindex's index (several GiB at the contract's size)
    rmSync(root, { recursive: true, force: true });
  }
}

async function measure(root: string): Promise<void> {
  const gen = join(root, 'big.git');
  execFileSync('git', ['init', '-q', '--bare', gen], { env });
  const bytesEach = Math.floor((MB * 1024 * 1024) / FILES);
  console.log(`generating ${FILES} files of ~${bytesEach} bytes (${MB} MiB) ... (load average ${load1()})`);
  let t0 = performance.now();
  const first = await fastImport(gen, bigFiles(FILES, bytesEach), null, 'Initial import of the stream parser');
  // the 10 files a push changes (its commit is made after the initial index)
  const files = new Map<string, string>();
  for (let i = 0; i < 10; i++) files.set(pathOf(i * 37), fileText(i * 37, bytesEach, 1));
  console.log(`generated in ${((performance.now() - t0) / 1000).toFixed(1)} s, RSS ${rssMb()} MB`);
  // the same files checked out for cindex, and git grep's reference on the bare repo
  const tree = join(root, 'tree');
  mkdirSync(tree);
  execFileSync('git', [`--git-dir=${gen}`, `--work-tree=${tree}`, 'checkout', '-q', '-f', 'main', '--', '.'], { env });
  const csIndex = join(root, 'csearchindex');
  console.log(`checked out for cindex; cindex ... (load average ${load1()})`);
  t0 = performance.now();
  execFileSync('cindex', [tree], { env: { ...env, CSEARCHINDEX: csIndex }, stdio: 'ignore' });
  const cindexSec = (performance.now() - t0) / 1000;
  const csIndexBytes = statSync(csIndex).size;
  const indexedBytes = FILES * bytesEach;

  const reference = new Map<string, { git: { p50: number; p99: number }; cs: { p50: number; p99: number } }>();
  for (const q of QUERIES) {
    const gitR = await load(
      () => run('git', [`--git-dir=${gen}`, 'grep', ...q.gitGrep, 'main', '--', ...(q.paths ?? [])]),
      DURATION,
    );
    const csR = await load(() => run('csearch', q.csearch, { CSEARCHINDEX: csIndex }), DURATION);
    reference.set(q.name, { git: gitR, cs: csR });
  }

  const { startApp } = await import('../test/helpers.ts');
  const { indexRepo, scheduleSearchIndex } = await import('../src/search/indexer.ts');
  const { CODE_SEARCH_LIMITS } = await import('../src/search/code.ts');
  // SQLite's walk of a common literal: each window's trigram candidates from FTS5 `always`, `never`
  // or, as the server does, `auto` (an A/B of src/search/code.ts windowTrigrams)
  const trigrams = process.env.BENCH_WINDOW_TRIGRAMS;
  if (trigrams === 'always' || trigrams === 'never' || trigrams === 'auto') CODE_SEARCH_LIMITS.windowTrigrams = trigrams;
  const { THREAD_SEARCH_LIMITS } = await import('../src/search/threads.ts');
  const { candidateStatements, readCandidates } = await import('../src/search/thread-candidates.ts');
  const { textQuery, tsText } = await import('../src/search/query.ts');
  const out: string[] = [];
  // each line as soon as it is known (a long run shows its progress)
  const emit = (...lines: string[]) => {
    out.push(...lines);
    for (const l of lines) console.log(l);
  };
  emit(
    `files ${FILES}, ${(indexedBytes / 2 ** 20).toFixed(0)} MiB indexed text; cindex ${cindexSec.toFixed(1)} s, its index ${(csIndexBytes / indexedBytes).toFixed(2)}x`,
  );
  for (const dialect of DATABASES) {
    if (dialect === 'postgres')
      process.env.TEST_DATABASE_URL ??= process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const t = await startApp(dialect as 'sqlite' | 'postgres');
    try {
      const user = await t.user('bench');
      const make = async (slug: string) => {
        const res = await t.req('POST', '/api/v1/users/bench/repos', {
          token: user.token,
          body: { name: slug, slug, visibility: 'public' },
        });
        return res.body.uuid as string;
      };
      const store = t.deps.git as import('../src/git/bare-store.ts').BareGitStore;
      const bigUuid = await make('big');
      execFileSync('git', [`--git-dir=${store.pathOf(bigUuid)}`, 'fetch', '-q', gen, `${first}:refs/heads/main`], { env });
      // the 20 smaller repos (200 files each), indexed first
      for (let k = 0; k < 20; k++) {
        const uuid = await make(`small${k}`);
        const small = join(root, `small${k}-${dialect}.git`);
        execFileSync('git', ['init', '-q', '--bare', small], { env });
        const m = new Map<string, string>();
        for (let i = 0; i < 200; i++) m.set(pathOf(100_000 + k * 200 + i), fileText(100_000 + k * 200 + i, 2000));
        await fastImport(small, m, null, `Small repo ${k}`);
        execFileSync('git', [`--git-dir=${store.pathOf(uuid)}`, 'fetch', '-q', small, 'main:refs/heads/main'], { env });
        await scheduleSearchIndex(t.deps, t.deps.db, uuid);
        await indexRepo(t.deps, uuid);
      }
      await t.deps.jobs.stop(); // the bench runs the indexer itself, timed
      await scheduleSearchIndex(t.deps, t.deps.db, bigUuid);
      t0 = performance.now();
      await indexRepo(t.deps, bigUuid);
      const initialSec = (performance.now() - t0) / 1000;
      let indexBytes: number;
      if (dialect === 'sqlite') {
        const r = await sql<{ n: number }>`select sum(pgsize) as n from dbstat where name like 'search_code%'`.execute(t.deps.db);
        indexBytes = Number(r.rows[0]?.n ?? 0);
      } else {
        const r = await sql<{ n: number }>`select pg_total_relation_size('search_code_files') as n`.execute(t.deps.db);
        indexBytes = Number(r.rows[0]?.n ?? 0);
      }
      const all = await t.deps.db
        .selectFrom('search_code_files')
        .select(sql<number>`sum(size)`.as('n'))
        .executeTakeFirstOrThrow();
      const ratio = indexBytes / Number(all.n);

      // a push of 10 changed files
      const next = await fastImport(gen, files, first, 'Change 10 files');
      execFileSync('git', [`--git-dir=${store.pathOf(bigUuid)}`, 'fetch', '-q', gen, `${next}:refs/heads/main`], { env });
      await scheduleSearchIndex(t.deps, t.deps.db, bigUuid);
      t0 = performance.now();
      await indexRepo(t.deps, bigUuid);
      const pushSec = (performance.now() - t0) / 1000;
      execFileSync('git', [`--git-dir=${gen}`, 'update-ref', 'refs/heads/main', first], { env });

      const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
      emit(
        `\n${dialect}: initial index ${initialSec.toFixed(1)} s, index ${ratio.toFixed(2)}x the bytes indexed; 10-file push re-indexed in ${pushSec.toFixed(2)} s (RSS ${rssMb()} MB, load average ${load1()})`,
      );
      const pg = dialect === 'postgres';
      /** `once` under load, with the PostgreSQL backends' CPU per request beside this process's */
      const measured = async (fn: () => Promise<void>, clients = CLIENTS) => {
        const before = pg ? await pgBackendCpu(t.deps.db as never) : null;
        const r = await load(fn, DURATION, clients);
        let dbMs = '';
        if (before) {
          const after = await pgBackendCpu(t.deps.db as never);
          let sum = 0;
          for (const [pid, ms] of after) sum += ms - (before.get(pid) ?? 0);
          dbMs = ` | ${(sum / Math.max(1, r.n)).toFixed(1)} ms`;
        }
        return { ...r, dbMs };
      };
      const dbCol = pg ? ' PostgreSQL CPU/request |' : '';
      const dbSep = pg ? '---:|' : '';
      emit(`load average ${load1()}`);
      emit(
        `| query | Weft p50 | Weft p99 | CPU/request |${dbCol} total | git grep p50 | csearch p50 | p50 vs csearch | p50 vs git grep |`,
      );
      emit(`|---|---:|---:|---:|${dbSep}---:|---:|---:|---:|---:|`);
      // PostgreSQL: the rare literal again without the probe of the trigram index (as before
      // session 5: the first files in order read first), for the comparison in the same run
      const runs: (Query & { label: string; limits?: Partial<typeof CODE_SEARCH_LIMITS> })[] = QUERIES.map((q) => ({
        ...q,
        label: q.name,
      }));
      if (pg) runs.splice(1, 0, { ...QUERIES[0]!, label: 'literal, rare, no GIN probe (before)', limits: { rareProbe: -1 } });
      for (const clients of CODE_CLIENTS)
        for (const q of runs) {
          const url = `${base}/api/v1/search/code?q=${encodeURIComponent(q.q)}`;
          let status = 0;
          let total = '';
          const saved = { ...CODE_SEARCH_LIMITS };
          Object.assign(CODE_SEARCH_LIMITS, q.limits ?? {});
          const r = await measured(async () => {
            const res = await fetch(url, { headers: { authorization: `Bearer ${user.token}` } });
            status = res.status;
            total = res.headers.get('x-total-count') ?? '';
            await res.arrayBuffer();
          }, clients).finally(() => Object.assign(CODE_SEARCH_LIMITS, saved));
          const ref = reference.get(q.name)!;
          const ratio = (x: number) => (clients === CLIENTS ? (r.p50 / x).toFixed(2) : '–');
          emit(
            `| ${q.label} \`${q.q}\` (${status})${clients === CLIENTS ? '' : `, ${clients} client${clients === 1 ? '' : 's'}`} | ${r.p50.toFixed(1)} ms | ${r.p99.toFixed(1)} ms | ${r.cpuMs.toFixed(1)} ms${r.dbMs} | ${total} | ${ref.git.p50.toFixed(1)} ms | ${ref.cs.p50.toFixed(1)} ms | ${ratio(ref.cs.p50)} | ${ratio(ref.git.p50)} |`,
          );
        }

      // thread search at THREADS threads, inserted in SQL (the triggers index them)
      const repoUuid = bigUuid;
      t0 = performance.now();
      const batch = 2000;
      for (let i = 0; i < THREADS; i += batch) {
        const rows = Array.from({ length: Math.min(batch, THREADS - i) }, (_, k) => {
          const n = i + k + 1;
          const r = rng(n);
          const w = () => VOCAB[Math.floor(r() * VOCAB.length)]!;
          return {
            uuid: randomUUID(),
            repo_uuid: repoUuid,
            number: n,
            title: `${w()} ${w()} ${w()} ${n % 1000 === 0 ? 'okapi' : ''}`,
            body: Array.from({ length: 40 }, w).join(' '),
            author_uuid: user.uuid,
            reply_seq: 0,
            created_at: new Date(1_700_000_000_000 + n * 1000).toISOString(),
            updated_at: new Date(1_700_000_000_000 + n * 1000).toISOString(),
          };
        });
        await t.deps.db.insertInto('threads').values(rows).execute();
      }
      const seedSec = (performance.now() - t0) / 1000;
      emit(`\n${dialect}: ${THREADS} threads inserted (triggers indexing them) in ${seedSec.toFixed(1)} s`);
      if (pg) await sql`analyze search_docs`.execute(t.deps.db);
      emit(`load average ${load1()}`);
      emit(`| thread query | clients | p50 | p99 | CPU/request |${dbCol} total |`);
      emit(`|---|---:|---:|---:|---:|${dbSep}---:|`);
      for (const clients of TEXT_CLIENTS)
        for (const q of ['okapi', 'stream parse', 'is:open okapi', '"write error"']) {
          const url = `${base}/api/v1/search/threads?q=${encodeURIComponent(q)}`;
          let total = '';
          const r = await measured(async () => {
            const res = await fetch(url, { headers: { authorization: `Bearer ${user.token}` } });
            total = res.headers.get('x-total-count') ?? '';
            await res.arrayBuffer();
          }, clients);
          emit(
            `| \`${q}\` | ${clients} | ${r.p50.toFixed(1)} ms | ${r.p99.toFixed(1)} ms | ${r.cpuMs.toFixed(1)} ms${r.dbMs} | ${total} |`,
          );
        }
      emit(`load average ${load1()}`);
      if (pg) {
        // the candidates' statements alone (access included, as the bench's user): before (the
        // planner's choice for the words, newest first, and the titles) and after (readCandidates:
        // the newest documents, else the GIN index with the limit, else backwards, in a transaction
        // with hash and merge joins off), the median of 10 runs, one client, the words' rows compared
        emit(
          "| candidates' statements alone (titles + words) | rows | before: the planner's choice (median) | after: recent, GIN with a limit, backwards (median) |",
        );
        emit('|---|---:|---:|---:|');
        const viewer = { uuid: user.uuid, username: 'bench', isStaff: false, tokenUuid: '' };
        for (const q of ['okapi', 'stream parse', '"write error"']) {
          const stmts = candidateStatements(t.deps, viewer, new Map(), textQuery(q)!);
          const times = async (fn: () => Promise<{ doc_id: number | null }[]>) => {
            const ms: number[] = [];
            let rows: { doc_id: number | null }[] = [];
            for (let k = 0; k < 10; k++) {
              const t1 = performance.now();
              rows = await fn();
              ms.push(performance.now() - t1);
            }
            ms.sort((a, b) => a - b);
            const ids = rows.map((x) => Number(x.doc_id)).sort((a, b) => b - a);
            return { ms: percentile(ms, 50), ids: ids.join(','), n: ids.length };
          };
          const b = await times(async () => {
            await stmts.titles().execute(t.deps.db);
            return (await stmts.words('newest').execute(t.deps.db)).rows;
          });
          const a = await times(async () => (await readCandidates(t.deps, stmts, () => false)).words);
          emit(`| \`${q}\` | ${a.n}${a.ids === b.ids ? '' : ' (differ!)'} | ${b.ms.toFixed(1)} ms | ${a.ms.toFixed(1)} ms |`);
          if (process.env.PLAN) {
            const explain = async (stmt: ReturnType<typeof stmts.words>, db: typeof t.deps.db) =>
              (await sql<{ 'QUERY PLAN': string }>`explain (analyze, buffers) ${stmt}`.execute(db)).rows.map(
                (x) => `      ${x['QUERY PLAN']}`,
              );
            emit(`  before \`${q}\`:`, ...(await explain(stmts.words('newest'), t.deps.db)));
            const limit = THREAD_SEARCH_LIMITS.rankedDocs;
            await t.deps.db.transaction().execute(async (trx) => {
              await sql`select set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`.execute(
                trx,
              );
              emit(`  after, the newest documents \`${q}\`:`, ...(await explain(stmts.words('recent'), trx)));
              if ((await stmts.words('recent').execute(trx)).rows.length > limit) return;
              emit(`  after, the GIN index with the limit \`${q}\`:`, ...(await explain(stmts.words('index'), trx)));
              if ((await stmts.words('index').execute(trx)).rows.length <= limit) return;
              await sql`select set_config('enable_bitmapscan', 'off', true), set_config('enable_seqscan', 'off', true)`.execute(
                trx,
              );
              emit(`  after, backwards \`${q}\`:`, ...(await explain(stmts.words('newest'), trx)));
            });
          }
        }
      }
      // the title candidates' statement alone (no access conditions), before session 5 (FTS5's
      // `{title}:` column filter; PostgreSQL's `:A` weight rechecked on the heap) and after (the
      // titles' own index, migration 710): the median of 10 runs, one client
      emit(
        "| title candidates, the statement alone | rows | before: column filter / `:A` (median) | after: the titles' index (median) |",
      );
      emit('|---|---:|---:|---:|');
      const limit = THREAD_SEARCH_LIMITS.rankedDocs + 1;
      for (const q of ['okapi', 'stream parse', '"write error"']) {
        const tq = textQuery(q)!;
        const tsA = sql`to_tsquery('simple', ${tsText(sql`${tq.tsTitle}`)})`;
        const before = pg
          ? sql<{ id: number }>`select d.id, -ts_rank_cd(d.tsv, ${tsA}) as rank from search_docs d
              where d.tsv @@ ${tsA} order by d.id desc limit ${limit}`
          : sql<{ id: number }>`select rowid as id, bm25(search_docs_fts, 10.0, 1.0) as rank from search_docs_fts
              where search_docs_fts match ${`{title} : (${tq.fts})`} order by rowid desc limit ${limit}`;
        const after = pg
          ? sql<{ id: number }>`select d.id, -ts_rank_cd(d.tsv, ${tsA}) as rank from search_docs d
              where to_tsvector('simple', ${tsText(sql`d.title`)}) @@ to_tsquery('simple', ${tsText(sql`${tq.ts}`)})
              order by d.id desc limit ${limit}`
          : sql<{ id: number }>`select rowid as id, bm25(search_titles_fts, 10.0) as rank from search_titles_fts
              where search_titles_fts match ${tq.fts} order by rowid desc limit ${limit}`;
        const median = async (stmt: typeof before) => {
          const times: number[] = [];
          let rows: { id: number }[] = [];
          for (let k = 0; k < 10; k++) {
            const t1 = performance.now();
            rows = (await stmt.execute(t.deps.db)).rows;
            times.push(performance.now() - t1);
          }
          times.sort((a, b) => a - b);
          return { ms: percentile(times, 50), ids: rows.map((x) => Number(x.id)).join(',') };
        };
        const b = await median(before);
        const a = await median(after);
        if (pg && process.env.PLAN)
          for (const [name, stmt] of [
            ['before', before],
            ['after', after],
          ] as const) {
            const plan = await sql<{ 'QUERY PLAN': string }>`explain (analyze, buffers) ${stmt}`.execute(t.deps.db);
            emit(`  ${name} \`${q}\`:`, ...plan.rows.map((x) => `      ${x['QUERY PLAN']}`));
          }
        emit(
          `| \`${q}\` | ${a.ids ? a.ids.split(',').length : 0}${a.ids === b.ids ? '' : ' (differ!)'} | ${b.ms.toFixed(1)} ms | ${a.ms.toFixed(1)} ms |`,
        );
      }
      if (process.env.PROFILE) {
        emit(`\n${dialect}: each search alone`);
        await profile(
          t,
          user.token,
          [
            ...QUERIES.map((x): [string, string] => ['code', x.q]),
            ...['okapi', 'stream parse', '"write error"'].map((x): [string, string] => ['threads', x]),
          ],
          emit,
        );
      }
    } finally {
      await t.close();
    }
  }
  writeFileSync(join(tmpdir(), 'weft-bench-search.txt'), out.join('\n'));
}

await main();
