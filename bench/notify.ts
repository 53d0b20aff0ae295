/**
 * Notification fan-out benchmark (bench/README.md "Notifications"): a public repo with
 * BENCH_WATCHERS (5,000) users watching it and a burst of BENCH_EVENTS (1,000) replies on
 * BENCH_THREADS (10) threads, written as fast as the write path takes them (or BENCH_BURST_RATE a
 * second). Reports the fan-out lag (from each event's publication after its commit to the
 * fan-out's commit of a cursor past it, as the fan-out's `stats.through` says: its notifications
 * and activity are in the store; no polling query of the bench's own) p50/p99/max, the notifications written, and `GET /user` latency over HTTP at a steady
 * BENCH_RATE (200) requests a second meanwhile, against the same probe on the idle server measured
 * first in the same run (the reference). Budget: lag p99 < 2 s, `GET /user` p99 within 2x idle.
 * Then the same burst again with the fan-out stopped, and `GET /user` probed while the started
 * fan-out works through that backlog alone (the writer, which shares this process, not running).
 * The server, the fan-out and the burst's writer share this process (so an event loop held by the
 * fan-out shows in the requests' latency); the `GET /user` prober is a child process (its HTTP
 * client's work is not the server's, as a user's would not be; until session 10 it shared this
 * process too), and all share the machine's cores. CPU: this process's and, on PostgreSQL, that of the
 * database backends of this run's connections (read from /proc), during the burst and per batch
 * the fan-out wrote; then one batch alone (a reply on each thread written while the fan-out is
 * stopped, then fanned out with nothing else running): its wall time and CPU, the steadier figure
 * on a shared machine.
 *
 * BENCH_MARKS=1 prints each phase's start and end (process.hrtime in µs, the clock of a
 * `node --cpu-prof` profile's timestamps), to cut a profile of this process by phase.
 *
 *   npx tsx bench/notify.ts                                                        # SQLite
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/notify.ts   # PostgreSQL
 */
import { fork } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants as perfConstants, monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import type { NotificationsBackground } from '../src/notifications/background.ts';
import { openDatabase } from '../src/db/index.ts';
import { createDeps, startBackground, stopBackground } from '../src/root.ts';
import { unreadCount } from '../src/notifications/service.ts';
import { createReply } from '../src/threads/service.ts';
import { bootstrapAdmin } from '../src/users/service.ts';
import type { Viewer } from '../src/viewer.ts';

const WATCHERS = Number(process.env.BENCH_WATCHERS ?? 5_000);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000);
const THREADS = Number(process.env.BENCH_THREADS ?? 10);
const RATE = Number(process.env.BENCH_RATE ?? 200);
/** The burst's replies a second (0: as fast as the write path takes them). */
const BURST_RATE = Number(process.env.BENCH_BURST_RATE ?? 0);
const IDLE_MS = Number(process.env.BENCH_IDLE_MS ?? 5_000);
/** Watchers reading their count once a second during the burst (their badge would, on each badge event). */
const ONLINE = Number(process.env.BENCH_ONLINE ?? 20);
/** Watchers whose first read after the burst is timed (each takes in the threads' activity). */
const OFFLINE = Number(process.env.BENCH_OFFLINE ?? 200);
const url = process.env.BENCH_DATABASE_URL ?? null;
const TOKEN = 'weft_bench_admin_token_0123456789abcdefghij';

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const now = () => performance.now();
/** Waits until the i-th write of a paced burst (BURST_RATE a second) begun at `start` is due. */
const paced = async (start: number, i: number) => {
  const wait = start + (i * 1000) / BURST_RATE - now();
  if (wait > 0) await sleep(wait);
};

/** CPU seconds of a process (user + system) from /proc, or null when it is gone. */
function procCpu(pid: number): number | null {
  return procCpuAt(`/proc/${pid}/stat`);
}

