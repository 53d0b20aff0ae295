/**
 * The fan-out in chunks (docs/notifications.md "Bounded"): a batch's recipients are written in
 * several short transactions, one `notification-updated` per user per batch; a failure between
 * two chunks (a crash after the first one committed) resumes after the last committed chunk, so
 * every watcher gets exactly one notification and exactly one badge event naming it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { NotificationsBackground } from '../src/notifications/background.ts';
import { waitUntil } from './common.ts';
import { DIALECTS, type Res, type TestApp, startApp } from './helpers.ts';

const ok = (res: Res, status = 200): Res => {
  assert.equal(res.status, status, `${status} expected: ${res.text}`);
  return res;
};

for (const dialect of DIALECTS) {
  describe(`notification fan-out in chunks (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(dialect);
    });
    after(async () => {
      await t.close();
    });

    it('a batch cut in chunks, interrupted after one, fans out once', { timeout: 60_000 }, async () => {
      const fanout = (t.deps.notifications as NotificationsBackground).fanout;
      fanout.chunkSize = 2;
      const alice = await t.user('alice');
      const base = '/api/v1/users/alice/repos/pub';
      ok(
        await t.req('POST', '/api/v1/users/alice/repos', {
          token: alice.token,
          body: { name: 'Pub', slug: 'pub', visibility: 'public' },
        }),
        201,
      );
      const watchers = [];
      for (let i = 0; i < 7; i++) {
        const w = await t.user(`w${i}`);
        ok(await t.req('PUT', `${base}/subscription`, { token: w.token, body: { level: 'watching' } }));
        watchers.push(w);
      }
      // the first chunk commits, then the loop fails (as a crash would) before the next one
      let commits = 0;
      let failed = false;
      fanout.onCommitted = () => {
        commits++;
        if (!failed) {
          failed = true;
          throw new Error('interrupted between chunks (test)');
        }
      };
      const errors: unknown[] = [];
      const log = console.error;
      console.error = (...args: unknown[]) => void errors.push(args);
      try {
        ok(await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'Hot', body: 'x' } }), 201);
        const uuids = watchers.map((w) => w.uuid);
        await waitUntil(
          async () => {
            const cursor = await t.deps.db.selectFrom('notification_dispatch').selectAll().executeTakeFirstOrThrow();
            const rows = await t.deps.db.selectFrom('notifications').select('uuid').where('user_uuid', 'in', uuids).execute();
            return rows.length === watchers.length && cursor.batch_end === null;
          },
          20_000,
          'the interrupted batch to finish',
        );
      } finally {
        console.error = log;
      }
      assert.ok(failed && errors.length >= 1, 'the loop failed once between chunks');
      assert.ok(commits >= 4, `7 watchers in chunks of 2: ${commits} chunks`);
      const updates = await t.deps.db
        .selectFrom('events')
        .select(['payload', 'scopes'])
        .where('kind', '=', 'notification-updated')
        .execute();
      const touched = new Map<string, number>();
      for (const u of updates) {
        const p = JSON.parse(u.payload) as { user_uuid: string; notification_uuids: string[] };
        assert.deepEqual(JSON.parse(u.scopes), [`user:${p.user_uuid}`], 'a badge event is in its user scope only');
        for (const id of p.notification_uuids) touched.set(id, (touched.get(id) ?? 0) + 1);
      }
      for (const w of watchers) {
        const rows = await t.deps.db
          .selectFrom('notifications')
          .select(['uuid', 'reason'])
          .where('user_uuid', '=', w.uuid)
          .execute();
        assert.equal(rows.length, 1);
        assert.equal(rows[0]!.reason, 'subscribed');
        assert.equal(touched.get(rows[0]!.uuid), 1, `${w.username}'s notification fanned out once`);
      }
      fanout.onCommitted = null;
      fanout.chunkSize = 1000;
    });
  });
}
