/**
 * The issue list at scale (bench/README.md "Issue lists"; with BENCH_KIND=pulls the pull list,
 * "Pull lists"): Weft in a child process (SQLite, or
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
 *
 * BENCH_KIND=pulls seeds BENCH_THREADS pulls instead (a third closed or merged, one in ten a
 * draft, one in five with a review request, review counts 0-12 in `pulls.review_count` and the
 * words and mentions of a review on one pull in five in `pull_terms`: what the list reads) and
 * calls each filter of GET {repo}/pulls, the reference being `GET {repo}/pulls` with no filter
 * (the former list: every status, by number).
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
const KIND: 'threads' | 'pulls' = process.env.BENCH_KIND === 'pulls' ? 'pulls' : 'threads';

interface Served {
  port: number;
  seedSeconds: number;
}

type Db = import('kysely').Kysely<any>;

/** A thread's own fields (n % 3 = 0 closed, reply counts 0-12). */
const threadFields = (n: number, at: string, closer: string) => {
  const closed = n % 3 === 0;
  return {
    reply_seq: 0,
    removed_at: null,
    state: closed ? 'closed' : 'open',
    state_reason: closed ? 'completed' : null,
    closed_at: closed ? at : null,
    closed_by_uuid: closed ? closer : null,
    closed_by_pull_number: null,
    closed_by_commit_sha: null,
    locked: 0,
    reply_count: n % 13,
  };
};

/** A pull's own fields (n % 3 = 0: closed when even, merged when odd; drafts n % 10 = 0; review counts 0-12). */
const pullFields = (n: number, at: string, merger: string, repoUuid: string) => {
  const status = n % 3 !== 0 ? 'open' : n % 2 === 0 ? 'closed' : 'merged';
  return {
    source_branch: `b${n}`,
    target_branch: 'main',
    source_repo_uuid: repoUuid,
    status,
    closed_at: status === 'open' ? null : at,
    merged_at: status === 'merged' ? at : null,
    merged_by_uuid: status === 'merged' ? merger : null,
    merge_commit_sha: null,
    merge_strategy: status === 'merged' ? 'merge' : null,
    review_seq: n % 13,
    draft: n % 10 === 0 ? 1 : 0,
    review_count: n % 13,
  };
};

/**
 * BENCH_THREADS threads or pulls (BENCH_KIND) written straight in SQL, with their labels,
 * milestones, assignees and terms; pulls also get a review request on n % 5 = 0 (users u0-u24 in
 * turn: u25-u29 none) and, on the same pulls, the terms of a review ("lgtm" and a mention).
 */
