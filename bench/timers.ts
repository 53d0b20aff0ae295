/**
 * Timer firing benchmark (bench/README.md "Timers"): 100,000 active timers due across one
 * minute, fired by one scheduler with the real clock. Reports firing lag (publish after commit
 * minus the scheduled time) p50/p99/max, the database time the scheduler spent (every query,
 * timed by a Kysely plugin), and two references measured in the same run: the event-loop lag of
 * a 10 ms probe timer during the window, and one `select 1` round trip.
 *
 *   npx tsx bench/timers.ts                                                      # SQLite
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/timers.ts
 *
 * Knobs: BENCH_TIMERS (100000), BENCH_WINDOW_S (60). Bounded: gives up 60 s after the window.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type KyselyPlugin, sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { createDeps } from '../src/deps.ts';

const N = Number(process.env.BENCH_TIMERS ?? 100_000);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_S ?? 60) * 1000;
const url = process.env.BENCH_DATABASE_URL ?? null;

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

/** Sums the time between a query being handed to Kysely and its result. */
class QueryTimer implements KyselyPlugin {
  total = 0;
  queries = 0;
  enabled = false;
  private readonly started = new WeakMap<object, number>();
  transformQuery: KyselyPlugin['transformQuery'] = (args) => {
    if (this.enabled) this.started.set(args.queryId, performance.now());
    return args.node;
  };
  transformResult: KyselyPlugin['transformResult'] = async (args) => {
    const t0 = this.started.get(args.queryId);
    if (t0 !== undefined) {
      this.total += performance.now() - t0;
      this.queries++;
    }
    return args.result;
  };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-bench-timers-'));
  let schema: string | undefined;
  if (url) {
    schema = `weft_bench_${randomBytes(4).toString('hex')}`;
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(`create schema ${schema}`);
    await c.end();
  }
  const database = await openDatabase({ url, dataDir, schema });
  const timing = new QueryTimer();
  const db = database.db.withPlugin(timing);
  const deps = createDeps(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }), { ...database, db });
  try {
    const user = randomUUID();
    const now0 = new Date().toISOString();
    await db
      .insertInto('users')
      .values({
        uuid: user,
        username: 'bench',
        display_name: 'bench',
        email: 'bench@example.com',
        is_staff: 0,
        is_active: 1,
        ping_mentions: 'everyone',
        password_hash: null,
        created_at: now0,
        updated_at: now0,
      })
      .execute();

    // Reference 1: one `select 1` round trip (median of 200).
    const rt: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      await sql`select 1`.execute(db);
      rt.push(performance.now() - t0);
    }
    rt.sort((a, b) => a - b);
    const roundTrip = pct(rt, 50);

    const insertStart = performance.now();
    const start = Date.now() + 10_000 + N * (url ? 0.25 : 0.08); // leave time for the inserts
    const CHUNK = 500;
    for (let i = 0; i < N; i += CHUNK) {
      const rows = [];
      for (let j = i; j < Math.min(N, i + CHUNK); j++) {
        const due = new Date(start + Math.floor((j * WINDOW_MS) / N)).toISOString();
        rows.push({
          uuid: randomUUID(),
          scope: 'user',
          owner_uuid: user,
          created_by_uuid: user,
          message: `Reminder ${j} for @bench: **ship** it`,
          schedule_kind: j % 2 ? 'once' : 'interval',
          run_at: due,
          every_seconds: j % 2 ? null : 3600,
          time_of_day: '00:00',
          days_of_week: 'Mon',
          timezone: 'UTC',
          status: 'active',
          next_run_at: due,
          last_run_at: null,
          run_count: 0,
          created_at: now0,
          updated_at: now0,
        });
      }
      await db.insertInto('timers').values(rows).execute();
    }
    // A bulk load is followed by the planner statistics autovacuum gathers within a minute;
    // without them PostgreSQL guesses a handful of due rows and sorts all of them per batch.
    if (url) await sql`analyze timers`.execute(db);
    const insertMs = performance.now() - insertStart;
    if (Date.now() > start - 1000) throw new Error(`inserting took ${Math.round(insertMs)} ms: raise the head start`);

    // Warm-up (not measured): 1,000 timers due now, so the first measured firings do not pay
    // for JIT compilation, statement preparation and the Markdown renderer's start-up.
    const warm = new Date(Date.now() - 1000).toISOString();
    for (let i = 0; i < 1000; i += CHUNK) {
      await db
        .insertInto('timers')
        .values(
          Array.from({ length: CHUNK }, (_, k) => ({
            uuid: randomUUID(),
            scope: 'user',
            owner_uuid: user,
            created_by_uuid: user,
            message: `Warm-up ${i + k} for @bench`,
            schedule_kind: 'once',
            run_at: warm,
            every_seconds: null,
            time_of_day: '00:00',
            days_of_week: 'Mon',
            timezone: 'UTC',
            status: 'active',
            next_run_at: warm,
            last_run_at: null,
            run_count: 0,
            created_at: now0,
            updated_at: now0,
          })),
        )
        .execute();
    }
    deps.timers.start();
    while ((await deps.timers.runDue()) > 0);

    const lags: number[] = [];
    let lastFiredAt = 0;
    deps.bus.subscribe((e) => {
      if (e.kind === 'timer-fired' && String(e.payload.scheduled_for) !== warm) {
        lastFiredAt = Date.now();
        lags.push(lastFiredAt - Date.parse(String(e.payload.scheduled_for)));
      }
    });
    // Reference 2: how late a 10 ms probe timer runs while the scheduler works.
    const probe: number[] = [];
    let expected = 0;
    const tick = () => {
      const t = performance.now();
      if (expected) probe.push(Math.max(0, t - expected));
      expected = t + 10;
      probeTimer = setTimeout(tick, 10);
    };
    let probeTimer = setTimeout(tick, 10);

    await new Promise((r) => setTimeout(r, start - Date.now() - 200));
    timing.enabled = true;
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    const passes: number[][] = [];
    if (process.env.BENCH_TRACE) {
      const sch = deps.timers as unknown as { claimAndFire: () => Promise<number> };
      const real = sch.claimAndFire.bind(sch);
      sch.claimAndFire = async () => {
        const t0 = performance.now();
        const n = await real();
        passes.push([t0 - wall0, performance.now() - t0, n]);
        return n;
      };
    }
    const deadline = start + WINDOW_MS + 60_000;
    while (lags.length < N && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const wall = performance.now() - wall0;
    const cpu = process.cpuUsage(cpu0);
    await deps.timers.stop();
    clearTimeout(probeTimer);
    timing.enabled = false;

    const fired = Number(
      (
        await db
          .selectFrom('events')
          .select((eb) => eb.fn.countAll().as('n'))
          .where('kind', '=', 'timer-fired')
          .executeTakeFirst()
      )?.n,
    );
    if (process.env.BENCH_TRACE)
      console.error(Array.from({ length: 20 }, (_, i) => lags[Math.floor((i * lags.length) / 20)]).join(' '));
    if (process.env.BENCH_TRACE)
      console.error(
        passes.length,
        passes
          .slice(0, 40)
          .map((p) => p.map(Math.round).join('/'))
          .join(' '),
      );
    lags.sort((a, b) => a - b);
    probe.sort((a, b) => a - b);
    const r = (n: number) => Math.round(n * 10) / 10;
    console.log(
      JSON.stringify(
        {
          dialect: database.dialect,
          timers: N,
          window_s: WINDOW_MS / 1000,
          insert_ms: Math.round(insertMs),
          fired_events: fired - 1000,
          published: lags.length,
          // Offered rate over fired rate: 1.0 keeps up (the last timer fires when the window ends).
          fired_to_offered: r(lags.length / Math.max(1, lastFiredAt - start) / (N / WINDOW_MS)),
          lag_ms: { p50: lags.length ? pct(lags, 50) : null, p99: lags.length ? pct(lags, 99) : null, max: lags.at(-1) ?? null },
          probe_lag_ms: { p50: r(pct(probe, 50)), p99: r(pct(probe, 99)) },
          select1_ms: Math.round(roundTrip * 1000) / 1000,
          db_ms: Math.round(timing.total),
          db_queries: timing.queries,
          db_ms_per_firing: r(timing.total / Math.max(1, fired - 1000)),
          wall_ms: Math.round(wall),
          cpu_ms: Math.round((cpu.user + cpu.system) / 1000),
        },
        null,
        1,
      ),
    );
  } finally {
    await database.close();
    if (schema && url) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
