/**
 * CI scheduling overhead (bench/README.md "CI scheduling overhead (bench/ci.ts)"): a real server
 * (dist/main.js) and 4 real `weft runner` processes (dist/cli.js, capacity 1 each). BENCH_CI_JOBS
 * jobs of one `echo` step are queued first (workflow dispatches of a 100-way matrix), then the
 * runners start and drain them. Per job: the scheduling overhead, i.e. claim (`started_at`) →
 * completion recorded (`completed_at`) minus the step's own time (its `started_at` →
 * `completed_at` as the runner reported it), and claim → the first log line stored; p50/p99.
 * Then one job prints 10 MB of output while the server's RSS is sampled every 100 ms.
 *
 *   npx tsx bench/ci.ts                                                          # SQLite
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/ci.ts
 *
 * Knobs: BENCH_CI_JOBS (1000), BENCH_CI_RUNNERS (4), BENCH_CI_LOG_MB (10).
 */
import { execFileSync } from 'node:child_process';
import { type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../src/db/index.ts';

if (process.env.BENCH_DATABASE_URL) process.env.TEST_DATABASE_URL = process.env.BENCH_DATABASE_URL;
const { freshStore } = await import('../test/helpers.ts');
const { SERVER_ADMIN_TOKEN, runWeft, spawnWeft, startServer, stopServer } = await import('../test/server-process.ts');

const JOBS = Number(process.env.BENCH_CI_JOBS ?? 1000);
const RUNNERS = Number(process.env.BENCH_CI_RUNNERS ?? 4);
const LOG_MB = Number(process.env.BENCH_CI_LOG_MB ?? 10);
const MATRIX = 100;
const dialect = process.env.BENCH_DATABASE_URL ? 'postgres' : 'sqlite';
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
const ms = (a: string | null | undefined, b: string | null | undefined) => Date.parse(String(b)) - Date.parse(String(a));

const store = await freshStore(dialect);
const server = await startServer(store, {});
const dir = mkdtempSync(join(tmpdir(), 'weft-bench-ci-'));
const runners: ChildProcess[] = [];
const repo = '/users/admin/repos/bench';

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.base}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${SERVER_ADMIN_TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);

