/**
 * The inbox (docs/notifications.md): reasons, never the actor, never an unreadable subject (a
 * member removed loses it, added back gets it back), read/done, counts, paging, filters, the
 * subscriptions (watch levels, per-subject overrides), and `notification-updated` for that user
 * only; two instances on one PostgreSQL database fan each event out once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fanoutSettled } from './common.ts';
import { seedCommit } from './git-fixtures.ts';
import { DIALECTS, type Res, type TestApp, startApp } from './helpers.ts';
import { pageReq, signIn } from './web-helpers.ts';

const ok = (res: Res, status = 200): Res => {
  assert.equal(res.status, status, `${status} expected: ${res.text}`);
  return res;
};

type Who = { token: string; uuid: string; username: string };

const settled = fanoutSettled;

const inbox = async (t: TestApp, who: Who, query = '') =>
  ok(await t.req('GET', `/api/v1/notifications${query}`, { token: who.token })).body.results as Array<{
    uuid: string;
    subject: { kind: string; repo: string; number: number; title: string; url: string };
    reason: string;
    reasons: string[];
    unread: boolean;
    done: boolean;
    last_actor: { username: string } | null;
  }>;
const count = async (t: TestApp, who: Who) =>
  ok(await t.req('GET', '/api/v1/notifications/count', { token: who.token })).body.unread as number;

for (const dialect of DIALECTS) {
  describe(`notifications (${dialect})`, () => {
    let t: TestApp;
    let alice: Who;
    let bob: Who;
    let carol: Who;
    let dave: Who;
    const base = '/api/v1/teams/crew/repos/tool';
    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
      dave = await t.user('dave');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Crew', slug: 'crew' } }), 201);
      for (const u of ['bob', 'carol'])
        ok(await t.req('POST', '/api/v1/teams/crew/members', { token: alice.token, body: { username: u, role: 'member' } }), 201);
      ok(await t.req('POST', '/api/v1/teams/crew/repos', { token: alice.token, body: { name: 'Tool', slug: 'tool' } }), 201);
    });
    after(async () => {
      await t.close();
    });

    it('reasons, never the actor, never who cannot read; read, done, unread again, counts', async () => {
      ok(
        await t.req('POST', `${base}/threads`, {
          token: alice.token,
          body: { title: 'Broken build', body: 'cc @carol and @crew, also @dave. `@bob` in code is no mention.' },
        }),
        201,
      );
      await settled(t);
      assert.deepEqual(await inbox(t, alice), [], 'the actor gets nothing');
      assert.deepEqual(await inbox(t, dave), [], 'a user who cannot read the repo gets nothing');
      const [c1] = await inbox(t, carol);
      assert.equal(c1!.reason, 'mention');
      assert.deepEqual(c1!.subject, {
        kind: 'thread',
        repo: 'crew/tool',
        number: 1,
        title: 'Broken build',
        url: `${t.deps.config.publicUrl}/teams/crew/tool/threads/1`,
      });
      assert.equal(c1!.unread, true);
      assert.equal(c1!.last_actor!.username, 'alice');
      const [b1] = await inbox(t, bob);
      assert.equal(b1!.reason, 'team_mention');
      assert.equal(await count(t, bob), 1);

      // bob replies: alice (author) is notified, bob (the actor) is not touched, carol (mentioned before) is
      ok(await t.req('POST', `${base}/threads/1/replies`, { token: bob.token, body: { body: 'Looking.' } }), 201);
      await settled(t);
      const [a1] = await inbox(t, alice);
      assert.equal(a1!.reason, 'author');
      assert.equal((await inbox(t, bob))[0]!.last_actor!.username, 'alice', 'the actor is not notified of their own reply');

      // carol marks hers done: it leaves the default list and the count; new activity brings it back on top, unread
      ok(await t.req('PATCH', `/api/v1/notifications/${c1!.uuid}`, { token: carol.token, body: { done: true } }));
      assert.equal(await count(t, carol), 0);
      assert.deepEqual(await inbox(t, carol), []);
      assert.equal((await inbox(t, carol, '?state=done')).length, 1);
      // another user's uuid is 404
      ok(await t.req('PATCH', `/api/v1/notifications/${c1!.uuid}`, { token: bob.token, body: { unread: false } }), 404);
      ok(await t.req('GET', `/api/v1/notifications/${c1!.uuid}`, { token: dave.token }), 404);
      // alice assigns carol: reason assigned, reasons keep the mention first
      ok(await t.req('PATCH', `${base}/threads/1`, { token: alice.token, body: { assignees: ['carol'] } }));
      await settled(t);
      const [c2] = await inbox(t, carol);
      assert.equal(c2!.uuid, c1!.uuid, 'one notification per (user, subject)');
      assert.equal(c2!.reason, 'assigned');
      assert.deepEqual(c2!.reasons, ['mention', 'assigned']);
      assert.equal(c2!.unread, true);
      assert.equal(c2!.done, false);

      // a second thread by bob: newest first; paging; reason filter; mark-read
      ok(await t.req('POST', `${base}/threads`, { token: bob.token, body: { title: 'Second', body: 'for @alice' } }), 201);
      await settled(t);
      const two = await inbox(t, alice);
      assert.deepEqual(
        two.map((n) => n.subject.number),
        [2, 1],
      );
      assert.deepEqual(
        (await inbox(t, alice, '?per_page=1&page=2')).map((n) => n.subject.number),
        [1],
      );
      // paging by keyset: `next` carries `after`; a bad cursor is 400
      const first = ok(await t.req('GET', '/api/v1/notifications?per_page=1', { token: alice.token })).body as {
        next: string;
        results: Array<{ subject: { number: number } }>;
      };
      assert.match(first.next, /after=/);
      const second = ok(await t.req('GET', first.next, { token: alice.token })).body as {
        next: string | null;
        results: Array<{ subject: { number: number } }>;
      };
      assert.deepEqual(
        second.results.map((n) => n.subject.number),
        [1],
      );
      assert.equal(second.next, null);
      ok(await t.req('GET', '/api/v1/notifications?after=bogus', { token: alice.token }), 400);
      assert.deepEqual(
        (await inbox(t, alice, '?reason=mention')).map((n) => n.subject.number),
        [2],
      );
      assert.deepEqual(await inbox(t, alice, '?repo=crew/other'), []);
      assert.equal((await inbox(t, alice, '?repo=crew/tool')).length, 2);
      assert.equal(await count(t, alice), 2);
      assert.equal(ok(await t.req('POST', '/api/v1/notifications/mark-read', { token: alice.token, body: {} })).body.marked, 2);
      assert.equal(await count(t, alice), 0);
      assert.equal((await inbox(t, alice, '?state=read')).length, 2);
      ok(await t.req('GET', '/api/v1/notifications?state=bogus', { token: alice.token }), 400);
    });

    it('a member removed loses the notification; added back, it returns', async () => {
      assert.equal((await inbox(t, bob)).length, 1);
      ok(await t.req('DELETE', '/api/v1/teams/crew/members/bob', { token: alice.token }), 204);
      assert.deepEqual(await inbox(t, bob), []);
      assert.equal(await count(t, bob), 0);
      // activity meanwhile does not reach him (checked at fan-out time too)
      ok(await t.req('POST', `${base}/threads/1/replies`, { token: alice.token, body: { body: 'ping @bob' } }), 201);
      await settled(t);
      ok(
        await t.req('POST', '/api/v1/teams/crew/members', { token: alice.token, body: { username: 'bob', role: 'member' } }),
        201,
      );
      const back = await inbox(t, bob);
      assert.equal(back.length, 1);
      assert.ok(!back[0]!.reasons.includes('mention'), 'the mention while he could not read it was not recorded');
    });

    it('watch levels and per-subject overrides', async () => {
      ok(await t.req('GET', `${base}/subscription`, { token: dave.token }), 404);
      assert.deepEqual(ok(await t.req('GET', `${base}/subscription`, { token: carol.token })).body, { level: 'participating' });
      assert.deepEqual(ok(await t.req('PUT', `${base}/subscription`, { token: carol.token, body: { level: 'watching' } })).body, {
        level: 'watching',
      });
      ok(await t.req('PUT', `${base}/subscription`, { token: carol.token, body: { level: 'loud' } }), 400);
      ok(await t.req('POST', `${base}/threads`, { token: bob.token, body: { title: 'Third' } }), 201);
      await settled(t);
      const third = (await inbox(t, carol)).find((n) => n.subject.number === 3);
      assert.equal(third?.reason, 'subscribed');
      assert.deepEqual(ok(await t.req('GET', `${base}/threads/3/subscription`, { token: carol.token })).body, {
        subscribed: true,
        explicit: false,
        level: 'watching',
      });

      // ignoring: nothing but direct mentions
      ok(await t.req('PUT', `${base}/subscription`, { token: carol.token, body: { level: 'ignoring' } }));
      ok(await t.req('POST', `${base}/threads`, { token: bob.token, body: { title: 'Fourth' } }), 201);
      ok(await t.req('POST', `${base}/threads`, { token: bob.token, body: { title: 'Fifth', body: '@carol look' } }), 201);
      await settled(t);
      const numbers = (await inbox(t, carol)).map((n) => n.subject.number);
      assert.ok(!numbers.includes(4) && numbers.includes(5), `ignoring: ${numbers}`);
      ok(await t.req('DELETE', `${base}/subscription`, { token: carol.token }));

      // alice mutes her own thread 1: bob's reply does not reach her; subscribing back does
      const before1 = (await inbox(t, alice, '?state=all')).find((n) => n.subject.number === 1)!;
      assert.deepEqual(
        ok(await t.req('PUT', `${base}/threads/1/subscription`, { token: alice.token, body: { subscribed: false } })).body,
        { subscribed: false, explicit: true, level: 'participating' },
      );
      ok(await t.req('POST', `${base}/threads/1/replies`, { token: bob.token, body: { body: 'more' } }), 201);
      await settled(t);
      const after1 = (await inbox(t, alice, '?state=all')).find((n) => n.subject.number === 1)!;
      assert.equal(after1.last_actor!.username, before1.last_actor!.username);
      assert.equal(after1.unread, false);
      ok(await t.req('GET', `${base}/threads/99/subscription`, { token: alice.token }), 404);
      ok(await t.req('DELETE', `${base}/threads/1/subscription`, { token: alice.token }));

      // dave subscribes to nothing he cannot read
      ok(await t.req('PUT', `${base}/threads/1/subscription`, { token: dave.token, body: { subscribed: true } }), 404);
    });

    it('pulls: review_requested, state_change, comment; notification-updated for that user only', async () => {
      const repoUuid = ok(await t.req('GET', base, { token: alice.token })).body.uuid as string;
      await seedCommit(t, repoUuid, 'feature/x', { onto: 'main' });
      ok(
        await t.req('POST', `${base}/pulls`, {
          token: bob.token,
          body: { title: 'Change', body: 'Fixes it', source_branch: 'feature/x', target_branch: 'main' },
        }),
        201,
      );
      ok(await t.req('POST', `${base}/pulls/1/reviews`, { token: alice.token, body: { status: 'commented', body: 'Hm' } }), 201);
      ok(await t.req('POST', `${base}/pulls/1/requested-reviewers`, { token: bob.token, body: { usernames: ['carol'] } }));
      await settled(t);
      const pullOf = async (who: Who) => (await inbox(t, who, '?state=all')).find((n) => n.subject.kind === 'pull');
      assert.equal((await pullOf(carol))?.reason, 'review_requested');
      assert.equal((await pullOf(bob))?.reason, 'author');
      ok(await t.req('PUT', `${base}/pulls/1`, { token: alice.token, body: { status: 'closed' } }));
      await settled(t);
      assert.equal((await pullOf(bob))?.reason, 'state_change');
      assert.equal((await pullOf(carol))?.last_actor?.username, 'alice');
      const mine1 = await pullOf(alice);
      assert.equal(mine1?.reason, 'comment');
      assert.equal(mine1?.last_actor?.username, 'bob', 'the closer is not notified');
      assert.deepEqual(ok(await t.req('GET', `${base}/pulls/1/subscription`, { token: carol.token })).body, {
        subscribed: true,
        explicit: false,
        level: 'participating',
      });

      // the user's scope carries notification-updated, to them only (not to staff)
      const mine = ok(await t.req('GET', `/api/v1/events?scope=user:${carol.uuid}&per_page=100`, { token: carol.token })).body
        .results as Array<{ kind: string; payload: { user_uuid: string } }>;
      assert.ok(mine.some((e) => e.kind === 'notification-updated' && e.payload.user_uuid === carol.uuid));
      const staff = ok(await t.req('GET', `/api/v1/events?scope=user:${carol.uuid}&per_page=100`)).body.results as Array<{
        kind: string;
      }>;
      assert.ok(!staff.some((e) => e.kind === 'notification-updated'));
    });

    it('the inbox page: tabs, grouping, reasons, mark read and done without JavaScript; the badge count', async () => {
      const b = await signIn(t, 'carol');
      const page = await pageReq(t, 'GET', '/notifications?tab=all', { cookie: b.cookie });
      assert.equal(page.status, 200, page.text);
      assert.match(page.text, /id="inbox-link"/);
      assert.match(page.text, /<h2>crew\/tool<\/h2>/);
      assert.match(page.text, /review requested/);
      const first = (await inbox(t, carol))[0]!;
      const done = await pageReq(t, 'POST', `/notifications/${first.uuid}/done`, {
        cookie: b.cookie,
        form: { _csrf: b.csrf, back: '/notifications?tab=done' },
      });
      assert.equal(done.status, 303, done.text);
      assert.equal(done.headers.location, '/notifications?tab=done');
      assert.ok((await inbox(t, carol, '?state=done')).some((n) => n.uuid === first.uuid));
      const marked = await pageReq(t, 'POST', '/notifications/mark-read', { cookie: b.cookie, form: { _csrf: b.csrf } });
      assert.equal(marked.status, 303);
      const counted = await pageReq(t, 'GET', '/api/v1/notifications/count', { cookie: b.cookie });
      assert.deepEqual(JSON.parse(counted.text), { unread: 0 });
      assert.equal((await pageReq(t, 'GET', '/notifications')).status === 200, false, 'signed out: no inbox');
    });
  });
}

for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`two instances fan each event out once (${dialect})`, () => {
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

    it('every thread mentioning carol gives her one notification, touched once', { timeout: 120_000 }, async () => {
      const alice = await a.user('alice');
      const carol = await a.user('carol');
      await a.req('POST', '/api/v1/users/alice/repos', {
        token: alice.token,
        body: { name: 'Pub', slug: 'pub', visibility: 'public' },
      });
      const N = 40;
      await Promise.all(
        [a, b].map(async (app, k) => {
          for (let i = k; i < N; i += 2)
            ok(
              await app.req('POST', '/api/v1/users/alice/repos/pub/threads', {
                token: alice.token,
                body: { title: `T${i}`, body: '@carol' },
              }),
              201,
            );
        }),
      );
      await settled(a);
      const rows = await a.deps.db.selectFrom('notifications').selectAll().where('user_uuid', '=', carol.uuid).execute();
      assert.equal(rows.length, N);
      const updates = await a.deps.db.selectFrom('events').select('payload').where('kind', '=', 'notification-updated').execute();
      const touched = new Map<string, number>();
      for (const u of updates)
        for (const id of JSON.parse(u.payload).notification_uuids as string[]) touched.set(id, (touched.get(id) ?? 0) + 1);
      for (const r of rows) assert.equal(touched.get(r.uuid), 1, `notification ${r.uuid} touched once`);
    });
  });
}
