import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
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
  });
}

describe('WEFT_FAST_PATH', () => {
  test('on (the default) or off; anything else stops start-up naming the variable', () => {
    assert.equal(loadConfig({}).fastPath, true);
    assert.equal(loadConfig({ WEFT_FAST_PATH: 'off' }).fastPath, false);
    assert.equal(loadConfig({ WEFT_FAST_PATH: 'ON' }).fastPath, true);
    assert.throws(() => loadConfig({ WEFT_FAST_PATH: 'maybe' }), /WEFT_FAST_PATH must be on or off/);
  });
});
