import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { commitFiles, type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

// docs/ci.md "Workflow files": a branch or tag moved by the server itself (a merge through the API
// or the pages, an applied suggestion, a release's new tag) starts the same `on.push` runs and
// schedule changes as a `git push` of that move.
const ON_PUSH = `name: CI
on:
  push:
    branches: [main, feature]
    tags: ['v*']
jobs:
  a:
    runs-on: linux
    steps: [{run: echo \${{ weft.ref }}}]
`;
const NIGHTLY =
  "name: Nightly\non:\n  schedule:\n    - cron: '0 3 * * *'\njobs:\n  a:\n    runs-on: linux\n    steps: [{run: x}]\n";

for (const dialect of DIALECTS) {
  describe(`CI runs for moves the server makes (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person;
    let bob: Person;
    let repoUuid: string;
    let work: string;
    let url: string;
    const api = '/api/v1/teams/core/repos/app';
    // biome-ignore lint/suspicious/noExplicitAny: runs are inspected freely
    const pushRuns = async (): Promise<any[]> => {
      const res = await t.req('GET', `${api}/runs?event=push&per_page=100`, { token: alice.token });
      assert.equal(res.status, 200, res.text);
      return res.body.results;
    };
    const ok = (res: { status: number; text: string; body: any }, status: number) => {
      assert.equal(res.status, status, res.text);
      return res;
    };

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      bob = await t.user('bob');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Core', slug: 'core' } }), 201);
      ok(
        await t.req('POST', '/api/v1/teams/core/members', { token: alice.token, body: { username: 'bob', role: 'member' } }),
        201,
      );
      const created = ok(
        await t.req('POST', '/api/v1/teams/core/repos', { token: alice.token, body: { name: 'app', slug: 'app' } }),
        201,
      );
      repoUuid = created.body.uuid;
      url = g.url('/git/teams/core/app.git', alice.token);
      work = await makeWorkTree(g, 'w', [{ 'README.md': 'hi\n', 's.txt': 'a\nb\nc\n', '.weft/workflows/ci.yml': ON_PUSH }]);
      await g.run(['-C', work, 'push', '-q', url, 'main']);
    });
    after(() => t.close());

    it('a merge through the API runs the target branch’s push workflows and recomputes its schedules', async () => {
      const pushed = (await pushRuns()).length;
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feature']);
      await commitFiles(g, work, [{ 'f.txt': 'feature\n', '.weft/workflows/nightly.yml': NIGHTLY }], 'feature work');
      await g.run(['-C', work, 'push', '-q', url, 'feature']);
      assert.equal((await pushRuns()).length, pushed + 1, 'the push of feature made its run');
      assert.equal(
        (await t.deps.db.selectFrom('ci_schedules').selectAll().where('repo_uuid', '=', repoUuid).execute()).length,
        0,
        'a schedule on another branch than the default is not scheduled',
      );
      const pull = ok(
        await t.req('POST', `${api}/pulls`, {
          token: alice.token,
          body: { title: 'Feature', body: '', source_branch: 'feature', target_branch: 'main' },
        }),
        201,
      );
      const merged = ok(await t.req('POST', `${api}/pulls/${pull.body.number}/merge`, { token: bob.token, body: {} }), 200);
      const runs = await pushRuns();
      assert.equal(runs.length, pushed + 2, 'the merge made one run');
      const run = runs.find((r) => r.head_sha === merged.body.merge_commit_sha);
      assert.ok(run, 'a run at the merge commit');
      assert.equal(run.event, 'push');
      assert.equal(run.head_branch, 'main');
      assert.equal(run.actor.username, 'bob', 'the merger is the actor');
      const schedules = await t.deps.db.selectFrom('ci_schedules').selectAll().where('repo_uuid', '=', repoUuid).execute();
      assert.deepEqual(
        schedules.map((s) => [s.workflow_path, s.actor_uuid]),
        [['.weft/workflows/nightly.yml', bob.uuid]],
        'the merged workflow is scheduled, as the merger',
      );
    });

    it('an applied suggestion runs the source branch’s push workflows', async () => {
      await g.run(['-C', work, 'checkout', '-q', '-b', 'tweak', 'main']);
      await g.run(['-C', work, 'pull', '-q', url, 'main']);
      await commitFiles(g, work, [{ 's.txt': 'a\nB\nc\n' }], 'tweak');
      await g.run(['-C', work, 'push', '-q', url, 'tweak:feature']);
      const pull = ok(
        await t.req('POST', `${api}/pulls`, {
          token: alice.token,
          body: { title: 'Tweak', body: '', source_branch: 'feature', target_branch: 'main' },
        }),
        201,
      );
      const n = pull.body.number;
      const review = ok(
        await t.req('POST', `${api}/pulls/${n}/reviews`, {
          token: bob.token,
          body: { status: 'commented', comments: [{ path: 's.txt', line: 2, body: '```suggestion\nbee\n```\n' }] },
        }),
        201,
      );
      const comments = ok(await t.req('GET', `${api}/pulls/${n}/comments`, { token: alice.token }), 200);
      const suggestion = comments.body.results.find((c: { review_uuid: string }) => c.review_uuid === review.body.uuid);
      const before = (await pushRuns()).length;
      const applied = ok(
        await t.req('POST', `${api}/pulls/${n}/suggestions/apply`, {
          token: alice.token,
          body: { comment_uuids: [suggestion.uuid] },
        }),
        200,
      );
      const runs = await pushRuns();
      assert.equal(runs.length, before + 1, 'the applied suggestion made one push run');
      const run = runs.find((r) => r.head_sha === applied.body.commit_sha);
      assert.ok(run, 'a run at the suggestion commit');
      assert.equal(run.head_branch, 'feature');
      assert.equal(run.actor.username, 'alice');
    });

    it('a release’s new tag runs the tag workflows; an existing tag runs nothing again', async () => {
      const before = (await pushRuns()).length;
      ok(await t.req('POST', `${api}/releases`, { token: alice.token, body: { tag_name: 'v1.0.0' } }), 201);
      const runs = await pushRuns();
      assert.equal(runs.length, before + 1, 'the new tag made one run');
      const main = await t.deps.git.refSha(repoUuid, 'refs/heads/main');
      const stored = await t.deps.db
        .selectFrom('ci_runs')
        .select(['ref', 'event', 'head_sha'])
        .where('repo_uuid', '=', repoUuid)
        .where('ref', '=', 'refs/tags/v1.0.0')
        .execute();
      assert.deepEqual(stored, [{ ref: 'refs/tags/v1.0.0', event: 'push', head_sha: main }]);
      // a release of a tag pushed before creates no tag, so no second run
      await g.run(['-C', work, 'tag', 'v2.0.0', 'HEAD']);
      await g.run(['-C', work, 'push', '-q', url, 'v2.0.0']);
      assert.equal((await pushRuns()).length, before + 2, 'the pushed tag made its run');
      ok(await t.req('POST', `${api}/releases`, { token: alice.token, body: { tag_name: 'v2.0.0' } }), 201);
      assert.equal((await pushRuns()).length, before + 2, 'the release of it made none');
    });
  });
}
