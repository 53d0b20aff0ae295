/**
 * Issue 30, item 1: one caller's deep activity pages must not take the server from the others.
 * A page deeper than MAX_FEED_DEPTH events is 400 pointing to before_id; one request scans at most
 * FEED_SCAN_BUDGET events (its page then ends early with a next link that continues); and while
 * ten clients page deep without pause, `GET /user` stays fast on SQLite (a real listening server).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { after, before, describe, it } from 'node:test';
import { FEED_SCAN_BUDGET, MAX_FEED_DEPTH } from '../src/activity/feed.ts';
import { inTransaction } from '../src/core/transaction.ts';
import { actorOf } from '../src/events/service.ts';
import type { Viewer } from '../src/viewer.ts';
import { snapshot } from './foundation-helpers.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';

/**
 * `n` events acted by `who`: even ones a `user-updated` in their own scope (they see it), odd
 * ones a `timer-created` of a timer that does not exist (hidden from everyone; each costs the
 * reader a check of its own scope).
 */
async function seedEvents(t: TestApp, who: { uuid: string; username: string }, n: number, visibleEvery = 2): Promise<void> {
  const viewer = { uuid: who.uuid, username: who.username, isStaff: false } as Viewer;
  for (let i = 0; i < n; i += 1000) {
    await inTransaction(t.deps, async (tx) => {
      for (let j = i; j < Math.min(n, i + 1000); j++) {
        if (j % visibleEvery === 0) {
          await tx.emit({
            kind: 'user-updated',
            scopes: [`user:${who.uuid}`],
            actor: actorOf(viewer),
            payload: { user_uuid: who.uuid, username: who.username, fields: ['display_name'] },
          });
        } else {
          const timer = randomUUID();
          await tx.emit({
            kind: 'timer-created',
            scopes: [`timer:${timer}`, `user:${who.uuid}`],
            actor: actorOf(viewer),
            payload: { timer_uuid: timer },
          });
        }
      }
    });
  }
}

for (const dialect of DIALECTS) {
  describe(`deep activity pages are bounded (${dialect})`, () => {
    let t: TestApp;
    let pager: { token: string; uuid: string; username: string };
    let quiet: { token: string; uuid: string; username: string };
    before(async () => {
      t = await startApp(dialect);
      pager = await t.user('pager');
      quiet = await t.user('quiet');
      await seedEvents(t, pager, 3000);
      // all but one in forty hidden from their own reader: a page takes many events to fill
      await seedEvents(t, quiet, FEED_SCAN_BUDGET + 1200, 40);
    });
    after(() => t.close());

    it('a page past the first MAX_FEED_DEPTH events is 400 and points to before_id', async () => {
      const before = await snapshot(t);
      for (const [route, token] of [
        ['/api/v1/users/pager/activity', pager.token],
        ['/api/v1/teams/none/activity', pager.token],
      ] as const) {
        for (const q of [
          `page=${Math.floor(MAX_FEED_DEPTH / 30) + 1}`,
          'page=11&per_page=100',
          'page=1000000',
          'page=11&per_page=1000',
        ]) {
          const res = await t.req('GET', `${route}?${q}`, { token });
          assert.equal(res.status, 400, `${route}?${q}: ${res.text.slice(0, 200)}`);
          assert.ok(isErrorBody(res.body, 'invalid_request'));
          assert.match(res.body.detail, /before_id/);
        }
      }
      assert.deepEqual(await snapshot(t), before);
      // the deepest page allowed, then onwards with before_id
      const last = await t.req('GET', `/api/v1/users/pager/activity?page=${Math.floor(MAX_FEED_DEPTH / 30)}`, {
        token: pager.token,
      });
      assert.equal(last.status, 200, last.text);
      assert.equal(last.body.results.length, 30);
      const oldest = last.body.results.at(-1).id as string;
      const on = await t.req('GET', `/api/v1/users/pager/activity?before_id=${oldest}`, { token: pager.token });
      assert.equal(on.status, 200);
      assert.equal(on.body.results.length, 30);
      assert.ok(BigInt(on.body.results[0].id) < BigInt(oldest));
      const full = await t.req('GET', '/api/v1/users/pager/activity?page=10&per_page=100', { token: pager.token });
      assert.equal(full.status, 200);
      assert.equal(full.body.results.length, 100);
    });

    it('a scan that runs out of budget ends the page early; its next link continues without a gap or a repeat', async () => {
      const seen: string[] = [];
      let url: string | null = '/api/v1/users/quiet/activity?per_page=100';
      let pages = 0;
      let early = 0;
      while (url !== null) {
        const res = await t.req('GET', url, { token: quiet.token });
        assert.equal(res.status, 200, res.text);
        pages++;
        if (res.body.results.length < 100 && res.body.next !== null) {
          early++;
          assert.match(res.body.next, /before_id=\d+/);
          assert.match(res.body.next, /page=1/);
          assert.match(String(res.headers.link), /rel="next"/);
        }
        seen.push(...res.body.results.map((e: { id: string }) => e.id));
        url = res.body.next;
        assert.ok(pages < 50);
      }
      assert.ok(early >= 1, 'at least one page stopped at the scan budget');
      const expected = Math.ceil((FEED_SCAN_BUDGET + 1200) / 40);
      assert.equal(seen.length, expected);
      assert.equal(new Set(seen).size, expected);
    });
  });
}

