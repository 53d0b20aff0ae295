/**
 * The issue list at scale (bench/README.md "Issue lists"): Weft in a child process (SQLite, or
 * BENCH_DATABASE_URL for PostgreSQL) with one repo of BENCH_THREADS (100,000) threads, 50 labels,
 * 20 milestones and 30 assignees spread over them (rows written straight in SQL, the words and
 * mentions of table thread_terms with them). From this process, one client calls each list
 * filter of GET {repo}/threads BENCH_CALLS (200) times in a row, `GET {repo}/threads` with no filter
 * the same way in the same run as the reference (and `GET {repo}` for scale); p50 and p99 of each,
 * the server's CPU per request (the child's process.cpuUsage over the calls), and both as ratios
 * to the reference's.
 *
 *   npx tsx bench/tracker.ts                                           # SQLite
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/tracker.ts
 */
import { randomUUID } from 'node:crypto';
import { type ChildProcess, fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

const TOKEN = 'bench_admin_token_0123456789abcdefghijkl';
const THREADS = Number(process.env.BENCH_THREADS ?? 100_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const WORDS = ['crash', 'login', 'slow', 'render', 'token', 'export', 'import', 'memory', 'cache', 'layout'];

interface Served {
  port: number;
  seedSeconds: number;
}

async function serve(): Promise<void> {
  const { serveWeft } = await import('./serve-weft.ts');
  const { threadTerms } = await import('../src/db/terms.ts');
  const started = performance.now();
  const server = await serveWeft(
    TOKEN,
    async (app, _database, deps) => {
      const call = async (url: string, payload: unknown) => {
        const res = await app.inject({
          method: 'POST',
          url,
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          payload: JSON.stringify(payload),
        });
        if (res.statusCode !== 201) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
        return JSON.parse(res.body);
      };
      const users: Array<{ uuid: string; username: string }> = [];
      for (let i = 0; i < 30; i++) users.push(await call('/api/v1/users', { username: `u${i}`, email: `u${i}@example.com` }));
      await call('/api/v1/teams', { name: 'Bench', slug: 'bench' });
      for (const u of users) await call('/api/v1/teams/bench/members', { username: u.username, role: 'member' });
      const repo = await call('/api/v1/teams/bench/repos', { name: 'Hot', slug: 'hot' });
      const labels: string[] = [];
      for (let i = 0; i < 50; i++)
        labels.push((await call(`/api/v1/teams/bench/repos/hot/labels`, { name: `l${i}`, color: '0969da' })).uuid);
      const milestones: string[] = [];
      for (let i = 0; i < 20; i++)
        milestones.push((await call(`/api/v1/teams/bench/repos/hot/milestones`, { title: `m${i}` })).uuid);
      const db = deps.db;
      const t0 = Date.UTC(2026, 0, 1);
      for (let start = 0; start < THREADS; start += 1000) {
        const threads = [];
        const itemLabels = [];
        const itemAssignees = [];
        const terms = [];
        for (let n = start + 1; n <= Math.min(THREADS, start + 1000); n++) {
          const uuid = randomUUID();
          const at = new Date(t0 + n * 60_000).toISOString();
          const title = `${WORDS[n % 10]} issue ${n}`;
          const body = n % 7 === 0 ? `cc @u${n % 30} about ${WORDS[(n * 3) % 10]}` : `${WORDS[(n * 3) % 10]} seen`;
          const closed = n % 3 === 0;
          threads.push({
            uuid,
            repo_uuid: repo.uuid,
            number: n,
            title,
            body,
            author_uuid: users[n % 30]!.uuid,
            reply_seq: 0,
            created_at: at,
            updated_at: new Date(t0 + ((n * 7919) % THREADS) * 60_000).toISOString(),
            removed_at: null,
            state: closed ? 'closed' : 'open',
            state_reason: closed ? 'completed' : null,
            closed_at: closed ? at : null,
            closed_by_uuid: closed ? users[0]!.uuid : null,
            closed_by_pull_number: null,
            closed_by_commit_sha: null,
            locked: 0,
            milestone_uuid: n % 4 === 0 ? milestones[n % 20]! : null,
            reply_count: n % 13,
          });
          for (const k of new Set([n % 50, (n * 7) % 50]))
            itemLabels.push({ item_uuid: uuid, label_uuid: labels[k]!, created_at: at });
          if (n % 2 === 0) itemAssignees.push({ item_uuid: uuid, user_uuid: users[(n * 11) % 30]!.uuid, created_at: at });
          for (const term of threadTerms(`${title}\n${body}`)) {
            terms.push({ repo_uuid: repo.uuid, term, thread_uuid: uuid, source_uuid: uuid });
          }
        }
        await db.insertInto('threads').values(threads).execute();
        for (let i = 0; i < terms.length; i += 1000)
          await db
            .insertInto('thread_terms')
            .values(terms.slice(i, i + 1000))
            .execute();
        await db.insertInto('item_labels').values(itemLabels).execute();
        await db.insertInto('item_assignees').values(itemAssignees).execute();
      }
      await db.updateTable('repos').set({ thread_seq: THREADS }).where('uuid', '=', repo.uuid).execute();
      // as a settled database is after autovacuum: the visibility map set (index-only scans read
      // no heap) and the statistics current; SQLite's ANALYZE fills sqlite_stat1 for its planner
      const { sql } = await import('kysely');
      await sql.raw(deps.dialect === 'postgres' ? 'vacuum analyze' : 'analyze').execute(db);
    },
    { LOAD_SHED_EVENT_LOOP_DELAY_MS: '0' },
  );
  process.send!({ port: server.port, seedSeconds: (performance.now() - started) / 1000 } satisfies Served);
  process.on('message', async (m) => {
    if (m === 'cpu') {
      const u = process.cpuUsage();
      process.send!({ cpu: (u.user + u.system) / 1000 });
      return;
    }
    await server.stop();
    process.exit(0);
  });
}

// keyset paging's deep page: the cursor (created_at, number) of thread 50,000, half way down
const DEEP = Buffer.from(JSON.stringify([new Date(Date.UTC(2026, 0, 1) + 50_000 * 60_000).toISOString(), 50_000])).toString(
  'base64url',
);

const TARGETS: Array<[string, string]> = [
  ['GET {repo}', ''],
  ['threads, no filter (open, newest): the reference', '/threads'],
  ['state=all', '/threads?state=all'],
  ['state=closed', '/threads?state=closed'],
  ['after=(thread 50,000) (deep page, keyset)', `/threads?after=${DEEP}`],
  ['page=300 (deep page, offset)', '/threads?page=300'],
  ['labels=l7', '/threads?labels=l7'],
  ['labels=l7,l49 (both)', '/threads?labels=l7,l49'],
  ['labels=l0,l1 (both; no thread has both)', '/threads?labels=l0,l1'],
  ['assignee=u3 (matches nothing)', '/threads?assignee=u3'],
  ['assignee=u4', '/threads?assignee=u4'],
  ['assignee=none', '/threads?assignee=none'],
  ['assignee=*', '/threads?assignee=*'],
  ['milestone=5', '/threads?milestone=5'],
  ['milestone=none', '/threads?milestone=none'],
  ['milestone=*&sort=updated', '/threads?milestone=*&sort=updated'],
  ['author=u1', '/threads?author=u1'],
  ['mentioned=u7', '/threads?mentioned=u7'],
  ['q=crash', '/threads?q=crash'],
  ['q=crash login (both)', '/threads?q=crash%20login'],
  ['q=login crash (both; the larger set first)', '/threads?q=login%20crash'],
  ['q=nosuchword (matches nothing)', '/threads?q=nosuchword'],
  ['sort=updated', '/threads?sort=updated'],
  ['sort=updated&state=all', '/threads?sort=updated&state=all'],
  ['sort=replies', '/threads?sort=replies'],
  ['sort=replies&state=all&direction=asc', '/threads?sort=replies&state=all&direction=asc'],
  ['direction=asc', '/threads?direction=asc'],
  ['labels=l7&assignee=u3&milestone=5', '/threads?labels=l7&assignee=u3&milestone=5&state=all'],
  ['labels=l7&assignee=u4&sort=replies', '/threads?labels=l7&assignee=u4&sort=replies'],
  ['q=crash&labels=l10&author=u10', '/threads?q=crash&labels=l10&author=u10'],
  ['mentioned=u7&milestone=none&sort=updated', '/threads?mentioned=u7&milestone=none&sort=updated'],
];

async function main(): Promise<void> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve'], {
    execArgv: ['--import', 'tsx'],
    stdio: 'inherit',
  });
  const served = await new Promise<Served>((resolve) => child.once('message', (m) => resolve(m as Served)));
  const cpu = () =>
    new Promise<number>((resolve) => {
      child.once('message', (m) => resolve((m as { cpu: number }).cpu));
      child.send('cpu');
    });
  const base = `http://127.0.0.1:${served.port}/api/v1/teams/bench/repos/hot`;
  const dispatcher = new Agent({ connections: 1, pipelining: 1 });
  const get = async (path: string) => {
    const res = await request(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` }, dispatcher });
    await res.body.arrayBuffer();
    if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode}`);
  };
  const db = process.env.BENCH_DATABASE_URL ? 'PostgreSQL' : 'SQLite';
  console.log(
    `issue lists: ${THREADS} threads in one repo, ${CALLS} calls each, one client (${db}; seeded in ${served.seedSeconds.toFixed(0)} s)`,
  );
  console.log('| request | p50 ms | p99 ms | server CPU ms/req | p99 / reference p99 | CPU / reference CPU |');
  console.log('|---|---:|---:|---:|---:|---:|');
  let refP99 = 0;
  let refCpu = 0;
  const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : null;
  for (const [name, path] of TARGETS) {
    if (only && path !== '/threads' && !only.test(name)) continue;
    for (let i = 0; i < 20; i++) await get(path); // warm-up
    const times: number[] = [];
    const c0 = await cpu();
    for (let i = 0; i < CALLS; i++) {
      const t0 = performance.now();
      await get(path);
      times.push(performance.now() - t0);
    }
    const c1 = await cpu();
    times.sort((a, b) => a - b);
    const p50 = times[Math.floor(times.length * 0.5)]!;
    const p99 = times[Math.floor(times.length * 0.99)]!;
    const perCall = (c1 - c0) / CALLS;
    if (path === '/threads') [refP99, refCpu] = [p99, perCall];
    const ratio = (x: number, ref: number) => (ref ? (x / ref).toFixed(1) : '-');
    console.log(
      `| ${name} | ${p50.toFixed(1)} | ${p99.toFixed(1)} | ${perCall.toFixed(2)} | ${ratio(p99, refP99)} | ${ratio(perCall, refCpu)} |`,
    );
  }
  if (process.env.BENCH_HOLD) {
    // keep the seeded server (and its database) for EXPLAIN until this process is ended
    console.log(`holding the server on port ${served.port} (pid ${child.pid})`);
    return;
  }
  child.send('stop');
  await new Promise((resolve) => child.once('exit', resolve));
  await dispatcher.close();
}

if (process.argv[2] === '--serve') void serve();
else void main();
