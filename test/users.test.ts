import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { bootstrapAdmin } from '../src/users/service.ts';
import { ISO_MS, TOKEN_SECRET, snapshot } from './foundation-helpers.ts';
import { runWeft } from './server-process.ts';
import { ADMIN_TOKEN, DIALECTS, type TestApp, freshStore, isErrorBody, startApp } from './helpers.ts';
import { assertRefused } from './common.ts';
import type { RequestOptions } from './helpers.ts';

const USER_KEYS = ['created_at', 'display_name', 'email', 'is_active', 'is_staff', 'ping_mentions', 'username', 'uuid'];

for (const dialect of DIALECTS) {
  describe(`users (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      bob = await t.user('bob');
    });
    after(() => t.close());

    const refused = (status: number, code: string, method: string, url: string, opts: RequestOptions = {}) =>
      assertRefused(t, status, code, method, url, opts);

    describe('POST /users', () => {
      it('staff create a user: 201 with every field, the name lower-cased', async () => {
        const res = await t.req('POST', '/api/v1/users', {
          body: { username: '  Carol_1 ', email: 'carol@example.com', display_name: ' Carol C ' },
        });
        assert.equal(res.status, 201, res.text);
        assert.deepEqual(Object.keys(res.body).sort(), USER_KEYS);
        assert.equal(res.body.username, 'carol_1');
        assert.equal(res.body.display_name, 'Carol C');
        assert.equal(res.body.email, 'carol@example.com');
        assert.equal(res.body.is_staff, false);
        assert.equal(res.body.is_active, true);
        assert.equal(res.body.ping_mentions, 'everyone');
        assert.match(res.body.uuid, /^[0-9a-f-]{36}$/);
        assert.match(res.body.created_at, ISO_MS);
        const staff = await t.req('POST', '/api/v1/users', {
          body: { username: 'dora', email: 'dora@example.com', is_staff: true, password: 'longenough' },
        });
        assert.equal(staff.status, 201);
        assert.equal(staff.body.is_staff, true);
      });

      it('emits user-created in the new user scope', async () => {
        const res = await t.req('POST', '/api/v1/users', { body: { username: 'evented', email: 'e@example.com' } });
        const events = await t.req('GET', `/api/v1/events?scope=user:${res.body.uuid}`);
        assert.equal(events.status, 200);
        assert.deepEqual(
          events.body.results.map((e: { kind: string }) => e.kind),
          ['user-created'],
        );
        assert.equal(events.body.results[0].actor.username, 'admin');
        assert.equal(events.body.results[0].payload.username, 'evented');
      });

      it('non-staff get 403 and nothing is created', async () => {
        await refused(403, 'forbidden', 'POST', '/api/v1/users', {
          token: alice.token,
          body: { username: 'sneaky', email: 's@example.com' },
        });
        assert.equal((await t.req('GET', '/api/v1/users/sneaky')).status, 404);
      });

      it('taken (case-insensitively) and reserved names are 409 username_taken', async () => {
        for (const username of ['alice', 'ALICE', 'Bob', 'admin', 'api', 'staff', 'new', 'settings', 'login', 'signup', 'me']) {
          const res = await refused(409, 'username_taken', 'POST', '/api/v1/users', {
            body: { username, email: 'x@example.com' },
          });
          assert.match(res.body.detail, new RegExp(username.toLowerCase()));
        }
      });

      it('name rules: 1-39 of a-z 0-9 - _, starting with a letter or digit', async () => {
        const bad = ['', ' ', '-abc', '_abc', 'a b', 'a.b', 'a/b', '../etc', 'ålice', 'a'.repeat(40), 'tab\tname', 'a@b'];
        for (const username of bad) {
          await refused(400, 'invalid_request', 'POST', '/api/v1/users', { body: { username, email: 'x@example.com' } });
        }
        for (const username of ['z', '9lives', 'a-b_c', 'x'.repeat(39)]) {
          const res = await t.req('POST', '/api/v1/users', { body: { username, email: `${username}@example.com` } });
          assert.equal(res.status, 201, `${username}: ${res.text}`);
        }
      });

      it('validates email, password, display_name and unknown properties', async () => {
        const base = { username: 'valid-name', email: 'v@example.com' };
        for (const body of [
          { username: 'valid-name' },
          { ...base, email: 'not-an-email' },
          { ...base, email: 42 },
          { ...base, password: 'short' },
          { ...base, display_name: 'x'.repeat(256) },
          { ...base, is_staff: 'yes' },
          { ...base, is_active: false },
          { ...base, uuid: 'forced' },
        ]) {
          await refused(400, 'invalid_request', 'POST', '/api/v1/users', { body });
        }
      });
    });

    describe('GET /user and GET /users/{username}', () => {
      it('GET /user is the caller, email included', async () => {
        const res = await t.req('GET', '/api/v1/user', { token: alice.token });
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), USER_KEYS);
        assert.equal(res.body.uuid, alice.uuid);
        assert.equal(res.body.email, 'alice@example.com');
      });

      it('email is visible only to the user themself and to staff', async () => {
        const byBob = await t.req('GET', '/api/v1/users/alice', { token: bob.token });
        assert.equal(byBob.status, 200);
        assert.equal(byBob.body.email, null);
        assert.equal(byBob.body.username, 'alice');
        const bySelf = await t.req('GET', '/api/v1/users/alice', { token: alice.token });
        assert.equal(bySelf.body.email, 'alice@example.com');
        const byStaff = await t.req('GET', '/api/v1/users/alice');
        assert.equal(byStaff.body.email, 'alice@example.com');
      });

      it('the path is case-insensitive; unknown users and path tricks are 404 or 400', async () => {
        assert.equal((await t.req('GET', '/api/v1/users/ALICE', { token: bob.token })).body.uuid, alice.uuid);
        for (const path of [
          'nobody',
          '..%2Fadmin',
          '%2e%2e',
          'alice%2F..%2Fbob',
          'alice%20',
          '%20alice',
          'admin%2Fapi-tokens',
          alice.uuid,
        ]) {
          await refused(404, 'not_found', 'GET', `/api/v1/users/${path}`, { token: bob.token });
        }
        await refused(400, 'invalid_request', 'GET', `/api/v1/users/${'a'.repeat(201)}`, { token: bob.token });
      });
    });

    describe('GET /users', () => {
      it('staff list users oldest first, paged', async () => {
        const res = await t.req('GET', '/api/v1/users?per_page=3');
        assert.equal(res.status, 200);
        assert.deepEqual(
          res.body.results.map((u: { username: string }) => u.username),
          ['admin', 'alice', 'bob'],
        );
        assert.equal(res.body.results[1].email, 'alice@example.com');
        assert.equal(res.body.next, '/api/v1/users?per_page=3&page=2');
      });

      it('search matches username, display name or email, case-insensitively; % and _ are literal', async () => {
        await t.req('POST', '/api/v1/users', { body: { username: 'srch1', email: 'one@findme.test', display_name: 'Zed' } });
        await t.req('POST', '/api/v1/users', {
          body: { username: 'srch2', email: 'two@example.com', display_name: 'Findme Person' },
        });
        await t.req('POST', '/api/v1/users', { body: { username: 'find_me', email: 'three@example.com' } });
        // sorted: users created in the same millisecond are listed in uuid order
        const names = async (q: string) =>
          (await t.req('GET', `/api/v1/users?search=${encodeURIComponent(q)}`)).body.results
            .map((u: { username: string }) => u.username)
            .sort();
        assert.deepEqual(await names('FINDME'), ['srch1', 'srch2']);
        assert.deepEqual(await names('find_me'), ['find_me']);
        assert.deepEqual(await names('zed'), ['srch1']);
        assert.deepEqual(await names('%'), []);
        assert.deepEqual(await names('nothing-matches'), []);
      });

      it('non-staff get 403', async () => {
        await refused(403, 'forbidden', 'GET', '/api/v1/users', { token: alice.token });
        await refused(403, 'forbidden', 'GET', '/api/v1/users?search=a', { token: alice.token });
      });
    });

    describe('PUT /users/{username}', () => {
      it('a user updates their own display_name, email, ping_mentions and password', async () => {
        const res = await t.req('PUT', '/api/v1/users/alice', {
          token: alice.token,
          body: { display_name: ' Alice A. ', email: 'alice@new.example', ping_mentions: 'team_only' },
        });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.display_name, 'Alice A.');
        assert.equal(res.body.email, 'alice@new.example');
        assert.equal(res.body.ping_mentions, 'team_only');
        const pw = await t.req('PUT', '/api/v1/users/alice', { token: alice.token, body: { password: 'a new password' } });
        assert.equal(pw.status, 200);
        const login = await t.req('POST', '/api/v1/auth/login', {
          token: null,
          body: { username: 'alice', password: 'a new password', token_name: 'laptop' },
        });
        assert.equal(login.status, 201);
        const old = await t.req('POST', '/api/v1/auth/login', {
          token: null,
          body: { username: 'alice', password: 'correct horse battery', token_name: 'laptop' },
        });
        assert.equal(old.status, 401);
      });

      it('emits user-updated naming the fields but never the password', async () => {
        await t.req('PUT', '/api/v1/users/alice', {
          token: alice.token,
          body: { display_name: 'A', password: 'another secret' },
        });
        const events = await t.req('GET', `/api/v1/events?scope=user:${alice.uuid}&kind=user-updated`, { token: alice.token });
        const last = events.body.results.at(-1);
        assert.deepEqual(last.payload.fields.sort(), ['display_name']);
        assert.doesNotMatch(JSON.stringify(events.body), /another secret/);
      });

      it('an empty update returns the user and writes nothing', async () => {
        const before = await snapshot(t);
        const res = await t.req('PUT', '/api/v1/users/bob', { token: bob.token, body: {} });
        assert.equal(res.status, 200);
        assert.equal(res.body.username, 'bob');
        assert.deepEqual(await snapshot(t), before);
      });

      it("someone else's account is 403 for non-staff; unknown users 404", async () => {
        await refused(403, 'forbidden', 'PUT', '/api/v1/users/alice', { token: bob.token, body: { display_name: 'hacked' } });
        await refused(404, 'not_found', 'PUT', '/api/v1/users/nobody', { token: bob.token, body: { display_name: 'x' } });
        const me = await t.req('GET', '/api/v1/users/alice');
        assert.notEqual(me.body.display_name, 'hacked');
      });

      it('is_staff and is_active are staff only (403 even on oneself)', async () => {
        for (const body of [{ is_staff: true }, { is_active: false }, { display_name: 'x', is_staff: false }]) {
          const res = await refused(403, 'forbidden', 'PUT', '/api/v1/users/bob', { token: bob.token, body });
          assert.match(res.body.detail, /staff/);
        }
        const me = await t.req('GET', '/api/v1/user', { token: bob.token });
        assert.equal(me.body.is_staff, false);
        assert.equal(me.body.display_name, '');
      });

      it('staff promote users and deactivate them: tokens stop working, the user is hidden', async () => {
        const frank = await t.user('frank');
        const promoted = await t.req('PUT', '/api/v1/users/frank', { body: { is_staff: true } });
        assert.equal(promoted.body.is_staff, true);
        assert.equal((await t.req('GET', '/api/v1/users', { token: frank.token })).status, 200);
        await t.req('PUT', '/api/v1/users/frank', { body: { is_staff: false } });
        assert.equal((await t.req('GET', '/api/v1/users', { token: frank.token })).status, 403);

        const off = await t.req('PUT', '/api/v1/users/frank', { body: { is_active: false } });
        assert.equal(off.status, 200);
        assert.equal(off.body.is_active, false);
        const denied = await t.req('GET', '/api/v1/user', { token: frank.token });
        assert.equal(denied.status, 401);
        assert.ok(isErrorBody(denied.body, 'unauthorized'));
        assert.equal(denied.headers['www-authenticate'], 'Bearer realm="api", Basic realm="api"');
        assert.equal((await t.req('GET', '/api/v1/users/frank', { token: bob.token })).status, 404);
        assert.equal((await t.req('GET', '/api/v1/users/frank')).body.is_active, false);
        const login = await t.req('POST', '/api/v1/auth/login', {
          token: null,
          body: { username: 'frank', password: 'correct horse battery', token_name: 'x' },
        });
        assert.equal(login.status, 401);

        await t.req('PUT', '/api/v1/users/frank', { body: { is_active: true } });
        assert.equal((await t.req('GET', '/api/v1/user', { token: frank.token })).status, 200);
      });

      it('validates the body', async () => {
        for (const body of [
          { email: 'nope' },
          { password: '1234567' },
          { ping_mentions: 'all' },
          { username: 'rename' },
          { display_name: null },
        ]) {
          await refused(400, 'invalid_request', 'PUT', '/api/v1/users/bob', { token: bob.token, body });
        }
      });
    });

    describe('POST /auth/login', () => {
      it('exchanges username and password for a new token (public)', async () => {
        const res = await t.req('POST', '/api/v1/auth/login', {
          token: null,
          body: { username: ' BOB ', password: 'correct horse battery', token_name: 'cli' },
        });
        assert.equal(res.status, 201, res.text);
        assert.match(res.body.token, TOKEN_SECRET);
        assert.equal(res.body.username, 'bob');
        assert.equal(res.body.name, 'cli');
        const me = await t.req('GET', '/api/v1/user', { token: res.body.token });
        assert.equal(me.body.username, 'bob');
      });

      it('wrong password, unknown user and password-less users are 401 and create nothing', async () => {
        for (const body of [
          { username: 'bob', password: 'wrong password', token_name: 'x' },
          { username: 'nobody', password: 'correct horse battery', token_name: 'x' },
          { username: 'admin', password: 'anything at all', token_name: 'x' },
        ]) {
          const res = await refused(401, 'unauthorized', 'POST', '/api/v1/auth/login', { token: null, body });
          assert.equal(res.headers['www-authenticate'], 'Bearer realm="api", Basic realm="api"');
        }
      });

      it('validates the body', async () => {
        for (const body of [
          { username: 'bob', password: 'correct horse battery' },
          { username: 'bob', password: 'correct horse battery', token_name: '   ' },
          { username: 'bob', password: 'correct horse battery', token_name: 'x', extra: 1 },
          { username: 'bob', password: 5, token_name: 'x' },
        ]) {
          await refused(400, 'invalid_request', 'POST', '/api/v1/auth/login', { token: null, body });
        }
      });
    });

    describe('GET /check-username', () => {
      it('is public: 200 when free', async () => {
        const res = await t.req('GET', '/api/v1/check-username?username=Newbie', { token: null });
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, { available: true, suggestion: null });
      });

      it('409 with an available suggestion when taken or reserved', async () => {
        let res = await t.req('GET', '/api/v1/check-username?username=alice', { token: null });
        assert.equal(res.status, 409);
        assert.deepEqual(res.body, { available: false, suggestion: 'alice-2' });
        await t.req('POST', '/api/v1/users', { body: { username: 'alice-2', email: 'a2@example.com' } });
        res = await t.req('GET', '/api/v1/check-username?username=ALICE', { token: null });
        assert.deepEqual(res.body, { available: false, suggestion: 'alice-3' });
        const check = await t.req('GET', `/api/v1/check-username?username=${res.body.suggestion}`, { token: null });
        assert.equal(check.status, 200);
        for (const name of ['admin', 'api', 'Settings', 'me']) {
          res = await t.req('GET', `/api/v1/check-username?username=${name}`, { token: null });
          assert.equal(res.status, 409, name);
          assert.equal(res.body.available, false);
          assert.equal(res.body.suggestion, `${name.toLowerCase()}-2`);
        }
      });

      it('a suggestion for a 39-character name stays within 39 characters', async () => {
        const long = 'l'.repeat(39);
        await t.req('POST', '/api/v1/users', { body: { username: long, email: 'l@example.com' } });
        const res = await t.req('GET', `/api/v1/check-username?username=${long}`, { token: null });
        assert.equal(res.status, 409);
        assert.equal(res.body.suggestion, `${'l'.repeat(37)}-2`);
      });

      it('a missing or malformed name is 400', async () => {
        for (const q of [
          '',
          '?username=',
          '?username=-x',
          '?username=a%20b',
          `?username=${'a'.repeat(40)}`,
          '?username=%C3%A5',
        ]) {
          const res = await t.req('GET', `/api/v1/check-username${q}`, { token: null });
          assert.equal(res.status, 400, q);
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
      });
    });

    describe('bootstrap admin', () => {
      it('is staff, authenticated by exactly BOOTSTRAP_ADMIN_TOKEN, and created once', async () => {
        const me = await t.req('GET', '/api/v1/user', { token: ADMIN_TOKEN });
        assert.equal(me.body.username, 'admin');
        assert.equal(me.body.is_staff, true);
        assert.equal(await bootstrapAdmin(t.deps), false);
        const admins = await t.req('GET', '/api/v1/users?search=admin');
        assert.equal(admins.body.results.filter((u: { username: string }) => u.username === 'admin').length, 1);
        const tokens = await t.req('GET', '/api/v1/api-tokens?name=bootstrap');
        assert.equal(tokens.body.results.length, 1);
      });

      it('BOOTSTRAP_ADMIN_USERNAME names the admin; a secret of the longest allowed length works with both schemes', async () => {
        const { MAX_SECRET_LENGTH } = await import('../src/config.ts');
        const secret = `root-${'A1b2:C3d4!'.repeat(40)}`.slice(0, MAX_SECRET_LENGTH);
        const other = await startApp(dialect, { config: { bootstrapAdminUsername: 'root', bootstrapAdminToken: secret } });
        try {
          for (const authorization of [`Bearer ${secret}`, `Basic ${Buffer.from(`:${secret}`).toString('base64')}`]) {
            const me = await other.req('GET', '/api/v1/user', { token: null, headers: { authorization } });
            assert.equal(me.status, 200, me.text);
            assert.equal(me.body.username, 'root');
            assert.equal(me.body.is_staff, true);
          }
          assert.equal((await other.req('GET', '/api/v1/users/admin', { token: secret })).status, 404, 'no other admin is made');
        } finally {
          await other.close();
        }
      });

      it('an existing user of that name is left alone: not promoted, no token made', async () => {
        const before = await snapshot(t);
        const secret = 'weft_bootstrap_for_alice_0123456789';
        const created = await bootstrapAdmin({
          ...t.deps,
          config: { ...t.deps.config, bootstrapAdminUsername: 'alice', bootstrapAdminToken: secret },
        });
        assert.equal(created, false);
        assert.deepEqual(await snapshot(t), before);
        assert.equal((await t.req('GET', '/api/v1/user', { token: secret })).status, 401);
        assert.equal((await t.req('GET', '/api/v1/users/alice')).body.is_staff, false);
      });
    });
  });
}

describe('CLI (spawned against a temp DATA_DIR)', () => {
  it('migrate, create-user, create-token; errors exit non-zero with a message', async () => {
    const store = await freshStore('sqlite');
    const env = { DATA_DIR: store.dataDir, LOG_LEVEL: 'silent' };
    try {
      const migrate = await runWeft('cli', ['migrate'], env);
      assert.equal(migrate.code, 0, migrate.stderr);
      assert.match(migrate.stdout, /applied: 001_foundation, 002_teams_repos_pulls/);

      const [created, usage, badEmail, unknownCmd, badFlag, badConfig] = await Promise.all([
        runWeft('cli', ['create-user', 'Grace', '--email', 'grace@example.com', '--staff', '--display-name', 'Grace H'], env),
        runWeft('cli', ['create-user', 'nomail'], env),
        runWeft('cli', ['create-user', 'x', '--email', 'nope'], env),
        runWeft('cli', ['frobnicate'], env),
        runWeft('cli', ['create-token', 'grace', '--bogus'], env),
        runWeft('cli', ['migrate'], { ...env, LOG_LEVEL: 'loud' }),
      ]);
      assert.equal(created.code, 0, created.stderr);
      const token = created.stdout.trim();
      assert.match(token, TOKEN_SECRET);
      assert.match(created.stderr, /created staff user grace/);
      assert.equal(usage.code, 2);
      assert.match(usage.stderr, /needs a username and --email/);
      assert.equal(badEmail.code, 2);
      assert.match(badEmail.stderr, /--email/);
      assert.equal(unknownCmd.code, 2);
      assert.match(unknownCmd.stderr, /unknown command: frobnicate/);
      assert.equal(badFlag.code, 2);
      assert.match(badFlag.stderr, /bogus/);
      assert.equal(badConfig.code, 1);
      assert.match(badConfig.stderr, /configuration error: LOG_LEVEL must be one of/);

      const [second, dup, noUser, reserved] = await Promise.all([
        runWeft('cli', ['create-token', 'grace', '--name', 'deploy'], env),
        runWeft('cli', ['create-user', 'grace', '--email', 'g2@example.com'], env),
        runWeft('cli', ['create-token', 'nobody'], env),
        runWeft('cli', ['create-user', 'admin', '--email', 'a@example.com'], env),
      ]);
      assert.equal(second.code, 0, second.stderr);
      const token2 = second.stdout.trim();
      assert.match(token2, TOKEN_SECRET);
      assert.equal(dup.code, 2, 'a taken username is bad input');
      assert.match(dup.stderr, /not available/);
      assert.equal(noUser.code, 1);
      assert.match(noUser.stderr, /no such user: nobody/);
      assert.equal(reserved.code, 2);

      const again = await runWeft('cli', ['migrate'], env);
      assert.match(again.stdout, /migrations are up to date/);

      // The server on the same DATA_DIR accepts both tokens.
      const t = await startApp('sqlite', { store });
      try {
        const me = await t.req('GET', '/api/v1/user', { token });
        assert.equal(me.status, 200);
        assert.equal(me.body.username, 'grace');
        assert.equal(me.body.display_name, 'Grace H');
        assert.equal(me.body.is_staff, true);
        const self = await t.req('GET', '/api/v1/api-tokens/self', { token: token2 });
        assert.equal(self.body.name, 'deploy');
        assert.equal(self.body.username, 'grace');
      } finally {
        await t.close();
      }
    } finally {
      await store.drop();
    }
  });

  it('set-password, list-users, revoke-token, deactivate-user: each changes what the server accepts; bad input exits non-zero', async () => {
    const store = await freshStore('sqlite');
    const env = { DATA_DIR: store.dataDir, LOG_LEVEL: 'silent' };
    const cli = (args: string[], input?: string) => runWeft('cli', args, env, 30_000, input);
    try {
      assert.equal((await cli(['migrate'])).code, 0);
      const created = await cli(['create-user', 'ada', '--email', 'ada@example.com']);
      assert.equal(created.code, 0, created.stderr);
      const token = created.stdout.trim();
      const login = async (app: TestApp, password: string) =>
        (await app.req('POST', '/api/v1/auth/login', { token: null, body: { username: 'ada', password, token_name: 'login' } }))
          .status;

      // Bad input first: nothing may change.
      const [shortPassword, noUser, noArg, badUuid, unknownUuid, deactivateNobody] = await Promise.all([
        cli(['set-password', 'ada'], 'short\n'),
        cli(['set-password', 'nobody'], 'long enough password\n'),
        cli(['revoke-token']),
        cli(['revoke-token', 'not-a-uuid']),
        cli(['revoke-token', '00000000-0000-4000-8000-000000000000']),
        cli(['deactivate-user', 'nobody']),
      ]);
      assert.equal(shortPassword.code, 2);
      assert.match(shortPassword.stderr, /8-256 characters/);
      assert.equal(noUser.code, 1);
      assert.match(noUser.stderr, /no such user: nobody/);
      assert.equal(noArg.code, 2);
      assert.match(noArg.stderr, /revoke-token needs an argument/);
      assert.equal(badUuid.code, 2);
      assert.match(badUuid.stderr, /not a token uuid/);
      assert.equal(unknownUuid.code, 1);
      assert.match(unknownUuid.stderr, /no such API token/);
      assert.equal(deactivateNobody.code, 1);

      const setPassword = await cli(['set-password', 'ada'], 'correct horse battery staple\nignored second line\n');
      assert.equal(setPassword.code, 0, setPassword.stderr);
      assert.match(setPassword.stderr, /password set for ada/);

      const second = await cli(['create-token', 'ada', '--name', 'second']);
      const token2 = second.stdout.trim();
      let t = await startApp('sqlite', { store });
      let tokenUuid: string;
      try {
        assert.equal(await login(t, 'correct horse battery staple'), 201, 'the password read from stdin (first line) works');
        assert.equal(await login(t, 'ignored second line'), 401);
        const self = await t.req('GET', '/api/v1/api-tokens/self', { token });
        assert.equal(self.status, 200);
        tokenUuid = self.body.uuid;
        const events = await t.deps.db.selectFrom('events').select('payload').where('kind', '=', 'user-updated').execute();
        assert.deepEqual(
          events.map((e) => (JSON.parse(e.payload) as { fields: string[] }).fields),
          [['password']],
        );
      } finally {
        await t.close();
      }

      const list = await cli(['list-users']);
      assert.equal(list.code, 0, list.stderr);
      assert.match(list.stdout, /^ada\t-\tactive\t[0-9a-f-]{36}$/m);

      const revoked = await cli(['revoke-token', tokenUuid]);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.match(revoked.stderr, new RegExp(`revoked token cli \\(${tokenUuid}\\) of ada`));
      const again = await cli(['revoke-token', tokenUuid]);
      assert.equal(again.code, 0, 'revoking a revoked token is not an error');

      t = await startApp('sqlite', { store });
      try {
        assert.equal((await t.req('GET', '/api/v1/user', { token })).status, 401, 'the revoked token is refused');
        assert.equal((await t.req('GET', '/api/v1/user', { token: token2 })).status, 200, 'the other token still works');
        const revokedEvents = await t.deps.db.selectFrom('events').select('id').where('kind', '=', 'token-revoked').execute();
        assert.equal(revokedEvents.length, 1, 'one token-revoked event, not one per call');
      } finally {
        await t.close();
      }

      const deactivated = await cli(['deactivate-user', 'ada']);
      assert.equal(deactivated.code, 0, deactivated.stderr);
      assert.match(deactivated.stderr, /deactivated ada/);
      assert.match((await cli(['list-users'])).stdout, /^ada\t-\tinactive\t/m);

      t = await startApp('sqlite', { store });
      try {
        assert.equal(
          (await t.req('GET', '/api/v1/user', { token: token2 })).status,
          401,
          "a deactivated user's tokens stop working",
        );
        assert.equal(await login(t, 'correct horse battery staple'), 401, 'nor can they log in');
      } finally {
        await t.close();
      }
    } finally {
      await store.drop();
    }
  });
});
