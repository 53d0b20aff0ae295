/**
 * Webhook delivery benchmark (bench/README.md "Webhooks"): BENCH_EVENTS (10,000) events, committed
 * at BENCH_RATE per second (500), to one hook whose receiver runs in this process on 127.0.0.1.
 * Reports the lag from each event's commit to its first attempt arriving at the receiver (p50,
 * p99, max), and checks that every event was delivered exactly once (counted by webhook-id). The
 * reference, measured in the same run with the same events: a bare `fetch` loop posting each
 * committed event's body to the same receiver, one at a time, as the events commit.
 *
 *   npx tsx bench/webhooks.ts                                                     # SQLite, one instance
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/webhooks.ts   # PostgreSQL, two instances
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { inTransaction } from '../src/core/transaction.ts';
import { type Database, openDatabase } from '../src/db/index.ts';
import type { Deps } from '../src/deps.ts';
import { createDeps, startBackground, stopBackground } from '../src/root.ts';
import { createHook } from '../src/hooks/service.ts';
import { updateSettings } from '../src/settings/service.ts';
import { bootstrapAdmin } from '../src/users/service.ts';
import type { Viewer } from '../src/viewer.ts';

const N = Number(process.env.BENCH_EVENTS ?? 10_000);
const RATE = Number(process.env.BENCH_RATE ?? 100);
const url = process.env.BENCH_DATABASE_URL ?? null;
const INSTANCES = url ? 2 : 1;
const TOKEN = 'weft_bench_admin_token_0123456789abcdefghij';

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The receiver: first arrival time by webhook-id (or by the reference's own id), and the count. */
function receiver() {
  const first = new Map<string, number>();
  let total = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? req.headers['x-ref-id']);
      const now = performance.timeOrigin + performance.now();
      total++;
      if (!first.has(`${req.headers['x-weft-event'] ?? 'ref'}:${id}`))
        first.set(`${req.headers['x-weft-event'] ?? 'ref'}:${id}`, now);
      res.writeHead(200).end('ok');
    });
  });
  return { server, first, total: () => total };
}

/** Emits N user-mention events at RATE per second across the instances; returns commit time by event id. */
async function produce(apps: Deps[], scope: string, onCommit?: (id: string, body: string) => void): Promise<Map<string, number>> {
  const committed = new Map<string, number>();
  const started = performance.now();
  await Promise.all(
    apps.map(async (deps, k) => {
      for (let i = k; i < N; i += apps.length) {
        const due = started + (i * 1000) / RATE;
        const wait = due - performance.now();
        // always yield: on SQLite a transaction resolves without I/O, and the receiver must run meanwhile
        if (wait > 0) await sleep(wait);
        else await new Promise((r) => setImmediate(r));
        const e = await inTransaction(deps, (tx) =>
          tx.emit({ kind: 'user-mention', scopes: [scope], actor: null, payload: { i } }),
        );
        committed.set(e.id, performance.timeOrigin + performance.now());
        onCommit?.(e.id, JSON.stringify({ hook_uuid: 'ref', event: e }));
      }
    }),
  );
  if (process.env.BENCH_TRACE) console.log(`  produced ${N} events in ${(performance.now() - started).toFixed(0)} ms`);
  return committed;
}

