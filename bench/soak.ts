/**
 * Memory soak (issue 46 item 6, bench/README.md "Memory soak"): the built server
 * (`node --v8-pool-size=1 dist/main.js`, what `npm start` runs) spawned as its own process and
 * driven with BENCH_SOAK_REQUESTS (500,000) mixed requests while its RSS and JS heap are sampled.
 *
 *   npm run build && npx tsx bench/soak.ts                                      # SQLite
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test BENCH_SOAK_REQUESTS=150000 npx tsx bench/soak.ts
 *
 * The mix, drawn at random by BENCH_SOAK_CONCURRENCY (16) keep-alive clients:
 *  - reads (about 70 %): GET /user, the repo, a thread, the thread and pull lists, a page of events,
 *    the root contents, a commit's combined status, two web pages (repo home, thread page);
 *  - writes (about 22 %): new threads (Markdown bodies, some long enough for the Markdown
 *    worker), replies, thread edits, commit statuses, user pings (user-mention events);
 *  - git (about 4 %): `info/refs` of upload-pack over HTTP, and every 2,000th request a real
 *    `git push` of a new commit and `git ls-remote` (child processes);
 *  - live stream (about 3 %): `GET /tail-events` opened, read until its first bytes, dropped;
 *  - webhooks: one repo hook takes every event and delivers to a local receiver answering 204,
 *    so every write is also a delivery (attempt, signature, record).
 * A sample every BENCH_SOAK_SAMPLE_S (5) seconds: VmRSS from /proc, and the JS heap used and the
 * external memory from the server's own /metrics (METRICS=api). Printed as it goes, then
 * RSS at start (after setup and 10,000 warm-up requests), its plateau (median of the middle
 * third), at the end, and the slope of a least-squares line over the second half (MB per
 * 100,000 requests).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as netServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Agent, request } from 'undici';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TOKEN = 'weft_bench_soak_token_0123456789abcdefghij';
const TOTAL = Number(process.env.BENCH_SOAK_REQUESTS ?? 500_000);
const WARMUP = Math.min(10_000, Math.floor(TOTAL / 10));
const CONCURRENCY = Number(process.env.BENCH_SOAK_CONCURRENCY ?? 16);
const SAMPLE_MS = Number(process.env.BENCH_SOAK_SAMPLE_S ?? 5) * 1000;
const PG_URL = process.env.BENCH_DATABASE_URL || null;
/** A wall-time cap (a shared, loaded machine may not reach TOTAL in time): stops early, says so. */
const MAX_MS = Number(process.env.BENCH_SOAK_MINUTES ?? Infinity) * 60_000;

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = netServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function main(): Promise<void> {
  execFileSync(process.execPath, [join(ROOT, 'bin', 'build-if-needed.mjs')], { cwd: ROOT, stdio: 'inherit' });
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-soak-'));
  const schema = PG_URL ? `weft_soak_${process.pid}` : null;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: PG_URL! });
    await c.connect();
    await c.query(sql);
    await c.end();
  };
  if (schema) await admin(`create schema ${schema}`);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;

  // the webhook receiver
  let delivered = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      delivered++;
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const receiverPort = (receiver.address() as { port: number }).port;

  const child: ChildProcess = spawn(process.execPath, ['--v8-pool-size=1', 'dist/main.js'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: String(port),
      SSH_PORT: '0',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      NODE_ENV: 'production',
      METRICS: 'api',
      BOOTSTRAP_ADMIN_TOKEN: TOKEN,
      PUBLIC_URL: base,
      // this machine is shared: shedding would turn the soak into 503s
      LOAD_SHED_EVENT_LOOP_DELAY_MS: '0',
      ...(PG_URL ? { DATABASE_URL: `${PG_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}` } : {}),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const pid = child.pid!;
  const agent = new Agent({ connections: CONCURRENCY * 2, keepAliveTimeout: 30_000 });
  const counts: Record<string, number> = {};
  const statuses: Record<string, number> = {};

  const call = async (
    method: string,
    path: string,
    body?: unknown,
    accept = 'application/json',
  ): Promise<{ status: number; json: any }> => {
    const res = await request(`${base}${path}`, {
      method: method as 'GET',
      dispatcher: agent,
      headers: {
        // web pages are read as an anonymous visitor (the repo is public): a token is for the API
        ...(accept === 'text/html' ? {} : { authorization: `Bearer ${TOKEN}` }),
        accept,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.body.text();
    const key = `${Math.floor(res.statusCode / 100)}xx`;
    statuses[key] = (statuses[key] ?? 0) + 1;
    let json: any = null;
    if (String(res.headers['content-type'] ?? '').includes('json') && text) json = JSON.parse(text);
    return { status: res.statusCode, json };
  };

  try {
    for (let i = 0; ; i++) {
      const ok = await fetch(`${base}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (i > 600) throw new Error('the server did not become ready');
      await sleep(100);
    }

    // setup: a team, a repo with a commit, threads, a hook to the receiver
    const me = (await call('GET', '/api/v1/user')).json;
    await call('PUT', '/api/v1/site-settings', { webhook_allowed_hosts: ['127.0.0.0/8'] });
    await call('POST', '/api/v1/teams', { name: 'Soak', slug: 'soak' });
    await call('POST', '/api/v1/teams/soak/repos', { name: 'Load', slug: 'load', visibility: 'public' });
    const repo = '/api/v1/teams/soak/repos/load';
    const repoJson = (await call('GET', repo)).json;
    const work = mkdtempSync(join(tmpdir(), 'weft-soak-work-'));
    const git = (...args: string[]) => execFileSync('git', args, { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] }).toString();
    const remote = `http://soak:${TOKEN}@127.0.0.1:${port}/git/teams/soak/load.git`;
    git('init', '-q', '-b', 'main');
    git('config', 'user.email', 'soak@example.com');
    git('config', 'user.name', 'Soak');
    let commits = 0;
    const commit = () => {
      commits++;
      writeFileSync(join(work, 'README.md'), `# Load\n\ncommit ${commits}\n`);
      git('add', '-A');
      git('commit', '-q', '-m', `commit ${commits}`);
      git('push', '-q', remote, 'main');
      return git('rev-parse', 'HEAD').trim();
    };
    let sha = commit();
    const hook = await call('POST', `${repo}/hooks`, { url: `http://127.0.0.1:${receiverPort}/in`, events: ['*'] });
    if (hook.status !== 201) throw new Error(`hook: ${hook.status} ${JSON.stringify(hook.json)}`);
    let threads = 0;
    for (let i = 0; i < 20; i++) {
      await call('POST', `${repo}/threads`, { title: `Thread ${i}`, body: `Setup thread **${i}**` });
      threads++;
    }

    const LONG = `${'A paragraph with *emphasis*, `code` and a [link](https://example.com). '.repeat(40)}\n`;
    let streamsOpened = 0;
    let pushes = 0;
    const sse = async () => {
      const ac = new AbortController();
      const timeout = setTimeout(() => ac.abort(), 5000);
      const res = await request(`${base}/api/v1/tail-events?scope=repo:${repoJson.uuid}`, {
        dispatcher: agent,
        headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream' },
        signal: ac.signal,
      });
      statuses[`${Math.floor(res.statusCode / 100)}xx`] = (statuses[`${Math.floor(res.statusCode / 100)}xx`] ?? 0) + 1;
      try {
        for await (const _chunk of res.body) break;
      } catch {
        // aborted after 5 s without a byte
      }
      clearTimeout(timeout);
      ac.abort();
      res.body.destroy();
      streamsOpened++;
    };
    const pick = <T>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)]!;
    const n = () => 1 + Math.floor(Math.random() * threads);
    const ACTIONS: Array<[string, number, (i: number) => Promise<unknown>]> = [
      ['read', 45, () => call('GET', pick(['/api/v1/user', repo, `${repo}/threads/${n()}`, `${repo}/contents`]))],
      [
        'list',
        15,
        () =>
          call(
            'GET',
            pick([`${repo}/threads?per_page=30`, `${repo}/pulls`, `/api/v1/events?scope=repo:${repoJson.uuid}&per_page=30`]),
          ),
      ],
      ['status-read', 4, () => call('GET', `${repo}/commits/${sha}/status`)],
      ['page', 6, () => call('GET', pick(['/teams/soak/load', `/teams/soak/load/threads/${n()}`]), undefined, 'text/html')],
      [
        'write',
        10,
        async (i) => {
          await call('POST', `${repo}/threads`, {
            title: `Soak ${i}`,
            body: i % 10 === 0 ? LONG + i : `Body ${i} with **bold**`,
          });
          threads++;
        },
      ],
      ['reply', 6, (i) => call('POST', `${repo}/threads/${n()}/replies`, { body: `Reply ${i} _to_ it` })],
      ['edit', 3, (i) => call('PATCH', `${repo}/threads/${n()}`, { title: `Edited ${i}` })],
      ['status', 2, (i) => call('POST', `${repo}/statuses/${sha}`, { state: 'success', context: `ci/${i % 50}` })],
      ['ping', 1, (i) => call('POST', `/api/v1/users/${me.username}/ping`, { body: `ping ${i}` })],
      ['git', 4, () => call('GET', '/git/teams/soak/load.git/info/refs?service=git-upload-pack', undefined, '*/*')],
      ['sse', 3, () => sse()],
    ];
    const weights = ACTIONS.reduce((a, [, w]) => a + w, 0);
    const choose = () => {
      let r = Math.random() * weights;
      for (const a of ACTIONS) if ((r -= a[1]) < 0) return a;
      return ACTIONS[0]!;
    };

    let done = 0;
    let errors = 0;
    let gitBusy = false;
    const samples: Array<{ t: number; done: number; rss: number; heap: number; external: number }> = [];
    const metric = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN) / 1048576;
    const started = Date.now();
    const sample = async () => {
      const text = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } }).then((r) => r.text());
      const s = {
        t: (Date.now() - started) / 1000,
        done,
        rss: rssMb(pid),
        heap: metric(text, 'weft_nodejs_heap_size_used_bytes'),
        external: metric(text, 'weft_nodejs_external_memory_bytes'),
      };
      samples.push(s);
      console.log(
        `${s.t.toFixed(0).padStart(5)} s ${String(done).padStart(7)} req  RSS ${s.rss.toFixed(0)} MB  heap ${s.heap.toFixed(0)} MB  external ${s.external.toFixed(0)} MB  ${(done / s.t).toFixed(0)} req/s  deliveries ${delivered}`,
      );
    };
    let warmRss = 0;
    const timer = setInterval(() => void sample().catch(() => undefined), SAMPLE_MS);
    const worker = async () => {
      for (;;) {
        const i = done++;
        if (i >= TOTAL || Date.now() - started > MAX_MS) {
          done--; // not made
          return;
        }
        if (i === WARMUP) warmRss = rssMb(pid);
        const [name, , run] = choose();
        counts[name] = (counts[name] ?? 0) + 1;
        try {
          await run(i);
          if (i % 2000 === 1999 && !gitBusy) {
            gitBusy = true;
            try {
              sha = commit();
              git('ls-remote', remote);
              pushes++;
            } finally {
              gitBusy = false;
            }
          }
        } catch (err) {
          errors++;
          if (errors < 10) console.error(name, (err as Error).message);
        }
      }
    };
    await sample();
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    clearInterval(timer);
    await sample();
    const seconds = (Date.now() - started) / 1000;

    // figures
    const reached = Math.min(done, TOTAL);
    const half = samples.filter((s) => s.done >= reached / 2);
    const meanX = half.reduce((a, s) => a + s.done, 0) / half.length;
    const meanY = half.reduce((a, s) => a + s.rss, 0) / half.length;
    const slope =
      half.reduce((a, s) => a + (s.done - meanX) * (s.rss - meanY), 0) / half.reduce((a, s) => a + (s.done - meanX) ** 2, 0);
    const mid = samples.filter((s) => s.done >= reached / 3 && s.done <= (2 * reached) / 3);
    const middle = mid.map((s) => s.rss).sort((a, b) => a - b);
    const heapMid = mid.map((s) => s.heap).sort((a, b) => a - b);
    const last = samples.at(-1)!;
    console.log(
      `\n${PG_URL ? 'PostgreSQL' : 'SQLite'}: ${reached} of ${TOTAL} requests in ${seconds.toFixed(0)} s (${(reached / seconds).toFixed(0)} req/s), ${errors} client errors`,
    );
    console.log(
      `mix: ${JSON.stringify(counts)}; answers ${JSON.stringify(statuses)}; ${pushes} pushes, ${streamsOpened} streams, ${delivered} deliveries received`,
    );
    console.log(
      `RSS: first sample ${samples[0]!.rss.toFixed(0)} MB, after ${WARMUP} warm-up requests ${warmRss ? `${warmRss.toFixed(0)} MB` : '(not reached)'}, plateau (median of the middle third) ${middle[Math.floor(middle.length / 2)]!.toFixed(0)} MB, max ${Math.max(...samples.map((s) => s.rss)).toFixed(0)} MB, end ${last.rss.toFixed(0)} MB`,
    );
    console.log(`RSS slope over the second half: ${(slope * 100_000).toFixed(1)} MB per 100,000 requests`);
    console.log(
      `JS heap used: plateau ${heapMid[Math.floor(heapMid.length / 2)]!.toFixed(0)} MB, end ${last.heap.toFixed(0)} MB; external end ${last.external.toFixed(0)} MB`,
    );
    rmSync(work, { recursive: true, force: true });
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    receiver.close();
    await agent.close();
    if (schema) await admin(`drop schema ${schema} cascade`);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
