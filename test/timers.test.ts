import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import { ManualClock, firedEvents } from './timers-fixtures.ts';

type U = { token: string; uuid: string; username: string };

const START = '2026-11-20T10:00:00.000Z'; // a Friday

for (const dialect of DIALECTS) {
  describe(`timers (${dialect})`, () => {
    let t: TestApp;
    let clock: ManualClock;
    let alice: U;
    let bob: U;
    let carol: U;

    before(async () => {
      clock = ManualClock.at(START);
      // The scheduler is driven by hand (runDue) against the manual clock; its idle poll is long.
      t = await startApp(dialect, { deps: { clock, timers: { pollMs: 60_000 } } });
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
    });
    after(async () => t.close());

    const userPath = (u: U) => `/api/v1/users/${u.username}/timers`;
    const create = (u: U, body: Record<string, unknown>, path = userPath(u)) => t.req('POST', path, { token: u.token, body });
    const count = async () =>
      Number(
        (
          await t.deps.db
            .selectFrom('timers')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirst()
        )?.n,
      );

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
      assert.equal(await count(), before);
      const edge = await create(alice, { message: ` ${'z'.repeat(4000)} `, run_in: '10d' });
      assert.equal(edge.status, 201);
      assert.equal(edge.body.message.length, 4000);
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
  });

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
      const { stopBackground } = await import('../src/deps.ts');
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
          const nowIso = new Date().toISOString();
          const rows = Array.from({ length: N }, (_, i) => ({
            uuid: randomUUID(),
            scope: 'user',
            owner_uuid: u.uuid,
            created_by_uuid: u.uuid,
            message: `burst ${i} @burst`,
            schedule_kind: i % 2 ? 'once' : 'interval',
            run_at: due,
            every_seconds: i % 2 ? null : 3600,
            time_of_day: '00:00',
            days_of_week: 'Mon',
            timezone: 'UTC',
            status: 'active',
            next_run_at: due,
            last_run_at: null,
            run_count: 0,
            created_at: nowIso,
            updated_at: nowIso,
          }));
          for (let i = 0; i < N; i += 100)
            await a.deps.db
              .insertInto('timers')
              .values(rows.slice(i, i + 100))
              .execute();
          // Both background schedulers notice them by their short poll; hand-driven passes on both add contention.
          await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(due) - Date.now())));
          await Promise.all([a.deps.timers.runDue(), b.deps.timers.runDue(), a.deps.timers.runDue(), b.deps.timers.runDue()]);
          await Promise.all([a.deps.timers.runDue(), b.deps.timers.runDue()]);
          const fired = await a.deps.db.selectFrom('events').select('payload').where('kind', '=', 'timer-fired').execute();
          const uuids = fired.map((e) => (JSON.parse(e.payload) as { timer_uuid: string }).timer_uuid);
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
        const deadline = Date.now() + 5000;
        let ev: Awaited<ReturnType<typeof firedEvents>> = [];
        while (Date.now() < deadline && ev.length === 0) {
          await new Promise((r) => setTimeout(r, 50));
          ev = await firedEvents(a, made.body.uuid, u.token);
        }
        assert.equal(ev.length, 1);
        const lag = Date.parse(ev[0].created_at) - Date.parse(made.body.next_run_at);
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
        const deadline = Date.now() + 5000;
        let ev: Awaited<ReturnType<typeof firedEvents>> = [];
        while (Date.now() < deadline && ev.length === 0) {
          await new Promise((r) => setTimeout(r, 50));
          ev = await firedEvents(t, made.body.uuid, u.token);
        }
        assert.equal(ev.length, 1);
        const lag = Date.parse(ev[0].created_at) - Date.parse(runAt);
        assert.ok(lag >= 0 && lag < 500, `lag ${lag} ms`);
      } finally {
        await t.close();
      }
    });
  });
}
