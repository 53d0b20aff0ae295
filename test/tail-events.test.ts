import type { EventKind } from '../src/events/kinds.ts';
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { inTransaction } from '../src/core/transaction.ts';
import { AccessRecheck, TAIL } from '../src/activity/tail.ts';
import type { Person } from './common.ts';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Frame, eventFrames, listen, openSse } from './sse-client.ts';

/** GET /tail-events over a real socket (README "Live event stream"). */
for (const dialect of DIALECTS) {
  describe(`GET /tail-events (${dialect})`, () => {
    let t: TestApp;
    let base: string;
    let alice: Person;
    let bob: Person;
    const aliceScope = () => `user:${alice.uuid}`;
    const tail = (query: string, token = alice.token, headers: Record<string, string> = {}) =>
      openSse(base, `/api/v1/tail-events?${query}`, token, headers);
    const emit = (scope: string, kind: EventKind = 'user-mention', payload: Record<string, unknown> = {}) =>
      inTransaction(t.deps, (tx) => tx.emit({ kind, scopes: [scope], actor: null, payload }));
    const ids = (frames: Frame[]) => eventFrames(frames).map((f) => f.id!);
    const streamsIdle = async () => {
      for (let i = 0; i < 200 && t.deps.live.subscriberCount > 0; i++) await new Promise((r) => setTimeout(r, 25));
    };
    /**
     * Waits until `n` streams are subscribed to the hub. A stream's first frame is written before
     * it subscribes, and an event committed before that is no longer live for it (a client
     * without a resume point starts from the hub's cursor, README "Live event stream").
     */
    const subscribed = async (n: number) => {
      for (let i = 0; i < 400 && t.deps.live.subscriberCount < n; i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(t.deps.live.subscriberCount >= n, `${n} streams subscribed`);
    };

    before(async () => {
      t = await startApp(dialect);
      base = await listen(t);
      alice = await t.user('alice');
      bob = await t.user('bob');
    });
    after(async () => {
      await t.close();
    });

    it('streams new events live in the decided frame format', async () => {
      const sse = await tail(`scope=${aliceScope()}`);
      try {
        assert.equal(sse.status, 200);
        assert.match(String(sse.headers['content-type']), /^text\/event-stream/);
        await sse.waitFor((f) => f.length >= 1);
        assert.ok(sse.raw().startsWith('retry: 3000\n'), JSON.stringify(sse.raw().slice(0, 40)));
        await new Promise((r) => setTimeout(r, 100));
        const event = await emit(aliceScope(), 'user-mention', { n: 1 });
        const created = await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'live' } });
        assert.equal(created.status, 201);
        await sse.waitFor((f) => eventFrames(f).length >= 2);
        const frames = eventFrames(sse.frames);
        assert.equal(frames[0]!.id, event.id);
        assert.equal(frames[0]!.event, 'user-mention');
        assert.deepEqual(JSON.parse(frames[0]!.data), event);
        assert.equal(frames[1]!.event, 'token-created');
        assert.ok(Number(frames[1]!.id) > Number(frames[0]!.id));
        assert.ok(sse.raw().includes(`id: ${event.id}\nevent: user-mention\ndata: {`), 'fields with a space after the colon');
        // Nothing of other scopes.
        await emit(`user:${bob.uuid}`);
        await emit(aliceScope(), 'invite-accepted');
        await sse.waitFor((f) => eventFrames(f).some((x) => x.event === 'invite-accepted'));
        assert.equal(eventFrames(sse.frames).length, 3);
      } finally {
        sse.close();
      }
      await streamsIdle();
      assert.equal(t.deps.live.subscriberCount, 0, 'a client that leaves is unsubscribed');
    });

    it('resumes after Last-Event-ID (it wins over last_event_id), with the events made while away', async () => {
      const first = await emit(aliceScope(), 'invite-created');
      const sse = await tail(`scope=${aliceScope()}&kind=invite-created&last_event_id=${first.id}`);
      const second = await emit(aliceScope(), 'invite-created');
      await sse.waitFor((f) => ids(f).includes(second.id));
      sse.close();
      // Disconnected: these happen while nobody listens.
      const away = [await emit(aliceScope(), 'invite-created'), await emit(aliceScope(), 'invite-created')];
      const again = await tail(`scope=${aliceScope()}&kind=invite-created&last_event_id=0`, alice.token, {
        'last-event-id': second.id,
      });
      try {
        const live = await emit(aliceScope(), 'invite-created');
        await again.waitFor((f) => ids(f).includes(live.id));
        assert.deepEqual(ids(again.frames), [...away.map((e) => e.id), live.id]);
      } finally {
        again.close();
      }
      // Without a resume point, only new events.
      const fresh = await tail(`scope=${aliceScope()}&kind=invite-created`);
      try {
        const next = await emit(aliceScope(), 'invite-created');
        await fresh.waitFor((f) => ids(f).includes(next.id));
        assert.deepEqual(ids(fresh.frames), [next.id]);
      } finally {
        fresh.close();
      }
    });

    it('a resume racing concurrent writers misses nothing and repeats nothing, over thousands of events', async () => {
      const scope = aliceScope();
      const kind: EventKind = 'invite-updated';
      const start = await emit(scope, kind, { n: -1 });
      const total = 2000;
      let made = 0;
      const writer = async (w: number) => {
        while (made < total) {
          made += 4;
          await inTransaction(t.deps, async (tx) => {
            for (let i = 0; i < 4; i++) await tx.emit({ kind, scopes: [scope], actor: null, payload: { w, i } });
          });
        }
      };
      const writers = Promise.all([0, 1, 2, 3, 4, 5].map(writer));
      // Connect (resuming from the start) while the writers run, and again mid-way from where it got.
      await new Promise((r) => setTimeout(r, 30));
      const one = await tail(`scope=${scope}&kind=${kind}`, alice.token, { 'last-event-id': start.id });
      await one.waitFor((f) => eventFrames(f).length >= 300, 30_000);
      one.close();
      const got = ids(one.frames);
      const two = await tail(`scope=${scope}&kind=${kind}`, alice.token, { 'last-event-id': got.at(-1)! });
      try {
        await writers;
        const stored = await t.deps.db
          .selectFrom('event_scopes')
          .select('event_id')
          .where('scope', '=', scope)
          .where('event_id', '>', Number(start.id))
          .orderBy('event_id')
          .execute();
        const expected = stored.map((r) => String(r.event_id));
        await two.waitFor((f) => ids(f).at(-1) === expected.at(-1), 30_000);
        const all = [...got, ...ids(two.frames)];
        assert.equal(new Set(all).size, all.length, 'no duplicate');
        assert.deepEqual(all, expected, 'every event once, in id order');
        assert.ok(expected.length >= total);
      } finally {
        two.close();
      }
    });

    it('html=true sends a sanitised HTML fragment, one data: line per line', async () => {
      await streamsIdle();
      const sse = await tail(`scope=${aliceScope()}&html=true&kind=invite-deleted`);
      try {
        await sse.waitFor((f) => f.length >= 1);
        await subscribed(1);
        const event = await emit(aliceScope(), 'invite-deleted', { body: '**hi** @bob <script>alert(1)</script>', n: 3 });
        await sse.waitFor((f) => ids(f).includes(event.id));
        const frame = eventFrames(sse.frames)[0]!;
        assert.equal(frame.event, 'invite-deleted');
        assert.ok(frame.data.startsWith(`<article id="event-${event.id}"`), frame.data);
        assert.ok(frame.data.includes('<strong>hi</strong>'));
        assert.ok(frame.data.includes('<a href="/users/bob" class="mention"'), frame.data);
        assert.ok(!/<script/i.test(frame.data));
        assert.ok(frame.data.split('\n').length > 2, 'several lines');
        assert.ok(!sse.raw().includes('\n<'), 'every line of HTML is its own data: field');
      } finally {
        sse.close();
      }
    });

    it('kind keeps one kind; an unknown kind is an empty stream', async () => {
      await streamsIdle();
      const some = await tail(`scope=${aliceScope()}&kind=rate-limit-created`);
      const none = await tail(`scope=${aliceScope()}&kind=no-such-kind`);
      try {
        await subscribed(2);
        await emit(aliceScope(), 'rate-limit-deleted');
        const wanted = await emit(aliceScope(), 'rate-limit-created');
        await some.waitFor((f) => ids(f).includes(wanted.id));
        assert.deepEqual(ids(some.frames), [wanted.id]);
        assert.equal(none.status, 200);
        assert.deepEqual(ids(none.frames), []);
      } finally {
        some.close();
        none.close();
      }
    });

    it('refuses bad input with 400 and invisible scopes with 404, changing nothing', async () => {
      const cases: Array<[string, Record<string, string>, number]> = [
        ['', {}, 400],
        ['scope=nope', {}, 400],
        [`scope=user:${alice.uuid.toUpperCase()}`, {}, 400],
        [`scope=${aliceScope()}&html=maybe`, {}, 400],
        [`scope=${aliceScope()}&last_event_id=abc`, {}, 400],
        [`scope=${aliceScope()}`, { 'last-event-id': 'x1' }, 400],
        [`scope=${aliceScope()}`, { 'last-event-id': '-5' }, 400],
        [`scope=user:${bob.uuid}`, {}, 404],
        [`scope=repo:00000000-0000-4000-8000-000000000000`, {}, 404],
      ];
      for (const [query, headers, status] of cases) {
        const res = await tail(query, alice.token, headers);
        try {
          await res.ended(5000);
          assert.equal(res.status, status, `${query} ${JSON.stringify(headers)}: ${res.raw()}`);
          const body = JSON.parse(res.raw());
          assert.equal(typeof body.error, 'string');
          assert.equal(typeof body.detail, 'string');
        } finally {
          res.close();
        }
      }
      const anonymous = await t.req('GET', `/api/v1/tail-events?scope=${aliceScope()}`, { token: null });
      assert.equal(anonymous.status, 401);
    });

    it('stops streaming to a revoked token and to a user removed from the team, within seconds', async () => {
      const carol = await t.user('carol');
      const team = await seedTeam(t, 'live-team', [
        { uuid: alice.uuid, role: 'owner' },
        { uuid: carol.uuid, role: 'member' },
      ]);
      const repo = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'live-repo');
      const second = await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'to-revoke' } });
      await streamsIdle();
      const revoked = await tail(`scope=repo:${repo.uuid}`, second.body.token as string);
      const removed = await tail(`scope=repo:${repo.uuid}`, carol.token);
      const kept = await tail(`scope=repo:${repo.uuid}`, alice.token);
      try {
        for (const s of [revoked, removed, kept]) assert.equal(s.status, 200, s.raw());
        await subscribed(3);
        const one = await emit(`repo:${repo.uuid}`, 'settings-updated');
        for (const s of [revoked, removed, kept]) await s.waitFor((f) => ids(f).includes(one.id));
        assert.equal((await t.req('PUT', `/api/v1/api-tokens/${second.body.uuid}/revoke`, { token: alice.token })).status, 200);
        assert.equal((await t.req('DELETE', `/api/v1/teams/live-team/members/carol`, { token: alice.token })).status, 204);
        const began = Date.now();
        await revoked.ended(5000);
        await removed.ended(5000);
        assert.ok(Date.now() - began < 5000);
        const two = await emit(`repo:${repo.uuid}`, 'settings-updated');
        await kept.waitFor((f) => ids(f).includes(two.id));
        assert.ok(!ids(revoked.frames).includes(two.id));
        assert.ok(!ids(removed.frames).includes(two.id));
        assert.ok(!kept.isEnded());
      } finally {
        for (const s of [revoked, removed, kept]) s.close();
      }
    });

    it('drops a client that does not read, without holding up the others', async () => {
      await streamsIdle();
      const slow = await tail(`scope=${aliceScope()}&kind=rate-limit-updated`);
      const fast = await tail(`scope=${aliceScope()}&kind=rate-limit-updated`);
      try {
        await slow.waitFor((f) => f.length >= 1);
        await fast.waitFor((f) => f.length >= 1);
        await subscribed(2);
        slow.pause();
        const big = 'x'.repeat(20_000);
        let last = '';
        for (let i = 0; i < 400; i++) {
          last = (await emit(aliceScope(), 'rate-limit-updated', { big, i })).id;
          if (i % 20 === 19) await new Promise((r) => setTimeout(r, 20));
        }
        await fast.waitFor((f) => ids(f).includes(last), 30_000);
        assert.equal(eventFrames(fast.frames).length, 400);
        for (let i = 0; i < 300 && t.deps.live.subscriberCount > 1; i++) await new Promise((r) => setTimeout(r, 25));
        assert.equal(t.deps.live.subscriberCount, 1, 'the slow client was dropped');
      } finally {
        slow.close();
        fast.close();
      }
    });

    it('ends open streams when the server shuts down', async () => {
      const other = await startApp(dialect);
      const otherBase = await listen(other);
      const sse = await openSse(
        otherBase,
        `/api/v1/tail-events?scope=user:00000000-0000-4000-8000-000000000000`,
        other.adminToken,
      );
      assert.equal(sse.status, 404);
      const admin = await other.req('GET', '/api/v1/user');
      const live = await openSse(otherBase, `/api/v1/tail-events?scope=user:${admin.body.uuid}`, other.adminToken);
      await live.waitFor((f) => f.length >= 1);
      const began = Date.now();
      await other.close();
      await live.ended(5000);
      assert.ok(Date.now() - began < 5000);
      sse.close();
      live.close();
    });
  });
}

