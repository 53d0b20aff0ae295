/**
 * Cold start and idle memory: the server run through tsx (TypeScript compiled at load, the old
 * `npm start`) against the compiled build (`node dist/main.js`, today's `npm start`), with a raw
 * node:http hello server started the same way as the reference, all in one run.
 *
 *   npm run build && npx tsx bench/startup.ts        # BENCH_RUNS=5 (default 3)
 *
 * Cold start: spawn to the first 200 from /healthz (a fresh SQLite DATA_DIR each run, so the
 * migrations run too). Idle RSS: VmRSS from /proc after one second without requests.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RAW = `require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), '127.0.0.1')`;
const MODES: Array<{ name: string; args: string[] }> = [
  { name: 'raw node:http hello', args: ['-e', RAW] },
  { name: 'tsx src/main.ts', args: ['--import', 'tsx', 'src/main.ts'] },
  { name: 'node dist/main.js', args: ['dist/main.js'] },
];

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

async function once(args: string[]): Promise<{ ms: number; rssMb: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-bench-start-'));
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      SSH_PORT: '0',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
    },
    stdio: 'ignore',
  });
  try {
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (performance.now() - started > 60_000) throw new Error(`no answer from ${args.join(' ')}`);
      await sleep(10);
    }
    const ms = performance.now() - started;
    await sleep(1000);
    const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]!;
    return { ms, rssMb: Number(rss) / 1024 };
  } finally {
    const exited = new Promise((r) => child.on('close', r));
    child.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (!existsSync(join(ROOT, 'dist/main.js'))) throw new Error('run `npm run build` first');
const runs = Number(process.env.BENCH_RUNS ?? 3);
const results = new Map<string, Array<{ ms: number; rssMb: number }>>();
for (let i = 0; i < runs; i++) {
  // modes alternate within each run, so a busy moment of the machine hits them alike
  for (const mode of MODES) results.set(mode.name, [...(results.get(mode.name) ?? []), await once(mode.args)]);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const raw = results.get(MODES[0]!.name)!;
console.log(`node ${process.version}; median of ${runs} runs; ratios to raw node:http in the same run`);
console.log('| server | cold start | vs raw | idle RSS | vs raw |\n|---|---:|---:|---:|---:|');
for (const [name, rs] of results) {
  const ms = median(rs.map((r) => r.ms));
  const mb = median(rs.map((r) => r.rssMb));
  const rawMs = median(raw.map((r) => r.ms));
  const rawMb = median(raw.map((r) => r.rssMb));
  console.log(
    `| ${name} | ${ms.toFixed(0)} ms | ${(ms / rawMs).toFixed(1)}x | ${mb.toFixed(0)} MB | ${(mb / rawMb).toFixed(1)}x |`,
  );
}
