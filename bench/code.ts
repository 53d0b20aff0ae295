/**
 * Code-reading benchmark (`npm run bench:code`, bench/README.md "Reading code"). On a generated
 * repository (cached outside the tree, in BENCH_CODE_DIR, default $TMPDIR/weft-bench-code), it
 * measures with 10 concurrent clients the latency (p50, p99) of:
 *
 *   file      GET {repo}/contents/src/d07/f00123.txt     vs  git cat-file blob main:src/d07/f00123.txt
 *   dir       GET {repo}/contents/big (10,000 entries)    vs  git ls-tree -l main:big
 *   commits   GET {repo}/commits (page 1, 30 commits)     vs  git log -n 30 --format=%H%P%an%ae%at%cn%ce%ct%B main
 *   commit    GET {repo}/commits/{sha} (files, patches)   vs  git show --numstat -p {sha}
 *   compare   GET {repo}/compare/main...topic             vs  git diff -p main...topic
 *
 * Weft runs in a child process (bench/code.ts --serve), the load comes from this one: autocannon
 * for Weft, a pool of 10 `execFile('git', ...)` loops for the reference, each for BENCH_DURATION
 * seconds (default 5) after a 1 s warm-up. Knobs: BENCH_CODE_COMMITS (default 100000),
 * BENCH_CODE_FILES (default 50000, 10,000 of them in big/), BENCH_CODE_MB (random binary data
 * added in assets/, default 900: with the rest, about 1 GB of objects), BENCH_CODE_DIR, BENCH_CODE_ROWS
 * (comma-separated words: only the rows whose name holds one), BENCH_CPU_PROF (a directory: the
 * server writes a V8 CPU profile there).
 */
import { type ChildProcess, execFile, fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';

const COMMITS = Number(process.env.BENCH_CODE_COMMITS ?? 100_000);
const FILES = Number(process.env.BENCH_CODE_FILES ?? 50_000);
const MB = Number(process.env.BENCH_CODE_MB ?? 900);
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const CACHE = process.env.BENCH_CODE_DIR ?? join(tmpdir(), 'weft-bench-code');
const CLIENTS = 10;
const TOKEN = 'bench_admin_token_0123456789abcdefghijkl';
const BIG_DIR = 10_000;

const env = {
  PATH: process.env.PATH!,
  HOME: '/nonexistent',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  LC_ALL: 'C',
};
const git = (dir: string, args: string[]) =>
  new Promise<string>((resolve, reject) =>
    execFile('git', [`--git-dir=${dir}`, ...args], { env, maxBuffer: 1 << 28 }, (err, out, stderr) =>
      err ? reject(new Error(`git ${args.join(' ')}: ${stderr}`)) : resolve(out),
    ),
  );

/** Path of the i-th generated file: big/ holds 10,000, src/dNN/ the rest (1,000 a directory). */
function filePath(i: number): string {
  if (i < BIG_DIR) return `big/f${String(i).padStart(5, '0')}.txt`;
  const j = i - BIG_DIR;
  return `src/d${String(Math.floor(j / 1000)).padStart(2, '0')}/f${String(j % 1000).padStart(5, '0')}.txt`;
}

const text = (i: number, v: number) => `file ${i} version ${v}\n${randomBytes(600).toString('base64')}\n`;

/** The repository: one commit with every file and the binary assets, then COMMITS small ones; branch topic off main~50. */
async function generate(dir: string): Promise<void> {
  await new Promise<void>((resolve, reject) =>
    execFile('git', ['init', '--bare', '-q', '--initial-branch=main', dir], { env }, (e) => (e ? reject(e) : resolve())),
  );
  const child = spawn('git', [`--git-dir=${dir}`, 'fast-import', '--quiet', '--depth=50'], {
    env,
    stdio: ['pipe', 'inherit', 'inherit'],
  });
  const done = new Promise<void>((resolve, reject) =>
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`fast-import ${code}`)))),
  );
  const write = (chunk: string | Buffer) =>
    new Promise<void>((resolve) => (child.stdin.write(chunk) ? resolve() : child.stdin.once('drain', resolve)));
  let t = 1_600_000_000;
  let mark = 0;
  const commit = async (branch: string, message: string, files: Iterable<[string, string | Buffer]>, from?: string) => {
    mark++;
    await write(
      `commit refs/heads/${branch}\nmark :${mark}\nauthor Bench <bench@example.com> ${t} +0000\n` +
        `committer Bench <bench@example.com> ${t++} +0000\ndata ${Buffer.byteLength(message)}\n${message}\n`,
    );
    if (from) await write(`from ${from}\n`);
    for (const [path, data] of files) {
      await write(`M 100644 inline ${path}\ndata ${Buffer.byteLength(data)}\n`);
      await write(data);
      await write('\n');
    }
    return mark;
  };
  // generated while written: the assets never sit in memory together
  function* first(): Generator<[string, string | Buffer]> {
    for (let i = 0; i < FILES; i++) yield [filePath(i), text(i, 0)];
    for (let i = 0; i < MB; i++) yield [`assets/blob${String(i).padStart(4, '0')}.bin`, randomBytes(1024 * 1024)];
  }
  await commit('main', 'initial import\n', first());
  let branchPoint = 0;
  for (let n = 1; n <= COMMITS; n++) {
    // mostly small edits in src/d00 (small trees rewritten), now and then one in big/
    const i = n % 100 === 0 ? n % BIG_DIR : BIG_DIR + (n % 1000);
    const files: Array<[string, string]> = [[filePath(i), text(i, n)]];
    if (n % 7 === 0) files.push([filePath(BIG_DIR + ((n * 13) % 1000)), text(n, n)]);
    const m = await commit('main', `change ${n}\n\nedits ${files.map((f) => f[0]).join(', ')}\n`, files);
    if (n === COMMITS - 50) branchPoint = m;
    if (n % 10_000 === 0) console.log(`  ${n} commits`);
  }
  for (let k = 0; k < 20; k++) {
    await commit(
      'topic',
      `topic ${k}\n`,
      [[`src/d01/f${String(k).padStart(5, '0')}.txt`, text(k, -k)]],
      k === 0 ? `:${branchPoint}` : undefined,
    );
  }
  child.stdin.end();
  await done;
  await git(dir, ['repack', '-a', '-d', '-q', '--depth=50', '--window=10']);
}

