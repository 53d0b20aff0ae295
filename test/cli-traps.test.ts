/**
 * Issue 30, item 7: the traps a new user met with the CLI, passwords and emails.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { snapshot } from './foundation-helpers.ts';
import { DIALECTS, type TestApp, freshStore, isErrorBody, startApp } from './helpers.ts';
import { runWeft } from './server-process.ts';

describe('CLI traps (spawned)', () => {
  it('commands other than migrate refuse a database that does not exist, and create nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weft-cli-'));
    try {
      const env = { DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'silent' };
      for (const args of [['create-user', 'zed', '--email', 'zed@example.com'], ['list-users'], ['create-token', 'zed']]) {
        const res = await runWeft('cli', args, env);
        assert.equal(res.code, 1, `${args.join(' ')}: ${res.stderr}`);
        assert.match(res.stderr, /no database at .*weft\.sqlite/);
        assert.match(res.stderr, /DATA_DIR/);
        assert.match(res.stderr, /DATABASE_URL/);
        assert.equal(res.stdout, '');
      }
      assert.equal(existsSync(join(dir, 'data', 'weft.sqlite')), false, 'no database file was created');
      const sqliteUrl = await runWeft('cli', ['list-users'], { ...env, DATABASE_URL: `sqlite:${join(dir, 'other.db')}` });
      assert.equal(sqliteUrl.code, 1);
      assert.equal(existsSync(join(dir, 'other.db')), false);
      // migrate creates it; then the others work
      assert.equal((await runWeft('cli', ['migrate'], env)).code, 0);
      assert.equal((await runWeft('cli', ['list-users'], env)).code, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('help, extra arguments, exit codes, list-tokens, create-token of a deactivated user, passwords 8-256', async () => {
    const store = await freshStore('sqlite');
    const env = { DATA_DIR: store.dataDir, LOG_LEVEL: 'silent' };
    const cli = (args: string[], input?: string) => runWeft('cli', args, env, 30_000, input);
    try {
      assert.equal((await cli(['migrate'])).code, 0);
      const help = await cli(['help']);
      assert.equal(help.code, 0);
      assert.match(help.stdout, /usage: weft/);
      assert.match(help.stdout, /list-tokens/);
      const created = await cli(['create-user', 'kim', '--email', 'kim@example.com', '--token-name', 'first']);
      assert.equal(created.code, 0, created.stderr);
      const [extra, extraList, takenName, takenEmail, longPassword] = await Promise.all([
        cli(['create-token', 'kim', 'surplus']),
        cli(['list-users', 'kim']),
        cli(['create-user', 'kim', '--email', 'other@example.com']),
        cli(['create-user', 'kim2', '--email', 'KIM@example.com']),
        cli(['set-password', 'kim'], `${'x'.repeat(257)}\n`),
      ]);
      assert.equal(extra.code, 2);
      assert.match(extra.stderr, /unexpected: surplus/);
      assert.equal(extraList.code, 2);
      assert.equal(takenName.code, 2);
      assert.equal(takenEmail.code, 2);
      assert.match(takenEmail.stderr, /email address is already used/);
      assert.equal(longPassword.code, 2);
      assert.match(longPassword.stderr, /8-256/);
      const second = await cli(['create-token', 'kim', '--name', 'deploy']);
      assert.equal(second.code, 0);
      const list = await cli(['list-tokens', 'kim']);
      assert.equal(list.code, 0, list.stderr);
      const lines = list.stdout.trim().split('\n');
      assert.equal(lines.length, 2);
      const [uuid, name, status] = lines[1]!.split('\t');
      assert.match(uuid!, /^[0-9a-f-]{36}$/);
      assert.deepEqual([name, status], ['deploy', 'active']);
      assert.equal((await cli(['revoke-token', uuid!])).code, 0);
      assert.match((await cli(['list-tokens', 'kim'])).stdout, /deploy\trevoked/);
      assert.equal((await cli(['list-tokens', 'nobody'])).code, 1);
      assert.equal((await cli(['list-tokens'])).code, 2);
      assert.equal((await cli(['deactivate-user', 'kim'])).code, 0);
      const refused = await cli(['create-token', 'kim']);
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /deactivated/);
      assert.equal(refused.stdout, '');
      assert.equal((await cli(['list-tokens', 'kim'])).stdout.trim().split('\n').length, 2, 'no token was made');
    } finally {
      await store.drop();
    }
  });

  it('a DATA_DIR the server cannot create stops start-up with one line naming it and the variable', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weft-cli-'));
    try {
      writeFileSync(join(dir, 'a-file'), '');
      const bad = join(dir, 'a-file', 'data');
      const res = await runWeft('main', [], { DATA_DIR: bad, LOG_LEVEL: 'silent', PORT: '0' });
      assert.equal(res.code, 2, res.stderr);
      assert.match(res.stderr, /DATA_DIR/);
      assert.ok(res.stderr.includes(bad), res.stderr);
      assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a read-only DATA_DIR stops start-up with one line naming it and the variable', async (ctx) => {
    // a read-only tmpfs: root writes through file modes, not through a read-only mount
    const dir = mkdtempSync(join(tmpdir(), 'weft-ro-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', dir], { stdio: 'ignore' });
    } catch {
      rmSync(dir, { recursive: true, force: true });
      return ctx.skip('cannot mount a tmpfs here (needs root)');
    }
    try {
      const res = await runWeft('main', [], { DATA_DIR: dir, LOG_LEVEL: 'silent', PORT: '0' });
      assert.equal(res.code, 2, res.stderr);
      assert.match(res.stderr, /DATA_DIR/);
      assert.match(res.stderr, /EROFS/);
      assert.ok(res.stderr.includes(dir), res.stderr);
      assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
    } finally {
      execFileSync('umount', [dir], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an unreachable PostgreSQL is one line, not a stack trace', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'weft-cli-'));
    try {
      const res = await runWeft('cli', ['list-users'], {
        DATA_DIR: dir,
        LOG_LEVEL: 'silent',
        DATABASE_URL: 'postgres://postgres@127.0.0.1:9/weft',
      });
      assert.equal(res.code, 3, res.stderr);
      assert.match(res.stderr, /^weft: cannot reach the database \(DATABASE_URL\)/);
      assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

for (const dialect of DIALECTS) {
  describe(`passwords and emails (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(dialect);
      await t.user('erin');
    });
    after(() => t.close());

    it('emails are unique, case-insensitively: 409 email_taken on create, update and signup; nothing changes', async () => {
      const refused = async (method: string, url: string, body: unknown, token?: string | null) => {
        const before = await snapshot(t);
        const res = await t.req(method, url, { body, ...(token === undefined ? {} : { token }) });
        assert.equal(res.status, 409, `${method} ${url}: ${res.text}`);
        assert.ok(isErrorBody(res.body, 'email_taken'));
        assert.deepEqual(await snapshot(t), before);
      };
      await refused('POST', '/api/v1/users', { username: 'erin2', email: 'ERIN@example.com' });
      await refused('POST', '/api/v1/signup', { username: 'erin3', email: 'Erin@Example.com' }, null);
      const frank = await t.user('frank');
      await refused('PUT', '/api/v1/users/frank', { email: 'erin@EXAMPLE.com' }, frank.token);
      // one's own address, in another case, is fine
      const own = await t.req('PUT', '/api/v1/users/frank', { token: frank.token, body: { email: 'Frank@example.com' } });
      assert.equal(own.status, 200, own.text);
      // parallel creates of one address: exactly one wins
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          t.req('POST', '/api/v1/users', { body: { username: `race${i}`, email: `Race@example.com` } }),
        ),
      );
      assert.equal(results.filter((r) => r.status === 201).length, 1);
      for (const r of results.filter((x) => x.status !== 201)) assert.ok(isErrorBody(r.body, 'email_taken'), r.text);
    });

    it('passwords are 8-256 characters on create, update and signup', async () => {
      for (const password of ['short', 'x'.repeat(257)]) {
        const res = await t.req('POST', '/api/v1/users', { body: { username: 'pw', email: 'pw@example.com', password } });
        assert.equal(res.status, 400);
        const up = await t.req('PUT', '/api/v1/users/erin', { body: { password } });
        assert.equal(up.status, 400);
      }
      const ok = await t.req('POST', '/api/v1/users', {
        body: { username: 'pw', email: 'pw@example.com', password: 'y'.repeat(256) },
      });
      assert.equal(ok.status, 201, ok.text);
      const login = await t.req('POST', '/api/v1/auth/login', {
        token: null,
        body: { username: 'pw', password: 'y'.repeat(256), token_name: 'x' },
      });
      assert.equal(login.status, 201);
    });
  });
}
