import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import { ManualClock, firedEvents } from './timers-helpers.ts';

const START = '2026-11-20T10:00:00.000Z'; // a Friday

for (const dialect of DIALECTS) {
  describe(`timers (${dialect})`, () => {
    let t: TestApp;
    let clock: ManualClock;
    let alice: Person;
    let bob: Person;
    let carol: Person;

    before(async () => {
      clock = ManualClock.at(START);
      // The scheduler is driven by hand (runDue) against the manual clock; its idle poll is long.
      t = await startApp(dialect, { deps: { clock, timers: { pollMs: 60_000 } } });
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
    });
    after(async () => t.close());

    const userPath = (u: Person) => `/api/v1/users/${u.username}/timers`;
    const create = (u: Person, body: Record<string, unknown>, path = userPath(u)) =>
      t.req('POST', path, { token: u.token, body });
    /** Rows in the tables a timer change writes: bad input must leave both as they were. */
    const count = async () => {
      const n = async (table: 'timers' | 'events') =>
        Number(
          (
            await t.deps.db
              .selectFrom(table)
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirst()
          )?.n,
        );
      return { timers: await n('timers'), events: await n('events') };
    };

    it('creates a once timer from run_in and fills every field', async () => {
      clock.set(START);
      const res = await create(alice, { message: '  stand-up  ', run_in: '1h30m' });
      assert.equal(res.status, 201, res.text);
      const b = res.body;
      assert.deepEqual(Object.keys(b).sort(), [
        'created_at',
        'days_of_week',
        'every_seconds',
        'last_run_at',
        'message',
        'next_run_at',
        'run_at',
        'run_count',
        'schedule',
        'schedule_kind',
        'scope',
        'status',
        'time_of_day',
        'timezone',
        'uuid',
      ]);
      assert.equal(b.message, 'stand-up');
      assert.equal(b.scope, 'user');
      assert.equal(b.schedule_kind, 'once');
      assert.equal(b.run_at, '2026-11-20T11:30:00.000Z');
      assert.equal(b.next_run_at, '2026-11-20T11:30:00.000Z');
      assert.equal(b.every_seconds, null);
      assert.equal(b.time_of_day, '11:30');
      assert.deepEqual(b.days_of_week, ['Fri']);
      assert.equal(b.timezone, 'UTC');
      assert.equal(b.schedule, 'Once at 2026-11-20 11:30 (UTC)');
      assert.equal(b.status, 'active');
      assert.equal(b.run_count, 0);
      assert.equal(b.last_run_at, null);
      assert.equal(b.created_at, START);

      const iso = await create(alice, { message: 'x', run_in: 'PT90S', timezone: 'Europe/Berlin', status: 'paused' });
      assert.equal(iso.status, 201);
      assert.equal(iso.body.run_at, '2026-11-20T10:01:30.000Z');
      assert.equal(iso.body.time_of_day, '11:01');
      assert.equal(iso.body.schedule, 'Once at 2026-11-20 11:01:30 (Europe/Berlin)');
      assert.equal(iso.body.status, 'paused');

      for (const [runIn, seconds] of [
        ['90s', 90],
        ['15m', 900],
        ['2h', 7200],
        ['1d', 86_400],
        ['PT1H30M', 5400],
        ['P1DT2H', 93_600],
      ] as const) {
        const d = await create(alice, { message: runIn, run_in: runIn, status: 'paused' });
        assert.equal(d.status, 201, d.text);
        assert.equal(d.body.run_at, new Date(Date.parse(START) + seconds * 1000).toISOString(), runIn);
        await t.req('DELETE', `${userPath(alice)}/${d.body.uuid}`, { token: alice.token });
      }

      const got = await t.req('GET', `${userPath(alice)}/${b.uuid}`, { token: alice.token });
      assert.equal(got.status, 200);
      assert.deepEqual(got.body, b);
    });

    it('creates interval and weekly timers with their summaries', async () => {
      clock.set(START);
      const iv = await create(alice, { message: 'every 2h', every_seconds: 7200, run_at: '2026-11-20T12:00:00Z' });
      assert.equal(iv.status, 201, iv.text);
      assert.equal(iv.body.schedule_kind, 'interval');
      assert.equal(iv.body.every_seconds, 7200);
      assert.equal(iv.body.next_run_at, '2026-11-20T12:00:00.000Z');
      assert.equal(iv.body.schedule, 'Every 2 hours from 2026-11-20 12:00 (UTC)');
      const iv2 = await create(alice, { message: 'no anchor', every_seconds: 90 });
      assert.equal(iv2.body.next_run_at, '2026-11-20T10:01:30.000Z');
      assert.equal(iv2.body.run_at, '2026-11-20T10:01:30.000Z');

      const wk = await create(alice, {
        message: 'weekly',
        time_of_day: '09:00',
        days_of_week: ['Wed', 'Mon'],
        timezone: 'Europe/Berlin',
      });
      assert.equal(wk.status, 201, wk.text);
      assert.equal(wk.body.schedule_kind, 'weekly');
      assert.deepEqual(wk.body.days_of_week, ['Mon', 'Wed']);
      assert.equal(wk.body.run_at, null);
      assert.equal(wk.body.schedule, 'Every Mon, Wed at 09:00 (Europe/Berlin)');
      assert.equal(wk.body.next_run_at, '2026-11-23T08:00:00.000Z');
      const daily = await create(alice, {
        message: 'daily',
        time_of_day: '07:30',
        days_of_week: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'],
      });
      assert.equal(daily.body.schedule, 'Every day at 07:30 (UTC)');
      assert.equal(daily.body.next_run_at, '2026-11-21T07:30:00.000Z');
    });

    it('refuses bad input with 400 and writes nothing', async () => {
      clock.set(START);
      const before = await count();
      const bad: Record<string, unknown>[] = [
        { message: 'x', run_in: '0s' },
        { message: 'x', run_in: '-5m' },
        { message: 'x', run_in: '1y' },
        { message: 'x', run_in: 'abc' },
        { message: 'x', run_in: '' },
        { message: 'x', run_in: 'PT' },
        { message: 'x', run_in: 90 },
        { message: 'x', run_at: '2026-11-20T09:59:59Z' },
        { message: 'x', run_at: START },
        { message: 'x', run_at: 'tomorrow' },
        { message: 'x', run_at: '2026-02-30T10:00:00Z' },
        { message: 'x', every_seconds: 59 },
        { message: 'x', every_seconds: -60 },
        { message: 'x', every_seconds: 60.5 },
        { message: 'x', every_seconds: '60' },
        { message: 'x', every_seconds: 60, run_at: '2026-11-19T10:00:00Z' },
        { message: 'x', run_in: '1h', run_at: '2026-11-21T10:00:00Z' },
        { message: 'x', run_in: '1h', every_seconds: 60 },
        { message: 'x', run_in: '1h', time_of_day: '09:00', days_of_week: ['Mon'] },
        { message: 'x', every_seconds: 60, time_of_day: '09:00', days_of_week: ['Mon'] },
        { message: 'x', run_at: '2026-11-21T10:00:00Z', time_of_day: '09:00', days_of_week: ['Mon'] },
        { message: 'x', time_of_day: '24:00', days_of_week: ['Mon'] },
        { message: 'x', time_of_day: '9:5', days_of_week: ['Mon'] },
        { message: 'x', time_of_day: '09:60', days_of_week: ['Mon'] },
        { message: 'x', time_of_day: '09:00' },
        { message: 'x', days_of_week: ['Mon'] },
        { message: 'x', time_of_day: '09:00', days_of_week: [] },
        { message: 'x', time_of_day: '09:00', days_of_week: ['Mon', 'Mon'] },
        { message: 'x', time_of_day: '09:00', days_of_week: ['Monday'] },
        { message: 'x', time_of_day: '09:00', days_of_week: ['mon'] },
        { message: 'x', time_of_day: '09:00', days_of_week: ['Mon'], timezone: 'Mars/Olympus' },
        { message: 'x', time_of_day: '09:00', days_of_week: ['Mon'], timezone: '' },
        { message: 'x', run_in: '1h', timezone: 'Europe/Nowhere' },
        { message: 'x' },
        { message: 'x', timezone: 'UTC' },
        { message: 'y'.repeat(4001), run_in: '1h' },
        { message: '   ', run_in: '1h' },
        { run_in: '1h' },
        { message: 5, run_in: '1h' },
        { message: 'x', run_in: '1h', status: 'completed' },
        { message: 'x', run_in: '1h', status: 'cancelled' },
        { message: 'x', run_in: '1h', extra: true },
      ];
      for (const body of bad) {
        const res = await create(alice, body);
        assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 120)} → ${res.status} ${res.text}`);
        assert.ok(isErrorBody(res.body, 'invalid_request'), res.text);
      }
      assert.deepEqual(await count(), before);
      const edge = await create(alice, { message: ` ${'z'.repeat(4000)} `, run_in: '10d' });
      assert.equal(edge.status, 201);
      assert.equal(edge.body.message.length, 4000);
    });

    it('refuses a bad PATCH with 400 and changes nothing', async () => {
      clock.set(START);
      const made = await create(alice, { message: 'keep me', every_seconds: 600 });
      const path = `${userPath(alice)}/${made.body.uuid}`;
      const before = await count();
      for (const body of [
        { run_in: '0s' },
        { run_in: '1y' },
        { run_at: '2026-11-20T09:00:00Z' },
        { every_seconds: 59 },
        { run_in: '1h', every_seconds: 60 },
        { time_of_day: '24:00', days_of_week: ['Mon'] },
        { time_of_day: '09:00', days_of_week: ['Mon', 'Mon'] },
        { time_of_day: '09:00', days_of_week: ['Mon'], timezone: 'Mars/Olympus' },
        { message: 'y'.repeat(4001) },
        { message: '  ' },
        { status: 'completed' },
        { message: 'fine', run_in: 'abc' },
      ]) {
        const res = await t.req('PATCH', path, { token: alice.token, body });
        assert.equal(res.status, 400, `${JSON.stringify(body).slice(0, 80)} → ${res.status} ${res.text}`);
        assert.ok(isErrorBody(res.body, 'invalid_request'), res.text);
      }
      assert.deepEqual(await count(), before);
      assert.deepEqual((await t.req('GET', path, { token: alice.token })).body, made.body);
      await t.req('DELETE', path, { token: alice.token });
    });

    it('lists with a status filter and pages', async () => {
      clock.set(START);
      const a = await create(bob, { message: 'one', run_in: '1h' });
      clock.advance(1);
      const b = await create(bob, { message: 'two', run_in: '2h', status: 'paused' });
      clock.advance(1);
      const c = await create(bob, { message: 'three', run_in: '3h' });
      const all = await t.req('GET', `${userPath(bob)}?per_page=2`, { token: bob.token });
      assert.equal(all.status, 200);
      assert.deepEqual(
        all.body.results.map((r: { uuid: string }) => r.uuid),
        [a.body.uuid, b.body.uuid],
      );
      assert.ok(all.body.next.includes('page=2'));
      const paused = await t.req('GET', `${userPath(bob)}?status=paused`, { token: bob.token });
      assert.deepEqual(
        paused.body.results.map((r: { uuid: string }) => r.uuid),
        [b.body.uuid],
      );
      const active = await t.req('GET', `${userPath(bob)}?status=active`, { token: bob.token });
      assert.equal(active.body.results.length, 2);
      assert.ok(active.body.results.some((r: { uuid: string }) => r.uuid === c.body.uuid));
      assert.equal((await t.req('GET', `${userPath(bob)}?status=done`, { token: bob.token })).status, 400);
      assert.equal((await t.req('GET', `${userPath(bob)}?page=0`, { token: bob.token })).status, 400);
      assert.equal((await t.req('GET', `${userPath(bob)}?per_page=-1`, { token: bob.token })).status, 400);
    });

    it('keeps user timers private and reachable only through their scope', async () => {
      clock.set(START);
      const own = await create(carol, { message: 'mine', run_in: '1h' });
      const path = `${userPath(carol)}/${own.body.uuid}`;
      for (const token of [alice.token, t.adminToken]) {
        assert.equal((await t.req('GET', userPath(carol), { token })).status, 404);
        assert.equal((await t.req('GET', path, { token })).status, 404);
        assert.equal((await t.req('POST', userPath(carol), { token, body: { message: 'x', run_in: '1h' } })).status, 404);
        assert.equal((await t.req('PATCH', path, { token, body: { status: 'paused' } })).status, 404);
        assert.equal((await t.req('DELETE', path, { token })).status, 404);
      }
      assert.equal((await t.req('GET', path, { token: null })).status, 401);
      assert.equal((await t.req('GET', '/api/v1/users/nobody/timers', { token: carol.token })).status, 404);
      // Through another scope of the same caller: 404.
      const team = await seedTeam(t, 'carols', [{ uuid: carol.uuid, role: 'owner' }]);
      assert.equal(
        (await t.req('GET', `/api/v1/teams/${team.slug}/timers/${own.body.uuid}`, { token: carol.token })).status,
        404,
      );
      assert.equal((await t.req('GET', `${userPath(carol)}/not-a-uuid`, { token: carol.token })).status, 404);
    });

    it("hides a user timer's events from staff in every reader (user scope, activity, by id)", async () => {
      clock.set(START);
      const own = await create(carol, { message: 'private note', run_in: '1m' });
      assert.equal(own.status, 201, own.text);
      clock.advance(120_000);
      await t.deps.timers.runDue();
      const kinds = async (token: string, url: string) =>
        (await t.req('GET', url, { token })).body.results
          .filter((e: { payload: { timer_uuid?: string } }) => e.payload.timer_uuid === own.body.uuid)
          .map((e: { kind: string }) => e.kind)
          .sort();
      const scope = `/api/v1/events?scope=user:${carol.uuid}&per_page=100`;
      const activity = `/api/v1/users/${carol.username}/activity?per_page=100`;
      assert.deepEqual(await kinds(carol.token, scope), ['timer-created', 'timer-fired']);
      assert.deepEqual(await kinds(carol.token, activity), ['timer-created']);
      assert.deepEqual(await kinds(t.adminToken, scope), []);
      assert.deepEqual(await kinds(t.adminToken, activity), []);
      const ids = (await t.req('GET', scope, { token: carol.token })).body.results
        .filter((e: { payload: { timer_uuid?: string } }) => e.payload.timer_uuid === own.body.uuid)
        .map((e: { id: string }) => e.id);
      for (const id of ids) {
        assert.equal((await t.req('GET', `/api/v1/events/${id}`, { token: carol.token })).status, 200);
        const res = await t.req('GET', `/api/v1/events/${id}`, { token: t.adminToken });
        assert.equal(res.status, 404);
        assert.ok(isErrorBody(res.body, 'not_found'));
      }
    });

    it('lets only team owners (and staff) use team timers', async () => {
      clock.set(START);
      const owner = await t.user('towner');
      const member = await t.user('tmember');
      const outsider = await t.user('toutsider');
      const team = await seedTeam(t, 'timers-team', [
        { uuid: owner.uuid, role: 'owner' },
        { uuid: member.uuid, role: 'maintainer' },
      ]);
      const base = `/api/v1/teams/${team.slug}/timers`;
      const made = await create(owner, { message: 'team', run_in: '1h' }, base);
      assert.equal(made.status, 201);
      assert.equal(made.body.scope, 'team');
      const one = `${base}/${made.body.uuid}`;
      assert.equal((await t.req('GET', base, { token: member.token })).status, 403);
      assert.equal((await t.req('GET', one, { token: member.token })).status, 403);
      assert.equal((await create(member, { message: 'x', run_in: '1h' }, base)).status, 403);
      assert.equal((await t.req('GET', base, { token: outsider.token })).status, 404);
      assert.equal((await t.req('DELETE', one, { token: outsider.token })).status, 404);
      assert.equal((await t.req('GET', one, { token: t.adminToken })).status, 200);
      assert.equal((await t.req('PATCH', one, { token: owner.token, body: { message: 'renamed' } })).body.message, 'renamed');
      // An inactive team keeps its timers readable but refuses changes (staff excepted).
      await t.deps.db.updateTable('teams').set({ is_active: 0 }).where('uuid', '=', team.uuid).execute();
      assert.equal((await t.req('GET', one, { token: owner.token })).status, 200);
      const refused = await t.req('PATCH', one, { token: owner.token, body: { status: 'paused' } });
      assert.equal(refused.status, 403);
      assert.ok(isErrorBody(refused.body, 'team_inactive'));
      assert.equal((await t.req('PATCH', one, { token: t.adminToken, body: { status: 'paused' } })).status, 200);
      assert.equal((await t.req('DELETE', one, { token: owner.token })).status, 403);
    });

    it('reads repo timers with read access and manages them at maintain level, in both owner forms', async () => {
      clock.set(START);
      const maint = await t.user('rmaint');
      const writer = await t.user('rwriter');
      const reader = await t.user('rreader');
      const stranger = await t.user('rstranger');
      const team = await seedTeam(t, 'repo-team', [
        { uuid: maint.uuid, role: 'maintainer' },
        { uuid: writer.uuid, role: 'member' },
        { uuid: reader.uuid, role: 'reader' },
      ]);
      const repo = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'app');
      const base = `/api/v1/teams/${team.slug}/repos/${repo.slug}/timers`;
      const made = await create(maint, { message: 'release', run_in: '1d' }, base);
      assert.equal(made.status, 201, made.text);
      assert.equal(made.body.scope, 'repo');
      const one = `${base}/${made.body.uuid}`;
      assert.equal((await t.req('GET', base, { token: reader.token })).body.results.length, 1);
      assert.equal((await t.req('GET', one, { token: reader.token })).status, 200);
      assert.equal((await create(writer, { message: 'x', run_in: '1h' }, base)).status, 403);
      assert.equal((await t.req('PATCH', one, { token: reader.token, body: { status: 'paused' } })).status, 403);
      assert.equal((await t.req('DELETE', one, { token: writer.token })).status, 403);
      assert.equal((await t.req('GET', one, { token: stranger.token })).status, 404);

      const own = await seedRepo(t, { kind: 'user', uuid: alice.uuid }, 'notes');
      const userBase = `/api/v1/users/${alice.username}/repos/${own.slug}/timers`;
      const mine = await create(alice, { message: 'repo of mine', run_in: '1h' }, userBase);
      assert.equal(mine.status, 201);
      assert.equal((await t.req('GET', `${userBase}/${mine.body.uuid}`, { token: bob.token })).status, 404);
      // Reachable only through its own scope.
      assert.equal((await t.req('GET', `${userBase}/${made.body.uuid}`, { token: t.adminToken })).status, 404);
      assert.equal((await t.req('GET', `${userPath(alice)}/${mine.body.uuid}`, { token: alice.token })).status, 404);

      const archived = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'old', { is_archived: true });
      const res = await create(maint, { message: 'x', run_in: '1h' }, `/api/v1/teams/${team.slug}/repos/${archived.slug}/timers`);
      assert.equal(res.status, 403);
      assert.ok(isErrorBody(res.body, 'repo_archived'));
    });

    it('moves through active, paused, cancelled and completed; final timers are 409 timer_finished', async () => {
      clock.set(START);
      const made = await create(alice, { message: 'once', run_in: '10m' });
      const one = `${userPath(alice)}/${made.body.uuid}`;
      const patch = (body: Record<string, unknown>) => t.req('PATCH', one, { token: alice.token, body });
      assert.equal((await patch({ status: 'paused' })).body.status, 'paused');
      // Falls due while paused: nothing fires; resuming fires it promptly.
      clock.advance(20 * 60_000);
      await t.deps.timers.runDue();
      assert.equal((await firedEvents(t, made.body.uuid, alice.token)).length, 0);
      const resumed = await patch({ status: 'active' });
      assert.equal(resumed.body.status, 'active');
      assert.equal(resumed.body.next_run_at, clock.now().toISOString());
      await t.deps.timers.runDue();
      const done = (await t.req('GET', one, { token: alice.token })).body;
      assert.equal(done.status, 'completed');
      assert.equal(done.run_count, 1);
      assert.equal(done.last_run_at, clock.now().toISOString());
      for (const body of [{ status: 'active' }, { message: 'again' }, { run_in: '1h' }, { status: 'cancelled' }]) {
        const res = await patch(body);
        assert.equal(res.status, 409, JSON.stringify(body));
        assert.ok(isErrorBody(res.body, 'timer_finished'));
      }
      assert.equal((await patch({ status: 'completed' })).status, 400);
      assert.equal((await patch({ bogus: 1 })).status, 400);

      const iv = await create(alice, { message: 'interval', every_seconds: 3600 });
      const ivPath = `${userPath(alice)}/${iv.body.uuid}`;
      const cancelled = await t.req('PATCH', ivPath, { token: alice.token, body: { status: 'cancelled' } });
      assert.equal(cancelled.body.status, 'cancelled');
      assert.equal((await t.req('PATCH', ivPath, { token: alice.token, body: { status: 'active' } })).status, 409);
      assert.equal((await t.req('DELETE', ivPath, { token: alice.token })).status, 204);
      assert.equal((await t.req('GET', ivPath, { token: alice.token })).status, 404);

      // A replacement schedule recomputes next_run_at; interval resume skips past boundaries.
      const rs = await create(alice, { message: 'reschedule', every_seconds: 600 });
      const rsPath = `${userPath(alice)}/${rs.body.uuid}`;
      const weekly = await t.req('PATCH', rsPath, {
        token: alice.token,
        body: { time_of_day: '08:00', days_of_week: ['Tue'], timezone: 'America/New_York' },
      });
      assert.equal(weekly.status, 200, weekly.text);
      assert.equal(weekly.body.schedule_kind, 'weekly');
      assert.equal(weekly.body.every_seconds, null);
      assert.equal(weekly.body.schedule, 'Every Tue at 08:00 (America/New_York)');
      assert.equal(weekly.body.next_run_at, '2026-11-24T13:00:00.000Z');
      assert.equal(
        (await t.req('PATCH', rsPath, { token: alice.token, body: { time_of_day: '25:00', days_of_week: ['Tue'] } })).status,
        400,
      );
      assert.equal((await t.req('PATCH', rsPath, { token: alice.token, body: { timezone: 'UTC' } })).status, 400);
      const iv3 = await create(alice, { message: 'iv', every_seconds: 600, run_at: new Date(clock.ms + 60_000).toISOString() });
      const iv3Path = `${userPath(alice)}/${iv3.body.uuid}`;
      await t.req('PATCH', iv3Path, { token: alice.token, body: { status: 'paused' } });
      clock.advance(35 * 60_000);
      const back = await t.req('PATCH', iv3Path, { token: alice.token, body: { status: 'active' } });
      assert.equal(back.body.next_run_at, new Date(clock.ms + 60_000 - 35 * 60_000 + 4 * 600_000).toISOString());
      await t.req('DELETE', iv3Path, { token: alice.token });
      await t.req('DELETE', rsPath, { token: alice.token });
    });

    it('emits timer-created, -updated, -deleted in the timer and owner scopes', async () => {
      clock.set(START);
      const made = await create(bob, { message: 'events', run_in: '1h' });
      const one = `${userPath(bob)}/${made.body.uuid}`;
      await t.req('PATCH', one, { token: bob.token, body: { message: 'events!' } });
      const ev = await t.req('GET', `/api/v1/events?scope=timer:${made.body.uuid}`, { token: bob.token });
      assert.equal(ev.status, 200);
      assert.deepEqual(
        ev.body.results.map((e: { kind: string }) => e.kind),
        ['timer-created', 'timer-updated'],
      );
      assert.deepEqual(ev.body.results[0].scopes, [`timer:${made.body.uuid}`, `user:${bob.uuid}`]);
      assert.deepEqual(ev.body.results[1].payload.fields, ['message']);
      assert.equal((await t.req('GET', `/api/v1/events?scope=timer:${made.body.uuid}`, { token: alice.token })).status, 404);
      await t.req('DELETE', one, { token: bob.token });
      const owner = await t.req('GET', `/api/v1/events?scope=user:${bob.uuid}&kind=timer-deleted`, { token: bob.token });
      assert.equal(owner.body.results.at(-1).payload.timer_uuid, made.body.uuid);
    });

    it('fires with the message, sanitised HTML and mentions of active users only', async () => {
      clock.set(START);
      const dave = await t.user('dave');
      const erin = await t.user('erin');
      await t.deps.db.updateTable('users').set({ is_active: 0 }).where('uuid', '=', erin.uuid).execute();
      const made = await create(dave, {
        message: 'Ship it @alice and @erin and @ghost <script>x</script> `@bob` **now**',
        run_in: '5m',
      });
      clock.advance(5 * 60_000);
      await t.deps.timers.runDue();
      const events = await firedEvents(t, made.body.uuid, dave.token);
      assert.equal(events.length, 1);
      const e = events[0];
      assert.deepEqual(e.scopes, [`timer:${made.body.uuid}`, `user:${dave.uuid}`]);
      assert.equal(e.actor, null);
      assert.deepEqual(Object.keys(e.payload).sort(), [
        'mentions',
        'message',
        'message_html',
        'run_count',
        'scheduled_for',
        'timer_uuid',
      ]);
      assert.equal(e.payload.message, made.body.message);
      assert.deepEqual(e.payload.mentions, [{ uuid: alice.uuid, username: 'alice' }]);
      assert.equal(e.payload.run_count, 1);
      assert.equal(e.payload.scheduled_for, made.body.next_run_at);
      const html: string = e.payload.message_html;
      assert.ok(html.includes('class="mention"') && html.includes('/users/alice'), html);
      assert.ok(!html.includes('/users/erin') && html.includes('@erin'), html);
      assert.ok(!html.includes('/users/ghost') && html.includes('@ghost'), html);
      assert.ok(!html.includes('<script'), html);
      assert.ok(html.includes('<strong>now</strong>'), html);
      assert.ok(html.includes('<code>@bob</code>'), html);
      // Owner readers see it too.
      const mine = await t.req('GET', `/api/v1/events?scope=user:${dave.uuid}&kind=timer-fired`, { token: dave.token });
      assert.equal(mine.body.results.length, 1);
    });

    it('resolves mentions against the users active at firing time, not at creation', async () => {
      clock.set(START);
      const gina = await t.user('gina');
      const leaver = await t.user('leaver');
      const made = await create(gina, { message: 'Hello @leaver and @latecomer', run_in: '5m' });
      assert.equal(made.status, 201, made.text);
      await t.deps.db.updateTable('users').set({ is_active: 0 }).where('uuid', '=', leaver.uuid).execute();
      const late = await t.user('latecomer');
      clock.advance(5 * 60_000);
      await t.deps.timers.runDue();
      const [e] = await firedEvents(t, made.body.uuid, gina.token);
      assert.deepEqual(e.payload.mentions, [{ uuid: late.uuid, username: 'latecomer' }]);
      assert.ok(e.payload.message_html.includes('href="/users/latecomer"'), e.payload.message_html);
      assert.ok(!e.payload.message_html.includes('/users/leaver'), e.payload.message_html);
    });

    it('does not fire when the owner is gone', async () => {
      clock.set(START);
      const gone = await t.user('frank');
      const made = await create(gone, { message: 'every minute', every_seconds: 60 });
      await t.deps.db.updateTable('users').set({ is_active: 0 }).where('uuid', '=', gone.uuid).execute();
      const team = await seedTeam(t, 'fading', [{ uuid: alice.uuid, role: 'owner' }]);
      const teamTimer = await create(alice, { message: 'team', run_in: '1m' }, `/api/v1/teams/${team.slug}/timers`);
      await t.deps.db.updateTable('teams').set({ is_active: 0 }).where('uuid', '=', team.uuid).execute();
      const repo = await seedRepo(t, { kind: 'user', uuid: alice.uuid }, 'doomed');
      const repoBase = `/api/v1/users/${alice.username}/repos/${repo.slug}`;
      const repoTimer = await create(alice, { message: 'repo', every_seconds: 60 }, `${repoBase}/timers`);
      assert.equal((await t.req('DELETE', repoBase, { token: alice.token })).status, 204);
      clock.advance(61_000);
      await t.deps.timers.runDue();
      for (const uuid of [made.body.uuid, teamTimer.body.uuid, repoTimer.body.uuid]) {
        assert.equal((await firedEvents(t, uuid, alice.token).catch(() => [])).length, 0);
      }
      const rows = await t.deps.db
        .selectFrom('timers')
        .select(['uuid', 'status', 'run_count', 'next_run_at'])
        .where('uuid', 'in', [made.body.uuid, teamTimer.body.uuid, repoTimer.body.uuid])
        .execute();
      const by = new Map(rows.map((r) => [r.uuid, r]));
      assert.equal(by.get(made.body.uuid)!.status, 'active'); // recurring: waits for its next occurrence
      assert.ok(by.get(made.body.uuid)!.next_run_at > clock.now().toISOString());
      assert.equal(by.get(teamTimer.body.uuid)!.status, 'cancelled');
      assert.equal(by.get(repoTimer.body.uuid)!.status, 'cancelled');
      for (const r of rows) assert.equal(r.run_count, 0);
      await t.deps.db.updateTable('users').set({ is_active: 1 }).where('uuid', '=', gone.uuid).execute();
      clock.advance(60_000);
      await t.deps.timers.runDue();
      assert.equal((await firedEvents(t, made.body.uuid, gone.token)).length, 1);
    });
  });
}
