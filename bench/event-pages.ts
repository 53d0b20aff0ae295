/**
 * Event page latency at a million events (issue "every page O(page)", README "Performance").
 * Seeds with bench/seed.ts (BENCH_EVENTS events, 30 % in one repo's scope), then requests each
 * page shape BENCH_SAMPLES times (after up to 20 unmeasured warm-up requests), one at a time through `app.inject` (server time, no socket), and
 * prints p50/p99 per shape: first page, a deep `before_id` page, an `after_id` page near the
 * oldest end, a `kind` absent from the scope, a rare kind, and an outsider's deep activity page.
 * Then `GET /user` p50 alone and while ten clients page deep `before_id` pages without pause.
 *
 *   npx tsx bench/event-pages.ts                                                      # SQLite
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/event-pages.ts
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import type { Database } from '../src/db/index.ts';
import { seed } from './seed.ts';
import { serveWeft } from './serve-weft.ts';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);
const token = `weft_${randomBytes(20).toString('hex')}`;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main(): Promise<void> {
  const started = performance.now();
  const server = await serveWeft(token, async (app: FastifyInstance, database: Database) => {
    const seeded = await seed(app, database, token, { events: EVENTS, repos: 10, pulls: 10 });
    // a handful of events of a rare kind in the scope, spread over its history (a declared kind
    // about its repo, so the member may see them: README "Event privacy")
    const rows = await database.db
      .selectFrom('event_scopes')
      .select('event_id')
      .where('scope', '=', seeded.eventScope)
      .orderBy('event_id')
      .execute();
    const rare = rows.filter((_, i) => i % Math.max(1, Math.floor(rows.length / 5)) === 0).map((r) => r.event_id);
    if (rare.length) {
      await database.db.updateTable('events').set({ kind: 'protection-created' }).where('id', 'in', rare).execute();
      await database.db.updateTable('event_scopes').set({ kind: 'protection-created' }).where('event_id', 'in', rare).execute();
    }
    // seeding held the event loop: let the load shedding's window pass before the first request
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const outsider = await app.inject({
      method: 'POST',
      url: '/api/v1/users',
      headers: { authorization: `Bearer ${token}` },
      payload: { username: 'bench-outsider', email: 'outsider@bench.test' },
    });
    const minted = await app.inject({
      method: 'POST',
      url: '/api/v1/api-tokens',
      headers: { authorization: `Bearer ${token}` },
      payload: { name: 'o', username: 'bench-outsider' },
    });
    if (outsider.statusCode !== 201 || minted.statusCode !== 201) throw new Error(`outsider: ${outsider.body} ${minted.body}`);
    return { seeded, app, outsiderToken: minted.json().token as string };
  });
  const { seeded, app, outsiderToken } = server.prepared;
  console.log(`${server.dialect}: seeded ${EVENTS} events in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const member = { authorization: `Bearer ${seeded.memberToken}` };
  const scope = encodeURIComponent(seeded.eventScope);
  const first = await app.inject({ url: `/api/v1/events?scope=${scope}&per_page=1&before_id=1`, headers: member });
  void first;
  const oldest = await app.inject({ url: `/api/v1/events?scope=${scope}&per_page=1&after_id=0`, headers: member });
  const oldestId = Number(oldest.json().results[0].id);
  const shapes: Array<[string, string, Record<string, string>]> = [
    ['first page', `/api/v1/events?scope=${scope}&per_page=30`, member],
    ['deep before_id', `/api/v1/events?scope=${scope}&per_page=30&before_id=${seeded.deepBeforeId}`, member],
    ['after_id near the oldest', `/api/v1/events?scope=${scope}&per_page=30&after_id=${oldestId + 1000}`, member],
    ['kind absent from the scope', `/api/v1/events?scope=${scope}&per_page=30&kind=pull-merged`, member],
    ['rare kind', `/api/v1/events?scope=${scope}&per_page=30&kind=protection-created`, member],
    ['member team activity page 1', `/api/v1/teams/bench/activity`, member],
    ['outsider deep activity', `/api/v1/users/bench-member/activity?page=1000000`, { authorization: `Bearer ${outsiderToken}` }],
  ];
  const time = async (url: string, headers: Record<string, string>) => {
    const t0 = performance.now();
    const res = await app.inject({ url, headers });
    const ms = performance.now() - t0;
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
    return ms;
  };
  console.log('| page | p50 | p99 |\n|---|---:|---:|');
  for (const [label, url, headers] of shapes) {
    const samples = label.startsWith('outsider') ? Math.min(SAMPLES, 5) : SAMPLES;
    // warm-up, not measured: the first requests of a shape compile its code paths and plans
    for (let i = 0; i < Math.min(samples, 20); i++) await time(url, headers);
    const ms: number[] = [];
    for (let i = 0; i < samples; i++) ms.push(await time(url, headers));
    ms.sort((a, b) => a - b);
    console.log(`| ${label} (${samples}) | ${pct(ms, 50).toFixed(2)} ms | ${pct(ms, 99).toFixed(2)} ms |`);
  }
  const userP50 = async () => {
    const ms: number[] = [];
    for (let i = 0; i < SAMPLES; i++) ms.push(await time('/api/v1/user', member));
    return pct(
      ms.sort((a, b) => a - b),
      50,
    );
  };
  const alone = await userP50();
  let stop = false;
  const deepUrl = shapes[1]![1];
  const pagers = Array.from({ length: 10 }, async () => {
    while (!stop) await time(deepUrl, member);
  });
  const loaded = await userP50();
  stop = true;
  await Promise.all(pagers);
  console.log(`GET /user p50 alone ${alone.toFixed(2)} ms, while ten clients page deep: ${loaded.toFixed(2)} ms`);
  await server.stop();
}

await main();
