/**
 * Page server time (bench/README.md "Web pages"): the web interface's heaviest pages rendered by
 * the app in process (Fastify's `inject`: the whole request pipeline, session lookup, services,
 * git reads and the HTML, without a socket), on SQLite, sequentially, after a warm-up:
 *
 *   pull       GET /teams/core/api/pulls/1   a pull with 100 reviews and 50 changed files (its diff)
 *   tree       GET /teams/core/api           the repo page: the tree at main with its README, branches, activity
 *   dashboard  GET /                         teams, repos, activity
 *   files      GET /teams/core/big/pulls/1?tab=files   the Files tab of a pull of 300 changed files with
 *              500 comments on its lines (the first 25 files render, the others load on demand), and
 *   files-bare GET /teams/core/big/pulls/2?tab=files   the same diff in a pull without comments (its reference)
 *
 * Each is reported as p50 and p99 in ms beside GET /healthz measured the same way in the same run
 * (the reference), and as a ratio to it, with the process's CPU time per request (user + system:
 * the server's work, the in-process client's share of it is small). Knobs: BENCH_PAGE_REQUESTS (default 300 per page), BENCH_PAGES
 * (a comma-separated choice of pull,tree,dashboard,files,files-bare; default all), BENCH_CPU_PROF=DIR (a V8 CPU
 * profile of the measured requests, written to DIR).
 */
import { execFileSync } from 'node:child_process';
import inspector from 'node:inspector';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { createDeps, startBackground, stopBackground } from '../src/root.ts';
import { bootstrapAdmin } from '../src/users/service.ts';

const N = Number(process.env.BENCH_PAGE_REQUESTS ?? 300);
const TOKEN = 'bench_admin_token_0123456789abcdefghijkl';
const PASSWORD = 'correct horse battery';

const dataDir = mkdtempSync(join(tmpdir(), 'weft-bench-pages-'));
const config = {
  ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', LOAD_SHED_EVENT_LOOP_DELAY_MS: '0' }),
  bootstrapAdminToken: TOKEN,
};
const database = await openDatabase({ url: null, dataDir });
const deps = createDeps(config, database);
await bootstrapAdmin(deps);
const app = await buildApp(deps, { logger: false });
await app.ready();
await startBackground(deps);

async function api(method: string, url: string, body?: unknown, token = TOKEN) {
  const res = await app.inject({
    method: method as 'GET',
    url: `/api/v1${url}`,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { payload: JSON.stringify(body) } : {}),
  });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json() as Record<string, unknown>;
}

async function userWithToken(name: string): Promise<string> {
  await api('POST', '/users', { username: name, email: `${name}@example.com`, password: PASSWORD });
  return (await api('POST', '/api-tokens', { name: 'bench', username: name })).token as string;
}

async function session(name: string): Promise<string> {
  const form = await app.inject({ method: 'GET', url: '/login' });
  const login = String(form.headers['set-cookie']).split(';')[0]!;
  const res = await app.inject({
    method: 'POST',
    url: '/login',
    headers: { cookie: login, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ _csrf: login.split('=')[1]!, username: name, password: PASSWORD }).toString(),
  });
  return (res.headers['set-cookie'] as string[]).find((c) => c.startsWith('weft_session='))!.split(';')[0]!;
}

