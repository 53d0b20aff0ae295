/**
 * 10,000 concurrent `GET /tail-events` subscribers on one instance (README "Live event stream"),
 * against a raw node:http SSE fan-out server measured in the same run with the same client.
 *
 *   npx tsx bench/sse.ts                                                          # raw, then Weft on SQLite
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/sse.ts   # raw, SQLite, PostgreSQL
 *   BENCH_DATABASES=postgres BENCH_DATABASE_URL=… npx tsx bench/sse.ts             # raw, PostgreSQL only
 *
 * Each server runs in a child process of its own (started with --expose-gc); this process is the
 * client: plain `net` sockets, one per subscriber, each parsing `id:` lines as they arrive. Per
 * server it measures, in order:
 *
 *  1. idle RSS (after a GC), then BENCH_SSE_SUBSCRIBERS (10,000) streams opened, 100 at a time,
 *     on ONE scope (the worst case for fan-out: every event goes to all of them), each with a token
 *     of its own (BENCH_SSE_TOKENS, default one per subscriber, all of one user: every stream
 *     re-checks its token and access); RSS again after a GC: (RSS − idle) / subscribers.
 *  2. delivery latency: BENCH_SSE_EVENTS (20) events published one at a time through the API
 *     (`POST /users/{u}/ping`, the user pinging itself; raw: `POST /publish`), each after the last
 *     one reached every subscriber. A sample is "publish request sent → that subscriber parsed
 *     the frame"; p50/p99 over all subscribers × events, and the p50 of the time the last
 *     subscriber of each event waited.
 *  3. with the 10,000 closed, one subscriber follows:
 *     a. the API: BENCH_SSE_WRITERS (8) clients pinging for 3 s; every event id returned must
 *        arrive, once, in increasing order;
 *     b. a ladder of rates (BENCH_SSE_RATES events/s, BENCH_SSE_STEP s each) generated inside the
 *        server process (Weft: committed through `tx.emitMany`, a batch per transaction, published
 *        after commit like any write; raw: written to the socket). A step is kept up when every id
 *        arrived once, in order, within 1 s of the generator's end and the generator reached 90 %
 *        of the rate. The figure is the highest rate kept up.
 *
 * BENCH_SSE_RECHECKS=Infinity lifts the per-instance bound on access re-checks (TAIL.maxRechecksPerSecond),
 * as before it existed; BENCH_SSE_IN_FLIGHT=N sets how many run at once (TAIL.maxRechecksInFlight).
 * BENCH_SSE_STATS=1 prints Weft's queries by kind and its pool's use once a second (stderr).
 * BENCH_CPU_PROF=DIR writes Weft's V8 CPU profile there.
 *
 * Both processes need `ulimit -n` above the subscriber count (checked here; the children inherit it).
 * Subscribers connect from 127.0.0.1–127.0.0.8 so three servers in a row never run out of
 * ephemeral ports.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http, { type ServerResponse, createServer } from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { serveWeft } from './serve-weft.ts';

const TOKEN = 'weft_bench_bootstrap_token_0123456789abc';
const SUBSCRIBERS = Number(process.env.BENCH_SSE_SUBSCRIBERS ?? 10_000);
const EVENTS = Number(process.env.BENCH_SSE_EVENTS ?? 20);
const TOKENS = Number(process.env.BENCH_SSE_TOKENS ?? SUBSCRIBERS);
const WRITERS = Number(process.env.BENCH_SSE_WRITERS ?? 8);
const RATES = (process.env.BENCH_SSE_RATES ?? '1000,2000,5000,10000,15000,20000,40000').split(',').map(Number);
const STEP_MS = Number(process.env.BENCH_SSE_STEP ?? 2) * 1000;
const OPENING = 100;
const USERNAME = 'bench-sub';

/** What a server child reports when it is ready. */
interface Ready {
  name: string;
  port: number;
  tailPath: string;
  publishPath: string;
  tokens: string[];
}
type Ask = { type: 'rss' } | { type: 'count' } | { type: 'burst'; rate: number; ms: number };
type Request = Ask & { id: number };
type Reply = { id: number; rss?: number; heap?: number; subscribers?: number; ids?: string[]; ms?: number };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Emits events at `rate` per second for `ms` (the batch catches up when the loop is late);
 * returns the ids in emission order and the time it took.
 */
