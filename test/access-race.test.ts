import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, isErrorBody, startApp } from './helpers.ts';
import { q, whileUncommitted } from './locks.ts';

/**
 * A write racing an archive or a member removal: the concurrent change is made in a transaction
 * of its own that holds its locks while the write arrives and commits only afterwards. Access
 * must be checked inside the write's transaction, so the write sees the committed change and is
 * refused. (Checking before the transaction, as the code once did, read the old state and the
 * write went through.)
 *
 * On PostgreSQL the concurrent change is a second connection; the write must wait for it (a
 * locking read in the check). On SQLite it is a second process (as the CLI would be) holding the
 * write lock; the write's BEGIN IMMEDIATE waits for it, and a check made before that BEGIN reads
 * the old state (WAL readers never wait).
 *
 * The writer's token is used once first: authentication writes `last_used_at` when it is older
 * than a minute, and on SQLite that write would wait for the lock too, so every later read (a
 * check outside the transaction included) would see the committed change and the test could not
 * tell a check inside the transaction from one outside it.
 */

for (const dialect of DIALECTS) {
  describe(`writes racing an archive or a member removal (${dialect})`, () => {
    test('a pull opened while the repo is being archived is refused with 403 repo_archived', async () => {
      const t = await startApp(dialect);
      try {
        const alice = await t.user('alice');
        const team = await seedTeam(t, 'crew', [{ uuid: alice.uuid, role: 'member' }]);
        const repo = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'tool');
        const res = await whileUncommitted(
          t,
          alice.token,
          [`update repos set is_archived = 1 where uuid = ${q(repo.uuid)}`],
          () =>
            t.req('POST', '/api/v1/teams/crew/repos/tool/pulls', {
              token: alice.token,
              body: { title: 'Change', body: '', source_branch: 'feature/a', target_branch: 'main' },
            }),
        );
        assert.equal(res.status, 403, res.text);
        assert.ok(isErrorBody(res.body, 'repo_archived'));
        const pulls = await t.deps.db.selectFrom('pulls').select('uuid').execute();
        assert.deepEqual(pulls, []);
      } finally {
        await t.close();
      }
    });

    test('a review written while its author is being removed from the team is refused (404: the repo is private)', async () => {
      const t = await startApp(dialect);
      try {
        const alice = await t.user('alice');
        const bob = await t.user('bob');
        const team = await seedTeam(t, 'crew', [
          { uuid: alice.uuid, role: 'owner' },
          { uuid: bob.uuid, role: 'member' },
        ]);
        await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'tool');
        const base = '/api/v1/teams/crew/repos/tool';
        const opened = await t.req('POST', `${base}/pulls`, {
          token: alice.token,
          body: { title: 'Change', body: '', source_branch: 'feature/a', target_branch: 'main' },
        });
        assert.equal(opened.status, 201, opened.text);
        const res = await whileUncommitted(
          t,
          bob.token,
          [`delete from team_members where team_uuid = ${q(team.uuid)} and user_uuid = ${q(bob.uuid)}`],
          () => t.req('POST', `${base}/pulls/1/reviews`, { token: bob.token, body: { status: 'approved', body: 'ok' } }),
        );
        assert.equal(res.status, 404, res.text);
        assert.ok(isErrorBody(res.body, 'not_found'));
        assert.match(res.body.detail, /Repo/);
        assert.deepEqual(await t.deps.db.selectFrom('reviews').select('uuid').execute(), []);
      } finally {
        await t.close();
      }
    });

    test('a member change by an owner who is being removed is refused (404: no longer a member)', async () => {
      const t = await startApp(dialect);
      try {
        const alice = await t.user('alice');
        const bob = await t.user('bob');
        const carol = await t.user('carol');
        const team = await seedTeam(t, 'crew', [
          { uuid: alice.uuid, role: 'owner' },
          { uuid: bob.uuid, role: 'owner' },
          { uuid: carol.uuid, role: 'member' },
        ]);
        const res = await whileUncommitted(
          t,
          bob.token,
          [`delete from team_members where team_uuid = ${q(team.uuid)} and user_uuid = ${q(bob.uuid)}`],
          () => t.req('PUT', `/api/v1/teams/crew/members/${carol.username}`, { token: bob.token, body: { role: 'maintainer' } }),
        );
        assert.equal(res.status, 404, res.text);
        assert.deepEqual(res.body, { error: 'not_found', detail: res.body.detail });
        assert.match(res.body.detail, /Team/);
        const carolRow = await t.deps.db
          .selectFrom('team_members')
          .select('role')
          .where('user_uuid', '=', carol.uuid)
          .executeTakeFirstOrThrow();
        assert.equal(carolRow.role, 'member');
      } finally {
        await t.close();
      }
    });
  });
}
