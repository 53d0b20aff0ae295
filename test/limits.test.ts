import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { sweepRateLimitHits } from '../src/http/rate-counter.ts';
import { countRows, snapshot } from './foundation-helpers.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import { ManualClock, countHits, createRule, setSettings } from './limits-fixtures.ts';

const DEFAULTS = {
  rate_limits_enabled: true,
  signup_invite_creators: 'staff',
  signup_invite_max_per_24h: 10,
  signup_invite_min_account_age: '7d',
  signups_enabled: true,
  signups_require_invite: false,
  max_timers_per_owner: 1000,
  max_reply_versions: 1000,
  webhook_allowed_hosts: [] as string[],
};

for (const dialect of DIALECTS) {
  describe(`site settings and rate-limit rules (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    const clock = new ManualClock();
    before(async () => {
      t = await startApp(dialect, { deps: { clock } });
      alice = await t.user('alice');
      bob = await t.user('bob');
    });
    after(() => t.close());
    beforeEach(async () => {
      // every test starts with no rules and the default settings
      await t.deps.db.deleteFrom('rate_limit_rules').execute();
      await t.deps.db.deleteFrom('rate_limit_hits').execute();
      await setSettings(t, DEFAULTS);
    });

    async function refused(status: number, code: string, method: string, url: string, opts: Parameters<TestApp['req']>[2] = {}) {
      const before = { ...(await snapshot(t)), hits: await countHits(t) };
      const res = await t.req(method, url, opts);
      assert.equal(res.status, status, `${method} ${url}: ${res.text}`);
      assert.ok(isErrorBody(res.body, code), res.text);
      assert.deepEqual({ ...(await snapshot(t)), hits: await countHits(t) }, before, 'a refused request changes nothing');
      return res;
    }

    describe('site settings', () => {
      it('staff read the defaults; others get 403', async () => {
        const res = await t.req('GET', '/api/v1/site-settings');
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, DEFAULTS);
        await refused(403, 'forbidden', 'GET', '/api/v1/site-settings', { token: alice.token });
        await refused(403, 'forbidden', 'PUT', '/api/v1/site-settings', { token: alice.token, body: { signups_enabled: false } });
        await refused(401, 'unauthorized', 'GET', '/api/v1/site-settings', { token: null });
      });

      it('a partial PUT keeps omitted fields and emits settings-updated in the actor scope', async () => {
        const res = await t.req('PUT', '/api/v1/site-settings', {
          body: { signup_invite_min_account_age: '1d12h', signup_invite_max_per_24h: 0 },
        });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(res.body, { ...DEFAULTS, signup_invite_min_account_age: '1d12h', signup_invite_max_per_24h: 0 });
        assert.deepEqual((await t.req('GET', '/api/v1/site-settings')).body, res.body);
        const admin = (await t.req('GET', '/api/v1/user')).body;
        const events = await t.req('GET', `/api/v1/events?scope=user:${admin.uuid}&kind=settings-updated`);
        const last = events.body.results.at(-1);
        assert.equal(last.kind, 'settings-updated');
        assert.deepEqual(last.payload.settings, res.body);
      });

      it('bad values are 400 and change nothing', async () => {
        for (const body of [
          { signup_invite_min_account_age: '7x' },
          { signup_invite_min_account_age: '-1d' },
          { signup_invite_min_account_age: '1.5d' },
          { signup_invite_min_account_age: '7' },
          { signup_invite_min_account_age: 'd7' },
          { signup_invite_min_account_age: '1h1d' },
          { signup_invite_min_account_age: '99999d' },
          { signup_invite_max_per_24h: -1 },
          { signup_invite_max_per_24h: 1.5 },
          { signup_invite_max_per_24h: '10' },
          { signup_invite_creators: 'everyone' },
          { signups_enabled: 'yes' },
          { rate_limits_enabled: null },
          { unknown_field: true },
        ]) {
          await refused(400, 'invalid_request', 'PUT', '/api/v1/site-settings', { body });
        }
        assert.deepEqual((await t.req('GET', '/api/v1/site-settings')).body, DEFAULTS);
      });
    });

    describe('rules CRUD', () => {
      it('create, get, list, partial update, delete', async () => {
        const created = await t.req('POST', '/api/v1/rate-limits', {
          body: { scope: 'api:login', max_requests: 5, window_seconds: 60, is_enabled: true },
        });
        assert.equal(created.status, 201, created.text);
        assert.deepEqual(Object.keys(created.body).sort(), [
          'created_at',
          'is_enabled',
          'max_requests',
          'scope',
          'updated_at',
          'uuid',
          'window_seconds',
        ]);
        assert.equal(created.body.scope, 'api:login');
        assert.equal(created.body.max_requests, 5);
        const uuid = created.body.uuid;
        assert.deepEqual((await t.req('GET', `/api/v1/rate-limits/${uuid}`)).body, created.body);
        clock.advance(1);
        await createRule(t, 'api:signup', 3, 10);
        const page = await t.req('GET', '/api/v1/rate-limits?per_page=1');
        assert.equal(page.status, 200);
        assert.equal(page.body.results.length, 1);
        assert.equal(page.body.results[0].uuid, uuid);
        assert.ok(page.body.next);
        const updated = await t.req('PUT', `/api/v1/rate-limits/${uuid}`, { body: { is_enabled: false } });
        assert.equal(updated.status, 200);
        assert.deepEqual({ ...updated.body, updated_at: null }, { ...created.body, is_enabled: false, updated_at: null });
        const moved = await t.req('PUT', `/api/v1/rate-limits/${uuid}`, {
          body: { scope: 'api:create-repo', window_seconds: 120 },
        });
        assert.equal(moved.body.scope, 'api:create-repo');
        assert.equal(moved.body.window_seconds, 120);
        assert.equal(moved.body.max_requests, 5);
        assert.equal((await t.req('DELETE', `/api/v1/rate-limits/${uuid}`)).status, 204);
        await refused(404, 'not_found', 'GET', `/api/v1/rate-limits/${uuid}`);
        await refused(404, 'not_found', 'PUT', `/api/v1/rate-limits/${uuid}`, { body: { is_enabled: true } });
        await refused(404, 'not_found', 'DELETE', `/api/v1/rate-limits/${uuid}`);
      });

      it('a scope is unique (409), also when moving a rule', async () => {
        await createRule(t, 'api:login', 5, 60);
        const other = await createRule(t, 'api:signup', 5, 60);
        await refused(409, 'conflict', 'POST', '/api/v1/rate-limits', {
          body: { scope: 'api:login', max_requests: 1, window_seconds: 1, is_enabled: false },
        });
        await refused(409, 'conflict', 'PUT', `/api/v1/rate-limits/${other.uuid}`, { body: { scope: 'api:login' } });
      });

      it('bad input is 400: unknown scope, zero, negative, huge, wrong types, missing or unknown fields', async () => {
        const ok = { scope: 'api:login', max_requests: 5, window_seconds: 60, is_enabled: true };
        for (const body of [
          { ...ok, scope: 'api:delete-everything' },
          { ...ok, scope: 'API:LOGIN' },
          { ...ok, max_requests: 0 },
          { ...ok, max_requests: -3 },
          { ...ok, max_requests: 100_001 },
          { ...ok, max_requests: 2.5 },
          { ...ok, window_seconds: 0 },
          { ...ok, window_seconds: 604_801 },
          { ...ok, window_seconds: '60' },
          { ...ok, is_enabled: 'true' },
          { ...ok, extra: 1 },
          { scope: 'api:login', max_requests: 5, window_seconds: 60 },
        ]) {
          await refused(400, 'invalid_request', 'POST', '/api/v1/rate-limits', { body });
        }
        const rule = await createRule(t, 'api:login', 5, 60);
        for (const body of [{ max_requests: 0 }, { window_seconds: -1 }, { scope: 'nope' }, { uuid: 'x' }]) {
          await refused(400, 'invalid_request', 'PUT', `/api/v1/rate-limits/${rule.uuid}`, { body });
        }
        await refused(400, 'invalid_request', 'GET', '/api/v1/rate-limits?page=0');
      });

      it('is staff only: 403 for users, 401 without a token', async () => {
        const rule = await createRule(t, 'api:login', 5, 60);
        const body = { scope: 'api:signup', max_requests: 5, window_seconds: 60, is_enabled: true };
        await refused(403, 'forbidden', 'GET', '/api/v1/rate-limits', { token: alice.token });
        await refused(403, 'forbidden', 'POST', '/api/v1/rate-limits', { token: alice.token, body });
        await refused(403, 'forbidden', 'GET', `/api/v1/rate-limits/${rule.uuid}`, { token: alice.token });
        await refused(403, 'forbidden', 'PUT', `/api/v1/rate-limits/${rule.uuid}`, {
          token: alice.token,
          body: { max_requests: 1 },
        });
        await refused(403, 'forbidden', 'DELETE', `/api/v1/rate-limits/${rule.uuid}`, { token: alice.token });
        await refused(401, 'unauthorized', 'GET', '/api/v1/rate-limits', { token: null });
      });
    });

    describe('enforcement', () => {
      const createToken = (token: string, name = 'ci') => t.req('POST', '/api/v1/api-tokens', { token, body: { name } });

      it('an exact sliding window: request max+1 inside the window is 429, with headers; it frees as hits age out', async () => {
        await createRule(t, 'api:create-token', 3, 60);
        const t0 = clock.ms;
        const first = await createToken(alice.token);
        assert.equal(first.status, 201);
        assert.equal(first.headers['ratelimit-limit'], '3');
        assert.equal(first.headers['ratelimit-remaining'], '2');
        assert.equal(first.headers['ratelimit-reset'], '60');
        clock.advance(10_000);
        const second = await createToken(alice.token);
        assert.equal(second.headers['ratelimit-remaining'], '1');
        assert.equal(second.headers['ratelimit-reset'], '50');
        clock.advance(10_000);
        const third = await createToken(alice.token);
        assert.equal(third.status, 201);
        assert.equal(third.headers['ratelimit-remaining'], '0');
        const tokens = await countRows(t, 'api_tokens');
        const res = await refused(429, 'rate_limited', 'POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'x' } });
        assert.equal(res.headers['retry-after'], '40');
        assert.equal(res.headers['ratelimit-limit'], '3');
        assert.equal(res.headers['ratelimit-remaining'], '0');
        assert.equal(res.headers['ratelimit-reset'], '40');
        assert.match(res.body.detail, /40 seconds/);
        assert.equal(await countRows(t, 'api_tokens'), tokens);
        clock.ms = t0 + 59_999; // the first request is still inside the window
        assert.equal((await createToken(alice.token)).status, 429);
        assert.equal((await createToken(alice.token)).headers['retry-after'], '1');
        clock.ms = t0 + 60_000; // and now it is not: one slot
        const fourth = await createToken(alice.token);
        assert.equal(fourth.status, 201);
        assert.equal(fourth.headers['ratelimit-remaining'], '0');
        assert.equal((await createToken(alice.token)).status, 429);
        clock.ms = t0 + 70_000;
        assert.equal((await createToken(alice.token)).status, 201);
        // another caller has their own count
        assert.equal((await createToken(bob.token)).headers['ratelimit-remaining'], '2');
      });

      it('a request that fails validation or authentication is not counted; one that the handler refuses is', async () => {
        await createRule(t, 'api:create-token', 2, 60);
        assert.equal((await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { nme: 'x' } })).status, 400);
        assert.equal((await t.req('POST', '/api/v1/api-tokens', { token: 'weft_nope', body: { name: 'x' } })).status, 401);
        assert.equal(await countHits(t), 0);
        const forbidden = await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'x', username: 'bob' } });
        assert.equal(forbidden.status, 403);
        assert.equal(forbidden.headers['ratelimit-remaining'], '1');
        assert.equal(await countHits(t), 1);
      });

      it('only when the rule and rate_limits_enabled are both on; changes apply to the next request', async () => {
        const rule = await createRule(t, 'api:create-token', 1, 60, false);
        for (let i = 0; i < 3; i++) {
          const res = await createToken(alice.token);
          assert.equal(res.status, 201);
          assert.equal(res.headers['ratelimit-limit'], undefined);
        }
        await t.req('PUT', `/api/v1/rate-limits/${rule.uuid}`, { body: { is_enabled: true } });
        assert.equal((await createToken(alice.token)).status, 201);
        assert.equal((await createToken(alice.token)).status, 429);
        await setSettings(t, { rate_limits_enabled: false });
        const off = await createToken(alice.token);
        assert.equal(off.status, 201);
        assert.equal(off.headers['ratelimit-limit'], undefined);
        await setSettings(t, { rate_limits_enabled: true });
        assert.equal((await createToken(alice.token)).status, 429);
        await t.req('PUT', `/api/v1/rate-limits/${rule.uuid}`, { body: { max_requests: 3 } });
        assert.equal((await createToken(alice.token)).status, 201);
        assert.equal((await createToken(alice.token)).status, 201);
        assert.equal((await createToken(alice.token)).status, 429);
        await t.req('DELETE', `/api/v1/rate-limits/${rule.uuid}`);
        assert.equal((await createToken(alice.token)).status, 201);
        assert.equal(await countHits(t), 0, 'deleting a rule drops its counts');
      });

      it('50 parallel requests against a limit of 10 give exactly 10 successes', async () => {
        await createRule(t, 'api:create-token', 10, 600);
        const before = await countRows(t, 'api_tokens');
        const results = await Promise.all(Array.from({ length: 50 }, (_, i) => createToken(alice.token, `p${i}`)));
        const statuses = results.map((r) => r.status);
        assert.equal(statuses.filter((s) => s === 201).length, 10);
        assert.equal(statuses.filter((s) => s === 429).length, 40);
        assert.equal((await countRows(t, 'api_tokens')) - before, 10);
        assert.equal(await countHits(t), 10);
      });

      it('anonymous callers count per client IP; X-Forwarded-For is ignored without TRUST_PROXY', async () => {
        await createRule(t, 'api:login', 2, 60);
        const login = (remoteAddress: string, headers: Record<string, string> = {}) =>
          t.app.inject({
            method: 'POST',
            url: '/api/v1/auth/login',
            remoteAddress,
            headers: { 'content-type': 'application/json', ...headers },
            payload: JSON.stringify({ username: 'alice', password: 'wrong password', token_name: 'x' }),
          });
        assert.equal((await login('10.0.0.1')).statusCode, 401, 'a failed login is counted too');
        assert.equal((await login('10.0.0.1', { 'x-forwarded-for': '1.2.3.4' })).statusCode, 401);
        const third = await login('10.0.0.1', { 'x-forwarded-for': '5.6.7.8' });
        assert.equal(third.statusCode, 429);
        assert.ok(Number(third.headers['retry-after']) >= 1);
        assert.equal((await login('10.0.0.2')).statusCode, 401, 'another IP has its own count');
        const ok = await t.app.inject({
          method: 'POST',
          url: '/api/v1/auth/login',
          remoteAddress: '10.0.0.3',
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ username: 'alice', password: 'correct horse battery', token_name: 'x' }),
        });
        assert.equal(ok.statusCode, 201);
        assert.equal(ok.headers['ratelimit-remaining'], '1');
      });

      it('login and signup count per client IP even when the request carries a valid token', async () => {
        await createRule(t, 'api:login', 2, 60);
        await createRule(t, 'api:signup', 1, 60);
        const call = (url: string, token: string, payload: unknown) =>
          t.app.inject({
            method: 'POST',
            url,
            remoteAddress: '10.0.9.1',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
            payload: JSON.stringify(payload),
          });
        const wrong = { username: 'alice', password: 'wrong password', token_name: 'x' };
        assert.equal((await call('/api/v1/auth/login', alice.token, wrong)).statusCode, 401);
        assert.equal((await call('/api/v1/auth/login', bob.token, wrong)).statusCode, 401);
        const third = await call('/api/v1/auth/login', t.adminToken, wrong);
        assert.equal(third.statusCode, 429, "another account's token buys no more guesses from one address");
        assert.ok(isErrorBody(third.json(), 'rate_limited'));
        assert.equal(
          (await call('/api/v1/signup', alice.token, { username: 'ipsign1', email: 'ipsign1@example.com' })).statusCode,
          201,
        );
        const again = await call('/api/v1/signup', bob.token, { username: 'ipsign2', email: 'ipsign2@example.com' });
        assert.equal(again.statusCode, 429);
        const users = await t.deps.db.selectFrom('users').select('username').where('username', '=', 'ipsign2').execute();
        assert.equal(users.length, 0);
      });

      it('old counts are cleaned up: per caller as it counts, and by the sweep for callers who never return', async () => {
        await createRule(t, 'api:create-token', 5, 60);
        await createToken(alice.token);
        await createToken(bob.token);
        assert.equal(await countHits(t), 2);
        clock.advance(61_000);
        await createToken(alice.token);
        assert.equal(await countHits(t), 2, "alice's old count went when she counted again");
        await sweepRateLimitHits(t.deps);
        assert.equal(await countHits(t), 1, "bob's old count went in the sweep");
      });
    });
  });

  describe(`TRUST_PROXY (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(dialect, { config: { trustProxy: ['127.0.0.1'] } });
      await t.deps.db.deleteFrom('rate_limit_rules').execute(); // the shipped sign-in rules
      await createRule(t, 'api:login', 1, 60);
    });
    after(() => t.close());

    it('behind a trusted proxy the client IP comes from X-Forwarded-For', async () => {
      const login = (xff: string) =>
        t.app.inject({
          method: 'POST',
          url: '/api/v1/auth/login',
          remoteAddress: '127.0.0.1',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': xff },
          payload: JSON.stringify({ username: 'nobody', password: 'x', token_name: 'x' }),
        });
      assert.equal((await login('203.0.113.1')).statusCode, 401);
      assert.equal((await login('203.0.113.1')).statusCode, 429);
      assert.equal((await login('203.0.113.2')).statusCode, 401);
    });
  });
}

