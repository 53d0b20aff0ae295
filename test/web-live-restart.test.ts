/**
 * Live pages across a server restart behind a proxy that answers 502 while the server is down
 * (README "Web interface"): a real server process is killed with SIGKILL while a thread page is
 * open in Chromium, replies are written while it is down, the server comes back, and the page
 * shows every reply's event exactly once, in order, without a reload.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { type Database, openDatabase } from '../src/db/index.ts';
import { createDeps } from '../src/root.ts';
import { createReply } from '../src/threads/service.ts';
import { hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { waitUntil } from './common.ts';
import { ADMIN_TOKEN, freshStore, testConfig } from './helpers.ts';
import { type StoreHandle, freePort, spawnWeft, storeEnv } from './server-process.ts';
import { PASSWORD } from './web-helpers.ts';

/** A reverse proxy to 127.0.0.1:`port` that answers 502 when nothing listens there. */
async function startProxy(port: number): Promise<{ base: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const upstream = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
      up.on('error', () => res.destroy());
      up.on('aborted', () => res.destroy());
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('Bad gateway');
      else res.destroy();
    });
    req.pipe(upstream);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

function startServer(store: StoreHandle, port: number, publicUrl: string): ChildProcess {
  const env = {
    PORT: String(port),
    LOG_LEVEL: 'warn',
    PUBLIC_URL: publicUrl,
    BOOTSTRAP_ADMIN_TOKEN: ADMIN_TOKEN,
    ...storeEnv(store),
  };
  return spawnWeft('main', [], env, { stdio: ['ignore', 'ignore', 'inherit'] });
}

for (const dialect of BROWSER_DIALECTS) {
  describe(
    `live pages across a restart behind a 502-answering proxy (${dialect})`,
    { skip: !hasChromium && 'no Chromium' },
    () => {
      let store: StoreHandle;
      let proxy: Awaited<ReturnType<typeof startProxy>>;
      let port: number;
      let server: ChildProcess | null = null;
      let browser: Browser;

      const api = async (method: string, path: string, body?: unknown, token = ADMIN_TOKEN) => {
        const res = await fetch(`${proxy.base}/api/v1${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          ...(body ? { body: JSON.stringify(body) } : {}),
        });
        return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, unknown> };
      };
      const up = () =>
        waitUntil(
          () =>
            fetch(`${proxy.base}/readyz`).then(
              (r) => r.status === 200,
              () => false,
            ),
          30_000,
          'the server',
        );
      const kill = async () => {
        if (!server || server.exitCode !== null || server.signalCode !== null) return;
        const exited = once(server, 'exit');
        server.kill('SIGKILL');
        await exited;
      };

      before(async () => {
        store = await freshStore(dialect);
        port = await freePort();
        proxy = await startProxy(port);
        server = startServer(store, port, proxy.base);
        await up();
        browser = await launchBrowser();
      });
      after(async () => {
        await browser?.close();
        await kill();
        await proxy?.close();
        await store?.drop();
      });

      it('shows every event once, in order, after a kill -9 and restart', { timeout: 120_000 }, async () => {
        const user = await api('POST', '/users', { username: 'alice', email: 'alice@example.com', password: PASSWORD });
        assert.equal(user.status, 201);
        const token = (await api('POST', '/api-tokens', { name: 't', username: 'alice' })).body.token as string;
        assert.equal((await api('POST', '/users/alice/repos', { name: 'Notes', slug: 'notes' }, token)).status, 201);
        assert.equal((await api('POST', '/users/alice/repos/notes/threads', { title: 'Plans' }, token)).status, 201);
        const reply = (body: string) => api('POST', '/users/alice/repos/notes/threads/1/replies', { body }, token);

        const { page } = await newPage(browser, 800);
        await signInPage(page, proxy.base, 'alice', PASSWORD);
        await page.goto(`${proxy.base}/users/alice/notes/threads/1`);
        await page.locator('#live-status', { hasText: 'live' }).waitFor();
        const live = page.locator('#thread-feed article[data-kind="reply-created"]');
        // at least n replies shown (false while the page is between states)
        const shows = (n: number) => () =>
          live.count().then(
            (count) => count >= n,
            () => false,
          );

        assert.equal((await reply('before the restart')).status, 201);
        await waitUntil(shows(1), 30_000, 'the first reply, live');

        // The server dies; the proxy answers 502 meanwhile.
        await kill();
        assert.equal((await fetch(`${proxy.base}/healthz`)).status, 502);
        await page.locator('#live-status', { hasText: 'reconnecting' }).waitFor();
        // Replies written while it is down (through the same service, on the same database).
        const database: Database = await openDatabase({ url: store.url, dataDir: store.dataDir, schema: store.schema });
        try {
          const deps = createDeps(testConfig(store.dataDir, { databaseUrl: store.url }), database);
          const alice = await database.db
            .selectFrom('users')
            .select(['uuid', 'username'])
            .where('username', '=', 'alice')
            .executeTakeFirstOrThrow();
          const viewer = { uuid: alice.uuid, username: alice.username, isStaff: false, tokenUuid: '' };
          const ref = { ownerKind: 'user' as const, ownerName: 'alice', repoSlug: 'notes' };
          await createReply(deps, viewer, ref, 1, { body: 'while down 1' });
          await createReply(deps, viewer, ref, 1, { body: 'while down 2' });
        } finally {
          await database.close();
        }
        // a few seconds of 502s: htmx's SSE extension gives up on the EventSource and retries
        await new Promise((r) => setTimeout(r, 1500));

        server = startServer(store, port, proxy.base);
        await up();
        await waitUntil(shows(3), 60_000, 'the replies written while down');
        assert.equal((await reply('after the restart')).status, 201);
        await waitUntil(shows(4), 30_000, 'the reply after the restart');
        await new Promise((r) => setTimeout(r, 1000)); // a duplicate, were there one, would show now

        const ids = await page.locator('#thread-feed article.weft-event').evaluateAll((els) => els.map((e) => e.id));
        assert.equal(new Set(ids).size, ids.length, `no duplicate: ${ids.join(' ')}`);
        const numbers = ids.map((id) => BigInt(id.replace('event-', '')));
        assert.deepEqual(
          numbers,
          [...numbers].sort((a, b) => (a < b ? 1 : a > b ? -1 : 0)),
          'newest first',
        );
        assert.equal(await live.count(), 4);
        // exactly the four reply-created events of the thread, as the API lists them
        const thread = await api('GET', '/users/alice/repos/notes/threads/1', undefined, token);
        const events = await api('GET', `/events?scope=thread:${String(thread.body.uuid)}&kind=reply-created`, undefined, token);
        const stored = (events.body.results as Array<{ id: string }>).map((e) => e.id).reverse();
        assert.equal(stored.length, 4);
        assert.deepEqual(await live.evaluateAll((els) => els.map((e) => e.getAttribute('data-event-id'))), stored);
      });
    },
  );
}