async function generate(
  rate: number,
  ms: number,
  emit: (n: number) => Promise<string[]>,
): Promise<{ ids: string[]; ms: number }> {
  const ids: string[] = [];
  const started = performance.now();
  for (;;) {
    const elapsed = performance.now() - started;
    if (elapsed >= ms) break;
    const due = Math.floor((rate * elapsed) / 1000) - ids.length;
    if (due > 0) ids.push(...(await emit(Math.min(due, 2000))));
    else await sleep(2);
  }
  return { ids, ms: performance.now() - started };
}

function answer(handle: (req: Request) => Promise<Omit<Reply, 'id'>>): void {
  process.on('message', (msg) => {
    const req = msg as Request;
    void handle(req).then((reply) => process.send!({ ...reply, id: req.id }));
  });
}

function rssNow(): { rss: number; heap: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed };
}

/** A ping's event, as Weft sends it (the raw server sends the same shape and size). */
function fakeEvent(id: number, uuid: string): string {
  const who = { uuid, username: USERNAME };
  return JSON.stringify({
    id: String(id),
    kind: 'user-mention',
    scopes: [`user:${uuid}`],
    actor: who,
    payload: { from: who, to: who, body: 'bench ping', body_html: '<p>bench ping</p>\n' },
    created_at: new Date().toISOString(),
  });
}

/** Child: the reference, a raw node:http server that writes each event's frame to every stream. */
async function serveRaw(): Promise<void> {
  const uuid = '00000000-0000-4000-8000-000000000001';
  const streams = new Set<ServerResponse>();
  let seq = 0;
  const publish = (n: number): string[] => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const id = ++seq;
      const frame = `id: ${id}\nevent: user-mention\ndata: ${fakeEvent(id, uuid)}\n\n`;
      for (const res of streams) res.write(frame);
      ids.push(String(id));
    }
    return ids;
  };
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/tail')) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
      res.write('retry: 3000\n\n');
      streams.add(res);
      res.on('close', () => streams.delete(res));
      return;
    }
    req.resume();
    req.on('end', () => {
      const [id] = publish(1);
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ event_id: id }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', 511, resolve));
  answer(async (req) => {
    if (req.type === 'count') return { subscribers: streams.size };
    if (req.type === 'rss') return { ...rssNow(), subscribers: streams.size };
    return generate(req.rate, req.ms, async (n) => publish(n));
  });
  process.on('disconnect', () => process.exit(0));
  const ready: Ready = {
    name: 'raw node:http',
    port: (server.address() as AddressInfo).port,
    tailPath: '/tail',
    publishPath: '/publish',
    tokens: ['none'],
  };
  process.send!(ready);
}

/**
 * BENCH_SSE_STATS=1: once a second, Weft's child prints its queries by kind and their mean time,
 * and the pool's connections in use and callers waiting for one (the mean and max of 100 samples).
 */
function watchDatabase(database: import('../src/db/index.ts').Database): void {
  const counts = new Map<string, { n: number; seconds: number }>();
  database.queryObservers.add((kind, seconds) => {
    const c = counts.get(kind) ?? { n: 0, seconds: 0 };
    c.n++;
    c.seconds += seconds;
    counts.set(kind, c);
  });
  const pool = database.pool;
  let samples = 0;
  let waiting = 0;
  let maxWaiting = 0;
  let busy = 0;
  setInterval(() => {
    if (!pool) return;
    samples++;
    waiting += pool.waitingCount;
    maxWaiting = Math.max(maxWaiting, pool.waitingCount);
    busy += pool.totalCount - pool.idleCount;
  }, 10).unref();
  setInterval(() => {
    const kinds = [...counts].map(([k, c]) => `${k} ${c.n} (${((c.seconds / c.n) * 1000).toFixed(1)} ms)`).join(', ');
    const poolText = samples
      ? `; pool busy ${(busy / samples).toFixed(1)}, waiting ${(waiting / samples).toFixed(1)} (max ${maxWaiting})`
      : '';
    console.error(`[weft stats] ${kinds || 'no queries'}${poolText}`);
    counts.clear();
    samples = waiting = maxWaiting = busy = 0;
  }, 1000).unref();
}

