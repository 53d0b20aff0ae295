/**
 * Schedule maths through HTTP with an injected clock: weekly times across the daylight-saving
 * changes of Europe/Berlin and America/New_York, and day sets across a week boundary.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { ManualClock, firedEvents } from './timers-helpers.ts';

for (const dialect of DIALECTS) {
  describe(`timer schedules across daylight saving and week boundaries (${dialect})`, () => {
    let t: TestApp;
    let clock: ManualClock;
    let alice: Person;
    let bob: Person;

    before(async () => {
      clock = ManualClock.at('2026-11-20T10:00:00.000Z');
      // The scheduler is driven by hand (runDue) against the manual clock; its idle poll is long.
      t = await startApp(dialect, { deps: { clock, timers: { pollMs: 60_000 } } });
      alice = await t.user('alice');
      bob = await t.user('bob');
    });
    after(async () => t.close());

    const userPath = (u: Person) => `/api/v1/users/${u.username}/timers`;
    const create = (u: Person, body: Record<string, unknown>) => t.req('POST', userPath(u), { token: u.token, body });

    for (const [zone, spring, fall, springLocal, fallFirst] of [
      // Europe/Berlin: 2026-03-29 02:00→03:00, 2026-10-25 03:00→02:00.
      ['Europe/Berlin', '2026-03-22T12:00:00Z', '2026-10-18T12:00:00Z', '2026-03-29T01:00:00.000Z', '2026-10-25T00:30:00.000Z'],
      // America/New_York: 2026-03-08 02:00→03:00, 2026-11-01 02:00→01:00 (02:30 is not repeated there).
      [
        'America/New_York',
        '2026-03-01T12:00:00Z',
        '2026-10-25T12:00:00Z',
        '2026-03-08T07:00:00.000Z',
        '2026-11-01T07:30:00.000Z',
      ],
    ] as const) {
      it(`follows the wall clock of ${zone} across spring-forward and fall-back for a weekly 02:30`, async () => {
        clock.set(spring);
        const made = await create(alice, { message: `dst ${zone}`, time_of_day: '02:30', days_of_week: ['Sun'], timezone: zone });
        assert.equal(made.status, 201, made.text);
        const path = `${userPath(alice)}/${made.body.uuid}`;
        const next = async () => (await t.req('GET', path, { token: alice.token })).body;
        // The skipped 02:30 runs when the clocks jump to 03:00.
        assert.equal(made.body.next_run_at, springLocal);
        clock.set(springLocal);
        await t.deps.timers.runDue();
        const after1 = await next();
        assert.equal(after1.run_count, 1);
        // The following Sunday: 02:30 summer time again.
        const summer = zone === 'Europe/Berlin' ? '2026-04-05T00:30:00.000Z' : '2026-03-15T06:30:00.000Z';
        assert.equal(after1.next_run_at, summer);

        // Fall back: one run on the day, at the first 02:30; then winter time.
        await t.req('PATCH', path, { token: alice.token, body: { status: 'paused' } });
        clock.set(fall);
        const resumed = await t.req('PATCH', path, { token: alice.token, body: { status: 'active' } });
        assert.equal(resumed.body.next_run_at, fallFirst);
        clock.set(fallFirst);
        await t.deps.timers.runDue();
        clock.advance(3 * 3600_000); // past any second 02:30 of that day
        await t.deps.timers.runDue();
        const after2 = await next();
        assert.equal(after2.run_count, 2);
        const winter = zone === 'Europe/Berlin' ? '2026-11-01T01:30:00.000Z' : '2026-11-08T07:30:00.000Z';
        assert.equal(after2.next_run_at, winter);
        assert.equal((await firedEvents(t, made.body.uuid, alice.token)).length, 2);
        await t.req('DELETE', path, { token: alice.token });
      });
    }

    it('runs a Mon/Fri set across a week boundary', async () => {
      clock.set('2026-11-20T17:00:00Z'); // Friday 18:00 in Berlin, after the 09:00 run
      const made = await create(bob, {
        message: 'mon-fri',
        time_of_day: '09:00',
        days_of_week: ['Fri', 'Mon'],
        timezone: 'Europe/Berlin',
      });
      const path = `${userPath(bob)}/${made.body.uuid}`;
      assert.equal(made.body.next_run_at, '2026-11-23T08:00:00.000Z'); // Monday
      const seen: string[] = [];
      for (let i = 0; i < 4; i++) {
        const cur = (await t.req('GET', path, { token: bob.token })).body;
        seen.push(cur.next_run_at);
        clock.set(cur.next_run_at);
        await t.deps.timers.runDue();
      }
      assert.deepEqual(seen, [
        '2026-11-23T08:00:00.000Z',
        '2026-11-27T08:00:00.000Z',
        '2026-11-30T08:00:00.000Z',
        '2026-12-04T08:00:00.000Z',
      ]);
      const fired = await firedEvents(t, made.body.uuid, bob.token);
      assert.deepEqual(
        fired.map((e) => e.payload.scheduled_for),
        seen,
      );
      await t.req('DELETE', path, { token: bob.token });
    });

    it('runs a time repeated by fall-back once, at its first occurrence (America/New_York 01:30)', async () => {
      clock.set('2026-10-31T12:00:00Z'); // Saturday; on Sunday 2026-11-01 01:00-02:00 happens twice
      const made = await create(alice, {
        message: 'repeated hour',
        time_of_day: '01:30',
        days_of_week: ['Sun'],
        timezone: 'America/New_York',
      });
      assert.equal(made.status, 201, made.text);
      assert.equal(made.body.next_run_at, '2026-11-01T05:30:00.000Z'); // 01:30 EDT, the first one
      clock.set('2026-11-01T05:30:00.000Z');
      assert.equal(await t.deps.timers.runDue(), 1);
      clock.set('2026-11-01T06:30:00.000Z'); // 01:30 EST, the second one: nothing is due
      assert.equal(await t.deps.timers.runDue(), 0);
      const path = `${userPath(alice)}/${made.body.uuid}`;
      const cur = (await t.req('GET', path, { token: alice.token })).body;
      assert.equal(cur.run_count, 1);
      assert.equal(cur.next_run_at, '2026-11-08T06:30:00.000Z'); // the next Sunday, winter time
      assert.equal((await firedEvents(t, made.body.uuid, alice.token)).length, 1);
      await t.req('DELETE', path, { token: alice.token });
    });
  });
}
