/**
 * The ~50 ms bound of Markdown rendering (issue 46 item 4; README "Markdown", bench/README.md
 * "Markdown bound"): no single request may hold the event loop for more than about 50 ms, even
 * with pathological bodies (`'*a'.repeat(32768)` took markdown-it 0.3-2.9 s on its own).
 *
 *   npx tsx bench/markdown-bound.ts                     # SQLite; BENCH_DATABASE_URL=postgres://… for PostgreSQL
 *
 * 1. The renderer alone: markdown-it unbounded on each pathological text (the time one request
 *    used to hold the loop), then `BoundedMarkdown.render` on the same texts, fresh (the caller's
 *    share: at most its 30 ms wait, then plain text until the worker's HTML is kept), and the
 *    slowest text still rendered in place (2,000 characters of the worst pattern).
 * 2. The server (built in this process, default settings, the load shedder on): the loop's delay
 *    measured inside it (`monitorEventLoopDelay`, 1 ms resolution) while 4 posters each create
 *    BENCH_MD_POSTS (6) threads with a different 64 KB pathological body and read each back,
 *    and another user calls `GET /user` every 10 ms; then the same run with ordinary bodies of
 *    the same size, as the control on this machine. Reported: the loop delay's max and p99, and
 *    `GET /user`: count, 503s, p99 and max latency.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { BoundedMarkdown } from '../src/markdown/bounded.ts';
import { createMarkdownRenderer } from '../src/markdown/render.ts';
import { serveWeft } from './serve-weft.ts';

const TOKEN = 'weft_bench_md_token_0123456789abcdefghijkl';
const POSTS = Number(process.env.BENCH_MD_POSTS ?? 6);
const PATTERNS = ['*a', '_a', '[a', '![a'];
const pathological = (pattern: string, salt: number) => `${salt} ${pattern.repeat(32768)}`.slice(0, 65_000);
const ordinary = (salt: number) =>
  `${salt} ${'A paragraph with *emphasis*, `code` and a [link](https://example.com).\n\n'.repeat(900)}`.slice(0, 65_000);
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const ms = (n: number) => `${n.toFixed(1)} ms`;

/** CPU milliseconds of this process (no worker runs during these calls): not stretched by a loaded machine. */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function rendererAlone(): Promise<void> {
  const raw = createMarkdownRenderer();
  raw.render('warm **up** [a](b)'); // the first call compiles markdown-it's rules
  console.log('1. the renderer alone (CPU time of the calling thread, then wall time of the caller)');
  for (const pattern of PATTERNS) {
    const text = pathological(pattern, 1);
    const started = cpuMs();
    raw.render(text);
    console.log(`   markdown-it, unbounded, ${JSON.stringify(pattern)} x 32768: ${ms(cpuMs() - started)} CPU`);
  }
  let inline = 0;
  for (const pattern of PATTERNS) {
    for (let salt = 0; salt < 5; salt++) {
      const text = `${salt} ${pattern.repeat(2000)}`.slice(0, 2000);
      const started = cpuMs();
      raw.render(text);
      inline = Math.max(inline, cpuMs() - started);
    }
  }
  console.log(`   slowest text rendered in place (2,000 characters of a pathological pattern, 20 texts): ${ms(inline)} CPU`);
  const md = new BoundedMarkdown();
  try {
    md.render('warm **up**');
    const calls: number[] = [];
    for (const pattern of PATTERNS) {
      const started = performance.now();
      md.render(pathological(pattern, 2));
      calls.push(performance.now() - started);
    }
    console.log(
      `   BoundedMarkdown.render of the four 64 KB texts, fresh: ${calls.map((c) => ms(c)).join(', ')} wall (the caller waits at most 30 ms, then answers plain text)`,
    );
  } finally {
    await md.close();
  }
}

async function serverRun(label: string, body: (salt: number) => string): Promise<void> {
  const server = await serveWeft(TOKEN);
  const base = `http://127.0.0.1:${server.port}`;
  const agent = new Agent({ connections: 16 });
  const call = async (method: string, path: string, token: string, json?: unknown) => {
    const res = await request(`${base}${path}`, {
      method: method as 'GET',
      dispatcher: agent,
      headers: { authorization: `Bearer ${token}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: json === undefined ? undefined : JSON.stringify(json),
    });
    const text = await res.body.text();
    return { status: res.statusCode, json: text && res.headers['content-type']?.includes('json') ? JSON.parse(text) : null };
  };
  try {
    // posters and a bystander, each a user of their own
    const tokens: string[] = [];
    for (const name of ['p1', 'p2', 'p3', 'p4', 'bystander']) {
      await call('POST', '/api/v1/users', TOKEN, {
        username: name,
        email: `${name}@example.com`,
        password: 'correct horse battery',
      });
      tokens.push((await call('POST', '/api/v1/api-tokens', TOKEN, { name: 'bench', username: name })).json.token as string);
    }
    await call('POST', '/api/v1/users/p1/repos', tokens[0]!, { name: 'md', slug: 'md', visibility: 'public' });
    const repo = '/api/v1/users/p1/repos/md';
    // warm the routes measured (their schemas compile lazily on first use: src/http/lazy-compilers.ts)
    for (const token of tokens.slice(0, 4)) {
      const warm = await call('POST', `${repo}/threads`, token, { title: 'warm', body: 'warm *up*' });
      await call('GET', `${repo}/threads/${warm.json.number}`, token);
    }
    const bystander = tokens[4]!;
    await call('GET', '/api/v1/user', bystander);

    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    let posting = true;
    const latencies: number[] = [];
    let shed = 0;
    const watcher = (async () => {
      while (posting) {
        const started = performance.now();
        const res = await call('GET', '/api/v1/user', bystander);
        latencies.push(performance.now() - started);
        if (res.status === 503) shed++;
        await sleep(10);
      }
    })();
    let salt = 0;
    const posted = { ok: 0, other: 0 };
    await Promise.all(
      tokens.slice(0, 4).map(async (token, p) => {
        for (let i = 0; i < POSTS; i++) {
          const text = label === 'pathological' ? pathological(PATTERNS[p]!, ++salt) : body(++salt);
          const res = await call('POST', `${repo}/threads`, token, { title: `T ${salt}`, body: text });
          if (res.status === 201) {
            posted.ok++;
            await call('GET', `${repo}/threads/${res.json.number}`, token);
          } else posted.other++;
        }
      }),
    );
    posting = false;
    await watcher;
    h.disable();
    console.log(
      `   ${label} bodies: ${posted.ok} threads posted and read back (${posted.other} refused); loop delay max ${ms(h.max / 1e6)}, p99 ${ms(h.percentile(99) / 1e6)}; GET /user x ${latencies.length}: ${shed} x 503, p99 ${ms(pct(latencies, 99))}, max ${ms(Math.max(...latencies))}`,
    );
  } finally {
    await agent.close();
    await server.stop();
  }
}

await rendererAlone();
console.log(`2. the server (${process.env.BENCH_DATABASE_URL ? 'PostgreSQL' : 'SQLite'}), 4 posters x ${POSTS} threads of 64 KB`);
await serverRun('pathological', (salt) => pathological('*a', salt));
await serverRun('ordinary', ordinary);
process.exit(0);