/** Child: Weft (buildApp, logging off) with its live hub and bus started as `npm start` does. */
async function serveWeftChild(): Promise<void> {
  const { inTransaction } = await import('../src/core/transaction.ts');
  // BENCH_SSE_RECHECKS=Infinity: every stream's access re-check every 1.5 s, unbounded (the "before").
  const { TAIL } = await import('../src/activity/tail.ts');
  if (process.env.BENCH_SSE_RECHECKS) TAIL.maxRechecksPerSecond = Number(process.env.BENCH_SSE_RECHECKS);
  // BENCH_SSE_IN_FLIGHT=N: at most N re-checks at once (TAIL.maxRechecksInFlight).
  if (process.env.BENCH_SSE_IN_FLIGHT) TAIL.maxRechecksInFlight = Number(process.env.BENCH_SSE_IN_FLIGHT);
  let deps!: import('../src/deps.ts').Deps;
  const weft = await serveWeft(TOKEN, async (app, _database, d) => {
    deps = d;
    await deps.bus.start();
    deps.live.start();
    const admin = { authorization: `Bearer ${TOKEN}` };
    const call = async (url: string, payload: object) => {
      const res = await app.inject({ method: 'POST', url: `/api/v1${url}`, payload, headers: admin });
      if (res.statusCode >= 300) throw new Error(`POST ${url}: ${res.statusCode} ${res.body}`);
      return res.json() as Record<string, string>;
    };
    const user = await call('/users', { username: USERNAME, email: 'sub@bench.test' });
    const tokens: string[] = [];
    let made = 0;
    // 20 at a time: on PostgreSQL 10,000 tokens one by one take a minute.
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (made < TOKENS) tokens.push((await call('/api-tokens', { name: `sse${made++}`, username: USERNAME })).token!);
      }),
    );
    return { uuid: user.uuid!, tokens };
  });
  const { uuid, tokens } = weft.prepared;
  if (process.env.BENCH_SSE_STATS) watchDatabase(weft.database);
  const who = { uuid, username: USERNAME };
  const input = {
    kind: 'user-mention' as const,
    scopes: [`user:${uuid}`],
    actor: who,
    payload: { from: who, to: who, body: 'bench ping', body_html: '<p>bench ping</p>\n' },
  };
  answer(async (req) => {
    if (req.type === 'count') return { subscribers: deps.live.subscriberCount };
    if (req.type === 'rss') return { ...rssNow(), subscribers: deps.live.subscriberCount };
    return generate(req.rate, req.ms, async (n) =>
      (await inTransaction(deps, (tx) => tx.emitMany(Array.from({ length: n }, () => input)))).map((e) => e.id),
    );
  });
  process.on('disconnect', () => {
    void (async () => {
      await weft.stop().catch(() => {});
      await deps.bus.close().catch(() => {});
      process.exit(0);
    })();
  });
  const ready: Ready = {
    name: `Weft (${weft.dialect})`,
    port: weft.port,
    tailPath: `/api/v1/tail-events?scope=${encodeURIComponent(`user:${uuid}`)}`,
    publishPath: `/api/v1/users/${USERNAME}/ping`,
    tokens,
  };
  process.send!(ready);
}

// ---------------------------------------------------------------- the client (this process)

/** One SSE stream on a raw socket; `onId` gets every `id:` line as it is parsed. */
class Subscriber {
  private pending = '';
  private headersDone = false;
  ids: number[] | null = null;

  constructor(
    readonly socket: net.Socket,
    private readonly onId: (sub: Subscriber, id: number) => void,
  ) {}

  /** Feeds received text; resolves `ready` when the status line and the first body bytes are in. */
  feed(text: string, ready: (status: number) => void): void {
    this.pending += text;
    if (!this.headersDone) {
      const end = this.pending.indexOf('\r\n\r\n');
      if (end < 0) return;
      const status = Number(this.pending.slice(9, 12));
      this.headersDone = true;
      this.pending = this.pending.slice(end + 4);
      ready(status);
      if (status !== 200) return;
    }
    let start = 0;
    for (;;) {
      const nl = this.pending.indexOf('\n', start);
      if (nl < 0) break;
      if (this.pending.startsWith('id: ', start)) {
        const id = Number(this.pending.slice(start + 4, nl));
        this.ids?.push(id);
        this.onId(this, id);
      }
      start = nl + 1;
    }
    this.pending = this.pending.slice(start);
  }
}