// The world: a team repo whose branch `feature` changes 50 files, a pull of it with 100 reviews.
const alice = await userWithToken('alice');
const bob = await userWithToken('bob');
await api('POST', '/teams', { name: 'Core', slug: 'core' }, alice);
await api('POST', '/teams/core/members', { username: 'bob', role: 'member' }, alice);
const repo = await api('POST', '/teams/core/repos', { name: 'API', slug: 'api' }, alice);
const work = join(dataDir, 'work');
const gitEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  HOME: dataDir,
  GIT_AUTHOR_NAME: 'A',
  GIT_AUTHOR_EMAIL: 'a@x',
  GIT_COMMITTER_NAME: 'A',
  GIT_COMMITTER_EMAIL: 'a@x',
};
const git = (...args: string[]) => execFileSync('git', ['-C', work, ...args], { env: gitEnv, stdio: 'pipe' });
mkdirSync(join(work, 'src'), { recursive: true });
execFileSync('git', ['init', '-q', '-b', 'main', work], { env: gitEnv });
writeFileSync(join(work, 'README.md'), '# API\n\nThe service, with **Markdown**.\n');
for (let i = 0; i < 60; i++) writeFileSync(join(work, 'src', `f${i}.ts`), `export const v${i} = ${i};\n`.repeat(40));
git('add', '-A');
git('commit', '-q', '-m', 'base');
git('checkout', '-q', '-b', 'feature');
for (let i = 0; i < 50; i++) writeFileSync(join(work, 'src', `f${i}.ts`), `export const v${i} = ${i + 1};\n`.repeat(40));
git('commit', '-q', '-am', 'change 50 files');
git('push', '-q', join(dataDir, 'git', `${String(repo.uuid)}.git`), 'main', 'feature');
await api(
  'POST',
  '/teams/core/repos/api/pulls',
  { title: 'Fifty files', body: 'Changes *fifty* files.', source_branch: 'feature', target_branch: 'main' },
  alice,
);
for (let i = 0; i < 100; i++)
  await api('POST', '/teams/core/repos/api/pulls/1/reviews', { status: 'commented', body: `Review ${i}` }, bob);

// A pull of 300 files (three changed lines each, three hunks) with 500 comments on its lines (one in
// ten a suggestion), and a second pull of the same diff without comments: the Files tab's reference.
const FILES = 300;
const big = await api('POST', '/teams/core/repos', { name: 'Big', slug: 'big' }, alice);
const bigWork = join(dataDir, 'big-work');
const bigGit = (...args: string[]) => execFileSync('git', ['-C', bigWork, ...args], { env: gitEnv, stdio: 'pipe' });
mkdirSync(join(bigWork, 'src'), { recursive: true });
execFileSync('git', ['init', '-q', '-b', 'main', bigWork], { env: gitEnv });
const fileText = (i: number, changed: boolean) =>
  Array.from(
    { length: 40 },
    (_, l) => `export const f${i}_${l + 1} = ${changed && (l + 1) % 15 === 5 ? 'changed' : l + 1};`,
  ).join('\n') + '\n';
for (let i = 0; i < FILES; i++) writeFileSync(join(bigWork, 'src', `m${String(i).padStart(3, '0')}.ts`), fileText(i, false));
bigGit('add', '-A');
bigGit('commit', '-q', '-m', 'base');
bigGit('checkout', '-q', '-b', 'wide');
for (let i = 0; i < FILES; i++) writeFileSync(join(bigWork, 'src', `m${String(i).padStart(3, '0')}.ts`), fileText(i, true));
bigGit('commit', '-q', '-am', 'change 300 files');
bigGit('branch', 'wide-bare');
bigGit('push', '-q', join(dataDir, 'git', `${String(big.uuid)}.git`), 'main', 'wide', 'wide-bare');
for (const source of ['wide', 'wide-bare'])
  await api(
    'POST',
    '/teams/core/repos/big/pulls',
    { title: `Three hundred files (${source})`, body: 'Wide change.', source_branch: source, target_branch: 'main' },
    alice,
  );
const COMMENTS = 500;
for (let r = 0; r < COMMENTS / 100; r++) {
  const comments = Array.from({ length: 100 }, (_, k) => {
    const n = r * 100 + k;
    const file = `src/m${String(n % FILES).padStart(3, '0')}.ts`;
    const line = [5, 20, 35][Math.floor(n / FILES)]!;
    const body =
      n % 10 === 0
        ? `Shorter:\n\n\`\`\`suggestion\nexport const f${n % FILES}_${line} = 0;\n\`\`\``
        : `Comment ${n}: is \`changed\` the **right** value here?`;
    return { path: file, line, body };
  });
  await api('POST', '/teams/core/repos/big/pulls/1/reviews', { status: 'commented', body: `Review ${r}`, comments }, bob);
}
const cookie = await session('alice');