function procCpuAt(path: string): number | null {
  try {
    const stat = readFileSync(path, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/**
 * CPU seconds of this process's main thread (the server's event loop: /proc/self/task/<pid>), apart
 * from its other threads (the SQLite writer's worker, libuv's pool, V8's GC helpers).
 */
const mainThreadCpu = (): number => procCpuAt(`/proc/${process.pid}/task/${process.pid}/stat`) ?? NaN;

/**
 * The CPU used by the database backends of this run (PostgreSQL: the connections named
 * `weft:<schema>`, sampled every 200 ms; a backend that starts meanwhile counts from 0), or 0 on
 * SQLite, whose work is this process's.
 */
function backendCpu(list: () => Promise<number[]>): { stop: () => Promise<number> } {
  const base = new Map<number, number>();
  const last = new Map<number, number>();
  let first = true;
  let running = true;
  const sample = async () => {
    for (const pid of await list()) {
      const cpu = procCpu(pid);
      if (cpu === null) continue;
      if (!base.has(pid)) base.set(pid, first ? cpu : 0);
      last.set(pid, cpu);
    }
    first = false;
  };
  const loop = (async () => {
    while (running) {
      await sample();
      await sleep(200);
    }
    await sample();
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      let total = 0;
      for (const [pid, cpu] of last) total += cpu - base.get(pid)!;
      return total;
    },
  };
}

/**
 * The main thread's stalls over a phase: the event loop's delay (p99, max) and the garbage
 * collector's pauses (how many, their sum, the longest, and the same for the major ones).
 */
function stalls(): { stop(): string } {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const pauses: Array<{ ms: number; major: boolean }> = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries())
      pauses.push({
        ms: e.duration,
        major: (e as { detail?: { kind?: number } }).detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR,
      });
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      delay.disable();
      observer.disconnect();
      const ms = (ns: number) => (ns / 1e6).toFixed(1);
      const sum = (l: typeof pauses) => l.reduce((a, p) => a + p.ms, 0).toFixed(0);
      const max = (l: typeof pauses) => Math.max(0, ...l.map((p) => p.ms)).toFixed(1);
      const major = pauses.filter((p) => p.major);
      return `loop delay p99 ${ms(delay.percentile(99))} ms, max ${ms(delay.max)} ms; GC ${pauses.length} pauses, ${sum(pauses)} ms, longest ${max(pauses)} ms (major ${major.length}, ${sum(major)} ms, longest ${max(major)} ms)`;
    },
  };
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-bench-notify-'));
  const schema = url ? `weft_b_${randomBytes(5).toString('hex')}` : undefined;
  const admin = async (statement: string) => {
    const c = new pg.Client({ connectionString: url! });
    await c.connect();
    await c.query(statement);
    await c.end();
  };
  if (schema) await admin(`create schema ${schema}`);
  // WEFT_PG_HOT_CONNECTIONS=0 runs the compiled hot reads (GET /user's token lookup) on the main pool, as before session 12
  const config = {
    ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', WEFT_PG_HOT_CONNECTIONS: process.env.WEFT_PG_HOT_CONNECTIONS }),
    bootstrapAdminToken: TOKEN,
    databaseUrl: url,
  };
  const database = await openDatabase({ url, dataDir, schema, hotConnections: config.pgHotConnections });
  const deps = createDeps(config, database);
  await bootstrapAdmin(deps);
  const app = await buildApp(deps, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  await startBackground(deps);
  try {
    const call = async (method: string, path: string, body?: unknown): Promise<any> => {
      // the set-up's requests are retried while a loaded machine makes the server shed load (503)
      for (let i = 0; i < 20; i++) {
        const res = await once(method, path, body);
        if (res !== 503) return res;
        await sleep(1000);
      }
      throw new Error(`${method} ${path}: 503 twenty times`);
    };
    const once = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${base}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      if (res.status === 503) return 503;
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : null;
    };
    await call('POST', '/teams', { name: 'Bench', slug: 'bench' });
    const repo = await call('POST', '/teams/bench/repos', { name: 'Hot', slug: 'hot', visibility: 'public' });
    for (let i = 0; i < THREADS; i++) await call('POST', '/teams/bench/repos/hot/threads', { title: `T${i}`, body: 'x' });

    // the watchers: users rows and their `watching` level, straight in SQL
    const at = new Date().toISOString();
    const watcherViewers: Viewer[] = [];
    for (let i = 0; i < WATCHERS; i += 500) {
      const users = Array.from({ length: Math.min(500, WATCHERS - i) }, (_, k) => ({
        uuid: randomUUID(),
        username: `w${i + k}`,
        display_name: '',
        email: `w${i + k}@example.com`,
        is_staff: 0 as const,
        is_active: 1 as const,
        ping_mentions: 'everyone',
        password_hash: null,
        created_at: at,
        updated_at: at,
      }));
      await deps.db.insertInto('users').values(users).execute();
      for (const u of users) watcherViewers.push({ uuid: u.uuid, username: u.username, isStaff: false, tokenUuid: '' });
      await deps.db
        .insertInto('repo_subscriptions')
        .values(users.map((u) => ({ user_uuid: u.uuid, repo_uuid: repo.uuid as string, level: 'watching', created_at: at })))
        .execute();
    }
    // let the fan-out of the threads' creation finish first
    const cursor = async () =>
      Number(
        (await deps.db.selectFrom('notification_dispatch').select('last_event_id').where('id', '=', 1).executeTakeFirstOrThrow())
          .last_event_id,
      );
    const lastEvent = async () =>
      Number(
        (
          await deps.db
            .selectFrom('events')
            .select((eb) => eb.fn.max('id').as('m'))
            .executeTakeFirst()
        )?.m ?? 0,
      );
    const settledAt = await lastEvent();
    while ((await cursor()) < settledAt) await sleep(50);
    // a settled database, as a server's that has run a while: statistics taken and the set-up's
    // rows vacuumed, so that PostgreSQL's autovacuum of the 5,000 new users and subscriptions is
    // not part of the burst (BENCH_NO_VACUUM=1 leaves it out; no difference was shown either way:
    // bench/README.md "Session 10")
    if (schema && process.env.BENCH_NO_VACUUM !== '1') await sql`vacuum analyze`.execute(deps.db);

    // the reference: the idle server, after the prober's warm-up (the route's first calls compile
    // its schema and JIT the path)
    const prober = await startProber(base);
    if (process.env.BENCH_MARKS) console.log('MARK idle', process.hrtime.bigint() / 1000n);
    const idleStalls = stalls();
    const idle = await prober.during(() => sleep(IDLE_MS));
    const idleStallText = idleStalls.stop();
    if (process.env.BENCH_MARKS) console.log('MARK idleend', process.hrtime.bigint() / 1000n);

    // the burst, with the clients running until the fan-out has passed the last event
    const adminRow = await deps.db
      .selectFrom('users')
      .select(['uuid', 'username'])
      .where('username', '=', 'admin')
      .executeTakeFirstOrThrow();
    const viewer: Viewer = { uuid: adminRow.uuid, username: adminRow.username, isStaff: true, tokenUuid: '' };
    const ref = { ownerKind: 'team' as const, ownerName: 'bench', repoSlug: 'hot' };
    const committed: Array<{ id: number; at: number }> = [];
    const passed = new Map<number, number>();
    let done = false;
    const before = Number(
      (
        await deps.db
          .selectFrom('notifications')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirst()
      )?.n ?? 0,
    );
    const fanout = (deps.notifications as NotificationsBackground).fanout;
    // each burst reply's event as this instance publishes it (after its commit), and the fan-out's
    // cursor as of its last commit (in memory: the lag is timed without queries of the bench's own)
    let recording = false;
    const unsubscribe = deps.bus.subscribe((e) => {
      if (recording && e.kind === 'reply-created') committed.push({ id: Number(e.id), at: now() });
    });
    const watch = (async () => {
      while (!done) {
        const c = fanout.stats.through;
        const t = now();
        // an event published after the cursor passed it counts at this look
        for (const e of committed) if (e.id <= c && !passed.has(e.id)) passed.set(e.id, t);
        if (committed.length === EVENTS && passed.size === EVENTS) done = true;
        else await sleep(2);
      }
    })();
    const backends = async (): Promise<number[]> =>
      schema
        ? (
            await database.pool!.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [
              `weft:${schema}`,
            ])
          ).rows.map((r) => r.pid)
        : [];
    const stats0 = { ...fanout.stats };
    const pgCpu = backendCpu(backends);
    // PostgreSQL: how many queries waited for one of the pools' connections (sampled): the main
    // pool, and the hot reads' pool (the token lookups of `GET /user`, the unread counts)
    let poolWaitMax = 0;
    let hotWaitMax = 0;
    const poolTimer = setInterval(() => {
      poolWaitMax = Math.max(poolWaitMax, database.pool?.waitingCount ?? 0);
      hotWaitMax = Math.max(hotWaitMax, database.hotPool?.waitingCount ?? 0);
    }, 50);
    const busy = prober.start();
    const burstStalls = stalls();
    // online watchers: each reads its unread count once a second (its inbox takes in what is new)
    const onlineReads: number[] = [];
    const online = Promise.all(
      watcherViewers.slice(0, ONLINE).map(async (v, k) => {
        await sleep((1000 * k) / Math.max(1, ONLINE));
        while (!done) {
          const t0 = now();
          await unreadCount(deps, v);
          onlineReads.push(now() - t0);
          await sleep(1000);
        }
      }),
    );
    if (process.env.BENCH_MARKS) console.log('MARK burst', process.hrtime.bigint() / 1000n);
    const cpu0 = process.cpuUsage();
    const started = now();
    recording = true;
    for (let i = 0; i < EVENTS; i++) {
      if (BURST_RATE > 0) await paced(started, i);
      // always yield: on SQLite a write resolves without I/O, and the server must run meanwhile
      await new Promise((r) => setImmediate(r));
      await createReply(deps, viewer, ref, 1 + (i % THREADS), { body: `reply ${i}` });
    }
    const wrote = now() - started;
    if (process.env.BENCH_MARKS) console.log('MARK burstend', process.hrtime.bigint() / 1000n);
    const deadline = now() + 120_000;
    while (!done && now() < deadline) await sleep(50);
    done = true;
    await watch;
    recording = false;
    unsubscribe();
    const during = await busy.stop();
    const burstStallText = burstStalls.stop();
    await online;
    onlineReads.sort((a, b) => a - b);
    // offline watchers: their first read after the burst takes in every thread's activity
    const offlineReads: number[] = [];
    for (const v of watcherViewers.slice(ONLINE, ONLINE + OFFLINE)) {
      const t0 = now();
      const n = await unreadCount(deps, v);
      offlineReads.push(now() - t0);
      if (n !== THREADS) throw new Error(`watcher ${v.username}: ${n} unread, ${THREADS} expected`);
    }
    offlineReads.sort((a, b) => a - b);
    const total = now() - started;
    const cpu = process.cpuUsage(cpu0);
    const dbCpu = await pgCpu.stop();
    clearInterval(poolTimer);
    const batches = fanout.stats.batches - stats0.batches;
    const ranges = fanout.stats.ranges - stats0.ranges;
    const written = fanout.stats.notifications - stats0.notifications;
    const loadDuring = loadavg();

    // one batch alone: a reply on each thread while the fan-out is stopped, then fanned out
    await fanout.stop();
    for (let i = 0; i < THREADS; i++) await createReply(deps, viewer, ref, 1 + i, { body: `alone ${i}` });
    const aloneTop = await lastEvent();
    const aloneStats = { ...fanout.stats };
    const alonePg = backendCpu(backends);
    const aloneCpu0 = process.cpuUsage();
    const aloneMain0 = mainThreadCpu();
    const aloneStart = now();
    fanout.start();
    const aloneDeadline = now() + 120_000;
    while ((await cursor()) < aloneTop && now() < aloneDeadline) await sleep(5);
    const aloneMs = now() - aloneStart;
    const aloneCpu = process.cpuUsage(aloneCpu0);
    const aloneMain = mainThreadCpu() - aloneMain0;
    const aloneDb = await alonePg.stop();
    const lag = committed
      .filter((e) => passed.has(e.id))
      .map((e) => passed.get(e.id)! - e.at)
      .sort((a, b) => a - b);
    const after = Number(
      (
        await deps.db
          .selectFrom('notifications')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirst()
      )?.n ?? 0,
    );

    const f = (x: number) => x.toFixed(1);
    console.log(
      `notify (${database.dialect}): ${WATCHERS} watchers, ${EVENTS} replies on ${THREADS} threads${BURST_RATE ? ` at ${BURST_RATE} a second` : ''} written in ${(wrote / 1000).toFixed(1)} s, fanned out in ${(total / 1000).toFixed(1)} s`,
    );
    console.log(
      `  fan-out lag: p50 ${f(pct(lag, 50))} ms, p99 ${f(pct(lag, 99))} ms, max ${f(lag.at(-1) ?? NaN)} ms; ${EVENTS - lag.length} not passed; notifications ${before} -> ${after}`,
    );
    const cpuS = (cpu.user + cpu.system) / 1e6;
    const la = (l: number[]) => l.map((x) => x.toFixed(1)).join(' ');
    console.log(
      `  CPU during the burst: this process (server, fan-out, writer, clients) ${cpuS.toFixed(1)} s${schema ? `, PostgreSQL backends ${dbCpu.toFixed(1)} s` : ''} over ${(total / 1000).toFixed(1)} s; load average ${la(loadDuring)}`,
    );
    console.log(
      `  fan-out: ${batches} batches, ${ranges} ranges, ${written} notifications written; CPU per batch (all of the above / batches) ${(((cpuS + dbCpu) / Math.max(1, batches)) * 1000).toFixed(0)} ms${schema ? `; queries waiting for a pool connection: at most ${poolWaitMax} (main), ${hotWaitMax} (hot reads)` : ''}`,
    );
    const aloneS = (aloneCpu.user + aloneCpu.system) / 1e6;
    console.log(
      `  one batch alone (${THREADS} subjects x ${WATCHERS} watchers, ${fanout.stats.ranges - aloneStats.ranges} ranges, ${fanout.stats.notifications - aloneStats.notifications} notifications): ${aloneMs.toFixed(0)} ms, CPU ${(aloneS * 1000).toFixed(0)} ms this process (${(aloneMain * 1000).toFixed(0)} ms its main thread)${schema ? ` + ${(aloneDb * 1000).toFixed(0)} ms PostgreSQL backends` : ''}; load average ${la(loadavg())}`,
    );
    console.log(
      `  watchers' unread count (their inbox taking in the activity): ${ONLINE} online, once a second during the burst: p50 ${f(pct(onlineReads, 50))} ms, p99 ${f(pct(onlineReads, 99))} ms (${onlineReads.length} reads); ${OFFLINE} offline, first read after it (${THREADS} subjects each): p50 ${f(pct(offlineReads, 50))} ms, p99 ${f(pct(offlineReads, 99))} ms`,
    );
    const tail = (l: number[]) =>
      `p90 ${f(pct(l, 90))}, p95 ${f(pct(l, 95))}, p99.9 ${f(pct(l, 99.9))}, max ${f(l.at(-1) ?? NaN)}`;
    console.log(
      `  GET /user idle:   p50 ${f(pct(idle, 50))} ms, p99 ${f(pct(idle, 99))} ms (${idle.length} requests; ${tail(idle)})`,
    );
    console.log(
      `  GET /user burst:  p50 ${f(pct(during, 50))} ms, p99 ${f(pct(during, 99))} ms (${during.length} requests; ${tail(during)})`,
    );
    console.log(`  main thread idle:  ${idleStallText}`);
    console.log(`  main thread burst: ${burstStallText}`);
    console.log(`  ratio burst/idle: p50 ${f(pct(during, 50) / pct(idle, 50))}x, p99 ${f(pct(during, 99) / pct(idle, 99))}x`);

    // The fan-out's own cost to requests: above, the writer shares this process and its event loop
    // (with one watcher, writing the burst alone puts GET /user's p99 at several times idle). Here
    // the same burst is written with the fan-out stopped, then the fan-out is started on that
    // backlog and GET /user probed at the same rate until it has passed the last event: nothing
    // but the fan-out runs beside the requests.
    await deps.notifications.stop();
    // the writes' own share: GET /user probed while the same burst is written with no fan-out
    const writesProbe = prober.start();
    const writesStart = now();
    if (process.env.BENCH_MARKS) console.log('MARK writes', process.hrtime.bigint() / 1000n);
    for (let i = 0; i < EVENTS; i++) {
      if (BURST_RATE > 0) await paced(writesStart, i);
      await new Promise((r) => setImmediate(r));
      await createReply(deps, viewer, ref, 1 + (i % THREADS), { body: `backlog ${i}` });
    }
    const writesMs = now() - writesStart;
    if (process.env.BENCH_MARKS) console.log('MARK writesend', process.hrtime.bigint() / 1000n);
    const writesAlone = await writesProbe.stop();
    console.log(
      `  GET /user during the same ${EVENTS} replies written with the fan-out stopped (${(writesMs / 1000).toFixed(1)} s): p50 ${f(pct(writesAlone, 50))} ms, p99 ${f(pct(writesAlone, 99))} ms (${writesAlone.length} requests); ratio to idle p50 ${f(pct(writesAlone, 50) / pct(idle, 50))}x, p99 ${f(pct(writesAlone, 99) / pct(idle, 99))}x; the burst with the fan-out against it: p99 ${f(pct(during, 99) / pct(writesAlone, 99))}x`,
    );
    const backlogEnd = await lastEvent();
    const probe = prober.start();
    const cpuB = process.cpuUsage();
    const mainB = mainThreadCpu();
    const drainStart = now();
    await deps.notifications.start();
    while ((await cursor()) < backlogEnd) await sleep(5);
    const drainMs = now() - drainStart;
    const draining = await probe.stop();
    const cpuDrain = process.cpuUsage(cpuB);
    const mainDrain = mainThreadCpu() - mainB;
    console.log(
      `  backlog of ${EVENTS} replies fanned out in ${(drainMs / 1000).toFixed(1)} s (CPU ${((cpuDrain.user + cpuDrain.system) / 1e6).toFixed(1)} s, ${mainDrain.toFixed(1)} s of it the main thread's, probes included); load average ${la(loadavg())}`,
    );
    console.log(
      `  GET /user during that fan-out alone: p50 ${f(pct(draining, 50))} ms, p99 ${f(pct(draining, 99))} ms (${draining.length} requests)`,
    );
    console.log(
      `  ratio fan-out alone/idle: p50 ${f(pct(draining, 50) / pct(idle, 50))}x, p99 ${f(pct(draining, 99) / pct(idle, 99))}x`,
    );
    prober.close();
  } finally {
    await stopBackground(deps);
    await app.close();
    await database.close();
    if (schema) await admin(`drop schema if exists ${schema} cascade`);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * The `GET /user` prober: a child process (so its HTTP client's work is not the server's event
 * loop's, as a user's would not be) asking at a steady RATE requests a second, open loop: sent on a
 * schedule whatever the answers, each timed from when it was due, so a held event loop shows as
 * the delay it causes. A closed loop (each client asking again as soon as it is answered) measures
 * throughput instead: on PostgreSQL, where the fan-out waits on the database, four such clients
 * took 1,400 requests a second and most of the process's CPU. Before the first phase it warms the
 * route up (300 requests). `start` begins a phase; its `stop` resolves with the phase's sorted
 * latencies (ms).
 */
async function startProber(base: string) {
  const child = fork(fileURLToPath(import.meta.url), ['--probe'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, BENCH_PROBE_BASE: base },
  });
  const next = () => new Promise<any>((resolve) => child.once('message', resolve));
  await next(); // warmed up
  const start = () => {
    child.send('start');
    return { stop: async () => (child.send('stop'), (await next()) as number[]) };
  };
  return {
    start,
    during: async (work: () => Promise<unknown>) => {
      const phase = start();
      await work();
      return phase.stop();
    },
    close: () => child.disconnect(),
  };
}

