/**
 * Page server time (bench/README.md "Web pages"): the web interface's heaviest pages rendered by
 * the app in process (Fastify's `inject`: the whole request pipeline, session lookup, services,
 * git reads and the HTML, without a socket), on SQLite, sequentially, after a warm-up:
 *
 *   pull       GET /teams/core/api/pulls/1   a pull with 100 reviews and 50 changed files (its diff)
 *   tree       GET /teams/core/api           the repo page: the tree at main with its README, branches, activity
 *   dashboard  GET /                         teams, repos, activity
 *
 * Each is reported as p50 and p99 in ms beside GET /healthz measured the same way in the same run
 * (the reference), and as a ratio to it. Knobs: BENCH_PAGE_REQUESTS (default 300 per page), BENCH_PAGES
 * (a comma-separated choice of pull,tree,dashboard; default all).
 */
import { execFileSync } from 'node:child_process';
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
const cookie = await session('alice');

async function measure(url: string, headers: Record<string, string>): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < N + 30; i++) {
    const start = process.hrtime.bigint();
    const res = await app.inject({ method: 'GET', url, headers });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode}`);
    if (i >= 30) times.push(ms);
  }
  times.sort((a, b) => a - b);
  return {
    p50: times[Math.floor(times.length * 0.5)]!,
    p99: times[Math.min(times.length - 1, Math.floor(times.length * 0.99))]!,
  };
}

const ONLY = process.env.BENCH_PAGES?.split(',');
const PAGES: Array<[string, string, string]> = [
  ['pull', 'pull (100 reviews, 50 files)', '/teams/core/api/pulls/1'],
  ['tree', 'tree (repo page)', '/teams/core/api'],
  ['dashboard', 'dashboard', '/'],
];
const reference = await measure('/healthz', {});
const rows: Array<[string, { p50: number; p99: number }]> = [];
for (const [key, name, url] of PAGES) if (!ONLY || ONLY.includes(key)) rows.push([name, await measure(url, { cookie })]);
console.log(
  `GET /healthz (reference): p50 ${reference.p50.toFixed(2)} ms, p99 ${reference.p99.toFixed(2)} ms; ${N} requests each, SQLite`,
);
for (const [name, r] of rows) {
  console.log(
    `${name.padEnd(30)} p50 ${r.p50.toFixed(2).padStart(7)} ms  p99 ${r.p99.toFixed(2).padStart(7)} ms  (${(r.p50 / reference.p50).toFixed(0)}x / ${(r.p99 / reference.p99).toFixed(0)}x the reference)`,
  );
}
await app.close();
await stopBackground(deps);
await database.close();
rmSync(dataDir, { recursive: true, force: true });