/** The per-instance bound on stream access re-checks (README "Live event stream"). */
describe('AccessRecheck', () => {
  // The checks run from a queue, a few at a time: let it drain (all within microtasks here).
  const drained = () => new Promise((resolve) => setImmediate(resolve));

  it('re-checks every key each recheckMs while few, and spreads many keys to maxRechecksPerSecond', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
    const saved = TAIL.maxRechecksPerSecond;
    TAIL.maxRechecksPerSecond = 100;
    try {
      const recheck = new AccessRecheck();
      let calls = 0;
      const fn = async () => {
        calls++;
        return true;
      };
      // Few keys: answers are reused within recheckMs, then checked again.
      for (const key of ['a', 'b']) void recheck.check(key, fn);
      void recheck.check('a', fn);
      await drained();
      assert.equal(calls, 2);
      t.mock.timers.tick(TAIL.recheckMs);
      for (const key of ['a', 'b']) void recheck.check(key, fn);
      await drained();
      assert.equal(calls, 4, 'each of two keys re-checked after recheckMs');

      // 1,000 keys at 100 checks a second: each answer lasts 10 s, so streams asking every
      // recheckMs cause about 100 checks a second, not 1,000 / 1.5 s.
      const recheckMany = new AccessRecheck();
      calls = 0;
      const keys = Array.from({ length: 1000 }, (_, i) => `k${i}`);
      for (const key of keys) void recheckMany.check(key, fn);
      await drained();
      assert.equal(calls, 1000);
      assert.equal(recheckMany.ttlMs(), 10_000);
      calls = 0;
      for (let step = 0; step < 6; step++) {
        t.mock.timers.tick(TAIL.recheckMs);
        for (const key of keys) void recheckMany.check(key, fn);
      }
      await drained();
      assert.equal(calls, 0, 'no key re-checked within 9 s');
      t.mock.timers.tick(TAIL.recheckMs);
      for (const key of keys) void recheckMany.check(key, fn);
      await drained();
      assert.equal(calls, 1000, 'every key re-checked once its answer is 10 s old');

      // Keys no stream asks about any more are forgotten, and the period shrinks back.
      t.mock.timers.tick(10_000 + 3 * TAIL.recheckMs);
      void recheckMany.check('fresh', fn);
      assert.equal(recheckMany.ttlMs(), TAIL.recheckMs - 100);
    } finally {
      TAIL.maxRechecksPerSecond = saved;
    }
  });

  it('runs at most maxRechecksInFlight checks at once; streams keep the previous answer meanwhile', async (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 1_000_000 });
    const recheck = new AccessRecheck();
    let running = 0;
    let most = 0;
    const release: Array<() => void> = [];
    let answer = true;
    const fn = () =>
      new Promise<boolean>((resolve) => {
        most = Math.max(most, ++running);
        release.push(() => {
          running--;
          resolve(answer);
        });
      });
    const firsts = Array.from({ length: 10 }, (_, i) => recheck.check(`k${i}`, fn));
    await drained();
    assert.equal(running, TAIL.maxRechecksInFlight);
    while (release.length) {
      release.shift()!();
      await drained();
    }
    assert.deepEqual(await Promise.all(firsts), Array(10).fill(true));
    assert.equal(most, TAIL.maxRechecksInFlight);

    // Stale: the old answer is given while the renewal runs, the new one once it is in.
    t.mock.timers.tick(TAIL.recheckMs);
    answer = false;
    assert.equal(await recheck.check('k0', fn), true);
    await drained();
    assert.equal(running, 1);
    release.shift()!();
    await drained();
    assert.equal(await recheck.check('k0', fn), false);
  });
});
