import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { snapshot } from './foundation-helpers.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import { ManualClock, createRule, setSettings } from './limits-fixtures.ts';

const DEFAULTS = {
  rate_limits_enabled: true,
  signup_invite_creators: 'staff',
  signup_invite_max_per_24h: 10,
  signup_invite_min_account_age: '7d',
  signups_enabled: true,
  signups_require_invite: false,
};
const INVITE_KEYS = [
  'accepted_at',
  'accepted_by_username',
  'accepted_by_uuid',
  'created_at',
  'created_by_username',
  'email',
  'expires_at',
  'status',
  'uuid',
];
const DAY = 86_400_000;

for (const dialect of DIALECTS) {
  describe(`signup invites and signup (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    // The clock starts at the real now (users' created_at is real time) and moves forward by hand.
    const clock = new ManualClock(Date.now());
    const future = (ms = DAY) => new Date(clock.ms + ms).toISOString();
    let n = 0;
    const fresh = (prefix: string) => `${prefix}${++n}`;

    before(async () => {
      t = await startApp(dialect, { deps: { clock } });
      alice = await t.user('alice');
      bob = await t.user('bob');
      clock.ms = Date.now() + 1000; // after the users' real created_at
    });
    after(() => t.close());
    beforeEach(async () => {
      await t.deps.db.deleteFrom('rate_limit_rules').execute();
      await t.deps.db.deleteFrom('rate_limit_hits').execute();
      await setSettings(t, DEFAULTS);
    });

    async function refused(status: number, code: string, method: string, url: string, opts: Parameters<TestApp['req']>[2] = {}) {
      const before = await snapshot(t);
      const res = await t.req(method, url, opts);
      assert.equal(res.status, status, `${method} ${url}: ${res.text}`);
      assert.ok(isErrorBody(res.body, code), res.text);
      assert.deepEqual(await snapshot(t), before, 'a refused request changes nothing');
      return res;
    }

    const invite = async (body: Record<string, unknown> = {}, token = t.adminToken) => {
      const res = await t.req('POST', '/api/v1/signup-invites', { token, body: { expires_at: future(), ...body } });
      assert.equal(res.status, 201, res.text);
      return res.body;
    };
    const signup = (body: Record<string, unknown>) => t.req('POST', '/api/v1/signup', { token: null, body });

    describe('invites', () => {
      it('staff create one; the record has every field; get, update, delete', async () => {
        const created = await invite({ email: 'New@Example.com' });
        assert.deepEqual(Object.keys(created).sort(), INVITE_KEYS);
        assert.equal(created.status, 'pending');
        assert.equal(created.email, 'New@Example.com');
        assert.equal(created.created_by_username, 'admin');
        assert.equal(created.accepted_at, null);
        assert.deepEqual((await t.req('GET', `/api/v1/signup-invites/${created.uuid}`)).body, created);
        const later = future(2 * DAY);
        const updated = await t.req('PUT', `/api/v1/signup-invites/${created.uuid}`, {
          body: { expires_at: later, email: null },
        });
        assert.equal(updated.status, 200, updated.text);
        assert.equal(updated.body.expires_at, later);
        assert.equal(updated.body.email, null);
        assert.equal((await t.req('DELETE', `/api/v1/signup-invites/${created.uuid}`)).status, 204);
        await refused(404, 'not_found', 'GET', `/api/v1/signup-invites/${created.uuid}`);
      });

      it('bad input is 400: past or malformed expires_at, bad email, unknown fields, wrong types', async () => {
        for (const body of [
          { expires_at: new Date(clock.ms - 1000).toISOString() },
          { expires_at: 'tomorrow' },
          { expires_at: '2099-02-30T00:00:00Z' },
          { expires_at: future(), email: 'not-an-email' },
          { expires_at: future(), extra: 1 },
          { expires_at: 12 },
          {},
        ]) {
          await refused(400, 'invalid_request', 'POST', '/api/v1/signup-invites', { body });
        }
        const inv = await invite();
        await refused(400, 'invalid_request', 'PUT', `/api/v1/signup-invites/${inv.uuid}`, {
          body: { expires_at: new Date(clock.ms - 1).toISOString() },
        });
        await refused(400, 'invalid_request', 'GET', '/api/v1/signup-invites?sort=uuid');
        await refused(400, 'invalid_request', 'GET', '/api/v1/signup-invites?status=used');
      });

      it('who may create: staff by default; users old enough when the setting says users; per-24h quota with staff exempt', async () => {
        await refused(403, 'forbidden', 'POST', '/api/v1/signup-invites', { token: alice.token, body: { expires_at: future() } });
        await setSettings(t, { signup_invite_creators: 'users' });
        // alice's account is minutes old; the default minimum age is 7d
        await refused(403, 'forbidden', 'POST', '/api/v1/signup-invites', { token: alice.token, body: { expires_at: future() } });
        await setSettings(t, { signup_invite_min_account_age: '0s', signup_invite_max_per_24h: 2 });
        const first = await invite({}, alice.token);
        assert.equal(first.created_by_username, 'alice');
        clock.advance(60_000);
        await invite({}, alice.token);
        await t.req('DELETE', `/api/v1/signup-invites/${first.uuid}`, { token: alice.token });
        const over = await refused(429, 'rate_limited', 'POST', '/api/v1/signup-invites', {
          token: alice.token,
          body: { expires_at: future() },
        });
        assert.equal(over.headers['retry-after'], String(86_400 - 60));
        assert.equal(over.headers['ratelimit-limit'], '2');
        for (let i = 0; i < 3; i++) await invite(); // staff are exempt
        clock.advance(86_400_000 - 60_000); // the first invite leaves the 24 hours
        await invite({}, alice.token);
        // with the clock 8 days on, the 7d minimum age is met
        await setSettings(t, { signup_invite_min_account_age: '7d', signup_invite_max_per_24h: 10 });
        clock.advance(8 * DAY);
        await invite({}, bob.token);
      });

      it('staff see every invite, others only their own (404); only a pending invite changes', async () => {
        await setSettings(t, { signup_invite_creators: 'users', signup_invite_min_account_age: '0d' });
        const mine = await invite({ email: 'x@example.com' }, alice.token);
        const staffs = await invite();
        await refused(404, 'not_found', 'GET', `/api/v1/signup-invites/${staffs.uuid}`, { token: alice.token });
        await refused(404, 'not_found', 'PUT', `/api/v1/signup-invites/${mine.uuid}`, {
          token: bob.token,
          body: { email: null },
        });
        await refused(404, 'not_found', 'DELETE', `/api/v1/signup-invites/${mine.uuid}`, { token: bob.token });
        assert.equal((await t.req('GET', `/api/v1/signup-invites/${mine.uuid}`)).status, 200);
        const list = await t.req('GET', '/api/v1/signup-invites?per_page=100', { token: alice.token });
        assert.ok(list.body.results.length >= 1);
        assert.ok(list.body.results.every((i: { created_by_username: string }) => i.created_by_username === 'alice'));
        const all = await t.req('GET', '/api/v1/signup-invites?per_page=100');
        assert.ok(all.body.results.some((i: { uuid: string }) => i.uuid === mine.uuid));
        assert.ok(all.body.results.some((i: { uuid: string }) => i.uuid === staffs.uuid));

        const username = fresh('acc');
        assert.equal((await signup({ username, email: 'x@example.com', invite_uuid: mine.uuid })).status, 201);
        const accepted = (await t.req('GET', `/api/v1/signup-invites/${mine.uuid}`, { token: alice.token })).body;
        assert.equal(accepted.status, 'accepted');
        assert.equal(accepted.accepted_by_username, username);
        await refused(409, 'invite_not_pending', 'PUT', `/api/v1/signup-invites/${mine.uuid}`, {
          token: alice.token,
          body: { email: null },
        });
        await refused(409, 'invite_not_pending', 'DELETE', `/api/v1/signup-invites/${mine.uuid}`, { token: alice.token });
        const short = await invite({}, alice.token);
        await t.req('PUT', `/api/v1/signup-invites/${short.uuid}`, { token: alice.token, body: { expires_at: future(1000) } });
        clock.advance(1000);
        assert.equal((await t.req('GET', `/api/v1/signup-invites/${short.uuid}`)).body.status, 'expired');
        await refused(409, 'invite_not_pending', 'PUT', `/api/v1/signup-invites/${short.uuid}`, {
          token: alice.token,
          body: { expires_at: future() },
        });
      });

      it('search, status filter and sort', async () => {
        const tag = fresh('srch');
        const a = await invite({ email: `${tag}-b@example.com` });
        clock.advance(1);
        const b = await invite({ email: `${tag}-a@example.com`, expires_at: future(5 * DAY) });
        clock.advance(1);
        const c = await invite({ email: `${tag}-c@example.com`, expires_at: future(1000) });
        const user = fresh('searched');
        assert.equal((await signup({ username: user, email: `${tag}-b@example.com`, invite_uuid: a.uuid })).status, 201);
        clock.advance(2000);
        const q = (query: string) =>
          t
            .req('GET', `/api/v1/signup-invites?per_page=100&${query}`)
            .then((r) => r.body.results.map((i: { uuid: string }) => i.uuid));
        assert.deepEqual(await q(`search=${tag}`), [a.uuid, b.uuid, c.uuid]);
        assert.deepEqual(await q(`search=${tag}&sort=-created_at`), [c.uuid, b.uuid, a.uuid]);
        assert.deepEqual(await q(`search=${tag}&sort=email`), [b.uuid, a.uuid, c.uuid]);
        assert.deepEqual(await q(`search=${tag}&sort=-expires_at`), [b.uuid, a.uuid, c.uuid]);
        assert.deepEqual(await q(`search=${tag}&status=accepted`), [a.uuid]);
        assert.deepEqual(await q(`search=${tag}&status=pending`), [b.uuid]);
        assert.deepEqual(await q(`search=${tag}&status=expired`), [c.uuid]);
        assert.deepEqual(await q(`search=${user}`), [a.uuid], "the accepted user's username");
        assert.deepEqual(await q(`search=${b.uuid}`), [b.uuid]);
      });
    });

    describe('signup', () => {
      it('creates the user and a working token', async () => {
        const username = fresh('newbie');
        const res = await signup({ username, email: `${username}@example.com`, display_name: 'New', password: 'long enough pw' });
        assert.equal(res.status, 201, res.text);
        assert.deepEqual(Object.keys(res.body).sort(), ['token', 'user']);
        assert.equal(res.body.user.username, username);
        assert.equal(res.body.user.email, `${username}@example.com`);
        assert.equal(res.body.user.is_staff, false);
        const me = await t.req('GET', '/api/v1/user', { token: res.body.token.token });
        assert.equal(me.body.username, username);
        const login = await t.req('POST', '/api/v1/auth/login', {
          token: null,
          body: { username, password: 'long enough pw', token_name: 'l' },
        });
        assert.equal(login.status, 201);
      });

      it('settings govern it: disabled, invite required, mismatch, expired, used, unknown', async () => {
        await setSettings(t, { signups_enabled: false });
        await refused(403, 'signups_disabled', 'POST', '/api/v1/signup', {
          token: null,
          body: { username: fresh('u'), email: 'a@b.co' },
        });
        await setSettings(t, { signups_enabled: true, signups_require_invite: true });
        await refused(403, 'invite_required', 'POST', '/api/v1/signup', {
          token: null,
          body: { username: fresh('u'), email: 'a@b.co' },
        });
        const forCarol = await invite({ email: 'Carol@Example.com' });
        await refused(403, 'invite_email_mismatch', 'POST', '/api/v1/signup', {
          token: null,
          body: { username: fresh('u'), email: 'mallory@example.com', invite_uuid: forCarol.uuid },
        });
        await refused(404, 'not_found', 'POST', '/api/v1/signup', {
          token: null,
          body: { username: fresh('u'), email: 'a@b.co', invite_uuid: '00000000-0000-0000-0000-000000000000' },
        });
        const carol = fresh('carol');
        const ok = await signup({ username: carol, email: 'carol@example.com', invite_uuid: forCarol.uuid });
        assert.equal(ok.status, 201, ok.text);
        await refused(409, 'invite_used', 'POST', '/api/v1/signup', {
          token: null,
          body: { username: fresh('u'), email: 'carol@example.com', invite_uuid: forCarol.uuid },
        });
        const short = await invite({ expires_at: future(1000) });
        clock.advance(1000);
        await refused(409, 'invite_expired', 'POST', '/api/v1/signup', {
          token: null,
          body: { username: fresh('u'), email: 'a@b.co', invite_uuid: short.uuid },
        });
        const got = (await t.req('GET', `/api/v1/signup-invites/${forCarol.uuid}`)).body;
        assert.equal(got.accepted_by_username, carol);
        assert.equal(got.accepted_by_uuid, ok.body.user.uuid);
      });

      it('bad input is 400; a taken or reserved username is 409 username_taken', async () => {
        for (const body of [
          { username: fresh('u') },
          { username: fresh('u'), email: 'nope' },
          { username: fresh('u'), email: 'a@b.co', password: 'short' },
          { username: fresh('u'), email: 'a@b.co', is_staff: true },
          { username: 12, email: 'a@b.co' },
          { username: 'Bad Name!', email: 'a@b.co' },
        ]) {
          await refused(400, 'invalid_request', 'POST', '/api/v1/signup', { token: null, body });
        }
        await refused(409, 'username_taken', 'POST', '/api/v1/signup', {
          token: null,
          body: { username: 'alice', email: 'a@b.co' },
        });
        await refused(409, 'username_taken', 'POST', '/api/v1/signup', {
          token: null,
          body: { username: 'admin', email: 'a@b.co' },
        });
      });

      it('two signups racing for one invite: one 201, one 409; the invite is accepted once', async () => {
        const inv = await invite();
        const [r1, r2] = await Promise.all([
          signup({ username: fresh('race'), email: 'r1@example.com', invite_uuid: inv.uuid }),
          signup({ username: fresh('race'), email: 'r2@example.com', invite_uuid: inv.uuid }),
        ]);
        assert.deepEqual([r1.status, r2.status].sort(), [201, 409]);
        const loser = r1.status === 409 ? r1 : r2;
        assert.equal(loser.body.error, 'invite_used');
        const winner = r1.status === 201 ? r1 : r2;
        const got = (await t.req('GET', `/api/v1/signup-invites/${inv.uuid}`)).body;
        assert.equal(got.accepted_by_uuid, winner.body.user.uuid);
      });

      it('two signups racing for one username: one 201, one 409 username_taken', async () => {
        const username = fresh('same');
        const [r1, r2] = await Promise.all([
          signup({ username, email: 's1@example.com' }),
          signup({ username, email: 's2@example.com' }),
        ]);
        assert.deepEqual([r1.status, r2.status].sort(), [201, 409]);
        assert.equal((r1.status === 409 ? r1 : r2).body.error, 'username_taken');
      });

      it('is rate-limited per client IP as api:signup', async () => {
        await createRule(t, 'api:signup', 1, 60);
        const res = await signup({ username: fresh('lim'), email: 'l@example.com' });
        assert.equal(res.status, 201);
        assert.equal(res.headers['ratelimit-remaining'], '0');
        const again = await refused(429, 'rate_limited', 'POST', '/api/v1/signup', {
          token: null,
          body: { username: fresh('lim'), email: 'l@example.com' },
        });
        assert.ok(Number(again.headers['retry-after']) >= 1);
      });

      it('creating invites is rate-limited as api:create-invite', async () => {
        await createRule(t, 'api:create-invite', 1, 60);
        await invite();
        await refused(429, 'rate_limited', 'POST', '/api/v1/signup-invites', { body: { expires_at: future() } });
      });
    });
  });
}
