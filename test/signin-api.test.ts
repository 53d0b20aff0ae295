import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createServer } from 'node:net';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import { ManualClock } from './limits-fixtures.ts';
import { totpAt } from './signin-helpers.ts';

/** docs/signin.md: sign-in sources (staff), TOTP with recovery codes, replay refusal, lock-out, otp on POST /auth/login. */
const PASSWORD = 'correct horse battery';

/** A port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

for (const dialect of DIALECTS) {
  describe(`sign-in sources and TOTP (${dialect})`, () => {
    let t: TestApp;
    let clock: ManualClock;
    let alice: { token: string; uuid: string; username: string };

    before(async () => {
      clock = new ManualClock(Date.parse('2030-01-01T00:00:10.000Z'));
      t = await startApp(dialect, { deps: { clock } });
      alice = await t.user('alice');
    });
    after(() => t.close());

    it('sources: staff only, secrets sealed at rest and never returned, validated, names unique', async () => {
      const body = {
        kind: 'ldap',
        name: 'corp',
        display_name: 'Corp directory',
        ldap: {
          url: 'ldap://127.0.0.1:1',
          bind_dn: 'cn=svc,dc=corp',
          bind_password: 'bind-secret',
          user_base: 'ou=people,dc=corp',
        },
      };
      assert.equal((await t.req('POST', '/api/v1/admin/auth-sources', { body, token: alice.token })).status, 403);
      assert.equal((await t.req('GET', '/api/v1/admin/auth-sources', { token: alice.token })).status, 403);
      const created = await t.req('POST', '/api/v1/admin/auth-sources', { body });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.ldap.user_filter, '(uid={username})');
      assert.equal(created.body.ldap.bind_password_set, true);
      assert.equal(created.body.oidc, null);
      assert.equal(created.body.enabled, true);
      assert.equal(created.body.auto_create_users, true);
      assert.equal(created.body.satisfies_two_factor, false);
      assert.doesNotMatch(created.text, /bind-secret/);
      const stored = await t.deps.db
        .selectFrom('auth_sources')
        .selectAll()
        .where('uuid', '=', created.body.uuid)
        .executeTakeFirstOrThrow();
      assert.doesNotMatch(stored.settings + stored.secret, /bind-secret/);
      assert.match(stored.secret!, /^s1\./);
      assert.equal(t.deps.secret.open('auth-source-secret', stored.secret!), 'bind-secret');

      assert.equal((await t.req('POST', '/api/v1/admin/auth-sources', { body })).body.error, 'source_name_taken');
      const bad = [
        { ...body, name: 'x2', ldap: { ...body.ldap, url: 'http://x' } },
        { ...body, name: 'x3', ldap: { ...body.ldap, user_filter: '(uid=fixed)' } },
        { ...body, name: 'x4', ldap: null },
        { ...body, name: 'x5', kind: 'oidc', ldap: null, oidc: { issuer: 'ftp://x', client_id: 'c' } },
        { ...body, name: 'Bad Name' },
      ];
      for (const b of bad)
        assert.equal((await t.req('POST', '/api/v1/admin/auth-sources', { body: b })).status, 400, JSON.stringify(b));

      // PUT: an omitted secret keeps the stored one; other fields change
      const put = await t.req('PUT', `/api/v1/admin/auth-sources/${created.body.uuid}`, {
        body: {
          display_name: 'Corp LDAP',
          ldap: { url: 'ldap://127.0.0.1:2', user_base: 'ou=people,dc=corp', bind_dn: 'cn=svc,dc=corp' },
        },
      });
      assert.equal(put.status, 200, put.text);
      assert.equal(put.body.display_name, 'Corp LDAP');
      assert.equal(put.body.ldap.url, 'ldap://127.0.0.1:2');
      assert.equal(put.body.ldap.bind_password_set, true);
      const list = await t.req('GET', '/api/v1/admin/auth-sources');
      assert.deepEqual(
        list.body.map((s: { name: string }) => s.name),
        ['corp'],
      );
      assert.equal((await t.req('GET', '/api/v1/admin/auth-sources/nope')).status, 404);
    });

    it('the test action says what failed: a closed LDAP port, an OIDC issuer that does not answer', async () => {
      const port = await closedPort();
      const ldap = await t.req('POST', '/api/v1/admin/auth-sources', {
        body: { kind: 'ldap', name: 'down', display_name: 'Down', ldap: { url: `ldap://127.0.0.1:${port}`, user_base: 'dc=x' } },
      });
      const res = await t.req('POST', `/api/v1/admin/auth-sources/${ldap.body.uuid}/test`);
      assert.equal(res.status, 200);
      assert.equal(res.body.ok, false);
      assert.match(res.body.detail, new RegExp(`Connecting to ldap://127.0.0.1:${port} failed: .*ECONNREFUSED`));
      const oidc = await t.req('POST', '/api/v1/admin/auth-sources', {
        body: {
          kind: 'oidc',
          name: 'gone',
          display_name: 'Gone',
          oidc: { issuer: `http://127.0.0.1:${port}`, client_id: 'weft', client_secret: 's' },
        },
      });
      assert.equal(oidc.status, 201, oidc.text);
      assert.deepEqual(oidc.body.oidc.scopes, ['openid', 'profile', 'email', 'groups']);
      const o = await t.req('POST', `/api/v1/admin/auth-sources/${oidc.body.uuid}/test`, {});
      assert.equal(o.body.ok, false);
      assert.match(o.body.detail, new RegExp(`Discovery at http://127.0.0.1:${port} failed`));
      assert.equal((await t.req('DELETE', `/api/v1/admin/auth-sources/${oidc.body.uuid}`)).status, 204);
      assert.equal((await t.req('POST', `/api/v1/admin/auth-sources/${oidc.body.uuid}/test`)).status, 404);
    });

    let secret = '';
    let recovery: string[] = [];

    it('TOTP: set up, confirmed with a code from a second implementation, ten recovery codes shown once', async () => {
      const status0 = await t.req('GET', '/api/v1/user/two-factor', { token: alice.token });
      assert.deepEqual(status0.body, { totp: false, passkeys: 0, recovery_codes_left: 0, required_by: [] });
      const start = await t.req('POST', '/api/v1/user/two-factor/totp', { token: alice.token });
      assert.equal(start.status, 201, start.text);
      secret = start.body.secret;
      assert.match(start.body.otpauth_url, /^otpauth:\/\/totp\/Weft:alice\?.*secret=/);
      assert.match(start.body.otpauth_url, /algorithm=SHA1&digits=6&period=30/);
      const stored = await t.deps.db
        .selectFrom('user_totp')
        .select('secret')
        .where('user_uuid', '=', alice.uuid)
        .executeTakeFirstOrThrow();
      assert.doesNotMatch(stored.secret, new RegExp(secret));
      // not active yet: signing in needs no code
      assert.equal(
        (
          await t.req('POST', '/api/v1/auth/login', {
            token: null,
            body: { username: 'alice', password: PASSWORD, token_name: 'x' },
          })
        ).status,
        201,
      );

      const wrong = await t.req('POST', '/api/v1/user/two-factor/totp/confirm', {
        token: alice.token,
        body: { code: '000000' === totpAt(secret, clock.ms) ? '111111' : '000000' },
      });
      assert.equal(wrong.status, 400);
      assert.ok(isErrorBody(wrong.body, 'invalid_two_factor_code'));
      const ok = await t.req('POST', '/api/v1/user/two-factor/totp/confirm', {
        token: alice.token,
        body: { code: totpAt(secret, clock.ms) },
      });
      assert.equal(ok.status, 200, ok.text);
      recovery = ok.body.recovery_codes;
      assert.equal(recovery.length, 10);
      assert.equal(new Set(recovery).size, 10);
      const status = await t.req('GET', '/api/v1/user/two-factor', { token: alice.token });
      assert.deepEqual(status.body, { totp: true, passkeys: 0, recovery_codes_left: 10, required_by: [] });
      const hashes = await t.deps.db
        .selectFrom('recovery_codes')
        .select('code_hash')
        .where('user_uuid', '=', alice.uuid)
        .execute();
      assert.ok(hashes.every((h) => !recovery.some((c) => h.code_hash.includes(c))));
      assert.equal((await t.req('POST', '/api/v1/user/two-factor/totp', { token: alice.token })).body.error, 'totp_enabled');
    });

    it('POST /auth/login: two_factor_required only after the right password; a code is accepted once; ±1 step', async () => {
      const login = (extra: Record<string, string> = {}, password = PASSWORD) =>
        t.req('POST', '/api/v1/auth/login', { token: null, body: { username: 'alice', password, token_name: 'x', ...extra } });
      const wrongPassword = await login({}, 'nope nope nope');
      assert.equal(wrongPassword.status, 401);
      assert.equal(wrongPassword.body.error, 'unauthorized', 'a wrong password says nothing of a second factor');
      assert.equal((await login({ otp: '123456' }, 'nope nope nope')).body.error, 'unauthorized');
      const need = await login();
      assert.equal(need.status, 401);
      assert.equal(need.body.error, 'two_factor_required');

      clock.advance(30_000);
      const code = totpAt(secret, clock.ms);
      const first = await login({ otp: code });
      assert.equal(first.status, 201, first.text);
      const replay = await login({ otp: code });
      assert.equal(replay.status, 401);
      assert.equal(replay.body.error, 'invalid_two_factor_code');
      // the next step's code, a step early (clock drift), is accepted; then the previous step's is not
      clock.advance(30_000);
      const previous = totpAt(secret, clock.ms - 60_000);
      assert.equal((await login({ otp: totpAt(secret, clock.ms + 30_000) })).status, 201);
      assert.equal((await login({ otp: previous })).status, 401);
      // a recovery code works once, in any case and with or without the dash
      assert.equal((await login({ otp: recovery[0]!.toUpperCase().replace('-', ' ') })).status, 201);
      assert.equal((await login({ otp: recovery[0]! })).status, 401);
      assert.equal((await t.req('GET', '/api/v1/user/two-factor', { token: alice.token })).body.recovery_codes_left, 9);
      // API tokens are not asked for a second factor
      assert.equal((await t.req('GET', '/api/v1/user', { token: alice.token })).status, 200);
    });

    it('five wrong codes in 15 minutes lock the second step for 15 minutes (429 with Retry-After), on every path', async () => {
      clock.advance(16 * 60_000);
      const login = (otp: string) =>
        t.req('POST', '/api/v1/auth/login', {
          token: null,
          body: { username: 'alice', password: PASSWORD, token_name: 'x', otp },
        });
      for (let i = 0; i < 4; i++)
        assert.equal((await login('999999' === totpAt(secret, clock.ms) ? '888888' : '999999')).status, 401);
      const fifth = await t.req('POST', '/api/v1/user/two-factor/recovery-codes', {
        token: alice.token,
        body: { code: 'wrong-code' },
      });
      assert.equal(fifth.status, 400);
      clock.advance(60_000);
      const locked = await login(totpAt(secret, clock.ms));
      assert.equal(locked.status, 429);
      assert.equal(locked.body.error, 'rate_limited');
      assert.ok(Number(locked.headers['retry-after']) > 800 && Number(locked.headers['retry-after']) <= 900);
      const lockedSettings = await t.req('DELETE', '/api/v1/user/two-factor/totp', {
        token: alice.token,
        body: { code: totpAt(secret, clock.ms) },
      });
      assert.equal(lockedSettings.status, 429);
      clock.advance(15 * 60_000);
      assert.equal((await login(totpAt(secret, clock.ms))).status, 201);
    });

    it('new recovery codes replace the old; removing TOTP needs a code', async () => {
      clock.advance(30_000);
      const fresh = await t.req('POST', '/api/v1/user/two-factor/recovery-codes', {
        token: alice.token,
        body: { code: totpAt(secret, clock.ms) },
      });
      assert.equal(fresh.status, 200, fresh.text);
      assert.equal(fresh.body.recovery_codes.length, 10);
      const login = (otp: string) =>
        t.req('POST', '/api/v1/auth/login', {
          token: null,
          body: { username: 'alice', password: PASSWORD, token_name: 'x', otp },
        });
      assert.equal((await login(recovery[1]!)).status, 401, 'an old recovery code no longer works');
      assert.equal(
        (
          await t.req('DELETE', '/api/v1/user/two-factor/totp', {
            token: alice.token,
            body: { code: fresh.body.recovery_codes[0] },
          })
        ).status,
        204,
      );
      assert.equal(
        (
          await t.req('POST', '/api/v1/auth/login', {
            token: null,
            body: { username: 'alice', password: PASSWORD, token_name: 'x' },
          })
        ).status,
        201,
      );
      assert.equal((await t.req('GET', '/api/v1/user/two-factor', { token: alice.token })).body.totp, false);
    });
  });
}
