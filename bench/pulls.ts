/**
 * Pull creation on PostgreSQL as a ratio to SQLite in the same run (README "Event order"), spread
 * over many repos so the per-repo number counter does not serialise them. `WEFT_EVENT_ORDER_LOCK=1`
 * restores the old global advisory lock for the "before" figure.
 *   TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/pulls.ts [seconds] [connections]
 */
import { seedRepo, seedTeam } from '../test/fixtures.ts';
import { type DialectName, listenTestApp, startApp } from './pulls-app.ts';

const seconds = Number(process.argv[2] ?? 5);
const connections = Number(process.argv[3] ?? 20);

async function run(dialect: DialectName): Promise<{ rps: number; p99: number }> {
  const t = await startApp(dialect);
  const base = await listenTestApp(t);
  const team = await seedTeam(t, 'bench');
  const repos: string[] = [];
  for (let i = 0; i < 50; i++) repos.push((await seedRepo(t, { kind: 'team', uuid: team.uuid }, `r${i}`)).slug);
  let n = 0;
  const latencies: number[] = [];
  const end = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (Date.now() < end) {
        const i = n++;
        const began = performance.now();
        const res = await fetch(`${base}/api/v1/teams/bench/repos/${repos[i % repos.length]}/pulls`, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.adminToken}`, 'content-type': 'application/json' },
          body: JSON.stringify({ title: `p${i}`, body: '', source_branch: `f/${i}`, target_branch: 'main' }),
        });
        await res.arrayBuffer();
        if (res.status !== 201) throw new Error(`${res.status}`);
        latencies.push(performance.now() - began);
      }
    }),
  );
  await t.close();
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / seconds, p99: latencies[Math.floor(latencies.length * 0.99)]! };
}

const sqlite = await run('sqlite');
const pg = await run('postgres');
console.log(
  JSON.stringify({
    lock: process.env.WEFT_EVENT_ORDER_LOCK === '1',
    sqlite,
    postgres: pg,
    ratio: +(pg.rps / sqlite.rps).toFixed(2),
  }),
);