async function seedItems(
  db: Db,
  repoUuid: string,
  users: Array<{ uuid: string }>,
  labels: string[],
  milestones: string[],
  threadTerms: (text: string) => string[],
) {
  const t0 = Date.UTC(2026, 0, 1);
  const pulls = KIND === 'pulls';
  for (let start = 0; start < THREADS; start += 1000) {
    const items = [];
    const itemLabels = [];
    const itemAssignees = [];
    const requests = [];
    const terms = [];
    for (let n = start + 1; n <= Math.min(THREADS, start + 1000); n++) {
      const uuid = randomUUID();
      const at = new Date(t0 + n * 60_000).toISOString();
      const title = `${WORDS[n % 10]} ${pulls ? 'change' : 'issue'} ${n}`;
      const body = n % 7 === 0 ? `cc @u${n % 30} about ${WORDS[(n * 3) % 10]}` : `${WORDS[(n * 3) % 10]} seen`;
      items.push({
        uuid,
        repo_uuid: repoUuid,
        number: n,
        title,
        body,
        author_uuid: users[n % 30]!.uuid,
        created_at: at,
        updated_at: new Date(t0 + ((n * 7919) % THREADS) * 60_000).toISOString(),
        milestone_uuid: n % 4 === 0 ? milestones[n % 20]! : null,
        ...(pulls ? pullFields(n, at, users[0]!.uuid, repoUuid) : threadFields(n, at, users[0]!.uuid)),
      });
      for (const k of new Set([n % 50, (n * 7) % 50]))
        itemLabels.push({ item_uuid: uuid, label_uuid: labels[k]!, created_at: at });
      if (n % 2 === 0) itemAssignees.push({ item_uuid: uuid, user_uuid: users[(n * 11) % 30]!.uuid, created_at: at });
      const texts: Array<[string, string]> = [[uuid, `${title}\n${body}`]];
      if (pulls && n % 5 === 0) {
        requests.push({ pull_uuid: uuid, user_uuid: users[(n / 5) % 25]!.uuid, created_at: at });
        texts.push([randomUUID(), `lgtm @u${(n * 3) % 30}`]);
      }
      for (const [source, text] of texts) {
        for (const term of threadTerms(text)) {
          terms.push({ repo_uuid: repoUuid, term, [pulls ? 'pull_uuid' : 'thread_uuid']: uuid, source_uuid: source });
        }
      }
    }
    await db.insertInto(KIND).values(items).execute();
    for (let i = 0; i < terms.length; i += 1000)
      await db
        .insertInto(pulls ? 'pull_terms' : 'thread_terms')
        .values(terms.slice(i, i + 1000))
        .execute();
    await db.insertInto('item_labels').values(itemLabels).execute();
    await db.insertInto('item_assignees').values(itemAssignees).execute();
    if (requests.length) await db.insertInto('review_requests').values(requests).execute();
  }
  await db
    .updateTable('repos')
    .set({ [pulls ? 'pull_seq' : 'thread_seq']: THREADS })
    .where('uuid', '=', repoUuid)
    .execute();
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
      await seedItems(db, repo.uuid, users, labels, milestones, threadTerms);
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

// keyset paging's deep page: the cursor (created_at, number) of thread (or pull) 50,000, half way down
const DEEP = Buffer.from(JSON.stringify([new Date(Date.UTC(2026, 0, 1) + 50_000 * 60_000).toISOString(), 50_000])).toString(
  'base64url',
);

const THREAD_TARGETS: Array<[string, string]> = [
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

const PULL_TARGETS: Array<[string, string]> = [
  ['GET {repo}', ''],
  ['pulls, no filter (every status, by number): the reference', '/pulls'],
  ['state=open (filtered: open, newest)', '/pulls?state=open'],
  ['state=all', '/pulls?state=all'],
  ['state=closed (closed or merged)', '/pulls?state=closed'],
  ['status=merged', '/pulls?status=merged&sort=created'],
  ['after=(pull 50,000) (deep page, keyset)', `/pulls?after=${DEEP}`],
  ['state=open&page=300 (deep page, offset)', '/pulls?state=open&page=300'],
  ['labels=l7', '/pulls?labels=l7'],
  ['labels=l7,l49 (both)', '/pulls?labels=l7,l49'],
  ['labels=l0,l1 (both; no pull has both)', '/pulls?labels=l0,l1'],
  ['assignee=u3 (matches nothing)', '/pulls?assignee=u3'],
  ['assignee=u4', '/pulls?assignee=u4'],
  ['assignee=none', '/pulls?assignee=none'],
  ['assignee=*', '/pulls?assignee=*'],
  ['milestone=5', '/pulls?milestone=5'],
  ['milestone=none', '/pulls?milestone=none'],
  ['milestone=*&sort=updated', '/pulls?milestone=*&sort=updated'],
  ['author=u1', '/pulls?author=u1'],
  ['mentioned=u7', '/pulls?mentioned=u7'],
  ['q=crash', '/pulls?q=crash'],
  ['q=crash login (both)', '/pulls?q=crash%20login'],
  ['q=lgtm (review words)', '/pulls?q=lgtm'],
  ['q=nosuchword (matches nothing)', '/pulls?q=nosuchword'],
  ['draft=true', '/pulls?draft=true'],
  ['draft=false', '/pulls?draft=false'],
  ['review_requested=u4', '/pulls?review_requested=u4'],
  ['review_requested=u27 (matches nothing)', '/pulls?review_requested=u27'],
  ['sort=updated', '/pulls?sort=updated'],
  ['sort=updated&state=all', '/pulls?sort=updated&state=all'],
  ['sort=updated&state=closed', '/pulls?sort=updated&state=closed'],
  ['sort=replies', '/pulls?sort=replies'],
  ['sort=replies&state=all&direction=asc', '/pulls?sort=replies&state=all&direction=asc'],
  ['sort=replies&state=closed', '/pulls?sort=replies&state=closed'],
  ['direction=asc', '/pulls?direction=asc'],
  ['labels=l7&assignee=u3&milestone=5', '/pulls?labels=l7&assignee=u3&milestone=5&state=all'],
  ['labels=l7&assignee=u4&sort=replies', '/pulls?labels=l7&assignee=u4&sort=replies'],
  ['q=crash&labels=l10&author=u10', '/pulls?q=crash&labels=l10&author=u10'],
  ['mentioned=u7&milestone=none&sort=updated', '/pulls?mentioned=u7&milestone=none&sort=updated'],
  ['draft=true&review_requested=u4', '/pulls?draft=true&review_requested=u4&state=all'],
  ['draft=false&q=crash&sort=replies', '/pulls?draft=false&q=crash&sort=replies'],
  ['status=merged&labels=l7&sort=updated', '/pulls?status=merged&labels=l7&sort=updated'],
  ['state=closed&draft=true&sort=updated', '/pulls?state=closed&draft=true&sort=updated'],
];

const TARGETS = KIND === 'pulls' ? PULL_TARGETS : THREAD_TARGETS;
const REFERENCE = KIND === 'pulls' ? '/pulls' : '/threads';

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
  const what = KIND === 'pulls' ? 'pull lists' : 'issue lists';
  console.log(
    `${what}: ${THREADS} ${KIND} in one repo, ${CALLS} calls each, one client (${db}; seeded in ${served.seedSeconds.toFixed(0)} s)`,
  );
  console.log('| request | p50 ms | p99 ms | server CPU ms/req | p99 / reference p99 | CPU / reference CPU |');
  console.log('|---|---:|---:|---:|---:|---:|');
  let refP99 = 0;
  let refCpu = 0;
  const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : null;
  for (const [name, path] of TARGETS) {
    if (only && path !== REFERENCE && !only.test(name)) continue;
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
    if (path === REFERENCE) [refP99, refCpu] = [p99, perCall];
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