/** The prober's side (`--probe`): node:http with keep-alive connections, no framework. */
async function probe(): Promise<void> {
  const url = new URL(process.env.BENCH_PROBE_BASE!);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const getUser = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = http.get(
        { host: url.hostname, port: url.port, path: '/api/v1/user', agent, headers: { authorization: `Bearer ${TOKEN}` } },
        (res) => {
          res.resume();
          res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`GET /user: ${res.statusCode}`))));
        },
      );
      req.on('error', reject);
    });
  /** A request on a keep-alive connection the server closed at that moment is asked again. */
  const getUserAgain = async (): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await getUser();
      } catch (err) {
        if (attempt === 4) throw err;
      }
    }
  };
  for (let i = 0; i < 300; i++) await getUserAgain();
  let running = false;
  process.on('message', async (m) => {
    if (m === 'stop') {
      running = false;
      return;
    }
    running = true;
    const out: number[] = [];
    const inflight = new Set<Promise<void>>();
    const interval = 1000 / RATE;
    const start = now();
    for (let i = 0; running; i++) {
      const due = start + i * interval;
      const wait = due - now();
      if (wait > 0) await sleep(wait);
      const p = getUserAgain().then(() => {
        out.push(now() - due);
      });
      inflight.add(p);
      void p.finally(() => inflight.delete(p));
    }
    await Promise.all(inflight);
    process.send!(out.sort((a, b) => a - b));
  });
  process.on('disconnect', () => process.exit(0));
  process.send!('ready');
}

if (process.argv[2] === '--probe') await probe();
else await main();
