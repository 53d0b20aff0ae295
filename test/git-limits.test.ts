/**
 * Bounded git processes (README "Bounded git processes"): per-instance and per-client caps with
 * 503 + Retry-After, fetch bodies read (and size-limited) before git starts and cut at
 * REQUEST_TIMEOUT_MS, and a git that cannot be started (EMFILE under a lowered `ulimit -n`) is a
 * 503 for that request, never a crash.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { gitHttpLimiter } from '../src/git/limits.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, freshStore, isErrorBody, startApp, type TestApp } from './helpers.ts';
import { waitUntil } from './common.ts';
import { SERVER_ADMIN_TOKEN, type ServerProcess, type StoreHandle, startServer, stopServer } from './server-process.ts';

/** git processes that are children of this test process right now. */
/** The git processes serving clients (upload-pack, receive-pack): not the background object readers (search indexing). */
function gitChildren(): number {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-f', '^git .*(upload|receive)-pack'])
      .toString()
      .trim()
      .split('\n')
      .filter(Boolean).length;
  } catch {
    return 0;
  }
}

/** A raw HTTP request whose body is sent in part, then stalls; resolves with the status (or 'closed'). */
function stalledPost(base: string, path: string, declared: number, sent: Buffer): Promise<number | 'closed'> {
  return new Promise((resolve) => {
    const url = new URL(path, base);
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: url.pathname,
      headers: { 'content-type': 'application/x-git-upload-pack-request', 'content-length': String(declared) },
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve('closed'));
    req.write(sent);
  });
}