function openSubscriber(
  port: number,
  path: string,
  token: string,
  localAddress: string,
  onId: (sub: Subscriber, id: number) => void,
): Promise<Subscriber> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port, localAddress });
    socket.setEncoding('latin1');
    const sub = new Subscriber(socket, onId);
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      reject(err);
    };
    socket.on('connect', () =>
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\nAccept: text/event-stream\r\n\r\n`,
      ),
    );
    socket.on('data', (text: string) =>
      sub.feed(text, (status) => {
        if (status === 200) {
          settled = true;
          resolve(sub);
        } else fail(Object.assign(new Error(`status ${status}`), { status }));
      }),
    );
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('closed before the stream started')));
    socket.setTimeout(30_000, () => fail(new Error('timed out')));
  }).then((sub) => {
    (sub as Subscriber).socket.setTimeout(0);
    return sub as Subscriber;
  });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/** Requests Weft shed (503: its event loop was behind) and sent again; reported with the figures. */
let shed = 0;

/**
 * Publishes one event through the API and returns its id. A 503 (load shedding) is retried after a
 * second, up to 10 times; `beforeSend` runs before each attempt (the latency clock starts there).
 */
async function publish(port: number, path: string, token: string, beforeSend: () => void = () => {}): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    beforeSend();
    const { status, text } = await publishOnce(port, path, token);
    if (status === 201) return (JSON.parse(text) as { event_id: string }).event_id;
    if (status !== 503 || attempt >= 10) throw new Error(`publish: ${status} ${text}`);
    shed++;
    await sleep(1000);
  }
}

function publishOnce(port: number, path: string, token: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ body: 'bench ping' });
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const percentile = (sorted: Float64Array | number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;

/**
 * How the ids a subscriber got compare with those emitted: 'ok' (every one, once, in increasing
 * order), 'behind' (a correct prefix: still arriving) or 'gap' (missing, repeated or out of order).
 */
function compareIds(got: number[], expected: string[]): 'ok' | 'behind' | 'gap' {
  const want = expected.map(Number).sort((a, b) => a - b);
  if (got.length > want.length || !got.every((id, i) => id === want[i])) return 'gap';
  return got.length === want.length ? 'ok' : 'behind';
}

interface Result {
  name: string;
  connectS: number;
  retries: number;
  shed: number;
  idleRss: number;
  rss: number;
  heapDelta: number;
  p50: number;
  p99: number;
  lastP50: number;
  lost: number;
  apiRate: number;
  apiOk: boolean;
  apiLag: number;
  maxRate: number;
  ladder: string[];
}

async function benchServer(kind: 'raw' | 'weft', url: string | null): Promise<Result> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [kind === 'raw' ? '--serve-raw' : '--serve-weft'], {
    execArgv: [
      '--import',
      'tsx',
      '--expose-gc',
      // BENCH_CPU_PROF=DIR: Weft's process writes a V8 CPU profile there
      ...(process.env.BENCH_CPU_PROF && kind === 'weft' ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []),
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, BENCH_DATABASE_URL: url ?? '' },
  });
  const waiting = new Map<number, (reply: Reply) => void>();
  let nextId = 0;
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Ready));
    child.once('exit', (code) => reject(new Error(`server process exited with ${code}`)));
  });
  child.on('message', (m) => {
    const reply = m as Reply;
    waiting.get(reply.id)?.(reply);
    waiting.delete(reply.id);
  });
  const ask = (req: Ask): Promise<Reply> =>
    new Promise((resolve) => {
      const id = ++nextId;
      waiting.set(id, resolve);
      child.send({ ...req, id });
    });
  shed = 0;
  const log = (text: string) => console.log(`  ${ready.name}: ${text}`);
  const { port, tailPath, publishPath, tokens } = ready;
  const publisherToken = tokens[0]!;

  try {
    // Warm-up: one stream and a few events, so the idle figure includes what the first use loads.
    const warm = await openSubscriber(port, tailPath, publisherToken, '127.0.0.1', () => {});
    let warmId = '0';
    for (let i = 0; i < 5; i++) warmId = await publish(port, publishPath, publisherToken);
    warm.socket.destroy();
    await sleep(500);
    const idle = await ask({ type: 'rss' });

    // 1. open the subscribers
    let received = 0;
    let t0 = 0;
    let counting = false;
    let floor = Number(warmId);
    let roundDone: (() => void) | null = null;
    const samples = new Float64Array(SUBSCRIBERS * EVENTS);
    let sampleCount = 0;
    let roundMax = 0;
    const onId = (_sub: Subscriber, id: number) => {
      if (!counting || id <= floor) return;
      const latency = performance.now() - t0;
      samples[sampleCount++] = latency;
      if (latency > roundMax) roundMax = latency;
      if (++received === SUBSCRIBERS) roundDone?.();
    };
    const subs: Subscriber[] = [];
    let retries = 0;
    const opened = performance.now();
    let next = 0;
    const opener = async () => {
      while (next < SUBSCRIBERS) {
        const i = next++;
        for (let attempt = 0; ; attempt++) {
          try {
            subs.push(await openSubscriber(port, tailPath, tokens[i % tokens.length]!, `127.0.0.${1 + (i % 8)}`, onId));
            break;
          } catch (err) {
            if (attempt >= 20 || performance.now() - opened > 120_000) throw err;
            retries++;
            await sleep(200);
          }
        }
      }
    };
    await Promise.all(Array.from({ length: OPENING }, opener));
    const connectS = (performance.now() - opened) / 1000;
    log(`${subs.length} streams open in ${connectS.toFixed(1)} s (${retries} retries)`);
    await sleep(1000);
    const full = await ask({ type: 'rss' });
    // The GC just forced can pause Weft's loop long enough to trip its load shedding for a moment.
    await sleep(3000);
    log(
      `server subscribers ${full.subscribers}, RSS idle ${(idle.rss! / 2 ** 20).toFixed(0)} MB, with streams ${(full.rss! / 2 ** 20).toFixed(0)} MB`,
    );

    // 2. latency, one event at a time
    const lastOfRound: number[] = [];
    let lost = 0;
    for (let e = 0; e < EVENTS; e++) {
      received = 0;
      roundMax = 0;
      const done = new Promise<void>((resolve) => (roundDone = resolve));
      counting = true;
      // Only this event is in flight: any id above the last one is it (a frame can beat the response).
      const id = Number(await publish(port, publishPath, publisherToken, () => (t0 = performance.now())));
      const timeout = sleep(15_000).then(() => 'timeout' as const);
      if ((await Promise.race([done, timeout])) === 'timeout') lost += SUBSCRIBERS - received;
      counting = false;
      floor = id;
      lastOfRound.push(roundMax);
      await sleep(100);
    }
    const sorted = samples.slice(0, sampleCount).sort();
    const p50 = percentile(sorted, 50);
    const p99 = percentile(sorted, 99);
    const lastP50 = percentile(
      lastOfRound.sort((a, b) => a - b),
      50,
    );
    log(`latency p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, last subscriber p50 ${lastP50.toFixed(1)} ms, lost ${lost}`);

    for (const sub of subs) sub.socket.destroy();
    for (let i = 0; i < 100; i++) {
      if ((await ask({ type: 'count' })).subscribers === 0) break;
      await sleep(100);
    }

    // 3a. one subscriber follows the API
    let one: Subscriber | null = null;
    for (let attempt = 0; !one; attempt++) {
      // Weft may still shed requests (503) while it catches up after closing 10,000 streams.
      one = await openSubscriber(port, tailPath, publisherToken, '127.0.0.1', () => {}).catch(async (err: unknown) => {
        if (attempt >= 20) throw err;
        retries++;
        await sleep(1000);
        return null;
      });
    }
    one.ids = [];
    const expected: string[] = [];
    const apiStart = performance.now();
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (performance.now() - apiStart < 3000) expected.push(await publish(port, publishPath, publisherToken));
      }),
    );
    const apiEnd = performance.now();
    const caughtUp = async (ids: number[], n: number) => {
      while (ids.length < n && performance.now() - apiEnd < 5000) await sleep(5);
    };
    await caughtUp(one.ids, expected.length);
    const apiLag = performance.now() - apiEnd;
    const apiRate = expected.length / ((apiEnd - apiStart) / 1000);
    const apiCheck = compareIds(one.ids, expected);
    const apiOk = apiCheck === 'ok';
    log(
      `API: ${expected.length} events at ${apiRate.toFixed(0)}/s, ${one.ids.length} received (${apiCheck}), lag ${apiLag.toFixed(0)} ms`,
    );

    // 3b. the ladder
    let maxRate = 0;
    const ladder: string[] = [];
    for (const rate of RATES) {
      one.ids = [];
      const ids = one.ids;
      const burst = await ask({ type: 'burst', rate, ms: STEP_MS });
      const end = performance.now();
      while (ids.length < burst.ids!.length && performance.now() - end < 5000) await sleep(5);
      const lag = performance.now() - end;
      const emitted = burst.ids!.length / (burst.ms! / 1000);
      const check = compareIds(ids, burst.ids!);
      const kept = check === 'ok' && lag < 1000;
      // The generator (a write per batch in the same process) may not reach the rate: then what it
      // reached is the figure, if the subscriber kept up with it, and the ladder ends.
      const generatorShort = emitted < 0.9 * rate;
      // A stream that left more than 1 MiB unsent for 3 s is dropped by the server (README "Live event stream").
      const dropped = !kept && (await ask({ type: 'count' })).subscribers === 0;
      const row =
        `${rate}/s offered: ${emitted.toFixed(0)}/s emitted, ${ids.length}/${burst.ids!.length} received (${check}), ` +
        `lag ${lag.toFixed(0)} ms${kept ? '' : ', not kept up'}${dropped ? ' (the server dropped the stream)' : ''}` +
        `${generatorShort ? ', generator short of the rate' : ''}`;
      ladder.push(row);
      log(row);
      if (kept) maxRate = Math.max(maxRate, emitted);
      if (!kept || generatorShort) break;
      await sleep(300);
    }
    one.socket.destroy();
    if (shed) log(`${shed} publish requests were shed (503) and sent again`);
    return {
      name: ready.name,
      connectS,
      retries,
      shed,
      idleRss: idle.rss!,
      rss: full.rss!,
      heapDelta: full.heap! - idle.heap!,
      p50,
      p99,
      lastP50,
      lost,
      apiRate,
      apiOk,
      apiLag,
      maxRate,
      ladder,
    };
  } finally {
    child.disconnect();
    await new Promise((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(null);
      }, 10_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve(null);
      });
    });
  }
}

function openFilesLimit(): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  return Number(line?.split(/\s+/)[3] ?? Infinity);
}

async function main(): Promise<void> {
  const limit = openFilesLimit();
  if (limit < SUBSCRIBERS + 500) {
    throw new Error(`ulimit -n is ${limit}: raise it above ${SUBSCRIBERS + 500} (ulimit -n 65536) or set BENCH_SSE_SUBSCRIBERS`);
  }
  const pgUrl = process.env.BENCH_DATABASE_URL || null;
  const databases = (process.env.BENCH_DATABASES ?? (pgUrl ? 'sqlite,postgres' : 'sqlite')).split(',');
  console.log(
    `node ${process.version}, ${cpus().length} cores, load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}; ${SUBSCRIBERS} subscribers on one scope over ${TOKENS} tokens, ${EVENTS} events`,
  );
  const results: Result[] = [await benchServer('raw', null)];
  for (const name of databases) results.push(await benchServer('weft', name === 'postgres' ? pgUrl : null));
  agent.destroy();
  const raw = results[0]!;
  const mb = (b: number) => (b / 2 ** 20).toFixed(0);
  console.log(`\nload average at the end ${loadavg()[0]!.toFixed(1)}\n`);
  console.log(
    '| server | open 10k streams | RSS idle → 10k | RSS per subscriber | JS heap per subscriber | latency p50 | p99 | last subscriber p50 | one subscriber follows (API) | max events/s followed (in-process generator) |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of results) {
    const per = (r.rss - r.idleRss) / SUBSCRIBERS;
    const rawPer = (raw.rss - raw.idleRss) / SUBSCRIBERS;
    console.log(
      `| ${r.name} | ${r.connectS.toFixed(1)} s (${(r.connectS / raw.connectS).toFixed(1)}x), ${r.retries} retried | ${mb(r.idleRss)} → ${mb(r.rss)} MB | ` +
        `${(per / 1024).toFixed(1)} KB (${(per / rawPer).toFixed(1)}x) | ${(r.heapDelta / SUBSCRIBERS / 1024).toFixed(1)} KB | ${r.p50.toFixed(0)} ms (${(r.p50 / raw.p50).toFixed(1)}x) | ` +
        `${r.p99.toFixed(0)} ms (${(r.p99 / raw.p99).toFixed(1)}x) | ${r.lastP50.toFixed(0)} ms | ${r.apiRate.toFixed(0)}/s ${r.apiOk ? 'no gap' : 'GAP'}, lag ${r.apiLag.toFixed(0)} ms | ` +
        `${r.maxRate.toFixed(0)} (${(r.maxRate / raw.maxRate).toFixed(2)}x) |`,
    );
  }
}

if (process.argv.includes('--serve-raw')) await serveRaw();
else if (process.argv.includes('--serve-weft')) await serveWeftChild();
else await main();
