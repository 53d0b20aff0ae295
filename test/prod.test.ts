import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { ROOT } from './foundation-helpers.ts';
import { DIALECTS, type TestApp, freshStore, isErrorBody, startApp } from './helpers.ts';
import { freePort, spawnWeft } from './server-process.ts';

// Production conventions (README "Deploying"): ETag/304, Cache-Control, 405 + Allow, CORS,
// compression, metrics, Link rel="last", the CLI's --version and a graceful shutdown under load.

for (const dialect of DIALECTS) {
  describe(`HTTP conventions for integrators (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(dialect, { config: { corsOrigins: ['https://app.example'], metrics: 'api', compressThreshold: 1024 } });
    });
    after(() => t.close());

    it('authenticated JSON reads carry a weak ETag and Cache-Control; If-None-Match gives 304 with no body', async () => {
      const first = await t.req('GET', '/api/v1/user', { token: t.adminToken });
      assert.equal(first.status, 200);
      const etag = String(first.headers.etag);
      assert.match(etag, /^W\/"[\w-]{10,}"$/);
      assert.equal(first.headers['cache-control'], 'private, no-cache');
      assert.match(String(first.headers.vary), /Authorization/);
      for (const sent of [etag, etag.slice(2), `"other", ${etag}`, '*']) {
        const again = await t.req('GET', '/api/v1/user', { token: t.adminToken, headers: { 'if-none-match': sent } });
        assert.equal(again.status, 304, sent);
        assert.equal(again.text, '');
        assert.equal(again.headers.etag, etag);
      }
      const stale = await t.req('GET', '/api/v1/user', { token: t.adminToken, headers: { 'if-none-match': 'W/"stale"' } });
      assert.equal(stale.status, 200);
      // another caller's representation differs, so does its tag
      const bob = await t.user('etagbob');
      const other = await t.req('GET', '/api/v1/user', { token: bob.token, headers: { 'if-none-match': etag } });
      assert.equal(other.status, 200);
      assert.notEqual(other.headers.etag, etag);
      // a change changes the tag
      await t.req('PUT', '/api/v1/users/etagbob', { token: bob.token, body: { display_name: 'Bob' } });
      const changed = await t.req('GET', '/api/v1/user', {
        token: bob.token,
        headers: { 'if-none-match': String(other.headers.etag) },
      });
      assert.equal(changed.status, 200);
      // writes, errors and anonymous reads get no ETag
      const created = await t.req('POST', '/api/v1/api-tokens', { token: bob.token, body: { name: 'x' } });
      assert.equal(created.status, 201);
      assert.equal(created.headers.etag, undefined);
      const missing = await t.req('GET', '/api/v1/users/nobody-here', { token: t.adminToken });
      assert.equal(missing.status, 404);
      assert.equal(missing.headers.etag, undefined);
      const anon = await t.req('GET', '/api/v1/check-username?username=zed', { token: null });
      assert.equal(anon.status, 200);
      assert.equal(anon.headers.etag, undefined);
    });

    it('a known path with a wrong method is 405 with Allow; an unknown path stays 404', async () => {
      for (const [method, url, allow] of [
        ['DELETE', '/api/v1/user', 'GET, HEAD'],
        ['PATCH', '/api/v1/api-tokens', 'GET, HEAD, POST'],
        ['POST', '/api/v1/teams/some-team/members/alice', 'DELETE, GET, HEAD, PUT'],
      ] as const) {
        const res = await t.req(method, url, { token: t.adminToken });
        assert.equal(res.status, 405, `${method} ${url}`);
        assert.ok(isErrorBody(res.body));
        assert.equal(res.body.error, 'method_not_allowed');
        // OPTIONS is answered too (CORS preflight) when CORS is on
        assert.equal(String(res.headers.allow).replace(', OPTIONS', ''), allow);
      }
      const unknown = await t.req('DELETE', '/api/v1/nothing/here', { token: t.adminToken });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.headers.allow, undefined);
    });

    it('CORS: a preflight from an allowed origin is 204 with the allowed methods and headers; others get no grant', async () => {
      const preflight = await t.req('OPTIONS', '/api/v1/user', {
        token: null,
        headers: {
          origin: 'https://app.example',
          'access-control-request-method': 'GET',
          'access-control-request-headers': 'authorization',
        },
      });
      assert.equal(preflight.status, 204);
      assert.equal(preflight.headers['access-control-allow-origin'], 'https://app.example');
      assert.match(String(preflight.headers['access-control-allow-methods']), /DELETE/);
      assert.match(String(preflight.headers['access-control-allow-headers']), /Authorization/);
      assert.equal(preflight.headers['access-control-allow-credentials'], undefined);
      const simple = await t.req('GET', '/api/v1/user', { token: t.adminToken, headers: { origin: 'https://app.example' } });
      assert.equal(simple.headers['access-control-allow-origin'], 'https://app.example');
      assert.match(String(simple.headers['access-control-expose-headers']), /Link.*ETag.*X-Request-Id/);
      const foreign = await t.req('GET', '/api/v1/user', { token: t.adminToken, headers: { origin: 'https://evil.example' } });
      assert.equal(foreign.headers['access-control-allow-origin'], undefined);
    });

    it('CORS is off by default: no CORS headers, a preflight is 405', async () => {
      const plain = await startApp(dialect);
      try {
        const res = await plain.req('OPTIONS', '/api/v1/user', {
          token: null,
          headers: { origin: 'https://app.example', 'access-control-request-method': 'GET' },
        });
        assert.equal(res.status, 405);
        assert.equal(res.headers['access-control-allow-origin'], undefined);
        const metrics = await plain.req('GET', '/metrics', { token: null });
        assert.equal(metrics.status, 404, 'metrics are off by default');
      } finally {
        await plain.close();
      }
    });

    it('compresses JSON over the threshold with brotli or gzip; small bodies stay plain', async () => {
      for (const [encoding, decode] of [
        ['br', brotliDecompressSync],
        ['gzip', gunzipSync],
      ] as const) {
        const res = await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json', headers: { 'accept-encoding': encoding } });
        assert.equal(res.statusCode, 200);
        assert.equal(res.headers['content-encoding'], encoding);
        assert.match(String(res.headers.vary), /accept-encoding/i);
        const doc = JSON.parse(decode(res.rawPayload).toString('utf8'));
        assert.equal(doc.openapi, '3.1.0');
        assert.ok(res.rawPayload.length * 4 < Buffer.byteLength(JSON.stringify(doc)), 'at least 4x smaller');
      }
      const small = await t.app.inject({
        method: 'GET',
        url: '/api/v1/user',
        headers: { 'accept-encoding': 'gzip', authorization: `Bearer ${t.adminToken}` },
      });
      assert.equal(small.headers['content-encoding'], undefined);
      const identity = await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
      assert.equal(identity.headers['content-encoding'], undefined);
    });

    it('Link carries rel="last" when this page is the last one', async () => {
      const res = await t.req('GET', '/api/v1/users?per_page=100', { token: t.adminToken });
      assert.equal(res.status, 200);
      const base = t.deps.config.publicUrl;
      assert.equal(
        res.headers.link,
        `<${base}/api/v1/users?per_page=100&page=1>; rel="first", <${base}/api/v1/users?per_page=100&page=1>; rel="last"`,
      );
      const past = await t.req('GET', '/api/v1/users?page=9', { token: t.adminToken });
      assert.doesNotMatch(String(past.headers.link), /rel="last"/);
    });

    it('METRICS=api serves Prometheus metrics: requests by route and status, latency, pool, event-stream subscribers', async () => {
      await t.req('GET', '/api/v1/user', { token: t.adminToken });
      await t.req('GET', '/api/v1/users/nobody-at-all', { token: t.adminToken });
      const res = await t.req('GET', '/metrics', { token: null });
      assert.equal(res.status, 200);
      assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
      assert.match(res.text, /weft_http_requests_total\{method="GET",route="\/api\/v1\/user",status="200"\} \d+/);
      assert.match(res.text, /weft_http_requests_total\{method="GET",route="\/api\/v1\/users\/:username",status="404"\} \d+/);
      assert.match(
        res.text,
        /weft_http_request_duration_seconds_bucket\{le="0\.1",method="GET",route="\/api\/v1\/user",status="200"\}/,
      );
      assert.match(res.text, /# TYPE weft_event_stream_subscribers gauge/);
      assert.match(res.text, /# TYPE weft_db_pool_connections gauge/);
      if (dialect === 'postgres') {
        assert.match(res.text, /weft_db_pool_connections\{state="total",pool="main"\} [1-9]/);
        // the token lookups ran on the hot reads' own pool (src/db/index.ts)
        assert.match(res.text, /weft_db_pool_connections\{state="total",pool="hot"\} [1-9]/);
      }
      assert.match(res.text, /weft_process_resident_memory_bytes/);
      // Query time by statement kind: the requests above read users, the token lookup included.
      assert.match(res.text, /weft_db_query_duration_seconds_bucket\{le="\+Inf",kind="select"\} [1-9]/);
      assert.match(res.text, /weft_db_query_duration_seconds_count\{kind="select"\} [1-9]/);
      assert.match(res.text, /# TYPE weft_db_query_errors_total counter/);
      assert.match(res.text, /# TYPE weft_timer_lag_seconds histogram/);
    });
  });
}

describe('runtime', () => {
  it('weft --version prints the package version and exits 0, fast', () => {
    const started = Date.now();
    const run = spawnSync(process.execPath, ['bin/weft.mjs', '--version'], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout.trim(), /^\d+\.\d+\.\d+$/);
    assert.ok(Date.now() - started < 5000);
  });

  it('SIGTERM under keep-alive load: every request sent is answered, the last ones with Connection: close, and the process exits 0', async () => {
    const store = await freshStore('sqlite');
    const port = await freePort();
    const token = 'weft_prod_shutdown_token_0123456789abcdef';
    // zero failed requests is the claim: spawnWeft turns load shedding off (no 503 on a loaded machine)
    const child = spawnWeft(
      'main',
      [],
      {
        DATA_DIR: store.dataDir,
        PORT: String(port),
        BOOTSTRAP_ADMIN_TOKEN: token,
        LOG_LEVEL: 'warn',
        SHUTDOWN_TIMEOUT_MS: '8000',
      },
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
      const get = () =>
        new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
          const req = http.get(
            { host: '127.0.0.1', port, path: '/api/v1/user', agent, headers: { authorization: `Bearer ${token}` } },
            (res) => {
              res.resume();
              res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }));
            },
          );
          req.on('error', reject);
        });
      for (let i = 0; ; i++) {
        const up = await get().catch(() => null);
        if (up?.status === 200) break;
        // up to 60 s: a start-up on a loaded shared machine can take seconds
        assert.ok(i < 600, `the server came up: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      let answered = 0;
      let closing = 0;
      const failures: string[] = [];
      let stop = false;
      // 16 keep-alive connections, each sending requests back to back until the server says
      // Connection: close (a client does not reuse a closed connection).
      const worker = async () => {
        while (!stop) {
          try {
            const res = await get();
            if (res.status !== 200) failures.push(`status ${res.status}`);
            answered++;
            if (res.connection === 'close') {
              closing++;
              return;
            }
          } catch (err) {
            failures.push(String((err as Error).message));
            return;
          }
        }
      };
      const workers = Array.from({ length: 16 }, worker);
      await new Promise((r) => setTimeout(r, 700));
      const before = answered;
      child.kill('SIGTERM');
      const code = await exited;
      stop = true;
      await Promise.all(workers);
      agent.destroy();
      assert.deepEqual(failures, [], `after ${answered} answers`);
      assert.ok(before > 20, `load was running: ${before}`);
      assert.ok(closing > 0, 'in-flight requests were answered with Connection: close');
      assert.equal(code, 0, stderr);
      await assert.rejects(get(), /ECONNREFUSED/);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await store.drop();
    }
  });
});
