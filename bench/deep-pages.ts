/**
 * Deep feed pages against a cheap read (bench/README.md "Deep feed pages"): Weft in a child process
 * (SQLite, or BENCH_DATABASE_URL), ten users with BENCH_DEEP_EVENTS (5,000) events each, half of
 * them hidden timer events that cost the reader a scope check. From this process, ten clients
 * page their own activity without pause — five a page past the depth cap (400), five the deepest
 * page allowed — while an eleventh calls `GET /user` BENCH_DEEP_CALLS (1,000) times, one at a
 * time. The reference is the same calls alone, in the same run, after a warm-up. The load comes
 * from this process, so the server's event loop serves requests only.
 *
 *   npx tsx bench/deep-pages.ts
 */
import { randomUUID } from 'node:crypto';
import { type ChildProcess, fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

const TOKEN = 'bench_admin_token_0123456789abcdefghijkl';
const EVENTS = Number(process.env.BENCH_DEEP_EVENTS ?? 5000);
const CALLS = Number(process.env.BENCH_DEEP_CALLS ?? 1000);
const PAGERS = 10;

interface Served {
  port: number;
  users: Array<{ token: string; username: string }>;
  maxDepth: number;
}

async function serve(): Promise<void> {
  const { serveWeft } = await import('./serve-weft.ts');
  const { inTransaction } = await import('../src/core/transaction.ts');
  const { actorOf } = await import('../src/events/service.ts');
  const { MAX_FEED_DEPTH } = await import('../src/activity/feed.ts');
  const server = await serveWeft(
    TOKEN,
    async (app, _db, deps) => {
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
      const users: Served['users'] = [];
      for (let i = 0; i <= PAGERS; i++) {
        const username = `deep${i}`;
        const created = await call('/api/v1/users', { username, email: `${username}@example.com` });
        const { token } = await call('/api/v1/api-tokens', { name: 'bench', username });
        users.push({ token, username });
        if (i === PAGERS) break; // the eleventh only reads GET /user
        const viewer = { uuid: created.uuid, username, isStaff: false } as import('../src/viewer.ts').Viewer;
        for (let k = 0; k < EVENTS; k += 1000) {
          await inTransaction(deps, async (tx) => {
            for (let j = k; j < Math.min(EVENTS, k + 1000); j++) {
              const timer = randomUUID();
              await tx.emit(
                j % 2 === 0
                  ? {
                      kind: 'user-updated',
                      scopes: [`user:${created.uuid}`],
                      actor: actorOf(viewer),
                      payload: { user_uuid: created.uuid, username, fields: ['display_name'] },
                    }
                  : {
                      kind: 'timer-created',
                      scopes: [`timer:${timer}`, `user:${created.uuid}`],
                      actor: actorOf(viewer),
                      payload: { timer_uuid: timer },
                    },
              );
            }
          });
        }
      }
      return users;
      // load shedding off, as in the test suite: a 503 would hide the wait this measures
    },
    { LOAD_SHED_EVENT_LOOP_DELAY_MS: '0' },
  );
  process.send!({ port: server.port, users: server.prepared, maxDepth: MAX_FEED_DEPTH } satisfies Served);
  process.on('message', async () => {
    await server.stop();
    process.exit(0);
  });
}

async function main(): Promise<void> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve'], {
    execArgv: ['--import', 'tsx'],
    stdio: 'inherit',
  });
  const served = await new Promise<Served>((resolve) => child.once('message', (m) => resolve(m as Served)));
  const base = `http://127.0.0.1:${served.port}`;
  const dispatcher = new Agent({ connections: PAGERS + 2, pipelining: 1 });
  const get = async (path: string, token: string) => {
    const res = await request(`${base}${path}`, { headers: { authorization: `Bearer ${token}` }, dispatcher });
    await res.body.arrayBuffer();
    return res.statusCode;
  };
  const reader = served.users[PAGERS]!;
  const measure = async () => {
    const times: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const t0 = performance.now();
      const status = await get('/api/v1/user', reader.token);
      if (status !== 200) throw new Error(`GET /user ${status}`);
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    return { p50: times[Math.floor(times.length * 0.5)]!, p99: times[Math.floor(times.length * 0.99)]! };
  };
  for (let i = 0; i < 100; i++) await get('/api/v1/user', reader.token); // warm-up
  const alone = await measure();
  let stop = false;
  const statuses = new Map<number, number>();
  const pagers = served.users.slice(0, PAGERS).map(async (u, i) => {
    const page = i % 2 === 0 ? Math.floor(served.maxDepth / 30) + 100 : Math.floor(served.maxDepth / 30);
    while (!stop) {
      const status = await get(`/api/v1/users/${u.username}/activity?page=${page}`, u.token);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const t0 = performance.now();
  const loaded = await measure();
  const seconds = (performance.now() - t0) / 1000;
  stop = true;
  await Promise.all(pagers);
  const ms = (x: number) => x.toFixed(1);
  const answers = [...statuses].map(([s, n]) => `${n} × ${s}`).join(', ');
  console.log(
    `deep pages: ${PAGERS} pagers, ${EVENTS} events each (${process.env.BENCH_DATABASE_URL ? 'PostgreSQL' : 'SQLite'})`,
  );
  console.log(`  GET /user alone:            p50 ${ms(alone.p50)} ms, p99 ${ms(alone.p99)} ms (${CALLS} calls)`);
  console.log(`  GET /user with ten pagers:  p50 ${ms(loaded.p50)} ms, p99 ${ms(loaded.p99)} ms (goal: p99 under 50 ms)`);
  console.log(`  pager answers meanwhile: ${answers} (${((statuses.get(200) ?? 0) / seconds).toFixed(0)} deep pages/s)`);
  child.send('stop');
  await new Promise((resolve) => child.once('exit', resolve));
  await dispatcher.close();
}

if (process.argv[2] === '--serve') void serve();
else void main();
