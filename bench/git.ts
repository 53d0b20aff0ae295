/**
 * Git benchmark (`npm run bench:git`): on a generated repository, the time to fork, to clone
 * over smart HTTP (MB/s next to a local `git clone --bare --no-local` of the same repository),
 * and to merge a pull through the API, next to a merge done the Gitea way (clone to a temporary
 * work tree, `git merge`, push back). Knobs: BENCH_GIT_MB (size of generated data, default
 * 1024), BENCH_GIT_COMMITS (default 2000).
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { createDeps } from '../src/root.ts';
import { BareGitStore, dirSize } from '../src/git/bare-store.ts';
import { bootstrapAdmin } from '../src/users/service.ts';

const MB = Number(process.env.BENCH_GIT_MB ?? 1024);
const COMMITS = Number(process.env.BENCH_GIT_COMMITS ?? 2000);
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
const run = (args: string[], cwd?: string) =>
  new Promise<string>((resolve, reject) =>
    execFile('git', args, { env, cwd, maxBuffer: 1 << 26 }, (err, out, stderr) =>
      err ? reject(new Error(`${args.join(' ')}: ${stderr}`)) : resolve(out),
    ),
  );
const time = async (fn: () => Promise<unknown>): Promise<number> => {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
};

/** Writes COMMITS commits of random (incompressible) files totalling MB megabytes on main, plus two small branches. */
async function generate(dir: string): Promise<void> {
  const child = spawn('git', ['--git-dir', dir, 'fast-import', '--quiet'], { env, stdio: ['pipe', 'inherit', 'inherit'] });
  const done = new Promise<void>((resolve, reject) =>
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`fast-import ${code}`)))),
  );
  const write = (chunk: string | Buffer) =>
    new Promise<void>((resolve) => (child.stdin.write(chunk) ? resolve() : child.stdin.once('drain', resolve)));
  const per = Math.floor((MB * 1024 * 1024) / COMMITS);
  let t = 1_700_000_000;
  const commit = async (branch: string, n: number, files: Array<[string, Buffer]>, from?: string) => {
    const message = `commit ${n}\n`;
    let s = `commit refs/heads/${branch}\nmark :${n}\ncommitter B <b@x> ${t++} +0000\ndata ${message.length}\n${message}`;
    if (from) s += `from ${from}\n`;
    await write(s);
    for (const [path, data] of files) {
      await write(`M 100644 inline ${path}\ndata ${data.length}\n`);
      await write(data);
      await write('\n');
    }
  };
  for (let i = 1; i <= COMMITS; i++)
    await commit('main', i, [
      [`data/${i % 100}/f${i}.bin`, randomBytes(per)],
      ['README', Buffer.from(`version ${i}\n`)],
    ]);
  await commit('feature', COMMITS + 1, [['feature.txt', Buffer.from('feature\n')]], `:${COMMITS}`);
  await commit('main', COMMITS + 2, [['main.txt', Buffer.from('main\n')]], `:${COMMITS}`);
  child.stdin.end();
  await done;
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-bench-git-'));
  try {
    const config = { ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }), bootstrapAdminToken: TOKEN };
    const database = await openDatabase({ url: null, dataDir });
    const deps = createDeps(config, database);
    await bootstrapAdmin(deps);
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
    await api('POST', '/teams', { name: 'Bench', slug: 'bench' }).catch(async () => undefined);
    const repo = await api('POST', '/users/admin/repos', { name: 'big', slug: 'big', visibility: 'private' });
    await api('PUT', '/users/admin/repos/big', { max_disk_bytes: 100 * 1024 ** 3 });
    const store = deps.git as BareGitStore;
    const dir = store.pathOf(repo.uuid);

    const genSeconds = await time(() => generate(dir));
    const size = await dirSize(join(dir, 'objects'));
    const sizeMB = size / 1024 / 1024;
    console.log(`generated ${sizeMB.toFixed(0)} MB, ${COMMITS + 2} commits in ${genSeconds.toFixed(1)} s`);

    const forkSeconds = await time(() => api('POST', '/users/admin/repos/big/forks?team=bench'));

    const out = join(dataDir, 'out');
    const localSeconds = await time(() => run(['clone', '--bare', '--no-local', '-q', `file://${dir}`, join(out, 'local.git')]));
    const httpUrl = `${base.replace('http://', 'http://x:' + TOKEN + '@')}/git/users/admin/big.git`;
    const httpSeconds = await time(() => run(['clone', '--bare', '-q', httpUrl, join(out, 'http.git')]));
    rmSync(out, { recursive: true, force: true });

    const pull = await api('POST', '/users/admin/repos/big/pulls', {
      title: 'Bench',
      body: '',
      source_branch: 'feature',
      target_branch: 'main',
    });
    // Gitea-style reference first, on a copy of the bare repo state it starts from (pushing back to a scratch bare clone).
    const scratch = join(dataDir, 'scratch.git');
    await run(['clone', '--bare', '-q', dir, scratch]);
    const work = join(dataDir, 'work');
    const workSeconds = await time(async () => {
      await run(['clone', '-q', '-b', 'main', scratch, work]);
      await run(['merge', '-q', '--no-ff', '-m', 'Merge', 'origin/feature'], work);
      await run(['push', '-q', 'origin', 'main'], work);
    });
    rmSync(work, { recursive: true, force: true });
    rmSync(scratch, { recursive: true, force: true });
    const mergeSeconds = await time(() =>
      api('POST', `/users/admin/repos/big/pulls/${pull.number}/merge`, { merge_strategy: 'merge' }),
    );

    console.log('\n| operation | seconds | figure | vs reference |\n|---|---:|---:|---:|');
    console.log(
      `| fork (API, alternates) | ${forkSeconds.toFixed(3)} | | ${(forkSeconds / localSeconds).toFixed(4)}x of a local bare clone |`,
    );
    console.log(
      `| local \`git clone --bare --no-local\` (reference) | ${localSeconds.toFixed(2)} | ${(sizeMB / localSeconds).toFixed(0)} MB/s | 1.00x |`,
    );
    console.log(
      `| clone over smart HTTP | ${httpSeconds.toFixed(2)} | ${(sizeMB / httpSeconds).toFixed(0)} MB/s | ${(localSeconds / httpSeconds).toFixed(2)}x the local rate |`,
    );
    console.log(`| merge through a temporary work tree (reference) | ${workSeconds.toFixed(2)} | | 1.00x |`);
    console.log(
      `| merge a pull (API, merge-tree, no work tree) | ${mergeSeconds.toFixed(3)} | | ${(mergeSeconds / workSeconds).toFixed(4)}x |`,
    );
    await app.close();
    await database.close();
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
