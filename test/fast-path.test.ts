import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { PoolClient } from 'pg';
import { loadConfig } from '../src/config.ts';
import { compiledOnce, fastPathOn, numberArg, numberParam, setFastPath } from '../src/db/fast-path.ts';
import { seedRepo, seedTeam } from './fixtures.ts';
import { ADMIN_TOKEN, DIALECTS, startApp } from './helpers.ts';

/**
 * The fast read path (src/db/fast-path.ts) changes the cost of reads, never their answers: the
 * same requests answer the same status and body with it on and off. Each fast path is compared:
 * the token lookup and the repo/pull read it prefetches (team and user forms, with and without a
 * pull), the repo/pull reads without a token (anonymous), as staff and as an outsider, the pull
 * pages (all, by status), and the SQLite rows built from arrays (also test/row-builder.test.ts).
 */
for (const dialect of DIALECTS) {
  describe(`the fast path on and off (${dialect})`, () => {
    test('hot reads, pages and refusals answer alike with the fast path on and off', async () => {
      const t = await startApp(dialect);
      const configured = fastPathOn();
      try {
        const alice = await t.user('alice');
        const outsider = await t.user('outsider');
        const team = await seedTeam(t, 'crew', [{ uuid: alice.uuid, role: 'member' }]);
        await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'tool');
        await seedRepo(t, { kind: 'user', uuid: alice.uuid }, 'notes', { visibility: 'public' });
        const base = '/api/v1/teams/crew/repos/tool';
        for (const title of ['one', 'two', 'three']) {
          const res = await t.req('POST', `${base}/pulls`, {
            token: alice.token,
            body: { title, body: '', source_branch: `f/${title}`, target_branch: 'main' },
          });
          assert.equal(res.status, 201, res.text);
        }
        await t.req('PUT', `${base}/pulls/2`, { token: alice.token, body: { status: 'closed' } });
        const notes = '/api/v1/users/alice/repos/notes';
        const opened = await t.req('POST', `${notes}/pulls`, {
          token: alice.token,
          body: { title: 'note', body: 'a body', source_branch: 'f/note', target_branch: 'main' },
        });
        assert.equal(opened.status, 201, opened.text);
        const calls: Array<[string, string | null]> = [
          ['/api/v1/user', alice.token],
          [base, alice.token],
          [base, outsider.token],
          [`${base}/pulls/2`, alice.token],
          [`${base}/pulls/9`, alice.token],
          [`${base}/pulls/2`, outsider.token],
          [`${base}/pulls?per_page=2&page=2`, alice.token],
          [`${base}/pulls?status=open`, alice.token],
          ['/api/v1/users/alice/repos/notes', outsider.token],
          ['/api/v1/users/alice/repos/nope', outsider.token],
          ['/api/v1/teams/nope/repos/tool', alice.token],
          // the user form: the pull read prefetched with the token, and the pull page (read without prefetch)
          [`${notes}/pulls/1`, alice.token],
          [`${notes}/pulls/1`, outsider.token],
          [`${notes}/pulls/7`, outsider.token],
          [`${notes}/pulls?status=open`, outsider.token],
          [`${notes}/pulls`, alice.token],
          [`${notes}/pulls?status=closed`, alice.token],
          ['/api/v1/users/nobody/repos/notes/pulls', outsider.token],
          ['/api/v1/teams/crew/repos/tool/pulls', outsider.token],
          // no token: refused alike
          [base, null],
          // staff (the bootstrap admin) sees the private team repo
          [base, ADMIN_TOKEN],
          [`${base}/pulls/1`, ADMIN_TOKEN],
          [`${base}/pulls?per_page=1`, ADMIN_TOKEN],
          // other reads, through the SQLite row builder and statement cache
          ['/api/v1/teams/crew', alice.token],
          ['/api/v1/teams/crew/repos', alice.token],
          ['/api/v1/users/alice', outsider.token],
          ['/api/v1/users/alice/repos', outsider.token],
        ];
        const answers = async () => {
          const out: Array<{ status: number; body: unknown }> = [];
          for (const [url, token] of calls) {
            const res = await t.req('GET', url, { token });
            out.push({ status: res.status, body: res.body });
          }
          return out;
        };
        setFastPath(true);
        const on = await answers();
        setFastPath(false);
        const off = await answers();
        assert.deepEqual(off, on);
        assert.deepEqual(
          on.map((a) => a.status),
          [
            200, 200, 404, 200, 404, 404, 200, 200, 200, 404, 404, 200, 200, 404, 200, 200, 200, 404, 404, 401, 200, 200, 200,
            200, 200, 200, 200,
          ],
        );
      } finally {
        setFastPath(configured);
        await t.close();
      }
    });

    test('compiledOnce gives the same rows both ways, and number parameters bind as numbers', async () => {
      const t = await startApp(dialect);
      const configured = fastPathOn();
      try {
        const alice = await t.user('alice');
        const query = compiledOnce((db, username: string, limit: string) =>
          db.selectFrom('users').select(['uuid', 'username']).where('username', '=', username).limit(numberParam(limit)),
        );
        setFastPath(true);
        const on = await query(t.deps.database, 'alice', numberArg(5));
        setFastPath(false);
        const off = await query(t.deps.database, 'alice', numberArg(5));
        assert.deepEqual(off, on);
        assert.deepEqual(on, [{ uuid: alice.uuid, username: 'alice' }]);
      } finally {
        setFastPath(configured);
        await t.close();
      }
    });

    test(
      'the compiled hot reads have a pool of their own: GET /user answers while every main connection is held',
      { skip: dialect === 'sqlite' && 'PostgreSQL only: SQLite has no pool' },
      async () => {
        const configured = fastPathOn();
        setFastPath(true);
        const t = await startApp(dialect);
        const shared = await startApp(dialect, { store: t.store, config: { pgHotConnections: 0 } });
        const held: PoolClient[] = [];
        const release = () => held.splice(0).forEach((c) => c.release());
        try {
          const alice = await t.user('alice');
          // the first request writes the token's last_used_at (at most once a minute, on the main pool)
          for (const app of [t, shared]) assert.equal((await app.req('GET', '/api/v1/user', { token: alice.token })).status, 200);
          for (const app of [t, shared]) {
            const pool = app.deps.database.pool!;
            while (held.length < pool.options.max!) held.push(await pool.connect());
            const answered = app.req('GET', '/api/v1/user', { token: alice.token });
            const first = await Promise.race([answered, new Promise<'waiting'>((r) => setTimeout(() => r('waiting'), 1000))]);
            if (app === t) {
              assert.notEqual(first, 'waiting', 'GET /user waited for a main-pool connection');
              assert.equal(app.deps.database.hotPool!.totalCount > 0, true);
            } else {
              // WEFT_PG_HOT_CONNECTIONS=0: the token lookup waits behind the main pool's holders
              assert.equal(first, 'waiting');
              assert.equal(app.deps.database.hotPool, null);
            }
            release();
            const res = await answered;
            assert.equal(res.status, 200);
            assert.equal((res.body as { username: string }).username, 'alice');
          }
        } finally {
          release();
          setFastPath(configured);
          await shared.close();
          await t.close();
        }
      },
    );
  });
}

describe('WEFT_FAST_PATH', () => {
  test('on (the default) or off; anything else stops start-up naming the variable', () => {
    assert.equal(loadConfig({}).fastPath, true);
    assert.equal(loadConfig({ WEFT_FAST_PATH: 'off' }).fastPath, false);
    assert.equal(loadConfig({ WEFT_FAST_PATH: 'ON' }).fastPath, true);
    assert.throws(() => loadConfig({ WEFT_FAST_PATH: 'maybe' }), /WEFT_FAST_PATH must be on or off/);
  });
  test('WEFT_PG_HOT_CONNECTIONS: 3 by default, 0 to share the main pool, refused out of range', () => {
    assert.equal(loadConfig({}).pgHotConnections, 3);
    assert.equal(loadConfig({ WEFT_PG_HOT_CONNECTIONS: '0' }).pgHotConnections, 0);
    assert.throws(() => loadConfig({ WEFT_PG_HOT_CONNECTIONS: '-1' }), /WEFT_PG_HOT_CONNECTIONS/);
    assert.throws(() => loadConfig({ WEFT_PG_HOT_CONNECTIONS: 'many' }), /WEFT_PG_HOT_CONNECTIONS/);
  });
});