for (const dialect of DIALECTS) {
  describe(`bounded git processes (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: { token: string; uuid: string; username: string };
    let pub: string;
    before(async () => {
      t = await startApp(dialect, {
        config: {
          gitHttpMaxProcesses: 3,
          gitHttpMaxProcessesPerClient: 2,
          gitWaitMs: 0,
          requestTimeoutMs: 1000,
          gitMaxRequestBytes: 4096,
        },
      });
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
      const res = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: 'pub', slug: 'pub', visibility: 'public' },
      });
      assert.equal(res.status, 201, res.text);
      pub = `/git/users/${alice.username}/pub.git`;
      const work = await makeWorkTree(g, 'w', [{ 'a.txt': 'a\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url(pub, alice.token), 'main']);
      // the client sees the push end before the server's receive-pack has exited and given its slot back
      await waitUntil(
        () => gitHttpLimiter(t.deps).running === 0 && gitChildren() === 0,
        30_000,
        'the push to finish on the server',
      );
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    const infoRefs = () => fetch(new URL(`${pub}/info/refs?service=git-upload-pack`, g.base));

    it('over the per-client or per-instance cap: 503 service_unavailable with Retry-After; a freed slot serves again', async () => {
      const limiter = gitHttpLimiter(t.deps);
      const held = [limiter.tryAcquire('127.0.0.1'), limiter.tryAcquire('127.0.0.1')];
      try {
        const res = await infoRefs();
        assert.equal(res.status, 503);
        assert.equal(res.headers.get('retry-after'), '5');
        const body = await res.json();
        assert.ok(isErrorBody(body, 'service_unavailable'));
        assert.match(body.detail, /client/);
        held.pop()!();
        const okRes = await infoRefs();
        assert.equal(okRes.status, 200);
        await okRes.arrayBuffer();
        // that request's git gives its slot back when it exits, a moment after the body ended
        await waitUntil(() => limiter.running === 1, 30_000, 'the info/refs git to exit');
        // The instance cap counts every client.
        held.push(limiter.tryAcquire('10.0.0.1'));
        held.push(limiter.tryAcquire('10.0.0.2'));
        const full = await infoRefs();
        assert.equal(full.status, 503);
        assert.match((await full.json()).detail, /server/);
        const clone = await g.run(['clone', '-q', g.url(pub, null), g.tmp('refused')], { ok: false });
        assert.notEqual(clone.code, 0);
        assert.match(clone.stderr, /503/);
      } finally {
        for (const release of held) release();
      }
      assert.equal(limiter.running, 0);
      await g.run(['clone', '-q', g.url(pub, null), g.tmp('after')]);
      // the client's clone can end before the server's git has exited and given its slot back
      await waitUntil(() => limiter.running === 0, 30_000, 'slots are given back when git exits');
    });

    it('a stalled fetch body starts no git process and is cut with 408 at REQUEST_TIMEOUT_MS', { timeout: 60_000 }, async () => {
      const started = Date.now();
      const status = stalledPost(g.base, `${pub}/git-upload-pack`, 1000, Buffer.from('0032want '));
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(gitChildren(), 0, 'no git process while the body is arriving');
      assert.equal(gitHttpLimiter(t.deps).running, 0);
      assert.equal(await status, 408);
      assert.ok(Date.now() - started < 20_000, 'cut at REQUEST_TIMEOUT_MS, not the stream idle limit');
    });

    it('a fetch body over GIT_MAX_REQUEST_BYTES is 413 before git starts', async () => {
      const res = await fetch(new URL(`${pub}/git-upload-pack`, g.base), {
        method: 'POST',
        headers: { 'content-type': 'application/x-git-upload-pack-request' },
        body: Buffer.alloc(8192, 0x30),
      });
      assert.equal(res.status, 413);
      assert.ok(isErrorBody(await res.json(), 'payload_too_large'));
      assert.equal(gitHttpLimiter(t.deps).running, 0);
    });
  });

  describe(`a git that cannot start is a 503, never a crash (${dialect})`, () => {
    let store: StoreHandle;
    let server: ServerProcess | undefined;
    before(async () => {
      store = await freshStore(dialect);
    });
    after(async () => {
      await stopServer(server, 'SIGKILL');
      await store.drop();
    });

    it(
      '600 concurrent info/refs under ulimit -n 200: each 200 or 503, the server lives on',
      { timeout: 300_000 },
      async (ctx) => {
        server = await startServer(
          store,
          { GIT_HTTP_MAX_PROCESSES: '10000', GIT_HTTP_MAX_PROCESSES_PER_CLIENT: '10000' },
          { ulimitFiles: 200 },
        );
        const auth = { authorization: `Bearer ${SERVER_ADMIN_TOKEN}`, 'content-type': 'application/json' };
        const created = await fetch(`${server.base}/api/v1/users/admin/repos`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ name: 'open', slug: 'open', visibility: 'public' }),
        });
        assert.equal(created.status, 201, await created.text());
        const url = `${server.base}/git/users/admin/open.git/info/refs?service=git-upload-pack`;
        const statuses = await Promise.all(
          Array.from(
            { length: 600 },
            () =>
              new Promise<number | 'closed'>((resolve) => {
                const req = httpRequest(url, { agent: false }, (res) => {
                  res.resume();
                  res.on('end', () => resolve(res.statusCode ?? 0));
                  res.on('error', () => resolve(res.statusCode ?? 0));
                });
                req.on('error', () => resolve('closed'));
                req.end();
              }),
          ),
        );
        const counts = statuses.reduce<Record<string, number>>((m, s) => ({ ...m, [s]: (m[s] ?? 0) + 1 }), {});
        ctx.diagnostic(`responses: ${JSON.stringify(counts)}`);
        assert.equal(
          server.child.exitCode,
          null,
          `the server is alive (${JSON.stringify(counts)}): ${server.stderr().slice(-1500)}`,
        );
        assert.equal(counts['500'] ?? 0, 0, JSON.stringify(counts));
        for (const s of Object.keys(counts)) assert.ok(['200', '503', 'closed'].includes(s), JSON.stringify(counts));
        assert.ok((counts['503'] ?? 0) > 0, `some spawns failed and were 503 (${JSON.stringify(counts)})`);
        // Once the burst is over it serves again.
        let ready = 0;
        for (let i = 0; i < 50 && ready !== 200; i++) {
          ready = await fetch(url)
            .then(async (r) => (await r.arrayBuffer(), r.status))
            .catch(() => 0);
          if (ready !== 200) await new Promise((r) => setTimeout(r, 200));
        }
        assert.equal(ready, 200);
        assert.equal(server.child.exitCode, null);
      },
    );
  });
}
