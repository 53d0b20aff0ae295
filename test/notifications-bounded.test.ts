/**
 * The fan-out in chunks (docs/notifications.md "Bounded"): a batch's recipients are written in
 * several short transactions, one `notification-updated` per user per batch; a failure between
 * two chunks (a crash after the first one committed) resumes after the last committed chunk, so
 * every watcher gets exactly one notification and exactly one badge event naming it. A batch over
 * several subjects is one statement per range for all of them (watchers and holders), with the
 * reasons, the access rule and the actor rule of the fan-out.
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
      // every range on the background writer (on SQLite a worker thread's connection), however small
      (t.deps.notifications as NotificationsBackground).fanout.writerFrom = 0;
      // every watcher written by the fan-out (as those who get mail are), not read in later
      (t.deps.notifications as NotificationsBackground).fanout.writeEveryWatcher = true;
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

    it(
      'one batch over several subjects and ranges: watchers, a holder, the author; not the actor nor an inactive user',
      { timeout: 60_000 },
      async () => {
        const fanout = (t.deps.notifications as NotificationsBackground).fanout;
        const settled = async () => {
          const top = await t.deps.db
            .selectFrom('events')
            .select((eb) => eb.fn.max('id').as('id'))
            .where('kind', '!=', 'notification-updated')
            .executeTakeFirst();
          await waitUntil(
            async () =>
              Number(
                (await t.deps.db.selectFrom('notification_dispatch').select('last_event_id').executeTakeFirstOrThrow())
                  .last_event_id,
              ) >= Number(top?.id ?? 0),
            20_000,
            'the fan-out',
          );
        };
        const alice = await t.user('amy');
        const holder = await t.user('holder');
        const base = '/api/v1/users/amy/repos/many';
        ok(
          await t.req('POST', '/api/v1/users/amy/repos', {
            token: alice.token,
            body: { name: 'Many', slug: 'many', visibility: 'public' },
          }),
          201,
        );
        const watchers = [];
        for (let i = 0; i < 5; i++) {
          const w = await t.user(`v${i}`);
          ok(await t.req('PUT', `${base}/subscription`, { token: w.token, body: { level: 'watching' } }));
          watchers.push(w);
        }
        const [actor, inactive, ...others] = watchers as [
          (typeof watchers)[number],
          (typeof watchers)[number],
          ...typeof watchers,
        ];
        ok(await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'One', body: 'cc @holder' } }), 201);
        ok(await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'Two', body: 'x' } }), 201);
        ok(await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'Three', body: 'x' } }), 201);
        await settled();
        await t.deps.db.updateTable('users').set({ is_active: 0 }).where('uuid', '=', inactive.uuid).execute();
        const top = Number(
          (
            await t.deps.db
              .selectFrom('events')
              .select((eb) => eb.fn.max('id').as('id'))
              .executeTakeFirst()
          )?.id ?? 0,
        );

        // three replies, one per thread, fanned out as one batch cut in ranges of one or two users
        await fanout.stop();
        for (const n of [1, 2, 3])
          ok(await t.req('POST', `${base}/threads/${n}/replies`, { token: actor.token, body: { body: 'hi' } }), 201);
        const ranges = fanout.stats.ranges;
        const batches = fanout.stats.batches;
        fanout.chunkSize = 4;
        fanout.start();
        await settled();
        fanout.chunkSize = 1000;
        assert.equal(fanout.stats.batches - batches, 1, 'one batch');
        assert.ok(fanout.stats.ranges - ranges >= 3, `several ranges: ${fanout.stats.ranges - ranges}`);

        const replies = await t.deps.db
          .selectFrom('events')
          .select('id')
          .where('kind', '=', 'reply-created')
          .where('id', '>', top)
          .execute();
        const replyIds = new Set(replies.map((r) => Number(r.id)));
        assert.equal(replyIds.size, 3);
        const rows = async (who: { uuid: string }) =>
          t.deps.db.selectFrom('notifications').selectAll().where('user_uuid', '=', who.uuid).orderBy('subject_uuid').execute();
        for (const w of others) {
          const mine = await rows(w);
          assert.equal(mine.length, 3, `${w.username}: one notification per thread`);
          assert.deepEqual(new Set(mine.map((n) => Number(n.last_event_id))), replyIds, `${w.username}: each thread's reply`);
          for (const n of mine) {
            assert.equal(n.reason, 'subscribed');
            assert.deepEqual(JSON.parse(n.reasons), ['subscribed']);
            assert.equal(n.unread, 1);
            assert.equal(n.last_actor_uuid, actor.uuid);
          }
        }
        for (const who of [actor, inactive]) {
          const mine = await rows(who);
          assert.ok(mine.length >= 2, `${who.username} was notified of the threads`);
          for (const n of mine) assert.ok(Number(n.last_event_id) <= top, `${who.username} not notified of the replies`);
        }
        const held = await rows(holder);
        assert.equal(held.length, 1, 'the holder: the thread that mentions them only');
        assert.equal(held[0]!.reason, 'mention', 'a holder keeps their reason');
        assert.deepEqual(JSON.parse(held[0]!.reasons), ['mention']);
        assert.ok(replyIds.has(Number(held[0]!.last_event_id)));
        const authored = await rows(alice);
        assert.equal(authored.length, 3);
        for (const n of authored) assert.ok(replyIds.has(Number(n.last_event_id)) && n.reason === 'author');

        // one badge event per user for the batch, naming all of that user's changed notifications
        const updates = await t.deps.db
          .selectFrom('events')
          .select('payload')
          .where('kind', '=', 'notification-updated')
          .where('id', '>', Math.max(...replyIds))
          .execute();
        const perUser = new Map<string, string[][]>();
        for (const u of updates) {
          const p = JSON.parse(u.payload) as { user_uuid: string; notification_uuids: string[] };
          perUser.set(p.user_uuid, [...(perUser.get(p.user_uuid) ?? []), p.notification_uuids]);
        }
        for (const who of [...others, holder, alice]) {
          const events = perUser.get(who.uuid) ?? [];
          assert.equal(events.length, 1, `${who.username}: one notification-updated`);
          assert.deepEqual(new Set(events[0]), new Set((await rows(who)).map((n) => n.uuid)));
        }
        for (const who of [actor, inactive]) assert.equal(perUser.get(who.uuid), undefined, `${who.username}: no badge event`);
      },
    );
  });
}
