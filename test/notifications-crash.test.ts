/**
 * The notification fan-out survives SIGKILL of a real server process (docs/notifications.md): threads
 * mentioning a user are opened while the server is killed and restarted; afterwards she has exactly
 * one notification per thread, and each was touched by exactly one fan-out (its uuid is in one
 * `notification-updated` event: a batch fanned out twice would name it twice).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { type Database, openDatabase } from '../src/db/index.ts';
import { waitUntil } from './common.ts';
import { ADMIN_TOKEN, DIALECTS, freshStore } from './helpers.ts';
import { type StoreHandle, freePort, spawnWeft, storeEnv } from './server-process.ts';

function startServer(store: StoreHandle, port: number): ChildProcess {
  // every range on the background writer (on SQLite the worker thread's connection): killed mid-write there too
  const env = {
    PORT: String(port),
    LOG_LEVEL: 'warn',
    BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
    WEFT_NOTIFY_WRITER_FROM: '0',
    ...storeEnv(store),
  };
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
  describe(`the notification fan-out survives SIGKILL (${dialect})`, () => {
    let store: StoreHandle;
    let database: Database | undefined;
    const children: ChildProcess[] = [];
    before(async () => {
      store = await freshStore(dialect);
    });
    after(async () => {
      for (const c of children) {
        if (c.exitCode === null && c.signalCode === null) {
          const exited = once(c, 'exit');
          c.kill('SIGKILL');
          await exited;
        }
      }
      await database?.close();
      await store.drop();
    });

    it('one notification per thread, each fanned out once', { timeout: 180_000 }, async () => {
      const port = await freePort();
      const first = startServer(store, port);
      children.push(first);
      await waitUp(port);
      const me = (await api(port, 'GET', '/user')).body.username as string;
      const made = await api(port, 'POST', '/users', {
        username: 'carol',
        email: 'carol@example.com',
        password: 'correct horse battery',
      });
      assert.equal(made.status, 201);
      assert.equal(
        (await api(port, 'POST', `/users/${me}/repos`, { name: 'Pub', slug: 'pub', visibility: 'public' })).status,
        201,
      );
      let opened = 0;
      const open = () =>
        api(port, 'POST', `/users/${me}/repos/pub/threads`, { title: `T${opened++}`, body: 'for @carol' }).then((r) => {
          assert.equal(r.status, 201);
        });
      for (let i = 0; i < 5; i++) await open();
      // a burst in flight when the server is killed: some threads commit, some requests die
      const burst = Array.from({ length: 20 }, () => open());
      await Promise.race(burst);
      const exited = once(first, 'exit');
      first.kill('SIGKILL');
      await exited;
      await Promise.allSettled(burst);
      const second = startServer(store, port);
      children.push(second);
      await waitUp(port);
      for (let i = 0; i < 5; i++) await open();

      database = await openDatabase({ url: store.url, dataDir: store.dataDir, schema: store.schema });
      const db = database.db;
      const carol = made.body.uuid as string;
      const N = (await db.selectFrom('threads').select('uuid').execute()).length;
      assert.ok(N >= 11, `threads opened: ${N}`);
      await waitUntil(
        async () => (await db.selectFrom('notifications').select('uuid').where('user_uuid', '=', carol).execute()).length === N,
        60_000,
        'every notification',
      );
      const rows = await db.selectFrom('notifications').select(['uuid', 'reason']).where('user_uuid', '=', carol).execute();
      assert.equal(rows.length, N);
      assert.ok(rows.every((r) => r.reason === 'mention'));
      const updates = await db.selectFrom('events').select('payload').where('kind', '=', 'notification-updated').execute();
      const touched = new Map<string, number>();
      for (const u of updates)
        for (const id of JSON.parse(u.payload).notification_uuids as string[]) touched.set(id, (touched.get(id) ?? 0) + 1);
      for (const r of rows) assert.equal(touched.get(r.uuid), 1, `notification ${r.uuid} fanned out once`);
      const exited2 = once(second, 'exit');
      second.kill('SIGTERM');
      await exited2;
    });
  });
}