function lags(committed: Map<string, number>, arrived: (id: string) => number | undefined) {
  const values: number[] = [];
  let missing = 0;
  for (const [id, at] of committed) {
    const got = arrived(id);
    if (got === undefined) missing++;
    else values.push(got - at);
  }
  values.sort((a, b) => a - b);
  return { p50: pct(values, 50), p99: pct(values, 99), max: values.at(-1) ?? NaN, missing };
}

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-bench-hooks-'));
  const schema = url ? `weft_b_${randomBytes(5).toString('hex')}` : undefined;
  if (url) {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(`create schema ${schema}`);
    await c.end();
  }
  const rx = receiver();
  await new Promise<void>((resolve) => rx.server.listen(0, '127.0.0.1', resolve));
  const target = `http://127.0.0.1:${(rx.server.address() as AddressInfo).port}/hook`;
  const databases: Database[] = [];
  const apps: Deps[] = [];
  try {
    for (let i = 0; i < INSTANCES; i++) {
      const database = await openDatabase({ url, dataDir, schema });
      databases.push(database);
      const config = { ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' }), bootstrapAdminToken: TOKEN, databaseUrl: url };
      const deps = createDeps(config, database);
      if (i === 0) await bootstrapAdmin(deps);
      await startBackground(deps);
      apps.push(deps);
    }
    const admin = await apps[0]!.db
      .selectFrom('users')
      .select(['uuid', 'username'])
      .where('username', '=', 'admin')
      .executeTakeFirstOrThrow();
    const viewer: Viewer = { uuid: admin.uuid, username: admin.username, isStaff: true, tokenUuid: '' };
    const scope = `user:${admin.uuid}`;
    await updateSettings(apps[0]!, viewer, { webhook_allowed_hosts: ['127.0.0.1'] });

    // the reference: a bare fetch loop posting each committed event's body, one at a time
    const queue: Array<[string, string]> = [];
    let wake: (() => void) | null = null;
    let producing = true;
    const loop = (async () => {
      for (;;) {
        const next = queue.shift();
        if (!next) {
          if (!producing) return;
          await new Promise<void>((r) => {
            wake = r;
          });
          continue;
        }
        await (
          await fetch(target, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-ref-id': next[0] },
            body: next[1],
          })
        ).text();
      }
    })();
    const refCommitted = await produce(apps, scope, (id, body) => {
      queue.push([id, body]);
      (wake as (() => void) | null)?.();
      wake = null;
    });
    producing = false;
    (wake as (() => void) | null)?.();
    await loop;
    const ref = lags(refCommitted, (id) => rx.first.get(`ref:${id}`));
    const refTotal = rx.total();

    // Weft: one site hook taking user-mention events
    await createHook(apps[0]!, viewer, { kind: 'site' }, { url: target, events: ['user-mention'] });
    const started = performance.now();
    const committed = await produce(apps, scope);
    const deadline = performance.now() + 120_000;
    const arrived = () => [...rx.first.keys()].filter((k) => k.startsWith('user-mention:')).length;
    while (arrived() < committed.size && performance.now() < deadline) await sleep(100);
    if (arrived() < committed.size) console.log(`  gave up waiting: ${arrived()} of ${committed.size} arrived`);
    await sleep(1000);
    const weftTime = performance.now() - started;
    // exactly once: count by webhook-id (the delivery) and by event
    const deliveries = await apps[0]!.db.selectFrom('hook_deliveries').select(['uuid', 'event_id']).execute();
    const byEvent = new Map(deliveries.map((d) => [String(d.event_id), d.uuid]));
    const weft = lags(committed, (id) => rx.first.get(`user-mention:${byEvent.get(id)}`));
    const weftRequests = rx.total() - refTotal;
    const distinctIds = new Set([...rx.first.keys()].filter((k) => k.startsWith('user-mention:'))).size;

    const dialect = url ? `PostgreSQL, ${INSTANCES} instances` : 'SQLite, 1 instance';
    const f = (x: number) => x.toFixed(1);
    console.log(`webhooks: ${N} events at ${RATE}/s to one hook (${dialect})`);
    console.log(
      `  reference fetch loop: lag p50 ${f(ref.p50)} ms, p99 ${f(ref.p99)} ms, max ${f(ref.max)} ms, missing ${ref.missing}`,
    );
    console.log(
      `  weft hook:            lag p50 ${f(weft.p50)} ms, p99 ${f(weft.p99)} ms, max ${f(weft.max)} ms, missing ${weft.missing}`,
    );
    console.log(`  ratio weft/reference: p50 ${f(weft.p50 / ref.p50)}x, p99 ${f(weft.p99 / ref.p99)}x`);
    console.log(
      `  exactly once: ${weftRequests} requests, ${distinctIds} distinct webhook-ids, ${deliveries.length} deliveries for ${committed.size} events; ${(weftTime / 1000).toFixed(1)} s`,
    );
  } finally {
    for (const deps of apps) await stopBackground(deps);
    for (const d of databases) await d.close();
    rx.server.close();
    if (url) {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query(`drop schema if exists ${schema} cascade`);
      await c.end();
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
