/**
 * Watchers read their repos' activity (docs/notifications.md "Watchers"): the fan-out writes a
 * subject's activity once, not a notification per watcher; a watcher's inbox takes it in when it
 * is read (list, one notification, a mark; the count counts it without taking it in) with the
 * fan-out's semantics: reason `subscribed`, unread again and on top after new activity (also when done), never the watcher's
 * own activity, never a subject they unsubscribed from, only what they can read now (what they
 * cannot read waits, and comes in with access), nothing from before they started watching; the
 * badge of a watcher's open page hears of it (a live signal, on every instance); watchers who get
 * mail are written at once; two instances reading one inbox at once take each activity in once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fanoutSettled } from './common.ts';
import { DIALECTS, type Res, type TestApp, startApp } from './helpers.ts';
import { listen, openSse } from './sse-client.ts';

const ok = (res: Res, status = 200): Res => {
  assert.equal(res.status, status, `${status} expected: ${res.text}`);
  return res;
};

type Who = { token: string; uuid: string; username: string };
type Note = {
  uuid: string;
  subject: { number: number; title: string };
  reason: string;
  reasons: string[];
  unread: boolean;
  done: boolean;
  last_actor: { username: string } | null;
};

const settled = fanoutSettled;

const inbox = async (t: TestApp, who: Who, query = '') =>
  ok(await t.req('GET', `/api/v1/notifications${query}`, { token: who.token })).body.results as Note[];
const count = async (t: TestApp, who: Who) =>
  ok(await t.req('GET', '/api/v1/notifications/count', { token: who.token })).body.unread as number;
/** The count (a read: the activity not taken in yet counted) is what the list then shows unread. */
const countIsList = async (t: TestApp, who: Who) => {
  const n = await count(t, who);
  assert.equal(n, (await inbox(t, who, '?state=unread')).length, 'the count is what the list shows unread');
  return n;
};
const rowsOf = async (t: TestApp, who: Who) =>
  t.deps.db.selectFrom('notifications').select('uuid').where('user_uuid', '=', who.uuid).execute();

