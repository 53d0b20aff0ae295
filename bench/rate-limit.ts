/**
 * Cost of a stored rate-limit rule on an instrumented request, measured in one run:
 * POST /api/v1/api-tokens (api:create-token: a token row and an event in one transaction) with
 *   - no rule stored,
 *   - the rule stored but disabled (the hook still reads rule and settings: one query),
 *   - the rule on (that read, plus a counting transaction: advisory lock on PostgreSQL, count of
 *     the caller's requests in the window, insert, delete of aged-out ones).
 * Requests rotate over BENCH_CALLERS users (100), as real traffic comes from many callers. The
 * rule (100,000 per 60 s) never refuses; it is recreated before each "on" measurement, so every
 * measurement starts with empty counts.
 *
 *   npx tsx bench/rate-limit.ts
 *   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/rate-limit.ts
 *
 * Knobs: BENCH_CONNECTIONS (20), BENCH_DURATION seconds (5), BENCH_ROUNDS (2), BENCH_CALLERS (100).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { serveWeft } from './serve-weft.ts';

const TOKEN = 'weft_bench_bootstrap_token_0123456789abc';

async function serve(): Promise<void> {
  const weft = await serveWeft(TOKEN);
  const stop = async () => {
    await weft.stop();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('disconnect', () => void stop());
  process.send!({ port: weft.port, dialect: weft.dialect });
}

async function main(): Promise<void> {
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
  const duration = Number(process.env.BENCH_DURATION ?? 5);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 2);
  const callers = Number(process.env.BENCH_CALLERS ?? 100);
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const { port, dialect } = await new Promise<{ port: number; dialect: string }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { port: number; dialect: string }));
      child.once('exit', (code) => reject(new Error(`server process exited with ${code}`)));
    });
    const base = `http://127.0.0.1:${port}/api/v1`;
    const call = async (method: string, path: string, body?: unknown, token = TOKEN) => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : null;
    };
    const tokens: string[] = [];
    for (let i = 0; i < callers; i++) {
      await call('POST', '/users', { username: `bench${i}`, email: `bench${i}@example.com` });
      tokens.push((await call('POST', '/api-tokens', { name: 'bench', username: `bench${i}` })).token);
    }
    let next = 0;
    const run = async () => {
      const opts = {
        url: `${base}/api-tokens`,
        connections,
        requests: [
          {
            method: 'POST',
            path: '/api/v1/api-tokens',
            setupRequest: (req: Record<string, unknown>) => ({
              ...req,
              headers: { 'content-type': 'application/json', authorization: `Bearer ${tokens[next++ % tokens.length]}` },
              body: '{"name":"b"}',
            }),
          },
        ],
      };
      await autocannon({ ...opts, duration: 1 }); // warm-up
      const r = await autocannon({ ...opts, duration });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${r.non2xx} non-2xx responses, ${r.errors} errors`);
      return { rps: r.requests.average, p99: r.latency.p99 };
    };
    const rule = { scope: 'api:create-token', max_requests: 100_000, window_seconds: 60 };
    const modes: { name: string; setup: () => Promise<void> }[] = [
      { name: 'no rule', setup: async () => {} },
      {
        name: 'rule disabled',
        setup: async () => {
          await call('POST', '/rate-limits', { ...rule, is_enabled: false });
        },
      },
      {
        name: 'rule on',
        setup: async () => {
          await call('POST', '/rate-limits', { ...rule, is_enabled: true });
        },
      },
    ];
    const clear = async () => {
      const list = await call('GET', '/rate-limits');
      for (const r of list.results) await call('DELETE', `/rate-limits/${r.uuid}`);
    };
    console.log(
      `node ${process.version}, ${cpus().length} cores, ${dialect}; POST /api-tokens over ${callers} callers; ` +
        `${connections} connections, ${duration} s per measurement, ${rounds} round(s) interleaved, best kept\n`,
    );
    const best = new Map<string, { rps: number; p99: number }>();
    for (let round = 1; round <= rounds; round++) {
      for (const mode of modes) {
        await clear();
        await mode.setup();
        const row = await run();
        const prev = best.get(mode.name);
        if (!prev || row.rps > prev.rps) best.set(mode.name, row);
        console.log(`round ${round}  ${mode.name.padEnd(14)} ${row.rps.toFixed(0).padStart(6)} req/s   p99 ${row.p99} ms`);
      }
    }
    const ref = best.get('no rule')!;
    console.log('\nbest of the rounds, as a ratio to "no rule":');
    for (const mode of modes) {
      const row = best.get(mode.name)!;
      console.log(
        `${mode.name.padEnd(14)} ${row.rps.toFixed(0).padStart(6)} req/s   p99 ${row.p99} ms   ${(row.rps / ref.rps).toFixed(2)}x req/s`,
      );
    }
    await clear();
  } finally {
    child.kill('SIGTERM');
  }
}

if (process.argv.includes('--serve')) {
  await serve();
} else {
  await main();
}
