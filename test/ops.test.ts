import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { describe, it } from 'node:test';
import { buildApp } from '../src/app.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { createDeps } from '../src/root.ts';
import { freePort, runWeft, spawnWeft } from './server-process.ts';
import { DIALECTS, freshStore, isErrorBody, startApp, testConfig } from './helpers.ts';

const BOOT = 'weft_ops_bootstrap_token_0123456789abcd';

interface Server {
  child: ChildProcess;
  base: string;
  /** every JSON log line so far */
  logs(): Array<Record<string, unknown>>;
  waitForLog(pred: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
}

/** Spawns the built server (dist/main.js) on a free port and waits until it serves. */
async function startServer(env: Record<string, string>): Promise<Server> {
  const port = await freePort();
  const child = spawnWeft(
    'main',
    [],
    { HOME: process.env.HOME ?? '', PORT: String(port), HOST: '127.0.0.1', ...env },
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  const waiters: Array<() => void> = [];
  child.stdout!.on('data', (d) => {
    stdout += d;
    for (const w of waiters.splice(0)) w();
  });
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => {
      for (const w of waiters.splice(0)) w();
      resolve({ code, signal, stderr });
    }),
  );
  const logs = () =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const waitForLog = (pred: (line: Record<string, unknown>) => boolean, timeoutMs = 60_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no such log line; stdout: ${stdout}\nstderr: ${stderr}`)), timeoutMs);
      const check = () => {
        const found = logs().find(pred);
        if (found) {
          clearTimeout(timer);
          resolve(found);
        } else if (child.exitCode !== null) {
          clearTimeout(timer);
          reject(new Error(`server exited ${child.exitCode}: ${stderr}`));
        } else waiters.push(check);
      };
      check();
    });
  const server = { child, base: `http://127.0.0.1:${port}`, logs, waitForLog, exited };
  try {
    await waitForLog((l) => l.msg === 'weft is serving');
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return server;
}

describe('operations', () => {
  let store: Awaited<ReturnType<typeof freshStore>>;
  for (const dialect of DIALECTS) {
    it(`healthz and readyz (${dialect})`, async () => {
      const t = await startApp(dialect);
      try {
        for (const url of ['/healthz', '/readyz']) {
          const res = await t.req('GET', url, { token: null });
          assert.equal(res.status, 200);
          assert.deepEqual(res.body, { status: 'ok' });
        }
      } finally {
        await t.close();
      }
    });
  }

  it('readyz is 503 with the envelope when the database is unreachable; healthz stays 200', async () => {
    const store = await freshStore('sqlite');
    const database = await openDatabase({ url: null, dataDir: store.dataDir });
    const deps = createDeps(testConfig(store.dataDir), database);
    const app = await buildApp(deps, { logger: false });
    await app.ready();
    await database.close();
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    assert.equal(ready.statusCode, 503);
    assert.ok(isErrorBody(ready.json(), 'service_unavailable'));
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    assert.equal(health.statusCode, 200);
    await app.close();
    await store.drop();
  });

  it('the configuration is validated with clear messages', () => {
    const bad: Array<[Record<string, string>, RegExp]> = [
      [{ PORT: 'abc' }, /PORT must be a whole number, got "abc"/],
      [{ PORT: '70000' }, /PORT must be between 0 and 65535/],
      [{ PORT: '-1' }, /PORT must be a whole number/],
      [{ LOG_LEVEL: 'verbose' }, /LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/],
      [{ DATABASE_URL: 'mysql://x/y' }, /DATABASE_URL must be a postgres:\/\//],
      [{ DATABASE_URL: 'postgres://[bad' }, /DATABASE_URL is not a valid URL/],
      [{ PUBLIC_URL: 'ftp://example.com' }, /PUBLIC_URL must be an http\(s\) URL/],
      [{ PUBLIC_URL: 'not a url' }, /PUBLIC_URL must be an http\(s\) URL/],
      [{ BOOTSTRAP_ADMIN_TOKEN: 'short' }, /BOOTSTRAP_ADMIN_TOKEN must be at least 20 characters/],
      [{ BOOTSTRAP_ADMIN_TOKEN: 'has spaces in it, twenty+ chars' }, /no white space/],
      [{ BOOTSTRAP_ADMIN_TOKEN: 'x'.repeat(201) }, /BOOTSTRAP_ADMIN_TOKEN must be at most 200 characters/],
      [{ BOOTSTRAP_ADMIN_TOKEN: 'tökén-with-ümlauts-0123456789' }, /printable ASCII/],
      [{ BOOTSTRAP_ADMIN_USERNAME: 'bad name' }, /BOOTSTRAP_ADMIN_USERNAME must be/],
      [{ DEFAULT_MAX_DISK_BYTES: '1.5' }, /DEFAULT_MAX_DISK_BYTES must be a whole number/],
    ];
    for (const [env, message] of bad) {
      assert.throws(
        () => loadConfig(env),
        (err: Error) => err instanceof ConfigError && message.test(err.message),
        JSON.stringify(env),
      );
    }
    const ok = loadConfig({ PORT: '8080', HOST: '0.0.0.0', PUBLIC_URL: 'https://weft.example/', LOG_LEVEL: 'warn' });
    assert.equal(ok.port, 8080);
    assert.equal(ok.publicUrl, 'https://weft.example');
    assert.equal(ok.logLevel, 'warn');
    const defaults = loadConfig({});
    assert.equal(defaults.port, 3000);
    assert.equal(defaults.host, '127.0.0.1');
    assert.equal(defaults.databaseUrl, null);
    assert.equal(defaults.bootstrapAdminUsername, 'admin');
    assert.equal(defaults.logLevel, 'info');
  });

  it('a bad configuration value stops start-up with a clear message and exit code 2; so does a busy port (exit 1)', async () => {
    const store = await freshStore('sqlite');
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const busyPort = (busy.address() as AddressInfo).port;
    try {
      const [res, inUse] = await Promise.all([
        runWeft('main', [], { DATA_DIR: store.dataDir, PORT: 'eighty' }),
        runWeft('main', [], { DATA_DIR: store.dataDir, PORT: String(busyPort), LOG_LEVEL: 'silent' }),
      ]);
      assert.equal(res.code, 2);
      assert.match(res.stderr, /weft: configuration error: PORT must be a whole number, got "eighty"/);
      assert.doesNotMatch(res.stderr, /\bat .*:\d+:\d+/, 'no stack trace');
      assert.equal(inUse.code, 1);
      assert.match(inUse.stderr, /weft: failed to start: .*EADDRINUSE/);
      assert.doesNotMatch(inUse.stderr, /\bat .*:\d+:\d+/, 'no stack trace');
    } finally {
      busy.close();
      await store.drop();
    }
  });

  it('serves over real HTTP with structured request logs, and SIGTERM exits cleanly after in-flight requests', async () => {
    store = await freshStore('sqlite');
    {
      const server = await startServer({ DATA_DIR: store.dataDir, BOOTSTRAP_ADMIN_TOKEN: BOOT, LOG_LEVEL: 'info' });
      try {
        assert.ok(server.logs().some((l) => l.msg === 'bootstrap admin created'));
        const health = await fetch(`${server.base}/healthz`, { headers: { 'x-request-id': 'ops-probe-1' } });
        assert.equal(health.status, 200);
        assert.deepEqual(await health.json(), { status: 'ok' });
        assert.equal(health.headers.get('x-request-id'), 'ops-probe-1');
        const me = await fetch(`${server.base}/api/v1/user`, { headers: { authorization: `Bearer ${BOOT}` } });
        assert.equal(me.status, 200);
        assert.equal(((await me.json()) as { username: string }).username, 'admin');
        const pw = await fetch(`${server.base}/api/v1/users/admin`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${BOOT}`, 'content-type': 'application/json' },
          body: JSON.stringify({ password: 'a long admin password' }),
        });
        assert.equal(pw.status, 200);

        const completed = await server.waitForLog((l) => l.reqId === 'ops-probe-1' && l.msg === 'request completed');
        assert.equal((completed.res as { statusCode: number }).statusCode, 200);
        assert.equal(typeof completed.responseTime, 'number');
        const incoming = server.logs().find((l) => l.reqId === 'ops-probe-1' && l.msg === 'incoming request')!;
        assert.equal((incoming.req as { url: string }).url, '/healthz');
        assert.doesNotMatch(JSON.stringify(server.logs()), new RegExp(BOOT), 'tokens are never logged');

        // A login (scrypt: slow) is in flight when SIGTERM arrives: it still completes.
        const login = fetch(`${server.base}/api/v1/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': 'in-flight' },
          body: JSON.stringify({ username: 'admin', password: 'a long admin password', token_name: 'x' }),
        });
        await server.waitForLog((l) => l.reqId === 'in-flight' && l.msg === 'incoming request');
        server.child.kill('SIGTERM');
        const answered = await login;
        assert.equal(answered.status, 201);
        const { code, signal, stderr } = await server.exited;
        assert.equal(signal, null);
        assert.equal(code, 0, stderr);
        assert.ok(server.logs().some((l) => l.msg === 'shutting down: finishing in-flight requests' && l.signal === 'SIGTERM'));
        await assert.rejects(fetch(`${server.base}/healthz`), 'no longer listening');
      } finally {
        if (server.child.exitCode === null) server.child.kill('SIGKILL');
      }
    }
  });

  it('a restart keeps the data and the bootstrap admin; LOG_LEVEL=warn hides request logs; SIGINT stops cleanly', async () => {
    assert.ok(store, 'runs after the previous test');
    try {
      // at warn, not even "weft is serving" is logged: wait on HTTP instead
      const port = await freePort();
      const child = spawnWeft(
        'main',
        [],
        { DATA_DIR: store.dataDir, PORT: String(port), BOOTSTRAP_ADMIN_TOKEN: BOOT, LOG_LEVEL: 'warn' },
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout!.on('data', (d) => {
        out += d;
      });
      const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      try {
        let me: Response | null = null;
        // start-up takes seconds on a loaded machine: wait up to 60 s
        const deadline = Date.now() + 60_000;
        while (!me && Date.now() < deadline) {
          me = await fetch(`http://127.0.0.1:${port}/api/v1/user`, { headers: { authorization: `Bearer ${BOOT}` } }).catch(
            () => null,
          );
          if (!me) await new Promise((r) => setTimeout(r, 100));
        }
        assert.ok(me, 'the server came up');
        assert.equal(me.status, 200);
        const login = await fetch(`http://127.0.0.1:${port}/api/v1/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'admin', password: 'a long admin password', token_name: 'again' }),
        });
        assert.equal(login.status, 201, 'the password set before the restart is kept');
        const missing = await fetch(`http://127.0.0.1:${port}/api/v1/nope`);
        assert.equal(missing.status, 404);
        child.kill('SIGINT');
        assert.equal(await exited, 0);
        assert.equal(out.trim(), '', 'nothing below warn is logged');
      } finally {
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    } finally {
      await store.drop();
    }
  });
});