// Several instances share one PostgreSQL database (an SQLite file serves one process).
for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`rate limits across two instances (${dialect})`, () => {
    let a: TestApp;
    let b: TestApp;
    before(async () => {
      const first = await startApp(dialect);
      a = first;
      b = await startApp(dialect, { store: first.store });
    });
    after(async () => {
      await b.close();
      await a.close();
    });

    it('a limit is counted once across both instances, and a rule change is seen by both at once', async () => {
      const alice = await a.user('mi-limits');
      const rule = await createRule(a, 'api:create-token', 10, 600);
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          (i % 2 ? a : b).req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: `t${i}` } }),
        ),
      );
      assert.equal(results.filter((r) => r.status === 201).length, 10);
      assert.equal(results.filter((r) => r.status === 429).length, 30);
      // raise the limit on b; a sees it on its next request
      assert.equal((await b.req('PUT', `/api/v1/rate-limits/${rule.uuid}`, { body: { max_requests: 11 } })).status, 200);
      const more = await a.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'more' } });
      assert.equal(more.status, 201);
      assert.equal(more.headers['ratelimit-limit'], '11');
      assert.equal((await b.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'x' } })).status, 429);
      // switch enforcement off on a; b stops limiting at once
      await setSettings(a, { rate_limits_enabled: false });
      assert.equal((await b.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'y' } })).status, 201);
    });
  });
}
