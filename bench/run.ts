/**
 * Load benchmark: a raw node:http hello server against Weft, measured in the same run.
 *
 *   npm run bench                      # SQLite then PostgreSQL; 50 connections, 5 s per target, 2 rounds
 *   BENCH_DATABASES=sqlite BENCH_DURATION=10 BENCH_ROUNDS=3 npm run bench
 *   BENCH_DATABASE_URL=postgres://…    # the PostgreSQL server (default: the local test server)
 *   BENCH_EVENTS=100000 BENCH_REPOS=1000 BENCH_PULLS=1000 npm run bench   # a smaller seed
 *   BENCH_TARGETS=health,user,repo,pull BENCH_CPU_PROF=/tmp/prof npm run bench   # some targets, CPU profile of the server
 *   BENCH_STARTUP=0 npm run bench      # without the start-up and idle-memory figures (bench/startup.ts) printed first
 *
 * For each database, a child process serves a raw node:http hello server and Weft (built
 * in-process with buildApp on a fresh database seeded by bench/seed.ts, logging off); this process
 * runs autocannon, so the load generator never shares an event loop with the server. Both
 * processes share the machine's cores. Each round measures the raw server, then every Weft
 * target, so the reference and Weft alternate through the run; ratios use the best round of each.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon, { type Result } from 'autocannon';
import { type Seeded, seed } from './seed.ts';
import { serveWeft } from './serve-weft.ts';
import { benchStartup } from './startup.ts';

const TOKEN = 'weft_bench_bootstrap_token_0123456789abc';

interface Ports {
  dialect: string;
  raw: number;
  fastify: number;
  weft: number;
  seeded: Seeded;
  seedSeconds: number;
}

const sizes = () => ({
  events: Number(process.env.BENCH_EVENTS ?? 1_000_000),
  repos: Number(process.env.BENCH_REPOS ?? 10_000),
  pulls: Number(process.env.BENCH_PULLS ?? 10_000),
});

/** Child: serve raw hello and Weft on free loopback ports, report them, run until killed. */
async function serve(): Promise<void> {
  const raw = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"hello":"world"}');
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  // A second reference: bare Fastify (no plugins, no hooks, logging off) answering the same body
  // through a response schema: the framework's own cost, which Weft's figures include.
  const { default: Fastify } = await import('fastify');
  const bare = Fastify({ logger: false });
  bare.get('/', { schema: { response: { 200: { type: 'object', properties: { hello: { type: 'string' } } } } } }, async () => ({
    hello: 'world',
  }));
  await bare.listen({ port: 0, host: '127.0.0.1' });

  const weft = await serveWeft(TOKEN, async (app, database) => {
    const started = performance.now();
    const seeded = await seed(app, database, TOKEN, sizes());
    return { seeded, seedSeconds: (performance.now() - started) / 1000 };
  });

  const stop = async () => {
    raw.close();
    await bare.close();
    await weft.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  // The parent asks for this process's CPU time around each measurement (server CPU per request).
  process.on('message', (m) => {
    if (m === 'cpu') process.send!({ cpu: process.cpuUsage() });
  });
  process.on('disconnect', () => void stop());
  const ports: Ports = {
    dialect: weft.dialect,
    raw: (raw.address() as AddressInfo).port,
    fastify: (bare.server.address() as AddressInfo).port,
    weft: weft.port,
    ...weft.prepared,
  };
  process.send!(ports);
}

interface Target {
  name: string;
  /** for BENCH_TARGETS */
  key?: string;
  url: string;
  headers?: Record<string, string>;
  method?: 'GET' | 'POST';
  body?: string;
}

/** The server child's CPU time so far (user + system), in microseconds. */
function serverCpu(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    const onMessage = (m: unknown) => {
      if (typeof m === 'object' && m !== null && 'cpu' in m) {
        child.off('message', onMessage);
        const { user, system } = (m as { cpu: NodeJS.CpuUsage }).cpu;
        resolve(user + system);
      }
    };
    child.on('message', onMessage);
    child.send('cpu');
  });
}