describe('ten deep pagers leave GET /user fast (sqlite, real server)', () => {
  let t: TestApp;
  let base: string;
  const users: Array<{ token: string; uuid: string; username: string }> = [];
  before(async () => {
    t = await startApp('sqlite');
    for (let i = 0; i < 10; i++) {
      const u = await t.user(`deep${i}`);
      await seedEvents(t, u, 5000);
      users.push(u);
    }
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  after(() => t.close());

  it('GET /user p99 stays under a generous bound while ten clients page their activity as deep as they can', async () => {
    const get = async (path: string, token: string) => {
      const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
      await res.arrayBuffer();
      return res.status;
    };
    const other = await t.user('other');
    const measure = async () => {
      const times: number[] = [];
      for (let i = 0; i < 200; i++) {
        const t0 = performance.now();
        assert.equal(await get('/api/v1/user', other.token), 200);
        times.push(performance.now() - t0);
      }
      times.sort((a, b) => a - b);
      return { p50: times[Math.floor(times.length * 0.5)]!, p99: times[Math.floor(times.length * 0.99)]! };
    };
    // the reference: GET /user alone, in the same run (the machine may be loaded)
    const alone = await measure();
    let stop = false;
    const statuses = new Map<number, number>();
    // half ask for a page deeper than allowed (page 150: 400 now), half the deepest page allowed
    const pagers = users.map(async (u, i) => {
      const path = `/api/v1/users/${u.username}/activity?page=${i % 2 === 0 ? 150 : Math.floor(MAX_FEED_DEPTH / 30)}`;
      while (!stop) {
        const status = await get(path, u.token);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const loaded = await measure();
    stop = true;
    await Promise.all(pagers);
    const ms = (x: number) => x.toFixed(1);
    console.log(
      `# GET /user alone p50 ${ms(alone.p50)} ms, p99 ${ms(alone.p99)} ms; with ten deep pagers p50 ${ms(loaded.p50)} ms, ` +
        `p99 ${ms(loaded.p99)} ms; pager answers ${JSON.stringify([...statuses])}`,
    );
    assert.ok((statuses.get(200) ?? 0) > 0 && (statuses.get(400) ?? 0) > 0, JSON.stringify([...statuses]));
    // bench/README.md "Deep pages" has the figure on an idle machine; the bound is generous for a loaded CI
    // Before the bound, 200 such GET /user took more than 15 minutes on this loaded machine (seconds each).
    assert.ok(loaded.p99 < 500, `GET /user p99 ${ms(loaded.p99)} ms while ten clients page deep`);
  });
});
