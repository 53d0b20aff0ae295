/**
 * Backup and restore of a large DATA_DIR (issue 45 item 1; bench/README.md "Backup and restore"):
 * wall time and peak RSS (`/usr/bin/time -f '%e %M'`) of the built CLI's `weft backup --out`,
 * `weft backup --verify` and `weft restore` into an empty DATA_DIR, on SQLite.
 *
 *   npm run build && npx tsx bench/backup.ts            # BENCH_BACKUP_GIB=2 (default)
 *
 * The data dir: a server is started once to migrate the database and create a repo through the
 * API, then stopped; BENCH_BACKUP_GIB of incompressible files (50 MiB each, random bytes) are
 * written into that repo as loose objects (`git hash-object -w`) under one commit on `main`.
 * Everything lives in a temp dir removed at the end.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readdirSync, rmSync, statSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TOKEN = 'weft_bench_backup_token_0123456789abcdefgh';
const GIB = Number(process.env.BENCH_BACKUP_GIB ?? 2);
const FILE_MIB = 50;

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

const env = (dataDir: string, extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '',
  DATA_DIR: dataDir,
  SSH_PORT: '0',
  LOG_LEVEL: 'warn',
  NODE_ENV: 'production',
  ...extra,
});

function du(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += du(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

function findBare(dir: string): string | null {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const path = join(dir, entry.name);
    if (entry.name.endsWith('.git')) return path;
    const found = findBare(path);
    if (found) return found;
  }
  return null;
}

/** `node dist/cli.js ARGS` under /usr/bin/time: wall seconds and peak RSS in MB. */
function timed(args: string[], dataDir: string): { seconds: number; rssMb: number; out: string } {
  const run = spawnSync('/usr/bin/time', ['-f', '__TIME__ %e %M', process.execPath, 'dist/cli.js', ...args], {
    cwd: ROOT,
    env: env(dataDir),
    encoding: 'utf8',
  });
  const m = /__TIME__ (\S+) (\d+)/.exec(run.stderr);
  if (run.status !== 0 || !m) throw new Error(`weft ${args.join(' ')}: exit ${run.status}\n${run.stderr}${run.stdout}`);
  return { seconds: Number(m[1]), rssMb: Number(m[2]) / 1024, out: run.stdout };
}

async function main(): Promise<void> {
  execFileSync(process.execPath, [join(ROOT, 'bin', 'build-if-needed.mjs')], { cwd: ROOT, stdio: 'inherit' });
  const top = mkdtempSync(join(tmpdir(), 'weft-backup-bench-'));
  const dataDir = join(top, 'data');
  const restored = join(top, 'restored');
  const archive = join(top, 'weft.backup');
  try {
    // a migrated database with one repo, made by the server itself
    const port = await freePort();
    const server = spawn(process.execPath, ['dist/main.js'], {
      cwd: ROOT,
      env: env(dataDir, { PORT: String(port), BOOTSTRAP_ADMIN_TOKEN: TOKEN }),
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const base = `http://127.0.0.1:${port}`;
    for (
      let i = 0;
      !(await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      ));
      i++
    ) {
      if (i > 600) throw new Error('the server did not become ready');
      await sleep(100);
    }
    const me = (await (await fetch(`${base}/api/v1/user`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
      username: string;
    };
    const created = await fetch(`${base}/api/v1/users/${me.username}/repos`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'big', slug: 'big' }),
    });
    if (created.status !== 201) throw new Error(`repo: ${created.status} ${await created.text()}`);
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));

    // the incompressible files, as loose objects under one commit
    const bare = findBare(join(dataDir))!;
    const files = Math.ceil((GIB * 1024) / FILE_MIB);
    const scratch = join(top, 'blob');
    const entries: string[] = [];
    const madeAt = performance.now();
    for (let i = 0; i < files; i++) {
      const fd = openSync(scratch, 'w');
      for (let m = 0; m < FILE_MIB; m++) writeSync(fd, randomBytes(1024 * 1024));
      closeSync(fd);
      const sha = execFileSync('git', ['--git-dir', bare, 'hash-object', '-w', scratch], { encoding: 'utf8' }).trim();
      entries.push(`100644 blob ${sha}\tfile-${String(i).padStart(3, '0')}.bin`);
    }
    rmSync(scratch);
    const tree = execFileSync('git', ['--git-dir', bare, 'mktree'], {
      input: `${entries.join('\n')}\n`,
      encoding: 'utf8',
    }).trim();
    const commit = execFileSync('git', ['--git-dir', bare, 'commit-tree', tree, '-m', 'big files'], {
      encoding: 'utf8',
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: 'b',
        GIT_AUTHOR_EMAIL: 'b@example.com',
        GIT_COMMITTER_NAME: 'b',
        GIT_COMMITTER_EMAIL: 'b@example.com',
      },
    }).trim();
    execFileSync('git', ['--git-dir', bare, 'update-ref', 'refs/heads/main', commit]);
    const size = du(dataDir);
    console.log(
      `DATA_DIR: ${(size / 2 ** 30).toFixed(2)} GiB (${files} files of ${FILE_MIB} MiB, loose objects), made in ${((performance.now() - madeAt) / 1000).toFixed(0)} s`,
    );

    const listUsers = timed(['list-users'], dataDir);
    const backup = timed(['backup', '--out', archive], dataDir);
    const archiveSize = statSync(archive).size;
    const verify = timed(['backup', '--verify', archive], dataDir);
    const restore = timed(['restore', archive], restored);
    const fsck = spawnSync('git', ['--git-dir', findBare(restored)!, 'fsck', '--connectivity-only'], { encoding: 'utf8' });
    const row = (what: string, r: { seconds: number; rssMb: number }) =>
      console.log(`| ${what.padEnd(44)} | ${`${r.seconds.toFixed(1)} s`.padEnd(7)} | ${`${r.rssMb.toFixed(0)} MB`.padEnd(7)} |`);
    console.log(`| ${'command'.padEnd(44)} | wall    | max RSS |`);
    console.log(`| ${'-'.repeat(44)} | ------- | ------- |`);
    row('`weft list-users` (any CLI command)', listUsers);
    row(`\`weft backup --out\` (${(archiveSize / 2 ** 30).toFixed(2)} GiB archive)`, backup);
    row('`weft backup --verify`', verify);
    row('`weft restore` (into an empty SQLite DATA_DIR)', restore);
    console.log(
      `restored DATA_DIR ${(du(restored) / 2 ** 30).toFixed(2)} GiB; git fsck --connectivity-only: exit ${fsck.status}`,
    );
    console.log(
      `RSS growth over any CLI command: backup ${(backup.rssMb - listUsers.rssMb).toFixed(0)} MB, restore ${(restore.rssMb - listUsers.rssMb).toFixed(0)} MB`,
    );
  } finally {
    rmSync(top, { recursive: true, force: true });
  }
}

await main();