try {
  await api('POST', '/users/admin/repos', { name: 'bench', slug: 'bench' });
  const work = join(dir, 'work');
  const gitEnv = {
    ...process.env,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 'b',
    GIT_AUTHOR_EMAIL: 'b@example.com',
    GIT_COMMITTER_NAME: 'b',
    GIT_COMMITTER_EMAIL: 'b@example.com',
  };
  const git = (args: string[]) => execFileSync('git', args, { cwd: work, env: gitEnv, stdio: 'pipe' });
  mkdirSync(join(work, '.weft', 'workflows'), { recursive: true });
  const list = Array.from({ length: MATRIX }, (_, i) => i + 1).join(', ');
  writeFileSync(
    join(work, '.weft/workflows/echo.yml'),
    `name: Echo\non: workflow_dispatch\njobs:\n  e:\n    runs-on: bench\n    strategy:\n      fail-fast: false\n      matrix:\n        n: [${list}]\n    steps:\n      - run: echo hello \${{ matrix.n }}\n`,
  );
  writeFileSync(
    join(work, '.weft/workflows/big.yml'),
    `name: Big\non: workflow_dispatch\njobs:\n  big:\n    runs-on: bench\n    steps:\n      - run: yes ${'x'.repeat(99)} | head -c ${LOG_MB * 1000 * 1000} || true\n`,
  );
  execFileSync('git', ['init', '-q', '-b', 'main', work], { env: gitEnv });
  git(['add', '.']);
  git(['commit', '-q', '-m', 'workflows']);
  const url = new URL('/git/users/admin/bench.git', server.base);
  url.username = 'x';
  url.password = SERVER_ADMIN_TOKEN;
  git(['push', '-q', url.toString(), 'main']);

  // queue the jobs
  for (let queued = 0; queued < JOBS; queued += MATRIX) await api('POST', `${repo}/workflows/echo.yml/dispatches`, {});
  console.log(`${dialect}: ${Math.ceil(JOBS / MATRIX) * MATRIX} jobs queued; starting ${RUNNERS} runners`);

  for (let i = 0; i < RUNNERS; i++) {
    const reg = await api('POST', `${repo}/runners/registration-token`);
    const config = join(dir, `r${i}.json`);
    const r = await runWeft(
      'cli',
      [
        'runner',
        'register',
        '--url',
        server.base,
        '--token',
        reg.token,
        '--name',
        `r${i}`,
        '--labels',
        'bench',
        '--config',
        config,
      ],
      { HOME: dir },
    );
    if (r.code !== 0) throw new Error(r.stderr);
    runners.push(spawnWeft('cli', ['runner', '--config', config, '--workdir', join(dir, `wd${i}`)], { HOME: dir }));
  }

  const db = (await openDatabase({ url: store.url, dataDir: store.dataDir, schema: store.schema })).db;
  const t0 = Date.now();
  const total = Math.ceil(JOBS / MATRIX) * MATRIX;
  for (;;) {
    const done = await db
      .selectFrom('ci_jobs')
      .select((eb) => eb.fn.countAll().as('n'))
      .where('status', '=', 'completed')
      .executeTakeFirst();
    if (Number(done?.n) >= total) break;
    if (Date.now() - t0 > 30 * 60_000) throw new Error('not drained in 30 min');
    await new Promise((r) => setTimeout(r, 500));
  }
  const drainS = (Date.now() - t0) / 1000;
  const jobs = await db.selectFrom('ci_jobs').selectAll().where('status', '=', 'completed').execute();
  const firstLog = new Map(
    (
      await db
        .selectFrom('ci_log_chunks')
        .select(['job_uuid', (eb) => eb.fn.min('created_at').as('first')])
        .where('start_offset', '=', 0)
        .groupBy('job_uuid')
        .execute()
    ).map((r) => [r.job_uuid, String(r.first)]),
  );
  const overhead: number[] = [];
  const toFirst: number[] = [];
  let bad = 0;
  for (const j of jobs) {
    if (j.conclusion !== 'success') bad++;
    const steps = JSON.parse(j.steps) as Array<{ started_at: string | null; completed_at: string | null }>;
    const own = steps.reduce((s, x) => s + (x.started_at && x.completed_at ? ms(x.started_at, x.completed_at) : 0), 0);
    overhead.push(ms(j.started_at, j.completed_at) - own);
    const f = firstLog.get(j.uuid);
    if (f) toFirst.push(ms(j.started_at, f));
  }
  overhead.sort((a, b) => a - b);
  toFirst.sort((a, b) => a - b);
  console.log(
    `${dialect}: ${jobs.length} jobs drained by ${RUNNERS} runners in ${drainS.toFixed(1)} s (${(jobs.length / drainS).toFixed(1)} jobs/s), ${bad} not successful`,
  );
  console.log(
    `${dialect}: overhead (claim → completion recorded − step time) p50 ${pct(overhead, 50)} ms, p99 ${pct(overhead, 99)} ms, max ${overhead.at(-1)} ms`,
  );
  console.log(`${dialect}: claim → first log line stored p50 ${pct(toFirst, 50)} ms, p99 ${pct(toFirst, 99)} ms`);

  // 10 MB of output while sampling the server's RSS
  const pid = server.child.pid!;
  const before = rssKb(pid);
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssKb(pid));
  }, 100);
  const run = await api('POST', `${repo}/workflows/big.yml/dispatches`, {});
  const tb = Date.now();
  for (;;) {
    const r = await db.selectFrom('ci_runs').select(['status', 'conclusion']).where('uuid', '=', run.uuid).executeTakeFirst();
    if (r?.status === 'completed') break;
    if (Date.now() - tb > 10 * 60_000) throw new Error('the big job did not finish in 10 min');
    await new Promise((r) => setTimeout(r, 200));
  }
  clearInterval(sampler);
  const big = await db
    .selectFrom('ci_jobs')
    .select(['log_bytes', 'conclusion'])
    .where('run_uuid', '=', run.uuid)
    .executeTakeFirstOrThrow();
  console.log(
    `${dialect}: a job printing ${LOG_MB} MB (${(Number(big.log_bytes) / 1e6).toFixed(1)} MB of log stored, ${big.conclusion}) in ${((Date.now() - tb) / 1000).toFixed(1)} s: server RSS ${Math.round(before / 1024)} MB before, peak ${Math.round(peak / 1024)} MB (+${Math.round((peak - before) / 1024)} MB)`,
  );
  await db.destroy();
} finally {
  for (const r of runners) r.kill('SIGTERM');
  await Promise.all(runners.map((r) => (r.exitCode === null && r.signalCode === null ? once(r, 'exit') : null)));
  await stopServer(server, 'SIGTERM');
  rmSync(dir, { recursive: true, force: true });
  await store.drop();
}
