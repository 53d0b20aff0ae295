/**
 * Start-up and idle memory: the built server (`node --v8-pool-size=1 dist/main.js`, what `npm start` runs) against
 * a raw node:http hello server started the same way, alternating within each run; the CLI; and
 * the memory 1,000 idle keep-alive connections hold.
 *
 *   npm run build && npx tsx bench/startup.ts        # BENCH_RUNS=5 (default 3)
 *   (`npm run bench` runs the same first, unless BENCH_STARTUP=0)
 *
 * Start-up: spawn to the first 200 from /healthz, on a migrated SQLite database (the database is
 * created and migrated once before the runs, as a restart finds it), with the process's CPU time
 * at that moment from /proc. Idle RSS: VmRSS after one second without requests. Keep-alive: RSS
 * after 1,000 connections have each made one request and stay open, minus the idle RSS. The CLI:
 * `node bin/weft.mjs list-users` on the same database, spawn to exit.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const RAW = `require('node:http').createServer((q, s) => s.end('ok')).listen(Number(process.env.PORT), '127.0.0.1')`;
const RAW_NAME = 'raw node:http hello';
/** What `npm start`, the Dockerfile and the systemd unit run: one V8 helper thread (README "Deploying"). */
const WEFT_NAME = 'node --v8-pool-size=1 dist/main.js';
/** The same with V8's default of four helper threads (GC, compilation), for comparison. */
const DEFAULT_POOL_NAME = 'node dist/main.js';
const MODES: Array<{ name: string; args: string[] }> = [
  { name: RAW_NAME, args: ['-e', RAW] },
  { name: WEFT_NAME, args: ['--v8-pool-size=1', 'dist/main.js'] },
  { name: DEFAULT_POOL_NAME, args: ['dist/main.js'] },
];

export const STARTUP_GOALS = { startMs: 1000, startVsRaw: 3, cliMs: 500, idleRssMb: 90 };

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

const env = (dataDir: string, port = 0) => ({
  PATH: process.env.PATH ?? '',
  PORT: String(port),
  SSH_PORT: '0',
  DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  NODE_ENV: 'production',
});

function procStatus(pid: number): { rssMb: number; cpuMs: number } {
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]!;
  // utime and stime: fields 14 and 15 of /proc/PID/stat, in clock ticks (100 a second)
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { rssMb: Number(rss) / 1024, cpuMs: ticks * 10 };
}

async function waitForHealth(port: number, started: number, what: string): Promise<void> {
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (performance.now() - started > 60_000) throw new Error(`no answer from ${what}`);
    await sleep(5);
  }
}

/** Opens `count` keep-alive connections, one request each, and leaves them open. */
async function idleConnections(port: number, count: number): Promise<Agent> {
  const agent = new Agent({ keepAlive: true, maxSockets: count, maxFreeSockets: count, timeout: 600_000 });
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path: '/healthz', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('error', reject);
      req.end();
    });
  // all at once, so each request has its own connection
  await Promise.all(Array.from({ length: count }, one));
  return agent;
}

interface Run {
  ms: number;
  cpuMs: number;
  rssMb: number;
  keepAliveMb: number;
}

async function once(args: string[], dataDir: string, connections: number): Promise<Run> {
  const port = await freePort();
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, args, { cwd: ROOT, env: env(dataDir, port), stdio: 'ignore' });
  try {
    await waitForHealth(port, started, args.join(' '));
    const ms = performance.now() - started;
    const { cpuMs } = procStatus(child.pid!);
    await sleep(1000);
    const { rssMb } = procStatus(child.pid!);
    let keepAliveMb = NaN;
    if (connections > 0) {
      const agent = await idleConnections(port, connections);
      await sleep(500);
      keepAliveMb = procStatus(child.pid!).rssMb - rssMb;
      agent.destroy();
    }
    return { ms, cpuMs, rssMb, keepAliveMb };
  } finally {
    const exited = new Promise((r) => child.on('close', r));
    child.kill('SIGTERM');
    await exited;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const mark = (ok: boolean) => (ok ? 'met' : '**not met**');

/** Runs the start-up figures and prints them as a table beside their goals. */
export async function benchStartup(runs = Number(process.env.BENCH_RUNS ?? 3)): Promise<void> {
  if (!existsSync(join(ROOT, 'dist/main.js'))) {
    console.log('start-up: skipped (no dist/: run `npm run build` first)');
    return;
  }
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-bench-start-'));
  try {
    // a migrated database, as a restart finds it
    spawnSync(process.execPath, ['bin/weft.mjs', 'migrate'], { cwd: ROOT, env: env(dataDir), stdio: 'ignore' });
    const results = new Map<string, Run[]>();
    const cli: number[] = [];
    for (let i = 0; i < runs; i++) {
      // modes alternate within each run, so a busy moment of the machine hits them alike
      for (const mode of MODES) {
        results.set(mode.name, [...(results.get(mode.name) ?? []), await once(mode.args, dataDir, i === 0 ? 1000 : 0)]);
      }
      const started = performance.now();
      spawnSync(process.execPath, ['bin/weft.mjs', 'list-users'], { cwd: ROOT, env: env(dataDir), stdio: 'ignore' });
      cli.push(performance.now() - started);
    }
    const raw = results.get(RAW_NAME)!;
    const weft = results.get(WEFT_NAME)!;
    const rawMs = median(raw.map((r) => r.ms));
    const rawMb = median(raw.map((r) => r.rssMb));
    const ms = median(weft.map((r) => r.ms));
    const mb = median(weft.map((r) => r.rssMb));
    const cliMs = median(cli);
    const g = STARTUP_GOALS;
    console.log(
      `\nstart-up (node ${process.version}, median of ${runs} runs, alternating with the raw server; migrated SQLite database):`,
    );
    console.log('| figure | raw node:http | Weft | vs raw | goal | |\n|---|---:|---:|---:|---|---|');
    console.log(
      `| start to first /healthz 200 | ${rawMs.toFixed(0)} ms | ${ms.toFixed(0)} ms | ${(ms / rawMs).toFixed(1)}x | ` +
        `≤ ${g.startMs} ms and ≤ ${g.startVsRaw}x raw | ${mark(ms <= g.startMs)} / ${mark(ms <= g.startVsRaw * rawMs)} |`,
    );
    console.log(
      `| CPU time at that moment | ${median(raw.map((r) => r.cpuMs)).toFixed(0)} ms | ${median(weft.map((r) => r.cpuMs)).toFixed(0)} ms | | | |`,
    );
    console.log(
      `| idle RSS | ${rawMb.toFixed(0)} MB | ${mb.toFixed(0)} MB | ${(mb / rawMb).toFixed(1)}x | < ${g.idleRssMb} MB | ${mark(mb < g.idleRssMb)} |`,
    );
    const defaultPool = results.get(DEFAULT_POOL_NAME)!;
    console.log(
      `| the same with V8's default pool (\`node dist/main.js\`): start, idle RSS | | ` +
        `${median(defaultPool.map((r) => r.ms)).toFixed(0)} ms, ${median(defaultPool.map((r) => r.rssMb)).toFixed(0)} MB | | | |`,
    );
    console.log(
      `| RSS added by 1,000 idle keep-alive connections | ${raw[0]!.keepAliveMb.toFixed(1)} MB | ${weft[0]!.keepAliveMb.toFixed(1)} MB | | (a figure) | |`,
    );
    console.log(
      `| CLI \`weft list-users\` (spawn to exit) | | ${cliMs.toFixed(0)} ms | | ≤ ${g.cliMs} ms | ${mark(cliMs <= g.cliMs)} |`,
    );
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await benchStartup();
