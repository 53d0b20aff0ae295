/**
 * The timer scheduler as a background part: catch-up after downtime, several instances on one
 * database, waking for the next due timer, noticing other instances' changes, stopping cleanly.
 * (A server killed while firing: test/timers-crash.test.ts.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DIALECTS, startApp } from './helpers.ts';
import { ManualClock, firedEvents, firedTimerUuids, insertDueTimers, waitForFiring } from './timers-helpers.ts';

const START = '2026-11-20T10:00:00.000Z'; // a Friday

for (const dialect of DIALECTS) {
  describe(`timer scheduler across restarts (${dialect})`, () => {
    it('catches up missed occurrences once after downtime, then continues from the next future one', async () => {
      const clock = ManualClock.at(START);
      const first = await startApp(dialect, { deps: { clock, timers: { pollMs: 60_000 } } });
      const store = first.store;
      const u = await first.user('sleeper');
      const iv = await first.req('POST', `/api/v1/users/${u.username}/timers`, {
        token: u.token,
        body: { message: 'tick', every_seconds: 60 },
      });
      const wk = await first.req('POST', `/api/v1/users/${u.username}/timers`, {
        token: u.token,
        body: { message: 'weekly', time_of_day: '10:30', days_of_week: ['Fri', 'Sat'] },
      });
      const once = await first.req('POST', `/api/v1/users/${u.username}/timers`, {
        token: u.token,
        body: { message: 'once', run_in: '2m' },
      });
      // Stop the first server without dropping its database.
      await first.app.close();
      const { stopBackground } = await import('../src/root.ts');
      await stopBackground(first.deps);
      await first.deps.database.close();

      clock.set('2026-11-22T10:00:30.000Z'); // two days later: ~2,880 interval runs and two weekly runs were missed
      const second = await startApp(dialect, { store, deps: { clock, timers: { pollMs: 60_000 } } });
      try {
        // The restarted scheduler fires on start; runDue waits for that pass.
        await second.deps.timers.runDue();
        for (const [made, nextAt] of [
          [iv, '2026-11-22T10:01:00.000Z'],
          [wk, '2026-11-27T10:30:00.000Z'],
        ] as const) {
          const cur = await second.req('GET', `/api/v1/users/${u.username}/timers/${made.body.uuid}`, { token: u.token });
          assert.equal(cur.body.run_count, 1, made.body.message);
          assert.equal(cur.body.next_run_at, nextAt);
          assert.equal(cur.body.last_run_at, clock.now().toISOString());
          const ev = await firedEvents(second, made.body.uuid, u.token);
          assert.equal(ev.length, 1);
          assert.equal(ev[0].payload.scheduled_for, made.body.next_run_at);
        }
        const o = await second.req('GET', `/api/v1/users/${u.username}/timers/${once.body.uuid}`, { token: u.token });
        assert.equal(o.body.status, 'completed');
        assert.equal(o.body.run_count, 1);
        assert.equal(await second.deps.timers.runDue(), 0);
      } finally {
        await second.close();
        await store.drop();
      }
    });

    // A server killed while firing: test/timers-crash.test.ts kills a real server process.

    const oneProcessOnly = dialect === 'sqlite' ? 'an SQLite file serves one server process' : false;
    it(
      'fires each of many timers due at once exactly once with two instances on one database',
      { skip: oneProcessOnly },
      async () => {
        const a = await startApp(dialect);
        const b = await startApp(dialect, { store: a.store });
        try {
          const u = await a.user('burst');
          const N = 400;
          const due = new Date(Date.now() + 1500).toISOString();
          await insertDueTimers(
            a.deps.db,
            u.uuid,
            N,
            () => due,
            (i) => `burst ${i} @burst`,
          );
          // Both background schedulers notice them by their short poll; hand-driven passes on both add contention.
          await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(due) - Date.now())));
          await Promise.all([a.deps.timers.runDue(), b.deps.timers.runDue(), a.deps.timers.runDue(), b.deps.timers.runDue()]);
          await Promise.all([a.deps.timers.runDue(), b.deps.timers.runDue()]);
          const uuids = await firedTimerUuids(a.deps.db);
          assert.equal(uuids.length, N);
          assert.equal(new Set(uuids).size, N);
          const counts = await a.deps.db.selectFrom('timers').select(['run_count', 'status', 'schedule_kind']).execute();
          for (const c of counts) {
            assert.equal(c.run_count, 1);
            assert.equal(c.status, c.schedule_kind === 'once' ? 'completed' : 'active');
          }
        } finally {
          await b.close();
          await a.close();
        }
      },
    );

    it('notices timers created and paused on another instance by its short poll', { skip: oneProcessOnly }, async () => {
      const a = await startApp(dialect, { deps: { timers: { pollMs: 200 } } });
      const b = await startApp(dialect, { store: a.store });
      try {
        await b.deps.timers.stop(); // only instance a fires; b only takes the requests
        const u = await b.user('remote');
        const path = `/api/v1/users/${u.username}/timers`;
        const made = await b.req('POST', path, { token: u.token, body: { message: 'from b', run_in: '1s' } });
        const paused = await b.req('POST', path, { token: u.token, body: { message: 'paused on b', run_in: '1s' } });
        assert.equal(
          (await b.req('PATCH', `${path}/${paused.body.uuid}`, { token: u.token, body: { status: 'paused' } })).status,
          200,
        );
        const { events, lag } = await waitForFiring(a, made.body.uuid, u.token, made.body.next_run_at);
        assert.equal(events.length, 1);
        assert.ok(lag >= 0 && lag < 500, `lag ${lag} ms`);
        assert.equal((await firedEvents(a, paused.body.uuid, u.token)).length, 0);
        const p = await a.req('GET', `${path}/${paused.body.uuid}`, { token: u.token });
        assert.equal(p.body.status, 'paused');
        assert.equal(p.body.run_count, 0);
      } finally {
        await b.close();
        await a.close();
      }
    });

    it('fires a timer created with a real clock within well under a second', async () => {
      const t = await startApp(dialect);
      try {
        const u = await t.user('prompt');
        const runAt = new Date(Date.now() + 1500).toISOString();
        const made = await t.req('POST', `/api/v1/users/${u.username}/timers`, {
          token: u.token,
          body: { message: 'now', run_at: runAt },
        });
        assert.equal(made.status, 201);
        const { events, lag } = await waitForFiring(t, made.body.uuid, u.token, runAt);
        assert.equal(events.length, 1);
        assert.ok(lag >= 0 && lag < 500, `lag ${lag} ms`);
      } finally {
        await t.close();
      }
    });

    it('sleeps until the next due timer and is woken by a change, without polling', async () => {
      // A poll interval far beyond the test: only the wake-ups can make these fire on time.
      const t = await startApp(dialect, { deps: { timers: { pollMs: 600_000 } } });
      try {
        const u = await t.user('sleepy');
        const path = `/api/v1/users/${u.username}/timers`;
        const soon = await t.req('POST', path, {
          token: u.token,
          body: { message: 'soon', run_at: new Date(Date.now() + 1200).toISOString() },
        });
        const later = await t.req('POST', path, { token: u.token, body: { message: 'moved earlier', run_in: '1h' } });
        const movedTo = new Date(Date.now() + 800).toISOString();
        const moved = await t.req('PATCH', `${path}/${later.body.uuid}`, { token: u.token, body: { run_at: movedTo } });
        assert.equal(moved.status, 200, moved.text);
        for (const [made, dueAt] of [
          [soon, soon.body.next_run_at as string],
          [later, movedTo],
        ] as const) {
          const { events, lag } = await waitForFiring(t, made.body.uuid, u.token, dueAt);
          assert.equal(events.length, 1, made.body.message);
          assert.ok(lag >= 0 && lag < 500, `${made.body.message}: lag ${lag} ms`);
        }
      } finally {
        await t.close();
      }
    });

    it('stops cleanly: a firing in progress commits, then nothing fires', async () => {
      // Each firing transaction waits 400 ms after its claim, so stop() arrives mid-firing.
      const t = await startApp(dialect, { deps: { timers: { pollMs: 600_000, holdInFiringMs: 400 } } });
      try {
        const u = await t.user('stopper');
        const due = new Date(Date.now() - 1000).toISOString();
        const insert = (n: number, label: string) =>
          insertDueTimers(
            t.deps.db,
            u.uuid,
            n,
            () => due,
            (i) => `${label} ${i}`,
          );
        const first = await insert(5, 'before stop');
        t.deps.timers.wake();
        await new Promise((r) => setTimeout(r, 150));
        await t.deps.timers.stop();
        const fired = () => firedTimerUuids(t.deps.db);
        assert.deepEqual(new Set(await fired()), new Set(first), 'the pass under way committed before stop() returned');
        const second = await insert(3, 'after stop');
        t.deps.timers.wake();
        await t.req('POST', `/api/v1/users/${u.username}/timers`, { token: u.token, body: { message: 'x', run_in: '1s' } });
        await new Promise((r) => setTimeout(r, 1500));
        assert.equal((await fired()).length, 5, 'a stopped scheduler fires nothing');
        const rows = await t.deps.db.selectFrom('timers').select('run_count').where('uuid', 'in', second).execute();
        assert.deepEqual(
          rows.map((r) => r.run_count),
          [0, 0, 0],
        );
      } finally {
        await t.close();
      }
    });
  });
}
