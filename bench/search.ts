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
 *   with 10 concurrent clients over HTTP for BENCH_DURATION seconds (default 5): p50 and p99,
 *   beside the same question asked of `git grep` on the bare repo and of `csearch` (Debian's
 *   codesearch, after `cindex` of the same files), each with 10 concurrent processes, as ratios;
 * - thread search at BENCH_SEARCH_THREADS threads (default 100,000): p50 and p99, 10 clients.
 *
 * The load runs in this process beside the server (one event loop): the figures are an upper
 * bound of what a separate client would see.
 *
 * With PROFILE=1 each search then runs alone too: its wall time and this process's CPU, and on
 * SQLite every statement's SQL and time (with PLAN=1 its `EXPLAIN QUERY PLAN`), as a profile.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';

const FILES = Number(process.env.BENCH_SEARCH_FILES ?? 5000);
const MB = Number(process.env.BENCH_SEARCH_MB ?? 100);
const THREADS = Number(process.env.BENCH_SEARCH_THREADS ?? 100_000);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const DATABASES = (process.env.BENCH_DATABASES ?? 'sqlite,postgres').split(',');
const CLIENTS = 10;

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

/** A bare repo from `files` (path → text) through git fast-import: one commit, or a child of `parent`. */
function fastImport(dir: string, files: Map<string, string>, parent: string | null, message: string): string {
  // as buffers: a 1 GiB stream is past V8's longest string
  const chunks: Buffer[] = [];
  const put = (s: string) => chunks.push(Buffer.from(s));
  put('commit refs/heads/main\ncommitter Bench <b@example.com> 1700000000 +0000\n');
  put(`data ${Buffer.byteLength(message)}\n${message}\n`);
  if (parent) put(`from ${parent}\n`);
  for (const [path, text] of files) put(`M 100644 inline ${path}\ndata ${Buffer.byteLength(text)}\n${text}\n`);
  execFileSync('git', [`--git-dir=${dir}`, 'fast-import', '--quiet', '--force'], {
    env,
    input: Buffer.concat(chunks),
    maxBuffer: 1 << 30,
  });
  return execFileSync('git', [`--git-dir=${dir}`, 'rev-parse', 'main'], { env })
    .toString()
    .trim();
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** `CLIENTS` concurrent loops of `once` for `seconds`: p50 and p99 in ms. */
async function load(once: () => Promise<void>, seconds: number): Promise<{ p50: number; p99: number; n: number; cpuMs: number }> {
  const warm = Date.now() + 500;
  while (Date.now() < warm) await once();
  const times: number[] = [];
  const cpu0 = process.cpuUsage();
  const end = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
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
 * Each search alone (PROFILE=1): wall time and CPU; on SQLite every statement over 1 ms, through the
 * connection's `prepare`, with its query plan when PLAN=1.
 */
async function profile(
  t: import('../test/helpers.ts').TestApp,
  token: string,
  searches: [string, string][],
  emit: (...lines: string[]) => void,
): Promise<void> {
  const handle = t.deps.database.sqlite;
  const log: { sql: string; ms: number; params: unknown[] }[] = [];
  let recording = false;
  const prepare = handle?.prepare.bind(handle);
  if (handle && prepare)
    (handle as { prepare: unknown }).prepare = (source: string) => {
      const stmt = prepare(source);
      for (const m of ['all', 'get', 'run', 'iterate'] as const) {
        const orig = (stmt as unknown as Record<string, (...a: unknown[]) => unknown>)[m]!.bind(stmt);
        (stmt as unknown as Record<string, unknown>)[m] = (...args: unknown[]) => {
          const t0 = performance.now();
          const out = orig(...args);
          if (recording) log.push({ sql: source, ms: performance.now() - t0, params: args.flat() });
          return out;
        };
      }
      return stmt;
    };
  for (const [kind, q] of searches) {
    const url = `/api/v1/search/${kind}?q=${encodeURIComponent(q)}`;
    await t.req('GET', url, { token });
    log.length = 0;
    recording = true;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const r = await t.req('GET', url, { token });
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    recording = false;
    emit(
      `- ${kind} \`${q}\`: ${r.status}, total ${r.headers['x-total-count']}, ${wall.toFixed(1)} ms wall, ${((cpu.user + cpu.system) / 1000).toFixed(1)} ms CPU alone`,
    );
    for (const s of log.filter((x) => x.ms > 1)) {
      emit(`  - ${s.ms.toFixed(1)} ms: ${s.sql.replace(/\s+/g, ' ').slice(0, 400)}`);
      if (process.env.PLAN && prepare) {
        const plan = prepare(`explain query plan ${s.sql}`).all(...(s.params as never[])) as { detail: string }[];
        for (const p of plan) emit(`      ${p.detail}`);
      }
    }
  }
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'weft-bench-search-'));
  const gen = join(root, 'big.git');
  execFileSync('git', ['init', '-q', '--bare', gen], { env });
  const bytesEach = Math.floor((MB * 1024 * 1024) / FILES);
  console.log(`generating ${FILES} files of ~${bytesEach} bytes (${MB} MiB) ...`);
  let t0 = performance.now();
  const files = new Map<string, string>();
  for (let i = 0; i < FILES; i++) files.set(pathOf(i), fileText(i, bytesEach));
  const first = fastImport(gen, files, null, 'Initial import of the stream parser');
  files.clear();
  for (let i = 0; i < 10; i++) files.set(pathOf(i * 37), fileText(i * 37, bytesEach, 1));
  const second = execFileSync('git', [`--git-dir=${gen}`, 'rev-parse', 'main'], { env })
    .toString()
    .trim();
  void second;
  console.log(`generated in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // the same files checked out for cindex, and git grep's reference on the bare repo
  const tree = join(root, 'tree');
  mkdirSync(tree);
  execFileSync('git', [`--git-dir=${gen}`, `--work-tree=${tree}`, 'checkout', '-q', '-f', 'main', '--', '.'], { env });
  const csIndex = join(root, 'csearchindex');
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
        fastImport(small, m, null, `Small repo ${k}`);
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
      const next = fastImport(gen, files, first, 'Change 10 files');
      execFileSync('git', [`--git-dir=${store.pathOf(bigUuid)}`, 'fetch', '-q', gen, `${next}:refs/heads/main`], { env });
      await scheduleSearchIndex(t.deps, t.deps.db, bigUuid);
      t0 = performance.now();
      await indexRepo(t.deps, bigUuid);
      const pushSec = (performance.now() - t0) / 1000;
      execFileSync('git', [`--git-dir=${gen}`, 'update-ref', 'refs/heads/main', first], { env });

      const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
      emit(
        `\n${dialect}: initial index ${initialSec.toFixed(1)} s, index ${ratio.toFixed(2)}x the bytes indexed; 10-file push re-indexed in ${pushSec.toFixed(2)} s`,
      );
      emit(
        '| query | Weft p50 | Weft p99 | CPU/request | total | git grep p50 | csearch p50 | p50 vs csearch | p50 vs git grep |',
      );
      emit('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
      for (const q of QUERIES) {
        const url = `${base}/api/v1/search/code?q=${encodeURIComponent(q.q)}`;
        let status = 0;
        let total = '';
        const r = await load(async () => {
          const res = await fetch(url, { headers: { authorization: `Bearer ${user.token}` } });
          status = res.status;
          total = res.headers.get('x-total-count') ?? '';
          await res.arrayBuffer();
        }, DURATION);
        const ref = reference.get(q.name)!;
        emit(
          `| ${q.name} \`${q.q}\` (${status}) | ${r.p50.toFixed(1)} ms | ${r.p99.toFixed(1)} ms | ${r.cpuMs.toFixed(1)} ms | ${total} | ${ref.git.p50.toFixed(1)} ms | ${ref.cs.p50.toFixed(1)} ms | ${(r.p50 / ref.cs.p50).toFixed(2)} | ${(r.p50 / ref.git.p50).toFixed(2)} |`,
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
      emit('| thread query | p50 | p99 | CPU/request | total |');
      emit('|---|---:|---:|---:|---:|');
      for (const q of ['okapi', 'stream parse', 'is:open okapi', '"write error"']) {
        const url = `${base}/api/v1/search/threads?q=${encodeURIComponent(q)}`;
        let total = '';
        const r = await load(async () => {
          const res = await fetch(url, { headers: { authorization: `Bearer ${user.token}` } });
          total = res.headers.get('x-total-count') ?? '';
          await res.arrayBuffer();
        }, DURATION);
        emit(`| \`${q}\` | ${r.p50.toFixed(1)} ms | ${r.p99.toFixed(1)} ms | ${r.cpuMs.toFixed(1)} ms | ${total} |`);
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
  rmSync(root, { recursive: true, force: true });
  writeFileSync(join(tmpdir(), 'weft-bench-search.txt'), out.join('\n'));
}

await main();
