/**
 * Push cost against branch count (`npx tsx bench/push-refs.ts`): the time of a one-branch push
 * over smart HTTP into a fresh repo and into a repo of BENCH_BRANCHES (default 5,000) branches,
 * with its refs loose (as pushes leave them) and then after the repo's git maintenance packed
 * them (src/git/maintenance.ts). Median of BENCH_PUSHES (default 7) pushes each. SQLite, one
 * process; short enough for a shared machine.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { BareGitStore } from '../src/git/bare-store.ts';
import { maintainRepo } from '../src/git/maintenance.ts';
import { createDeps, startBackground } from '../src/root.ts';
import { bootstrapAdmin } from '../src/users/service.ts';

const BRANCHES = Number(process.env.BENCH_BRANCHES ?? 5000);
const PUSHES = Number(process.env.BENCH_PUSHES ?? 7);
const TOKEN = 'bench_admin_token_0123456789abcdefghijkl';

const env = {
  PATH: process.env.PATH!,
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'B',
  GIT_AUTHOR_EMAIL: 'b@x',
  GIT_COMMITTER_NAME: 'B',
  GIT_COMMITTER_EMAIL: 'b@x',
};
const run = (args: string[], input?: string) =>
  new Promise<string>((resolve, reject) => {
    const child = execFile('git', args, { env, maxBuffer: 1 << 26 }, (err, out, stderr) =>
      err ? reject(new Error(`${args.join(' ')}: ${stderr}`)) : resolve(out),
    );
    if (input !== undefined) child.stdin!.end(input);
  });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-bench-refs-'));
  try {
    // the maintenance job is run by hand below, not by the queue
    const config = {
      ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }),
      bootstrapAdminToken: TOKEN,
      gitMaintenanceDelayMs: 86_400_000,
    };
    const database = await openDatabase({ url: null, dataDir });
    const deps = createDeps(config, database);
    await bootstrapAdmin(deps);
    await startBackground(deps);
    const app = await buildApp(deps, { logger: false });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    const work = join(dataDir, 'work');
    await run(['init', '-q', '-b', 'main', work]);
    await run(['-C', work, 'commit', '-q', '--allow-empty', '-m', 'base']);
    const tip = (await run(['-C', work, 'rev-parse', 'HEAD'])).trim();
    const url = (slug: string) => `${base.replace('http://', `http://x:${TOKEN}@`)}/git/users/admin/${slug}.git`;
    const repos: Record<string, string> = {};
    for (const slug of ['fresh', 'many']) {
      repos[slug] = (await api('POST', '/users/admin/repos', { name: slug, slug, visibility: 'private' })).uuid;
      await run(['-C', work, 'push', '-q', url(slug), 'main']);
    }
    // BRANCHES loose refs, as pushes leave them
    const store = deps.git as BareGitStore;
    const lines = Array.from(
      { length: BRANCHES },
      (_, i) => `create refs/heads/seed/${String(i).padStart(5, '0')} ${tip}\n`,
    ).join('');
    await run(['--git-dir', store.pathOf(repos.many!), 'update-ref', '--stdin'], lines);
    let n = 0;
    const pushes = async (slug: string) => {
      const times: number[] = [];
      for (let i = 0; i < PUSHES; i++) {
        await run(['-C', work, 'commit', '-q', '--allow-empty', '-m', `c${++n}`]);
        const t0 = performance.now();
        await run(['-C', work, 'push', '-q', url(slug), `HEAD:refs/heads/new/${n}`]);
        times.push(performance.now() - t0);
      }
      return median(times);
    };
    const fresh = await pushes('fresh');
    const loose = await pushes('many');
    const t0 = performance.now();
    await maintainRepo(deps, repos.many!);
    const packTime = performance.now() - t0;
    const packed = await pushes('many');
    const freshAgain = await pushes('fresh');
    console.log(`| repo | one-branch push (median of ${PUSHES}) | vs fresh |`);
    console.log('|---|---|---|');
    console.log(`| fresh (1 branch) | ${fresh.toFixed(0)} ms | 1.00x |`);
    console.log(`| ${BRANCHES} branches, loose refs | ${loose.toFixed(0)} ms | ${(loose / fresh).toFixed(2)}x |`);
    console.log(
      `| ${BRANCHES} branches, after maintenance (packed) | ${packed.toFixed(0)} ms | ${(packed / freshAgain).toFixed(2)}x (fresh again: ${freshAgain.toFixed(0)} ms) |`,
    );
    console.log(`maintenance run (pack-refs --all, loose objects): ${packTime.toFixed(0)} ms`);
    await app.close();
    await deps.jobs.stop();
    await database.close();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
