import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';

/**
 * README "Rate limits": a fresh install limits sign-in guessing with two shipped rules, failed
 * sign-ins per client address (`api:login`) and per account (`api:login-account`); successful
 * sign-ins are not counted.
 */
const PASSWORD = 'correct horse battery';

for (const dialect of DIALECTS) {
  describe(`sign-in rate limits (${dialect})`, () => {
    let t: TestApp;
    let rules: Record<string, { uuid: string; max_requests: number; window_seconds: number; is_enabled: boolean }>;

    before(async () => {
      t = await startApp(dialect);
      await t.user('alice');
      await t.user('bob');
      await t.user('carol');
    });
    after(() => t.close());

    const login = (address: string, username: string, password: string) =>
      t.app
        .inject({
          method: 'POST',
          url: '/api/v1/auth/login',
          remoteAddress: address,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify({ username, password, token_name: 'x' }),
        })
        .then((r) => ({ status: r.statusCode, body: r.json() as unknown }));
    const setRule = async (scope: string, max_requests: number) => {
      const res = await t.req('PUT', `/api/v1/rate-limits/${rules[scope]!.uuid}`, {
        body: { max_requests, window_seconds: 900 },
      });
      assert.equal(res.status, 200, res.text);
      await t.deps.db.deleteFrom('rate_limit_hits').execute();
    };

    it('a fresh install ships enabled rules for failed sign-ins per address and per account', async () => {
      const res = await t.req('GET', '/api/v1/rate-limits');
      assert.equal(res.status, 200);
      rules = Object.fromEntries(res.body.results.map((r: { scope: string }) => [r.scope, r]));
      assert.deepEqual(
        Object.keys(rules)
          .filter((s) => s.startsWith('api:login'))
          .sort(),
        ['api:login', 'api:login-account'],
      );
      for (const rule of Object.values(rules)) assert.equal(rule.is_enabled, true);
      assert.deepEqual([rules['api:login']!.max_requests, rules['api:login']!.window_seconds], [30, 900]);
      assert.deepEqual([rules['api:login-account']!.max_requests, rules['api:login-account']!.window_seconds], [10, 900]);
    });

    it('good sign-ins do not count: 2 good sign-ins and 3 typos leave an address allowed at a limit of 3', async () => {
      await setRule('api:login', 3);
      assert.equal((await login('10.1.0.1', 'alice', PASSWORD)).status, 201);
      assert.equal((await login('10.1.0.1', 'alice', PASSWORD)).status, 201);
      for (let i = 0; i < 3; i++) assert.equal((await login('10.1.0.1', 'alice', 'typo')).status, 401, `typo ${i + 1}`);
      // the fourth failure in the window is one too many, whichever account it names
      const refused = await login('10.1.0.1', 'bob', 'typo');
      assert.equal(refused.status, 429);
      assert.ok(isErrorBody(refused.body, 'rate_limited'));
      assert.equal((await login('10.1.0.1', 'alice', PASSWORD)).status, 429, 'the address waits out its window');
      assert.equal((await login('10.1.0.2', 'alice', PASSWORD)).status, 201, 'another address is not held back');
    });

    it('failed sign-ins count per account across addresses; other accounts are not affected', async () => {
      await setRule('api:login', 30);
      await setRule('api:login-account', 4);
      for (let i = 0; i < 4; i++) assert.equal((await login(`10.2.0.${i + 1}`, 'Bob', `guess${i}`)).status, 401);
      const refused = await login('10.2.0.9', 'bob', 'guess9');
      assert.equal(refused.status, 429);
      assert.match(JSON.stringify(refused.body), /for this account/);
      assert.equal((await login('10.2.0.10', ' BOB ', PASSWORD)).status, 429, 'the account waits out its window');
      assert.equal((await login('10.2.0.10', 'carol', PASSWORD)).status, 201);
      // a refused attempt was not counted against the address
      const hits = await t.deps.db.selectFrom('rate_limit_hits').select(['scope', 'caller']).execute();
      assert.equal(hits.filter((h) => h.caller === 'ip:10.2.0.9').length, 0);
      assert.equal(hits.filter((h) => h.caller === 'account:bob').length, 4);
    });

    it('30 parallel wrong guesses against a limit of 5 per address: exactly 5 are tried', async () => {
      await setRule('api:login-account', 10_000);
      await setRule('api:login', 5);
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => login('10.3.0.1', 'carol', `g${i}`)));
      assert.equal(results.filter((r) => r.status === 401).length, 5);
      assert.equal(results.filter((r) => r.status === 429).length, 25);
    });
  });
}