interface Stamp {
  commits: number;
  files: number;
  mb: number;
  seconds: number;
  bytes: number;
}

async function ensureRepo(): Promise<{ dir: string; stamp: Stamp }> {
  const dir = join(CACHE, 'repo.git');
  const stampFile = join(CACHE, 'stamp.json');
  if (existsSync(stampFile)) {
    const stamp = JSON.parse(readFileSync(stampFile, 'utf8')) as Stamp;
    if (stamp.commits === COMMITS && stamp.files === FILES && stamp.mb === MB) return { dir, stamp };
  }
  rmSync(CACHE, { recursive: true, force: true });
  mkdirSync(CACHE, { recursive: true });
  console.log(`generating ${COMMITS} commits, ${FILES} files, ${MB} MB of assets into ${dir} ...`);
  const t0 = performance.now();
  await generate(dir);
  const seconds = (performance.now() - t0) / 1000;
  const { dirSize } = await import('../src/git/bare-store.ts');
  const stamp = { commits: COMMITS, files: FILES, mb: MB, seconds, bytes: await dirSize(join(dir, 'objects')) };
  writeFileSync(stampFile, JSON.stringify(stamp));
  return { dir, stamp };
}

/** The child: Weft on a fresh SQLite database, one repo whose objects and refs are the cached repository's. */
async function serve(source: string): Promise<void> {
  const { serveWeft } = await import('./serve-weft.ts');
  const server = await serveWeft(TOKEN, async (app, _db, deps) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/users/admin/repos',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'code', slug: 'code', visibility: 'private' }),
    });
    if (res.statusCode !== 201) throw new Error(res.body);
    const dir = (deps.git as import('../src/git/bare-store.ts').BareGitStore).pathOf(JSON.parse(res.body).uuid);
    writeFileSync(join(dir, 'objects', 'info', 'alternates'), `${join(source, 'objects')}\n`);
    const refs = await git(source, ['for-each-ref', '--format=create %(refname) %(objectname)']);
    await new Promise<void>((resolve, reject) => {
      const c = execFile('git', [`--git-dir=${dir}`, 'update-ref', '--stdin'], { env }, (e) => (e ? reject(e) : resolve()));
      c.stdin!.end(refs);
    });
  });
  process.send!({ port: server.port });
  process.on('message', async () => {
    await server.stop();
    process.exit(0);
  });
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/** CLIENTS loops of `git ARGS` for `seconds`: latency percentiles in ms. */
async function gitLoad(dir: string, args: string[], seconds: number): Promise<{ p50: number; p99: number; rps: number }> {
  const lat: number[] = [];
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        await git(dir, args);
        lat.push(performance.now() - t0);
      }
    }),
  );
  lat.sort((a, b) => a - b);
  return { p50: pct(lat, 50), p99: pct(lat, 99), rps: lat.length / seconds };
}

async function weftLoad(
  url: string,
  seconds: number,
  paths?: string[],
): Promise<{ p50: number; p99: number; rps: number; errors: number }> {
  // with `paths`, each connection walks the list (distinct answers: nothing cached yet)
  const requests = paths?.map((path) => ({ method: 'GET' as const, path }));
  const opts = { url, connections: CLIENTS, headers: { authorization: `Bearer ${TOKEN}` }, ...(requests ? { requests } : {}) };
  if (requests) {
    const r = await autocannon({ ...opts, duration: seconds });
    return { p50: r.latency.p50, p99: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx };
  }
  await autocannon({ ...opts, duration: 1 });
  const r = await autocannon({ ...opts, duration: seconds });
  return { p50: r.latency.p50, p99: r.latency.p99, rps: r.requests.average, errors: r.errors + r.non2xx };
}

