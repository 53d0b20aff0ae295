/**
 * Search profile (`npx tsx bench/search-profile.ts`, bench/README.md "Search"): on SQLite, a
 * generated repo (BENCH_SEARCH_FILES, default 2,000 files of ~BENCH_SEARCH_MB MiB, default 20) and
 * BENCH_SEARCH_THREADS threads (default 20,000), each search alone: every statement's SQL, wall
 * time, and its `EXPLAIN QUERY PLAN`; and the process CPU per search (less sensitive to a loaded machine).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const FILES = Number(process.env.BENCH_SEARCH_FILES ?? 2000);
const MB = Number(process.env.BENCH_SEARCH_MB ?? 20);
const THREADS = Number(process.env.BENCH_SEARCH_THREADS ?? 20_000);
const env = { PATH: process.env.PATH!, HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
const VOCAB = 'return const function value index buffer stream parse token write read error result config option state'.split(
  ' ',
);

function rng(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0), s / 2 ** 32);
}

async function main(): Promise<void> {
  const { startApp } = await import('../test/helpers.ts');
  const { indexRepo, scheduleSearchIndex } = await import('../src/search/indexer.ts');
  const t = await startApp('sqlite');
  const user = await t.user('prof');
  const res = await t.req('POST', '/api/v1/users/prof/repos', {
    token: user.token,
    body: { name: 'big', slug: 'big', visibility: 'public' },
  });
  const uuid = res.body.uuid as string;
  const gen = join(mkdtempSync(join(tmpdir(), 'weft-prof-')), 'g.git');
  execFileSync('git', ['init', '-q', '--bare', gen], { env });
  const each = Math.floor((MB * 2 ** 20) / FILES);
  const chunks: string[] = ['commit refs/heads/main\ncommitter P <p@x> 1700000000 +0000\ndata 4\ninit\n'];
  for (let i = 0; i < FILES; i++) {
    const r = rng(i);
    const lines: string[] = [];
    let size = 0;
    for (let n = 0; size < each; n++) {
      const w = () => VOCAB[Math.floor(r() * VOCAB.length)]!;
      let line = `  ${w()}_${Math.floor(r() * 1e6)} = ${w()}(${w()}, ${Math.floor(r() * 1000)}); // ${w()} ${w()}`;
      if (n === 3 && i % 500 === 7) line += ' zanzibarQuux';
      if (n === 5 && i % 97 === 3) line += ` fooBar${i}Baz`;
      lines.push(line);
      size += line.length + 1;
    }
    const text = lines.join('\n');
    chunks.push(
      `M 100644 inline src/d${Math.floor(i / 500)}/f${i}.${i % 3 ? 'go' : 'ts'}\ndata ${Buffer.byteLength(text)}\n${text}\n`,
    );
  }
  execFileSync('git', [`--git-dir=${gen}`, 'fast-import', '--quiet'], { env, input: chunks.join(''), maxBuffer: 1 << 30 });
  const store = t.deps.git as import('../src/git/bare-store.ts').BareGitStore;
  execFileSync('git', [`--git-dir=${store.pathOf(uuid)}`, 'fetch', '-q', gen, 'main:refs/heads/main'], { env });
  await t.deps.jobs.stop();
  await scheduleSearchIndex(t.deps, t.deps.db, uuid);
  await indexRepo(t.deps, uuid);
  for (let i = 0; i < THREADS; i += 2000) {
    const rows = Array.from({ length: Math.min(2000, THREADS - i) }, (_, k) => {
      const n = i + k + 1;
      const r = rng(n);
      const w = () => VOCAB[Math.floor(r() * VOCAB.length)]!;
      return {
        uuid: randomUUID(),
        repo_uuid: uuid,
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
  // every statement's SQL and time, through the connection's prepare
  const handle = t.deps.database.sqlite!;
  const log: { sql: string; ms: number; params: unknown[] }[] = [];
  let recording = false;
  const prepare = handle.prepare.bind(handle);
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
  const queries: [string, string][] = [
    ['code', 'zanzibarQuux'],
    ['code', 'stream_12'],
    ['code', '/fooBar\\d+Baz/'],
    ['code', 'stream_1 path:src/d1/ lang:typescript'],
    ['threads', 'okapi'],
    ['threads', 'stream parse'],
    ['threads', '"write error"'],
  ];
  for (const [kind, q] of queries) {
    const url = `/api/v1/search/${kind}?q=${encodeURIComponent(q)}`;
    await t.req('GET', url, { token: user.token });
    log.length = 0;
    recording = true;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const r = await t.req('GET', url, { token: user.token });
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    recording = false;
    console.log(
      `\n## ${kind} ${q}: ${r.status} total ${r.headers['x-total-count']}, ${wall.toFixed(1)} ms wall, ${((cpu.user + cpu.system) / 1000).toFixed(1)} ms CPU`,
    );
    for (const s of log.filter((x) => x.ms > 1)) {
      console.log(`- ${s.ms.toFixed(1)} ms: ${s.sql.replace(/\s+/g, ' ').slice(0, 600)}`);
      if (process.env.PLAN) {
        const plan = prepare(`explain query plan ${s.sql}`).all(...(s.params as never[])) as { detail: string }[];
        for (const p of plan) console.log(`    ${p.detail}`);
      }
    }
  }
  await t.close();
}

await main();
