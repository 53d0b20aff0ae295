/**
 * Webhook deliveries across crashes and instances (README "Webhooks", guarantees): a real server
 * process killed with SIGKILL while a receiver holds its delivery open makes the delivery after a
 * restart, recorded once; two instances on one PostgreSQL database deliver each event once, the
 * first attempts in event order.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { inTransaction } from '../src/core/transaction.ts';
import { type Database, openDatabase } from '../src/db/index.ts';
import { ADMIN_TOKEN, DIALECTS, type TestApp, freshStore, startApp } from './helpers.ts';
import { type StoreHandle, freePort, spawnWeft, storeEnv } from './server-process.ts';
import { waitUntil } from './common.ts';
import { Receiver } from './webhooks-helpers.ts';

function startServer(store: StoreHandle, port: number): ChildProcess {
  const env = { PORT: String(port), LOG_LEVEL: 'warn', BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN, ...storeEnv(store) };
  return spawnWeft('main', [], env, { stdio: ['ignore', 'ignore', 'inherit'] });
}

async function api(port: number, method: string, path: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as any };
}

async function waitUp(port: number): Promise<void> {
  await waitUntil(
    async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
      } catch {
        return false;
      }
    },
    60_000,
    'the server to listen',
  );
}

for (const dialect of DIALECTS) {
  describe(`a webhook delivery survives SIGKILL of a real server process (${dialect})`, () => {
    let store: StoreHandle;
    let database: Database;
    let rx: Receiver;
    const children: ChildProcess[] = [];

    before(async () => {
      store = await freshStore(dialect);
      rx = await new Receiver().start();
    });
    after(async () => {
      for (const c of children) {
        if (c.exitCode === null && c.signalCode === null) {
          const exited = once(c, 'exit');
          c.kill('SIGKILL');
          await exited;
        }
      }
      await rx.close();
      await database?.close();
      await store.drop();
    });

    it('the delivery is made after the restart and recorded once', { timeout: 180_000 }, async () => {
      const port = await freePort();
      const first = startServer(store, port);
      children.push(first);
      await waitUp(port);
      assert.equal((await api(port, 'PUT', '/site-settings', { webhook_allowed_hosts: ['127.0.0.1'] })).status, 200);
      const hook = await api(port, 'POST', '/hooks', { url: rx.url(), events: ['user-created'] });
      assert.equal(hook.status, 201);
      // the receiver holds the first request open; the server dies while waiting for the answer
      let hold = true;
      rx.respond = (_r, res) => {
        if (!hold) res.writeHead(200).end('ok');
      };
      const made = await api(port, 'POST', '/users', {
        username: 'zoe',
        email: 'zoe@example.com',
        password: 'correct horse battery',
      });
      assert.equal(made.status, 201);
      await rx.waitFor(() => rx.received.length === 1, 30_000, 'the first attempt');
      const exited = once(first, 'exit');
      first.kill('SIGKILL');
      await exited;
      hold = false;

      const second = startServer(store, port);
      children.push(second);
      await waitUp(port);
      await rx.waitFor(() => rx.received.length >= 2, 90_000, 'the attempt after the restart');
      const id = rx.received[0]!.headers['webhook-id'];
      assert.equal(rx.received[1]!.headers['webhook-id'], id);
      await waitUntil(
        async () => (await api(port, 'GET', `/hooks/${hook.body.uuid}/deliveries`)).body.results[0]?.status === 'success',
        30_000,
        'success recorded',
      );
      const list = (await api(port, 'GET', `/hooks/${hook.body.uuid}/deliveries`)).body.results;
      assert.equal(list.length, 1);
      assert.equal(list[0].uuid, id);
      assert.equal(list[0].attempts, 1);
      assert.equal(list[0].last_attempt.response_status, 200);
      database = await openDatabase({ url: store.url, dataDir: store.dataDir, schema: store.schema });
      const attempts = await database.db
        .selectFrom('hook_attempts')
        .selectAll()
        .where('delivery_uuid', '=', String(id))
        .execute();
      assert.equal(attempts.length, 1);
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(rx.received.length, 2);
      const exited2 = once(second, 'exit');
      second.kill('SIGTERM');
      await exited2;
    });
  });
}

for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`two instances deliver each event once (${dialect})`, () => {
    let a: TestApp;
    let b: TestApp;
    let rx: Receiver;
    before(async () => {
      a = await startApp(dialect);
      b = await startApp(dialect, { store: (a as TestApp & { store: Awaited<ReturnType<typeof freshStore>> }).store });
      rx = await new Receiver().start();
    });
    after(async () => {
      await b.close();
      await a.close();
      await rx.close();
    });

    it('each event once, first attempts in event order', { timeout: 120_000 }, async () => {
      await a.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['127.0.0.1'] } });
      const hook = await a.req('POST', '/api/v1/hooks', { body: { url: rx.url(), events: ['user-mention'] } });
      assert.equal(hook.status, 201);
      const me = (await a.req('GET', '/api/v1/user')).body.uuid as string;
      const ids: string[] = [];
      const N = 200;
      await Promise.all(
        [a, b].map(async (app, k) => {
          for (let i = k; i < N; i += 2) {
            const e = await inTransaction(app.deps, (tx) =>
              tx.emit({ kind: 'user-mention', scopes: [`user:${me}`], actor: null, payload: { i } }),
            );
            ids.push(e.id);
          }
        }),
      );
      await rx.waitFor(() => rx.received.length >= N, 60_000, 'every delivery');
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(rx.received.length, N);
      assert.equal(new Set(rx.received.map((r) => r.headers['webhook-id'])).size, N);
      const got = rx.received.map((r) => r.json.event.id!);
      assert.deepEqual([...got].sort(), [...ids].sort());
      const numeric = got.map(Number);
      assert.deepEqual(
        numeric,
        [...numeric].sort((x, y) => x - y),
        'first attempts in event order',
      );
    });
  });
}