interface Figures {
  p50: number;
  p99: number;
  /** CPU time of the process per request, ms */
  cpu: number;
}

async function measure(url: string, headers: Record<string, string>): Promise<Figures> {
  const times: number[] = [];
  let cpuStart = process.cpuUsage();
  for (let i = 0; i < N + 30; i++) {
    if (i === 30) cpuStart = process.cpuUsage();
    const start = process.hrtime.bigint();
    const res = await app.inject({ method: 'GET', url, headers });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode}`);
    if (i >= 30) times.push(ms);
  }
  const cpu = process.cpuUsage(cpuStart);
  times.sort((a, b) => a - b);
  return {
    cpu: (cpu.user + cpu.system) / 1000 / N,
    p50: times[Math.floor(times.length * 0.5)]!,
    p99: times[Math.min(times.length - 1, Math.floor(times.length * 0.99))]!,
  };
}

const ONLY = process.env.BENCH_PAGES?.split(',');
const PAGES: Array<[string, string, string]> = [
  ['pull', 'pull (100 reviews, 50 files)', '/teams/core/api/pulls/1'],
  ['tree', 'tree (repo page)', '/teams/core/api'],
  ['dashboard', 'dashboard', '/'],
  ['files-bare', 'files tab (300 files, no comments)', '/teams/core/big/pulls/2?tab=files'],
  ['files', 'files tab (300 files, 500 comments)', '/teams/core/big/pulls/1?tab=files'],
];
const reference = await measure('/healthz', {});
const rows: Array<[string, Figures]> = [];
// BENCH_CPU_PROF=DIR: a V8 CPU profile of the pages' requests only (not the seeding), in DIR
const profiler = process.env.BENCH_CPU_PROF ? new inspector.Session() : null;
const post = (method: string, params?: object) =>
  new Promise<unknown>((resolve, reject) =>
    profiler!.post(method, params, (err, result) => (err ? reject(err) : resolve(result))),
  );
if (profiler) {
  profiler.connect();
  await post('Profiler.enable');
  await post('Profiler.start');
}
for (const [key, name, url] of PAGES) if (!ONLY || ONLY.includes(key)) rows.push([name, await measure(url, { cookie })]);
if (profiler) {
  const { profile } = (await post('Profiler.stop')) as { profile: unknown };
  mkdirSync(process.env.BENCH_CPU_PROF!, { recursive: true });
  writeFileSync(join(process.env.BENCH_CPU_PROF!, `pages-${Date.now()}.cpuprofile`), JSON.stringify(profile));
  profiler.disconnect();
}
console.log(
  `GET /healthz (reference): p50 ${reference.p50.toFixed(2)} ms, p99 ${reference.p99.toFixed(2)} ms; ${N} requests each, SQLite`,
);
for (const [name, r] of rows) {
  console.log(
    `${name.padEnd(36)} p50 ${r.p50.toFixed(2).padStart(7)} ms  p99 ${r.p99.toFixed(2).padStart(7)} ms  CPU ${r.cpu.toFixed(2).padStart(6)} ms/request  (${(r.p50 / reference.p50).toFixed(0)}x / ${(r.p99 / reference.p99).toFixed(0)}x the reference)`,
  );
}
const bare = rows.find(([name]) => name.startsWith('files tab (300 files, no'))?.[1];
const withComments = rows.find(([name]) => name.startsWith('files tab (300 files, 500'))?.[1];
if (bare && withComments) {
  console.log(
    `files tab with 500 comments / without: p50 ${(withComments.p50 / bare.p50).toFixed(2)}x, p99 ${(withComments.p99 / bare.p99).toFixed(2)}x, CPU ${(withComments.cpu / bare.cpu).toFixed(2)}x`,
  );
}
await app.close();
await stopBackground(deps);
await database.close();
rmSync(dataDir, { recursive: true, force: true });