async function main(): Promise<void> {
  const { dir, stamp } = await ensureRepo();
  console.log(
    `repository: ${stamp.commits + 21} commits, ${stamp.files} files (10,000 in big/) + ${stamp.mb} x 1 MiB assets, ` +
      `${(stamp.bytes / 1024 ** 2).toFixed(0)} MiB of objects, generated in ${stamp.seconds.toFixed(0)} s`,
  );
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve', dir], {
    // BENCH_CPU_PROF=dir: the server writes a V8 CPU profile there when it stops
    execArgv: [
      '--import',
      'tsx',
      ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
    ],
    stdio: 'inherit',
  });
  const { port } = await new Promise<{ port: number }>((resolve) => child.once('message', (m) => resolve(m as { port: number })));
  const base = `http://127.0.0.1:${port}/api/v1/users/admin/repos/code`;
  const sha = (await git(dir, ['rev-parse', 'main~25'])).trim();
  const file = filePath(BIG_DIR + 7123);
  const revs = (await git(dir, ['rev-list', '--max-count=20000', 'main'])).trim().split('\n');
  const apiPath = new URL(base).pathname;
  const cold = (n: number, make: (i: number) => string) => Array.from({ length: n }, (_, i) => make(i));
  const targets: Array<{ name: string; url: string; args: string[]; paths?: string[] }> = [
    { name: 'file (contents)', url: `${base}/contents/${file}`, args: ['cat-file', 'blob', `main:${file}`] },
    { name: 'directory of 10,000 (warm)', url: `${base}/contents/big`, args: ['ls-tree', '-l', 'main:big'] },
    {
      name: 'commits page 1',
      url: `${base}/commits`,
      args: ['log', '-n', '30', '--format=%H %P%n%an %ae %at%n%cn %ce %ct%n%B', 'main'],
    },
    { name: 'commit with diff (warm)', url: `${base}/commits/${sha}`, args: ['show', '--numstat', '-p', '--format=%H', sha] },
    { name: 'compare two branches (warm)', url: `${base}/compare/main...topic`, args: ['diff', '-p', 'main...topic'] },
    {
      name: 'directory of 10,000, cold (200 versions)',
      url: base,
      args: ['ls-tree', '-l', `${revs[5000]}:big`],
      paths: cold(200, (i) => `${apiPath}/contents/big?ref=${revs[i * 100]}`),
    },
    {
      name: 'commit with diff, cold (500 commits)',
      url: base,
      args: ['show', '--numstat', '-p', '--format=%H', revs[300]!],
      paths: cold(500, (i) => `${apiPath}/commits/${revs[i + 1]}`),
    },
    {
      name: 'compare, cold (50 bases)',
      url: base,
      args: ['diff', '-p', `${revs[20]}...topic`],
      paths: cold(50, (i) => `${apiPath}/compare/${revs[i]}...topic`),
    },
  ];
  const rows: string[] = [];
  // BENCH_CODE_ROWS=dir,commits: only the rows whose name holds one of these words
  const only = process.env.BENCH_CODE_ROWS?.split(',').filter(Boolean);
  try {
    for (const target of targets) {
      if (only && !only.some((word) => target.name.includes(word))) continue;
      if (!target.paths) {
        // a loaded machine may shed load (503): retry a few times before giving up
        let check = await fetch(target.url, { headers: { authorization: `Bearer ${TOKEN}` } });
        for (let i = 0; i < 10 && check.status === 503; i++) {
          await new Promise((resolve) => setTimeout(resolve, 2000));
          check = await fetch(target.url, { headers: { authorization: `Bearer ${TOKEN}` } });
        }
        if (!check.ok) throw new Error(`${target.url}: ${check.status} ${await check.text()}`);
      }
      const w = await weftLoad(target.url, DURATION, target.paths);
      await gitLoad(dir, target.args, 1);
      const g = await gitLoad(dir, target.args, DURATION);
      rows.push(
        `| ${target.name} | ${w.p50.toFixed(1)} | ${w.p99.toFixed(1)} | ${w.rps.toFixed(0)} | ${g.p50.toFixed(1)} | ${g.p99.toFixed(1)} | ` +
          `${(w.p50 / g.p50).toFixed(2)} | ${(w.p99 / g.p99).toFixed(2)} | ${w.errors} |`,
      );
      console.log(rows.at(-1));
    }
    console.log(
      `\n${CLIENTS} concurrent clients, ${DURATION} s each\n\n` +
        '| request | Weft p50 ms | Weft p99 ms | Weft req/s | git p50 ms | git p99 ms | p50 vs git | p99 vs git | errors |\n' +
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|\n' +
        rows.join('\n'),
    );
  } finally {
    // the server child goes whatever happened here
    if (child.connected) child.send('stop');
    else child.kill();
  }
  await new Promise((resolve) => child.once('exit', resolve));
}

if (process.argv[2] === '--serve') void serve(process.argv[3]!);
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
