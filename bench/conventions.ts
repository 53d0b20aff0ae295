/**
 * What the HTTP conventions cost on an authenticated GET: GET /api/v1/users?per_page=30 (about
 * 6 KB of JSON, so over the 1 KiB compression threshold) sent plain, with gzip, with brotli, and
 * against a raw node:http server answering the same bytes, all in one run (servers in a child
 * process, autocannon here). Then the mean time of a request on one keep-alive connection, one
 * at a time: 200 against 304 with a matching If-None-Match. (autocannon reports 304 answers at a
 * small fraction of their real rate here, so the 304 comparison is sequential.)
 *
 *   npx tsx bench/conventions.ts          # BENCH_CONNECTIONS=10, BENCH_DURATION=3 s
 */
import { type ChildProcess, fork } from 'node:child_process';
import http, { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { serveWeft } from './serve-weft.ts';

const TOKEN = 'weft_bench_bootstrap_token_0123456789abc';
const PATH = '/api/v1/users?per_page=30';

async function serve(): Promise<void> {
  const weft = await serveWeft(TOKEN, async (app) => {
    for (let i = 0; i < 40; i++) {
      await app.inject({
        method: 'POST',
        url: '/api/v1/users',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: { username: `user${i}`, email: `user${i}@example.com`, display_name: `User number ${i}` },
      });
    }
    return (await app.inject({ method: 'GET', url: PATH, headers: { authorization: `Bearer ${TOKEN}` } })).body;
  });
  const body = weft.prepared;
  const raw = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(body));
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
  process.on('disconnect', () => void weft.stop().then(() => process.exit(0)));
  process.send!({ weft: weft.port, raw: (raw.address() as AddressInfo).port, bytes: Buffer.byteLength(body) });
}

async function main(): Promise<void> {
  const connections = Number(process.env.BENCH_CONNECTIONS ?? 10);
  const duration = Number(process.env.BENCH_DURATION ?? 3);
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ports = await new Promise<{ weft: number; raw: number; bytes: number }>((resolve) =>
    child.once('message', resolve as never),
  );
  const auth = { authorization: `Bearer ${TOKEN}` };
  const probe = await fetch(`http://127.0.0.1:${ports.weft}${PATH}`, { headers: auth });
  const etag = probe.headers.get('etag')!;
  const targets: Array<[string, number, Record<string, string>]> = [
    ['raw node:http, same body', ports.raw, {}],
    ['Weft, plain', ports.weft, { ...auth, 'accept-encoding': 'identity' }],
    ['Weft, gzip', ports.weft, { ...auth, 'accept-encoding': 'gzip' }],
    ['Weft, brotli', ports.weft, { ...auth, 'accept-encoding': 'br' }],
  ];
  console.log(
    `node ${process.version}, ${cpus().length} cores; ${connections} connections, ${duration} s each; body ${ports.bytes} B`,
  );
  let rawRps = 0;
  for (const [name, port, headers] of targets) {
    const url = `http://127.0.0.1:${port}${PATH}`;
    await autocannon({ url, connections, duration: 1, headers });
    const r = await autocannon({ url, connections, duration, headers });
    if (!rawRps) rawRps = r.requests.average;
    console.log(
      `| ${name} | ${r.requests.average.toFixed(0)} req/s | ${(r.requests.average / rawRps).toFixed(2)}x | ${(r.throughput.average / r.requests.average).toFixed(0)} B/response | non-2xx ${r.non2xx} |`,
    );
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = (headers: Record<string, string>) =>
    new Promise<number>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: ports.weft, path: PATH, agent, headers: { ...auth, ...headers } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        })
        .on('error', reject);
    });
  for (const [name, headers] of [
    ['200 (identity)', { 'accept-encoding': 'identity' }],
    ['304 (If-None-Match)', { 'if-none-match': etag }],
  ] as const) {
    const n = 300;
    for (let i = 0; i < 20; i++) await get(headers);
    const started = performance.now();
    let status = 0;
    for (let i = 0; i < n; i++) status = await get(headers);
    console.log(
      `| Weft, one at a time, ${name} | ${((performance.now() - started) / n).toFixed(2)} ms each | status ${status} |`,
    );
  }
  agent.destroy();
  child.disconnect();
}

if (process.argv.includes('--serve')) void serve();
else void main();
