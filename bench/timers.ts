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
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type KyselyPlugin, sql } from 'kysely';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { createDeps } from '../src/root.ts';
import { insertDueTimers, insertUserRow } from '../test/timers-helpers.ts';

const N = Number(process.env.BENCH_TIMERS ?? 100_000);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_S ?? 60) * 1000;
const url = process.env.BENCH_DATABASE_URL ?? null;

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

/** A short label for a statement: its kind and first table, or the start of raw SQL. */
function statementKind(node: unknown): string {
  const n = node as { kind: string; from?: { froms: unknown[] }; table?: unknown; into?: unknown; sqlFragments?: string[] };
  if (n.kind === 'RawNode') return (n.sqlFragments?.[0] ?? '').trim().split(/\s+/).slice(0, 3).join(' ');
  const table = JSON.stringify(n.from?.froms[0] ?? n.into ?? n.table ?? '').match(/"name":"(\w+)"/)?.[1];
  return `${n.kind.replace('QueryNode', '')} ${table ?? ''}`;
}

/** Sums the time between a query being handed to Kysely and its result. */
class QueryTimer implements KyselyPlugin {
  total = 0;
  queries = 0;
  enabled = false;
  /** BENCH_TRACE: milliseconds and count per kind of statement. */
  readonly byKind = new Map<string, [number, number]>();
  private readonly started = new WeakMap<object, [number, string]>();
  transformQuery: KyselyPlugin['transformQuery'] = (args) => {
    if (this.enabled) this.started.set(args.queryId, [performance.now(), statementKind(args.node)]);
    return args.node;
  };
  transformResult: KyselyPlugin['transformResult'] = async (args) => {
    const t = this.started.get(args.queryId);
    if (t !== undefined) {
      const ms = performance.now() - t[0];
      this.total += ms;
      this.queries++;
      const k = this.byKind.get(t[1]) ?? [0, 0];
      this.byKind.set(t[1], [k[0] + ms, k[1] + 1]);
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
    const user = await insertUserRow(db, 'bench');

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
    await insertDueTimers(
      db,
      user,
      N,
      (j) => new Date(start + Math.floor((j * WINDOW_MS) / N)).toISOString(),
      (j) => `Reminder ${j} for @bench: **ship** it`,
    );
    // A bulk load is followed by the planner statistics autovacuum gathers within a minute;
    // without them PostgreSQL guesses a handful of due rows and sorts all of them per batch.
    if (url) await sql`analyze timers`.execute(db);
    const insertMs = performance.now() - insertStart;
    if (Date.now() > start - 1000) throw new Error(`inserting took ${Math.round(insertMs)} ms: raise the head start`);

    // Warm-up (not measured): 1,000 timers due now, so the first measured firings do not pay
    // for JIT compilation, statement preparation and the Markdown renderer's start-up.
    const warm = new Date(Date.now() - 1000).toISOString();
    await insertDueTimers(
      db,
      user,
      1000,
      () => warm,
      (i) => `Warm-up ${i} for @bench`,
    );
    deps.timers.start();
    while ((await deps.timers.runDue()) > 0);

    const lags: number[] = [];
    /** BENCH_TRACE: the worst lag of the timers due in each second of the window. */
    const worstBySecond: number[] = [];
    let lastFiredAt = 0;
    deps.bus.subscribe((e) => {
      if (e.kind === 'timer-fired' && String(e.payload.scheduled_for) !== warm) {
        lastFiredAt = Date.now();
        const due = Date.parse(String(e.payload.scheduled_for));
        lags.push(lastFiredAt - due);
        const s = Math.floor((due - start) / 1000);
        worstBySecond[s] = Math.max(worstBySecond[s] ?? 0, lastFiredAt - due);
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
      type ClaimAndFire = (claimed?: (n: number) => void) => Promise<number>;
      const sch = deps.timers as unknown as { claimAndFire: ClaimAndFire };
      const real = sch.claimAndFire.bind(sch);
      sch.claimAndFire = async (claimed) => {
        const t0 = performance.now();
        const n = await real(claimed);
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
    if (process.env.BENCH_TRACE) {
      console.error(
        'lag in firing order, every 5%:',
        Array.from({ length: 20 }, (_, i) => lags[Math.floor((i * lags.length) / 20)]).join(' '),
      );
      console.error('worst lag per second of the window:', worstBySecond.join(' '));
      console.error(
        'passes (start/ms/claimed), first 40 of',
        passes.length,
        passes
          .slice(0, 40)
          .map((p) => p.map(Math.round).join('/'))
          .join(' '),
      );
      const kinds = [...timing.byKind].sort((a, b) => b[1][0] - a[1][0]);
      console.error('db ms / count by statement:', kinds.map(([k, [ms, n]]) => `${k}: ${Math.round(ms)}/${n}`).join('; '));
    }
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
          fired_to_offered: Math.round((100 * lags.length) / Math.max(1, lastFiredAt - start) / (N / WINDOW_MS)) / 100,
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