for (const dialect of DIALECTS) {
  describe(`watchers read their repos' activity (${dialect})`, () => {
    let t: TestApp;
    let owner: Who;
    let w1: Who;
    let w2: Who;
    let late: Who;
    const base = '/api/v1/teams/crew/repos/tool';
    before(async () => {
      t = await startApp(dialect);
      owner = await t.user('owner');
      w1 = await t.user('w1');
      w2 = await t.user('w2');
      late = await t.user('late');
      ok(await t.req('POST', '/api/v1/teams', { token: owner.token, body: { name: 'Crew', slug: 'crew' } }), 201);
      for (const u of ['w1', 'w2', 'late'])
        ok(await t.req('POST', '/api/v1/teams/crew/members', { token: owner.token, body: { username: u, role: 'member' } }), 201);
      ok(await t.req('POST', '/api/v1/teams/crew/repos', { token: owner.token, body: { name: 'Tool', slug: 'tool' } }), 201);
      for (const w of [w1, w2]) ok(await t.req('PUT', `${base}/subscription`, { token: w.token, body: { level: 'watching' } }));
    });
    after(async () => {
      await t.close();
    });

    it('one activity row, not a notification per watcher; taken in on read with the fan-out’s fields', async () => {
      // w1's badge: a live stream of its own scope asking for notification-updated (as the header's)
      const stream = await openSse(
        await listen(t),
        `/api/v1/tail-events?scope=user:${w1.uuid}&kind=notification-updated`,
        w1.token,
      );
      assert.equal(stream.status, 200);
      ok(await t.req('POST', `${base}/threads`, { token: owner.token, body: { title: 'One', body: 'x' } }), 201);
      ok(await t.req('POST', `${base}/threads/1/replies`, { token: owner.token, body: { body: 'more' } }), 201);
      await settled(t);
      assert.equal((await rowsOf(t, w1)).length, 0, 'nothing written for a watcher by the fan-out');
      const activity = await t.deps.db.selectFrom('watch_activity').selectAll().execute();
      assert.equal(activity.length, 1);
      // the badge heard of it: a signal on its stream (not stored: nothing per watcher is written)
      await stream.waitFor(
        (frames) => frames.some((f) => f.event === 'notification-updated' && JSON.parse(f.data).user_uuid === w1.uuid),
        10_000,
      );
      stream.close();
      const stored = ok(await t.req('GET', `/api/v1/events?scope=user:${w1.uuid}&per_page=100`, { token: w1.token })).body
        .results as Array<{ kind: string }>;
      assert.ok(!stored.some((e) => e.kind === 'notification-updated'));

      assert.equal(await count(t, w1), 1);
      assert.equal((await rowsOf(t, w1)).length, 0, 'counted, not taken in: the count is a read');
      const [n] = await inbox(t, w1);
      assert.equal(n!.subject.title, 'One');
      assert.equal(n!.reason, 'subscribed');
      assert.deepEqual(n!.reasons, ['subscribed']);
      assert.equal(n!.unread, true);
      assert.equal(n!.last_actor?.username, 'owner');
      assert.equal((await rowsOf(t, w1)).length, 1, 'taken in once');
      assert.equal((await inbox(t, w1)).length, 1, 'and not again');
      // one notification by uuid takes in too (w2 has not read anything yet)
      ok(await t.req('GET', `/api/v1/notifications/${n!.uuid}`, { token: w2.token }), 404);
      assert.equal((await inbox(t, w2))[0]!.subject.title, 'One');
    });

    it('read, then new activity: unread and on top again; done, then new activity: not done', async () => {
      ok(await t.req('POST', `${base}/threads`, { token: owner.token, body: { title: 'Two', body: 'x' } }), 201);
      await settled(t);
      let list = await inbox(t, w1);
      assert.deepEqual(
        list.map((n) => n.subject.title),
        ['Two', 'One'],
      );
      const one = list[1]!;
      ok(await t.req('PATCH', `/api/v1/notifications/${one.uuid}`, { token: w1.token, body: { unread: false } }));
      assert.equal(await count(t, w1), 1);
      ok(await t.req('POST', `${base}/threads/1/replies`, { token: owner.token, body: { body: 'again' } }), 201);
      await settled(t);
      assert.equal(await countIsList(t, w1), 2);
      list = await inbox(t, w1);
      assert.deepEqual(
        list.map((n) => [n.subject.title, n.unread, n.uuid === one.uuid || n.subject.title !== 'One']),
        [
          ['One', true, true],
          ['Two', true, true],
        ],
      );
      ok(await t.req('PATCH', `/api/v1/notifications/${one.uuid}`, { token: w1.token, body: { done: true } }));
      assert.deepEqual(
        (await inbox(t, w1)).map((n) => n.subject.title),
        ['Two'],
      );
      ok(await t.req('POST', `${base}/threads/1/replies`, { token: owner.token, body: { body: 'and again' } }), 201);
      await settled(t);
      assert.equal(await countIsList(t, w1), 2, 'the done one is unread again');
      const back = (await inbox(t, w1)).find((n) => n.uuid === one.uuid);
      assert.ok(back && back.unread && !back.done, 'new activity undoes done');
      // mark all read takes in first, then marks
      ok(await t.req('POST', `${base}/threads/2/replies`, { token: owner.token, body: { body: 'x' } }), 201);
      await settled(t);
      const marked = ok(await t.req('POST', '/api/v1/notifications/mark-read', { token: w1.token, body: {} })).body.marked;
      assert.equal(marked, 2);
      assert.equal(await count(t, w1), 0);
    });

    it('not their own activity, not a subject they unsubscribed from', async () => {
      await inbox(t, w2);
      ok(await t.req('POST', '/api/v1/notifications/mark-read', { token: w2.token, body: {} }));
      ok(await t.req('POST', `${base}/threads/2/replies`, { token: w2.token, body: { body: 'mine' } }), 201);
      await settled(t);
      const two = (await inbox(t, w2, '?state=all')).find((n) => n.subject.title === 'Two')!;
      assert.equal(two.unread, false, 'their own reply is no news to them');
      assert.notEqual(two.last_actor?.username, 'w2');
      ok(await t.req('PUT', `${base}/threads/1/subscription`, { token: w2.token, body: { subscribed: false } }));
      ok(await t.req('POST', `${base}/threads/1/replies`, { token: owner.token, body: { body: 'hush' } }), 201);
      await settled(t);
      assert.equal((await inbox(t, w2)).find((n) => n.subject.title === 'One')?.unread ?? false, false);
      assert.equal(await countIsList(t, w2), 0);
    });

    it('a new watcher starts from now; leaving a repo takes in what was not read', async () => {
      ok(await t.req('PUT', `${base}/subscription`, { token: late.token, body: { level: 'watching' } }));
      assert.equal(await count(t, late), 0, 'the repo’s past is not news');
      ok(await t.req('PUT', `${base}/subscription`, { token: late.token, body: { level: 'watching' } }));
      ok(await t.req('POST', `${base}/threads`, { token: owner.token, body: { title: 'Three', body: 'x' } }), 201);
      await settled(t);
      ok(await t.req('PUT', `${base}/subscription`, { token: late.token, body: { level: 'participating' } }));
      assert.deepEqual(
        (await inbox(t, late)).map((n) => n.subject.title),
        ['Three'],
      );
    });

    it('only what they can read now: removed, the activity waits; back, it comes in', async () => {
      ok(await t.req('DELETE', '/api/v1/teams/crew/members/w2', { token: owner.token }), 204);
      ok(await t.req('POST', `${base}/threads`, { token: owner.token, body: { title: 'Four', body: 'x' } }), 201);
      await settled(t);
      assert.equal(await count(t, w2), 0);
      assert.ok(!(await inbox(t, w2, '?state=all')).some((n) => n.subject.title === 'Four'));
      ok(
        await t.req('POST', '/api/v1/teams/crew/members', { token: owner.token, body: { username: 'w2', role: 'member' } }),
        201,
      );
      assert.ok((await inbox(t, w2)).some((n) => n.subject.title === 'Four' && n.unread));
    });

    it('a token restricted to another repo counts none of this one’s activity', async () => {
      const other = ok(
        await t.req('POST', '/api/v1/teams/crew/repos', { token: owner.token, body: { name: 'Other', slug: 'other' } }),
        201,
      ).body;
      const restricted = ok(
        await t.req('POST', '/api/v1/api-tokens', {
          token: w1.token,
          body: { name: 'one repo', scopes: ['read:user'], repos: [other.uuid] },
        }),
        201,
      ).body;
      ok(await t.req('POST', `${base}/threads`, { token: owner.token, body: { title: 'Five', body: 'x' } }), 201);
      await settled(t);
      assert.equal(ok(await t.req('GET', '/api/v1/notifications/count', { token: restricted.token })).body.unread, 0);
      assert.ok((await countIsList(t, w1)) >= 1, 'the unrestricted token counts it');
    });
  });
}

