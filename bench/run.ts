/**
 * Load benchmark: a raw node:http hello server against Weft, measured in the same run.
 *
 *   npm run bench                      # 50 connections, 10 s per target, 2 rounds
 *   BENCH_DURATION=5 BENCH_CONNECTIONS=100 BENCH_ROUNDS=3 npm run bench
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npm run bench   # Weft on PostgreSQL
 *
 * The servers run in a child process (raw hello and Weft built in-process with buildApp on a
 * fresh temp SQLite database and a bootstrap token, logging off); this process runs autocannon,
 * so the load generator never shares an event loop with the server. Both processes share the
 * machine's cores, as in the architecture guide's figures.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import { serveWeft } from './serve-weft.ts';

const TOKEN = 'weft_bench_bootstrap_token_0123456789abc';

interface Ports {
  dialect: string;
  raw: number;
  weft: number;
}

/** Child: serve raw hello and Weft on free loopback ports, report them, run until killed. */
async function serve(): Promise<void> {
  const raw = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"hello":"world"}');
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));

  const weft = await serveWeft(TOKEN);
  const stop = async () => {
    raw.close();
    await weft.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('disconnect', () => void stop());
  const ports: Ports = {
    dialect: weft.dialect,
    raw: (raw.address() as AddressInfo).port,
    weft: weft.port,
  };
  process.send!(ports);
}

interface Target {
  name: string;
  url: string;
  headers?: Record<string, string>;
}

async function measure(target: Target, connections: number, duration: number): Promise<Result> {
  // warm-up: JIT, connection set-up, SQLite page cache
  await autocannon({ url: target.url, connections, duration: Math.min(2, duration), headers: target.headers });
  const result = await autocannon({ url: target.url, connections, duration, headers: target.headers });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${target.name}: ${result.non2xx} non-2xx responses, ${result.errors} errors`);
  }
  return result;
}

async function main(): Promise<void> {
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
  const duration = Number(process.env.BENCH_DURATION ?? 10);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const ports = await new Promise<Ports>((resolve, reject) => {
      child.once('message', (m) => resolve(m as Ports));
      child.once('exit', (code) => reject(new Error(`server process exited with ${code}`)));
    });
    const targets: Target[] = [
      { name: 'raw node:http hello', url: `http://127.0.0.1:${ports.raw}/` },
      { name: 'Weft GET /healthz (no auth, no DB)', url: `http://127.0.0.1:${ports.weft}/healthz` },
      {
        name: `Weft GET /api/v1/user (Bearer, ${ports.dialect})`,
        url: `http://127.0.0.1:${ports.weft}/api/v1/user`,
        headers: { authorization: `Bearer ${TOKEN}` },
      },
    ];
    console.log(
      `node ${process.version}, ${cpus().length} cores; ${connections} connections, ${duration} s per target (after a warm-up), ` +
        `${rounds} round(s), targets interleaved; the best round per target is kept (the machine is shared)\n`,
    );
    const best = new Map<string, { rps: number; p99: number }>();
    for (let round = 1; round <= rounds; round++) {
      for (const target of targets) {
        const r = await measure(target, connections, duration);
        const row = { rps: r.requests.average, p99: r.latency.p99 };
        const prev = best.get(target.name);
        if (!prev || row.rps > prev.rps) best.set(target.name, row);
        console.log(
          `round ${round}  ${target.name.padEnd(40)} ${row.rps.toFixed(0).padStart(7)} req/s   p99 ${String(row.p99).padStart(4)} ms`,
        );
      }
    }
    const base = best.get(targets[0]!.name)!;
    console.log('\nbest of the rounds, and the ratio to raw node:http:');
    for (const target of targets) {
      const row = best.get(target.name)!;
      console.log(
        `${target.name.padEnd(40)} ${row.rps.toFixed(0).padStart(7)} req/s   p99 ${String(row.p99).padStart(4)} ms   ` +
          `${(row.rps / base.rps).toFixed(2)}x req/s   ${(row.p99 / Math.max(base.p99, 1)).toFixed(1)}x p99`,
      );
    }
  } finally {
    child.kill('SIGTERM');
  }
}

if (process.argv.includes('--serve')) {
  await serve();
} else {
  await main();
}
