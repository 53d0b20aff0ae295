import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { claimJobs, finishJob, type RunnerRow, sweepLostRunners } from '../src/ci/runs.ts';
import { inTransaction } from '../src/core/transaction.ts';
import type { Person } from './common.ts';
import { commitFiles, type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

const CI = `name: CI
on:
  push:
    branches: [main]
    paths-ignore: ['docs/**']
jobs:
  build:
    runs-on: [linux]
    strategy:
      matrix:
        n: [1, 2]
    outputs:
      v: \${{ steps.a.outputs.v }}
    steps:
      - id: a
        run: echo v=1 >> "$GITHUB_OUTPUT"
  test:
    needs: build
    runs-on: linux
    steps:
      - run: echo test
  report:
    needs: test
    if: failure()
    runs-on: linux
    steps:
      - run: echo report
`;
const BROKEN = 'name: Broken\non: push\njobs:\n  a:\n    runs-on: linux\n    stepz: []\n';
const OTHER = 'name: Other\non:\n  push:\n    branches: [dev]\njobs:\n  a:\n    runs-on: mac\n    steps: [{run: x}]\n';

/** Runs and jobs from a real push: jobs per matrix value, needs, `if`, statuses, claims. */
for (const dialect of DIALECTS) {
  describe(`CI runs from pushes (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person;
    let repoUuid: string;
    let api: string;
    let work: string;
    let url: string;

    const runner = async (labels: string[], scope = 'site', scopeUuid: string | null = null): Promise<RunnerRow> => {
      const row = {
        uuid: randomUUID(),
        name: `r-${labels.join('-')}`,
        labels: JSON.stringify(labels),
        scope,
        scope_uuid: scopeUuid,
        secret_hash: randomUUID(),
        version: 'test',
        capacity: 1,
        last_seen_at: new Date().toISOString(),
        created_by_uuid: alice.uuid,
        created_at: new Date().toISOString(),
      };
      await t.deps.db.insertInto('ci_runners').values(row).execute();
      return row;
    };
    const jobs = () => t.deps.db.selectFrom('ci_jobs').selectAll().where('repo_uuid', '=', repoUuid).orderBy('id').execute();
    const claim = (r: RunnerRow, max = 1) => inTransaction(t.deps, (tx) => claimJobs(t.deps, tx, r, max));
    const finish = (uuid: string, c: 'success' | 'failure', outputs: Record<string, string> = {}) =>
      inTransaction(t.deps, (tx) => finishJob(t.deps, tx, uuid, c, outputs));

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      const created = await t.req('POST', `/api/v1/users/alice/repos`, {
        token: alice.token,
        body: { name: 'app', slug: 'app' },
      });
      assert.equal(created.status, 201, created.text);
      repoUuid = created.body.uuid;
      api = '/api/v1/users/alice/repos/app';
      url = g.url('/git/users/alice/app.git', alice.token);
      work = await makeWorkTree(g, 'w', [
        { 'README.md': 'hi\n', '.weft/workflows/ci.yml': CI, '.weft/workflows/other.yaml': OTHER },
      ]);
      await g.run(['-C', work, 'push', '-q', url, 'main']);
    });
    after(async () => {
      g.cleanup();
      await t.close();
    });

    it('a push makes one run per matching workflow, a job per matrix value, pending statuses', async () => {
      const runs = await t.deps.db.selectFrom('ci_runs').selectAll().where('repo_uuid', '=', repoUuid).execute();
      assert.deepEqual(
        runs.map((r) => [r.number, r.workflow_name, r.event, r.ref, r.status]),
        [[1, 'CI', 'push', 'refs/heads/main', 'queued']],
      );
      const js = await jobs();
      assert.deepEqual(
        js.map((j) => [j.name, j.status, j.context]),
        [
          ['build (1)', 'queued', 'CI / build (1)'],
          ['build (2)', 'queued', 'CI / build (2)'],
          ['test', 'waiting', 'CI / test'],
          ['report', 'waiting', 'CI / report'],
        ],
      );
      const sha = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      const combined = await t.req('GET', `${api}/commits/${sha}/status`, { token: alice.token });
      assert.equal(combined.body.state, 'pending');
      assert.deepEqual(
        combined.body.statuses.map((s: any) => [s.context, s.state, s.description]),
        [
          ['CI / build (1)', 'pending', 'Queued'],
          ['CI / build (2)', 'pending', 'Queued'],
          ['CI / report', 'pending', 'Queued'],
          ['CI / test', 'pending', 'Queued'],
        ],
      );
      assert.match(combined.body.statuses[0].target_url, /\/alice\/app\/runs\/1\/jobs\/[0-9a-f-]{36}$/);
    });

    it('claims: labels and scope decide; each job once; needs and if move the run on', async () => {
      const mac = await runner(['mac']);
      assert.deepEqual(await claim(mac), [], 'runs-on linux needs the linux label');
      const otherRepo = await runner(['linux'], 'repo', randomUUID());
      assert.deepEqual(await claim(otherRepo), [], 'a runner of another repo sees nothing');
      const a = await runner(['linux', 'x64']);
      const b = await runner(['LINUX']);
      // two claims at once never take one job
      const [ca, cb] = await Promise.all([claim(a, 2), claim(b, 2)]);
      const all = [...ca, ...cb];
      assert.equal(all.length, 2);
      assert.equal(new Set(all).size, 2);
      assert.deepEqual(await claim(a), [], 'test waits for build');
      let js = await jobs();
      assert.deepEqual(
        js.map((j) => j.status),
        ['in_progress', 'in_progress', 'waiting', 'waiting'],
      );
      await finish(js[0]!.uuid, 'success', { v: '1' });
      assert.equal((await jobs())[2]!.status, 'waiting', 'test waits for both build jobs');
      await finish(js[1]!.uuid, 'success', { v: '1' });
      js = await jobs();
      assert.equal(js[2]!.status, 'queued');
      const [testJob] = await claim(b);
      assert.equal(testJob, js[2]!.uuid);
      // the runner goes silent: its job fails as runner_lost, report (if: failure()) is queued
      await t.deps.db
        .updateTable('ci_runners')
        .set({ last_seen_at: new Date(Date.now() - 61_000).toISOString() })
        .where('uuid', '=', b.uuid)
        .execute();
      const lost = await inTransaction(t.deps, (tx) => sweepLostRunners(t.deps, tx));
      assert.deepEqual(lost, [testJob]);
      js = await jobs();
      assert.deepEqual(
        js.map((j) => [j.status, j.conclusion]),
        [
          ['completed', 'success'],
          ['completed', 'success'],
          ['completed', 'failure'],
          ['queued', null],
        ],
      );
      const [reportJob] = await claim(a);
      await finish(reportJob!, 'success');
      const run = await t.deps.db.selectFrom('ci_runs').selectAll().where('repo_uuid', '=', repoUuid).executeTakeFirstOrThrow();
      assert.deepEqual([run.status, run.conclusion], ['completed', 'failure']);
      const sha = run.head_sha;
      const combined = await t.req('GET', `${api}/commits/${sha}/status`, { token: alice.token });
      assert.deepEqual(
        combined.body.statuses.map((s: any) => [s.context, s.state]),
        [
          ['CI / build (1)', 'success'],
          ['CI / build (2)', 'success'],
          ['CI / report', 'success'],
          ['CI / test', 'failure'],
        ],
      );
      const testStatus = combined.body.statuses.find((s: any) => s.context === 'CI / test');
      assert.equal(testStatus.description, 'runner_lost');
    });

    it('paths-ignore, a refused file as a failed status, skipped jobs', async () => {
      await commitFiles(g, work, [{ 'docs/a.md': 'x\n' }]);
      await g.run(['-C', work, 'push', '-q', url, 'main']);
      let runs = await t.deps.db.selectFrom('ci_runs').selectAll().where('repo_uuid', '=', repoUuid).orderBy('number').execute();
      assert.equal(runs.length, 1, 'docs only: no run');
      await commitFiles(g, work, [{ 'src/a.ts': 'x\n', '.weft/workflows/broken.yml': BROKEN }]);
      await g.run(['-C', work, 'push', '-q', url, 'main']);
      runs = await t.deps.db.selectFrom('ci_runs').selectAll().where('repo_uuid', '=', repoUuid).orderBy('number').execute();
      assert.deepEqual(
        runs.slice(1).map((r) => [r.number, r.workflow_path, r.status, r.conclusion]),
        [
          [2, '.weft/workflows/broken.yml', 'completed', 'startup_failure'],
          [3, '.weft/workflows/ci.yml', 'queued', null],
        ],
      );
      assert.match(runs[1]!.error ?? '', /^\.weft\/workflows\/broken\.yml:6: jobs\.a\.stepz: unknown key/m);
      const combined = await t.req('GET', `${api}/commits/${runs[1]!.head_sha}/status`, { token: alice.token });
      const startup = combined.body.statuses.find((s: any) => s.context === '.weft/workflows/broken.yml / startup');
      assert.equal(startup.state, 'failure');
      assert.match(startup.description, /jobs\.a\.stepz: unknown key/);
      // build succeeds, test succeeds: report (if: failure()) is skipped and the run succeeds
      const r = await runner(['linux']);
      for (const uuid of await claim(r, 2)) await finish(uuid, 'success');
      for (const uuid of await claim(r, 2)) await finish(uuid, 'success');
      const run3 = await t.deps.db.selectFrom('ci_runs').selectAll().where('uuid', '=', runs[2]!.uuid).executeTakeFirstOrThrow();
      assert.deepEqual([run3.status, run3.conclusion], ['completed', 'success']);
      const report = await t.deps.db
        .selectFrom('ci_jobs')
        .selectAll()
        .where('run_uuid', '=', run3.uuid)
        .where('job_key', '=', 'report')
        .executeTakeFirstOrThrow();
      assert.equal(report.conclusion, 'skipped');
    });
  });
}