async function measure(
  child: ChildProcess,
  target: Target,
  connections: number,
  duration: number,
): Promise<Result & { cpuPerRequest: number }> {
  const opts = { url: target.url, connections, headers: target.headers, method: target.method ?? 'GET', body: target.body };
  // warm-up: JIT, connection set-up, SQLite page cache
  await autocannon({ ...opts, duration: Math.min(1, duration) });
  const cpuBefore = await serverCpu(child);
  const result = await autocannon({ ...opts, duration });
  const cpuPerRequest = ((await serverCpu(child)) - cpuBefore) / Math.max(1, result.requests.total);
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${target.name}: ${result.non2xx} non-2xx responses, ${result.errors} errors`);
  }
  return { ...result, cpuPerRequest };
}

async function benchDatabase(url: string | null, connections: number, duration: number, rounds: number): Promise<void> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve'], {
    // BENCH_CPU_PROF=DIR: the server process writes a V8 CPU profile there (open it in Chrome DevTools)
    execArgv: [
      '--import',
      'tsx',
      ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
      // BENCH_NODE_ARGS: more Node options for the server process (`--v8-pool-size=1`, say)
      ...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean),
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, BENCH_DATABASE_URL: url ?? '' },
  });
  try {
    const ports = await new Promise<Ports>((resolve, reject) => {
      child.once('message', (m) => resolve(m as Ports));
      child.once('exit', (code) => reject(new Error(`server process exited with ${code}`)));
    });
    const s = ports.seeded;
    const weft = `http://127.0.0.1:${ports.weft}/api/v1`;
    const repo = `${weft}/teams/${s.team}/repos/${s.repo}`;
    const auth = { authorization: `Bearer ${s.memberToken}` };
    const events = `${weft}/events?scope=${encodeURIComponent(s.eventScope)}`;
    const targets: Target[] = [
      { name: 'raw node:http hello', url: `http://127.0.0.1:${ports.raw}/` },
      { name: 'bare Fastify hello', url: `http://127.0.0.1:${ports.fastify}/` },
      // Weft's request pipeline (hooks, serializer, headers) without a token or a query
      { name: 'GET /healthz (anonymous)', key: 'health', url: `http://127.0.0.1:${ports.weft}/healthz` },
      { name: 'GET /user', key: 'user', url: `${weft}/user`, headers: auth },
      { name: 'GET {repo} (team member)', key: 'repo', url: repo, headers: auth },
      { name: 'GET {repo}/pulls/{n}', key: 'pull', url: `${repo}/pulls/${s.pull}`, headers: auth },
      { name: 'GET {repo}/pulls (first page)', key: 'pulls', url: `${repo}/pulls`, headers: auth },
      { name: 'GET {repo}/pulls?page=300', key: 'pulls-deep', url: `${repo}/pulls?page=300`, headers: auth },
      { name: 'GET /teams/{t}/repos?page=300', key: 'repos-deep', url: `${weft}/teams/${s.team}/repos?page=300`, headers: auth },
      { name: 'GET /events (first page)', key: 'events', url: events, headers: auth },
      { name: 'GET /events (deep before_id)', key: 'events-deep', url: `${events}&before_id=${s.deepBeforeId}`, headers: auth },
      {
        name: 'POST {repo}/pulls (write)',
        key: 'write',
        url: `${repo}/pulls`,
        headers: { ...auth, 'content-type': 'application/json' },
        method: 'POST',
        body: JSON.stringify({ title: 'bench', body: '', source_branch: 'feature', target_branch: 'main' }),
      },
    ];
    const only = process.env.BENCH_TARGETS?.split(',');
    if (only) targets.splice(1, targets.length, ...targets.slice(1).filter((t) => !t.key || only.includes(t.key)));
    console.log(
      `\n== ${ports.dialect}: seeded ${sizes().events} events, ${sizes().repos} repos in one team, ${sizes().pulls} pulls in one repo ` +
        `in ${ports.seedSeconds.toFixed(0)} s`,
    );
    // per target: the best round's req/s and latencies, and the least server CPU per request
    const best = new Map<string, { rps: number; p50: number; p99: number; cpu: number }>();
    for (let round = 1; round <= rounds; round++) {
      for (const target of targets) {
        const r = await measure(child, target, connections, duration);
        const row = { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, cpu: r.cpuPerRequest };
        const prev = best.get(target.name);
        if (!prev || row.rps > prev.rps) best.set(target.name, { ...row, cpu: Math.min(row.cpu, prev?.cpu ?? Infinity) });
        else prev.cpu = Math.min(prev.cpu, row.cpu);
        console.log(
          `round ${round}  ${target.name.padEnd(32)} ${row.rps.toFixed(0).padStart(7)} req/s   p50 ${String(row.p50).padStart(4)} ms   ` +
            `p99 ${String(row.p99).padStart(4)} ms   server CPU ${row.cpu.toFixed(1).padStart(6)} µs/request`,
        );
      }
    }
    const base = best.get(targets[0]!.name)!;
    console.log(
      `\n${ports.dialect}: best of the rounds, the ratio to raw node:http (req/s), and the server process's CPU time per ` +
        "request (user + system, least of the rounds; the database server's own CPU not included):",
    );
    console.log(
      `| request | req/s | p50 | p99 | vs raw | server CPU µs/request | goal (server CPU) |\n|---|---:|---:|---:|---:|---:|---|`,
    );
    const fastifyCpu = best.get('bare Fastify hello')?.cpu;
    for (const target of targets) {
      const row = best.get(target.name)!;
      console.log(
        `| ${target.name} | ${row.rps.toFixed(0)} | ${row.p50} ms | ${row.p99} ms | ${(row.rps / base.rps).toFixed(2)}x | ${row.cpu.toFixed(1)} | ` +
          `${goal(target.key, ports.dialect, row.cpu, fastifyCpu)} |`,
      );
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

/** The issue-31 goals for the server's CPU per request, and whether this run met them. */
function goal(key: string | undefined, dialect: string, cpu: number, fastifyCpu: number | undefined): string {
  const mark = (limit: number) => `≤ ${limit.toFixed(1)} µs: ${cpu <= limit ? 'met' : '**not met**'}`;
  if (key === 'health' && fastifyCpu !== undefined) return `bare Fastify + 8 µs, ${mark(fastifyCpu + 8)}`;
  if (key === 'user') return mark(dialect === 'postgres' ? 90 : 55);
  return '';
}

async function main(): Promise<void> {
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
  const duration = Number(process.env.BENCH_DURATION ?? 5);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const databases = (process.env.BENCH_DATABASES ?? 'sqlite,postgres').split(',');
  const pgUrl = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
  console.log(
    `node ${process.version}, ${cpus().length} cores; ${connections} connections, ${duration} s per target (after a 1 s warm-up), ` +
      `${rounds} round(s); the best round per target is kept (the machine is shared)`,
  );
  if (process.env.BENCH_STARTUP !== '0') await benchStartup();
  for (const name of databases) await benchDatabase(name === 'postgres' ? pgUrl : null, connections, duration, rounds);
}

if (process.argv.includes('--serve')) {
  await serve();
} else {
  await main();
}
