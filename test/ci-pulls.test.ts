import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { type GitClient, commitFiles, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { pruneRuns } from '../src/ci/background.ts';

const CI = `name: PR
on:
  pull_request:
    types: [opened, synchronize, reopened]
jobs:
  check:
    runs-on: linux
    steps:
      - run: echo check
`;

/** docs/ci.md "Pull requests": runs for opened, synchronize and reopened; forks; first-time contributors wait. */
for (const dialect of DIALECTS) {
  describe(`CI runs for pulls (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person;
    let bob: Person;
    let work: string;
    const api = '/api/v1/users/alice/repos/app';
    const runs = async () =>
      (await t.deps.db.selectFrom('ci_runs').selectAll().where('event', '=', 'pull_request').orderBy('number').execute()).map(
        (r) => ({ sha: r.head_sha, pull: r.pull_number, status: r.status, fork: r.fork, uuid: r.uuid, number: r.number }),
      );

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      bob = await t.user('bob');
      const created = await t.req('POST', '/api/v1/users/alice/repos', {
        token: alice.token,
        body: { name: 'app', slug: 'app', visibility: 'public' },
      });
      assert.equal(created.status, 201, created.text);
      work = await makeWorkTree(g, 'w', [{ 'README.md': 'hi\n', '.weft/workflows/pr.yml': CI }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/app.git', alice.token), 'main']);
    });
    after(async () => {
      g.cleanup();
      await t.close();
    });

    it('opened, synchronize and reopened start runs on the head, queued for a writer', async () => {
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feat']);
      await commitFiles(g, work, [{ 'a.txt': 'a\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/app.git', alice.token), 'feat']);
      assert.equal((await runs()).length, 0, 'a push to a branch is no pull event');
      const pull = await t.req('POST', `${api}/pulls`, {
        token: alice.token,
        body: { title: 'Feat', body: '', source_branch: 'feat', target_branch: 'main' },
      });
      assert.equal(pull.status, 201, pull.text);
      const head1 = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      assert.deepEqual(
        (await runs()).map((r) => [r.sha, r.pull, r.status, r.fork]),
        [[head1, pull.body.number, 'queued', 0]],
      );
      await commitFiles(g, work, [{ 'b.txt': 'b\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/app.git', alice.token), 'feat']);
      const head2 = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      assert.deepEqual(
        (await runs()).map((r) => r.sha),
        [head1, head2],
        'synchronize',
      );
      const pullApi = `${api}/pulls/${pull.body.number}`;
      assert.equal((await t.req('PUT', pullApi, { token: alice.token, body: { status: 'closed' } })).status, 200);
      assert.equal((await runs()).length, 2, 'closing starts nothing');
      assert.equal((await t.req('PUT', pullApi, { token: alice.token, body: { status: 'open' } })).status, 200);
      assert.deepEqual(
        (await runs()).map((r) => r.sha),
        [head1, head2, head2],
        'reopened',
      );
      const run = await t.req('GET', `${api}/runs/3`, { token: alice.token });
      assert.equal(run.body.event, 'pull_request');
      assert.equal(run.body.pull_number, pull.body.number);
    });

    it("a first-time contributor's pull from a fork: a fork run that waits for approval", async () => {
      const fork = await t.req('POST', `${api}/forks`, { token: bob.token });
      assert.equal(fork.status, 201, fork.text);
      await g.run(['-C', work, 'checkout', '-q', 'main']);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'bobfix']);
      await commitFiles(g, work, [{ 'bob.txt': 'bob\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/bob/app.git', bob.token), 'bobfix']);
      const pull = await t.req('POST', `${api}/pulls`, {
        token: bob.token,
        body: { title: 'Bob', body: '', source_branch: 'bobfix', target_branch: 'main', source_repo: fork.body.repo.uuid },
      });
      assert.equal(pull.status, 201, pull.text);
      const mine = (await runs()).filter((r) => r.pull === pull.body.number);
      assert.equal(mine.length, 1);
      assert.equal(mine[0]!.status, 'waiting');
      assert.equal(mine[0]!.fork, 1, 'no secrets, a read-only token');
      const status = await t.req('GET', `${api}/commits/${mine[0]!.sha}/status`, { token: alice.token });
      assert.match(JSON.stringify(status.body), /Waiting for approval/);
      assert.equal((await t.req('POST', `${api}/runs/${mine[0]!.number}/approve`, { token: bob.token })).status, 403);
      const approved = await t.req('POST', `${api}/runs/${mine[0]!.number}/approve`, { token: alice.token });
      assert.equal(approved.status, 200, approved.text);
      assert.equal((await t.req('GET', `${api}/runs/${mine[0]!.number}`, { token: alice.token })).body.status, 'queued');
    });

    it('retention: runs completed longer ago than RUN_RETENTION_DAYS go with their jobs and logs', async () => {
      const [first] = await runs();
      await t.deps.db
        .updateTable('ci_runs')
        .set({ status: 'completed', conclusion: 'success', completed_at: new Date().toISOString() })
        .where('uuid', '=', first!.uuid)
        .execute();
      const before = (await runs()).length;
      assert.equal(await pruneRuns(t.deps, Date.now(), 90), 0, 'not yet');
      assert.equal(await pruneRuns(t.deps, Date.now() + 91 * 86_400_000, 90), 1);
      assert.equal((await runs()).length, before - 1);
      const jobs = await t.deps.db.selectFrom('ci_jobs').select('uuid').where('run_uuid', '=', first!.uuid).execute();
      assert.equal(jobs.length, 0);
    });
  });
}
