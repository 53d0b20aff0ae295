/**
 * The inbox at depth (bench/README.md "Notifications"): one user with BENCH_NOTIFICATIONS
 * (100,000) notifications, each about its own thread (rows written straight in SQL), and
 * `GET /notifications` over HTTP: the first page, a deep page by `page` (an offset) and the same
 * depth by keyset (`after`, what `next` carries). Median and p99 of BENCH_ROUNDS (30) requests each.
 *
 *   npx tsx bench/notify-inbox.ts                                                        # SQLite
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/notify-inbox.ts   # PostgreSQL
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import pg from 'pg';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { createDeps, startBackground, stopBackground } from '../src/root.ts';
import { bootstrapAdmin } from '../src/users/service.ts';

const N = Number(process.env.BENCH_NOTIFICATIONS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);
const url = process.env.BENCH_DATABASE_URL ?? null;
const TOKEN = 'weft_bench_admin_token_0123456789abcdefghij';
const PER_PAGE = 30;

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'weft-bench-inbox-'));
  const schema = url ? `weft_b_${randomBytes(5).toString('hex')}` : undefined;
  const admin = async (statement: string) => {
    const c = new pg.Client({ connectionString: url! });
    await c.connect();
    await c.query(statement);
    await c.end();
  };
  if (schema) await admin(`create schema ${schema}`);
  const database = await openDatabase({ url, dataDir, schema });
  const config = {
    ...loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', LOAD_SHED_EVENT_LOOP_DELAY_MS: '0' }),
    bootstrapAdminToken: TOKEN,
    databaseUrl: url,
  };
  const deps = createDeps(config, database);
  await bootstrapAdmin(deps);
  const app = await buildApp(deps, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1`;
  await startBackground(deps);
  try {
    const get = async (path: string) => {
      const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`GET ${path}: ${res.status} ${text}`);
      return JSON.parse(text) as { results: Array<{ uuid: string }>; next: string | null };
    };
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status >= 300) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<{ uuid: string }>;
    };
    await post('/teams', { name: 'Bench', slug: 'bench' });
    const repo = await post('/teams/bench/repos', { name: 'Inbox', slug: 'inbox', visibility: 'public' });
    const me = await deps.db.selectFrom('users').select('uuid').where('username', '=', 'admin').executeTakeFirstOrThrow();
    // N threads and one notification about each, straight in SQL, updated_at increasing
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    for (let i = 0; i < N; i += 1000) {
      const threads = [];
      const notes = [];
      for (let k = i; k < Math.min(N, i + 1000); k++) {
        const at = new Date(t0 + k * 1000).toISOString();
        const uuid = randomUUID();
        threads.push({
          uuid,
          repo_uuid: repo.uuid,
          number: k + 1,
          title: `T${k}`,
          body: 'x',
          author_uuid: me.uuid,
          reply_seq: 0,
          created_at: at,
          updated_at: at,
          removed_at: null,
          state_reason: null,
          closed_at: null,
          closed_by_uuid: null,
          closed_by_pull_number: null,
          closed_by_commit_sha: null,
          milestone_uuid: null,
        });
        notes.push({
          uuid: randomUUID(),
          user_uuid: me.uuid,
          subject_kind: 'thread',
          subject_uuid: uuid,
          repo_uuid: repo.uuid,
          reason: 'subscribed',
          reasons: '["subscribed"]',
          unread: 1,
          done: 0,
          updated_at: at,
          last_event_id: 1,
          last_actor_uuid: null,
          last_actor_username: null,
          created_at: at,
        });
      }
      await deps.db.insertInto('threads').values(threads).execute();
      await deps.db.insertInto('notifications').values(notes).execute();
    }
    if (database.dialect === 'postgres') await sql`analyze`.execute(deps.db);

    const time = async (path: string) => {
      const out: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const s = performance.now();
        const page = await get(path);
        out.push(performance.now() - s);
        if (page.results.length !== PER_PAGE) throw new Error(`${path}: ${page.results.length} results`);
      }
      out.sort((a, b) => a - b);
      return { p50: out[Math.floor(ROUNDS / 2)]!, p99: out[Math.min(ROUNDS - 1, Math.floor((ROUNDS * 99) / 100))]! };
    };
    const deepPage = Math.floor(N / PER_PAGE) - 1;
    // the keyset cursor of the row before that page: walk `next` from a page just before it
    const before = await get(`/notifications?per_page=${PER_PAGE}&page=${deepPage - 1}`);
    const last = before.results.at(-1)!;
    const row = await deps.db
      .selectFrom('notifications')
      .select(['updated_at', 'uuid'])
      .where('uuid', '=', last.uuid)
      .executeTakeFirstOrThrow();
    const after = Buffer.from(JSON.stringify([row.updated_at, row.uuid])).toString('base64url');
    const first = await time(`/notifications?per_page=${PER_PAGE}`);
    const offset = await time(`/notifications?per_page=${PER_PAGE}&page=${deepPage}`);
    const keyset = await time(`/notifications?per_page=${PER_PAGE}&after=${after}`);
    const f = (x: number) => x.toFixed(1);
    console.log(
      `inbox (${database.dialect}): ${N} notifications of one user, ${PER_PAGE} a page, ${ROUNDS} requests each; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    console.log(`  first page:                 p50 ${f(first.p50)} ms, p99 ${f(first.p99)} ms`);
    console.log(`  page ${deepPage} by offset:        p50 ${f(offset.p50)} ms, p99 ${f(offset.p99)} ms`);
    console.log(`  the same depth by keyset:   p50 ${f(keyset.p50)} ms, p99 ${f(keyset.p99)} ms`);
  } finally {
    await stopBackground(deps);
    await app.close();
    await database.close();
    if (schema) await admin(`drop schema if exists ${schema} cascade`);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