for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`two instances take a watcher's activity in once (${dialect})`, () => {
    let a: Awaited<ReturnType<typeof startApp>>;
    let b: TestApp;
    before(async () => {
      a = await startApp(dialect);
      b = await startApp(dialect, { store: a.store });
    });
    after(async () => {
      await b.close();
      await a.close();
    });

    it('counts and lists read at once on both instances: one notification per subject', { timeout: 60_000 }, async () => {
      const owner = await a.user('owner');
      const w = await a.user('watcher');
      ok(
        await a.req('POST', '/api/v1/users/owner/repos', {
          token: owner.token,
          body: { name: 'Pub', slug: 'pub', visibility: 'public' },
        }),
        201,
      );
      ok(await a.req('PUT', '/api/v1/users/owner/repos/pub/subscription', { token: w.token, body: { level: 'watching' } }));
      for (let i = 0; i < 6; i++)
        ok(await a.req('POST', '/api/v1/users/owner/repos/pub/threads', { token: owner.token, body: { title: `T${i}` } }), 201);
      await settled(a);
      const counts = await Promise.all(
        [a, b, a, b, a, b].map(
          async (app) => ok(await app.req('GET', '/api/v1/notifications/count', { token: w.token })).body.unread,
        ),
      );
      assert.deepEqual(counts, [6, 6, 6, 6, 6, 6]);
      const stored = () => a.deps.db.selectFrom('notifications').select('subject_uuid').where('user_uuid', '=', w.uuid).execute();
      assert.equal((await stored()).length, 0, 'the count is a read: it takes nothing in');
      const lists = await Promise.all(
        [a, b, a, b, a, b].map(
          async (app) => ok(await app.req('GET', '/api/v1/notifications', { token: w.token })).body.results.length as number,
        ),
      );
      assert.deepEqual(lists, [6, 6, 6, 6, 6, 6]);
      const rows = await stored();
      assert.equal(rows.length, 6);
      assert.equal(new Set(rows.map((r) => r.subject_uuid)).size, 6);
    });
  });
}
