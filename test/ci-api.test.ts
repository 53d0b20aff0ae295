import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventResults, type Person } from './common.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

const CI = `name: CI
on:
  push:
    branches: [main]
  workflow_dispatch:
    inputs:
      level:
        type: choice
        options: [low, high]
        required: true
      dry:
        type: boolean
jobs:
  build:
    runs-on: linux
    steps:
      - run: echo build
  test:
    needs: build
    runs-on: linux
    steps:
      - run: echo test
`;

/** The runs API (docs/ci.md "API"): runs, jobs, logs with ranges, cancel, rerun, approve, dispatch, events. */
for (const dialect of DIALECTS) {
  describe(`CI runs API (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person;
    let bob: Person;
    let repoUuid: string;
    let secret: string;
    const api = '/api/v1/users/alice/repos/app';

    const runnerCall = (path: string, body: unknown) =>
      t.req('POST', `/api/v1/runner${path}`, { token: null, body, headers: { 'x-weft-runner-secret': secret } });

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      bob = await t.user('bob');
      const created = await t.req('POST', '/api/v1/users/alice/repos', {
        token: alice.token,
        body: { name: 'app', slug: 'app' },
      });
      assert.equal(created.status, 201, created.text);
      repoUuid = created.body.uuid;
      const work = await makeWorkTree(g, 'w', [{ 'README.md': 'hi\n', '.weft/workflows/ci.yml': CI }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/app.git', alice.token), 'main']);
      const reg = await t.req('POST', `${api}/runners/registration-token`, { token: alice.token });
      const r = await t.req('POST', '/api/v1/runner/register', {
        token: null,
        body: { token: reg.body.token, name: 'r1', labels: ['linux'] },
      });
      assert.equal(r.status, 201, r.text);
      secret = r.body.secret;
    });
    after(async () => {
      g.cleanup();
      await t.close();
    });

    it('list and get runs and jobs; a job run through the protocol; its log with Range; events', async () => {
      const list = await t.req('GET', `${api}/runs`, { token: alice.token });
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(
        list.body.results.map((r: any) => [r.number, r.workflow.path, r.workflow.name, r.event, r.status, r.actor.username]),
        [[1, '.weft/workflows/ci.yml', 'CI', 'push', 'queued', 'alice']],
      );
      assert.equal((await t.req('GET', `${api}/runs?event=workflow_dispatch`, { token: alice.token })).body.results.length, 0);
      assert.equal(
        (await t.req('GET', `${api}/runs?workflow=ci.yml&branch=main`, { token: alice.token })).body.results.length,
        1,
      );
      assert.equal((await t.req('GET', `${api}/runs?actor=bob`, { token: alice.token })).body.results.length, 0);
      const run = await t.req('GET', `${api}/runs/1`, { token: alice.token });
      assert.equal(run.status, 200, run.text);
      assert.deepEqual(
        run.body.jobs.map((j: any) => [j.name, j.status]),
        [
          ['build', 'queued'],
          ['test', 'waiting'],
        ],
      );
      assert.equal((await t.req('GET', `${api}/runs/99`, { token: alice.token })).status, 404);
      assert.equal((await t.req('GET', `${api}/runs/1`, { token: bob.token })).status, 404, 'a private repo');

      const polled = await runnerCall('/poll', { free: 1, running: [] });
      assert.equal(polled.status, 200, polled.text);
      const job = polled.body.jobs[0];
      assert.equal(job.name, 'build');
      const lines = ['2026-01-01T00:00:00.000Z one\n', '2026-01-01T00:00:01.000Z two\n'];
      assert.equal((await runnerCall(`/jobs/${job.uuid}/log`, { offset: 0, data: lines[0] })).status, 200);
      assert.equal((await runnerCall(`/jobs/${job.uuid}/log`, { offset: lines[0]!.length, data: lines[1] })).status, 200);
      await runnerCall(`/jobs/${job.uuid}/steps`, {
        steps: [{ number: 1, status: 'completed', conclusion: 'success', started_at: null, completed_at: null }],
      });
      const logUrl = `${api}/runs/1/jobs/${job.uuid}/log`;
      const whole = await t.req('GET', logUrl, { token: alice.token });
      assert.equal(whole.status, 200);
      assert.match(String(whole.headers['content-type']), /^text\/plain/);
      assert.equal(whole.text, lines.join(''));
      const part = await t.req('GET', logUrl, { token: alice.token, headers: { range: `bytes=${lines[0]!.length}-` } });
      assert.equal(part.status, 206);
      assert.equal(part.text, lines[1]);
      assert.equal(
        part.headers['content-range'],
        `bytes ${lines[0]!.length}-${lines.join('').length - 1}/${lines.join('').length}`,
      );
      const tail = await t.req('GET', logUrl, { token: alice.token, headers: { range: 'bytes=-4' } });
      assert.equal(tail.text, 'two\n');
      const past = await t.req('GET', logUrl, { token: alice.token, headers: { range: 'bytes=1000-' } });
      assert.equal(past.status, 416);

      const got = await t.req('GET', `${api}/runs/1/jobs/${job.uuid}`, { token: alice.token });
      assert.equal(got.status, 200, got.text);
      assert.equal(got.body.status, 'in_progress');
      assert.equal(got.body.runner_name, 'r1');
      assert.deepEqual(
        got.body.steps.map((s: any) => [s.number, s.name, s.status, s.conclusion]),
        [[1, 'Run echo build', 'completed', 'success']],
      );
      assert.equal((await runnerCall(`/jobs/${job.uuid}/finish`, { conclusion: 'failure' })).status, 204);
      const done = await t.req('GET', `${api}/runs/1`, { token: alice.token });
      assert.equal(done.body.status, 'completed');
      assert.equal(done.body.conclusion, 'failure');
      assert.deepEqual(
        done.body.jobs.map((j: any) => [j.name, j.conclusion]),
        [
          ['build', 'failure'],
          ['test', 'skipped'],
        ],
      );

      const kinds = async (kind: string) => eventResults(t, `repo:${repoUuid}`, alice.token, kind);
      const created = await kinds('run-created');
      assert.equal(created.length, 1);
      assert.equal((created[0]!.payload as any).run.number, 1);
      assert.equal((created[0]!.payload as any).run.status, 'queued');
      const completed = await kinds('run-completed');
      assert.equal(completed.length, 1);
      assert.equal((completed[0]!.payload as any).run.conclusion, 'failure');
      const jobsDone = await kinds('job-completed');
      assert.deepEqual(jobsDone.map((e: any) => [e.payload.job.name, e.payload.job.conclusion]).sort(), [
        ['build', 'failure'],
        ['test', 'skipped'],
      ]);
    });

    it('rerun: all jobs, or the failed ones; 409 while running', async () => {
      const all = await t.req('POST', `${api}/runs/1/rerun`, { token: alice.token, body: {} });
      assert.equal(all.status, 200, all.text);
      assert.equal(all.body.attempt, 2);
      assert.equal(all.body.status, 'queued');
      assert.deepEqual(
        all.body.jobs.map((j: any) => [j.name, j.status]),
        [
          ['build', 'queued'],
          ['test', 'waiting'],
        ],
      );
      const again = await t.req('POST', `${api}/runs/1/rerun`, { token: alice.token });
      assert.equal(again.status, 409, again.text);
      // build succeeds, test fails
      for (const want of ['success', 'failure']) {
        const polled = await runnerCall('/poll', { free: 1, running: [] });
        assert.equal(polled.body.jobs.length, 1, polled.text);
        await runnerCall(`/jobs/${polled.body.jobs[0].uuid}/finish`, { conclusion: want });
      }
      const failed = await t.req('POST', `${api}/runs/1/rerun`, { token: alice.token, body: { failed_only: true } });
      assert.equal(failed.status, 200, failed.text);
      assert.equal(failed.body.attempt, 3);
      assert.deepEqual(
        failed.body.jobs.map((j: any) => [j.name, j.status, j.conclusion]),
        [
          ['build', 'completed', 'success'],
          ['test', 'queued', null],
        ],
      );
      const bobRerun = await t.req('POST', `${api}/runs/1/rerun`, { token: bob.token });
      assert.equal(bobRerun.status, 404, 'no read access');
    });

    it('cancel: queued and waiting jobs end at once, statuses say error; 409 once completed', async () => {
      const c = await t.req('POST', `${api}/runs/1/cancel`, { token: alice.token });
      assert.equal(c.status, 200, c.text);
      assert.equal(c.body.status, 'completed');
      assert.equal(c.body.conclusion, 'cancelled');
      assert.equal((await t.req('POST', `${api}/runs/1/cancel`, { token: alice.token })).status, 409);
      const run = await t.req('GET', `${api}/runs/1`, { token: alice.token });
      const status = await t.req('GET', `${api}/commits/${run.body.head_sha}/status`, { token: alice.token });
      const test = status.body.statuses.find((s: any) => s.context === 'CI / test');
      assert.equal(test.state, 'error');
    });

    it('dispatch: inputs checked against the file, a run for the branch; approve a waiting run', async () => {
      const url = `${api}/workflows/ci.yml/dispatches`;
      const bad = await t.req('POST', url, { token: alice.token, body: { ref: 'main', inputs: { level: 'medium' } } });
      assert.equal(bad.status, 400, bad.text);
      assert.equal(bad.body.error, 'invalid_inputs');
      assert.match(bad.body.detail, /one of: low, high/);
      const unknown = await t.req('POST', url, { token: alice.token, body: { inputs: { level: 'low', nope: 'x' } } });
      assert.equal(unknown.status, 400);
      assert.equal((await t.req('POST', `${api}/workflows/none.yml/dispatches`, { token: alice.token, body: {} })).status, 404);
      assert.equal((await t.req('POST', url, { token: alice.token, body: { ref: 'nope' } })).status, 404);
      const ok = await t.req('POST', url, { token: alice.token, body: { ref: 'main', inputs: { level: 'high', dry: true } } });
      assert.equal(ok.status, 201, ok.text);
      assert.equal(ok.body.event, 'workflow_dispatch');
      assert.equal(ok.body.head_branch, 'main');
      assert.equal(ok.body.number, 2);
      const spec = await t.deps.db
        .selectFrom('ci_runs')
        .select('inputs')
        .where('uuid', '=', ok.body.uuid)
        .executeTakeFirstOrThrow();
      assert.deepEqual(JSON.parse(spec.inputs), { level: 'high', dry: true });

      // a waiting run (as a first-time contributor's pull makes): approve queues it
      assert.equal((await t.req('POST', `${api}/runs/2/approve`, { token: alice.token })).status, 409, 'not waiting');
      await t.deps.db.updateTable('ci_runs').set({ status: 'waiting' }).where('uuid', '=', ok.body.uuid).execute();
      await t.deps.db.updateTable('ci_jobs').set({ status: 'waiting' }).where('run_uuid', '=', ok.body.uuid).execute();
      const approved = await t.req('POST', `${api}/runs/2/approve`, { token: alice.token });
      assert.equal(approved.status, 200, approved.text);
      assert.equal(approved.body.status, 'queued');
      assert.deepEqual(
        approved.body.jobs.map((j: any) => [j.name, j.status]),
        [
          ['build', 'queued'],
          ['test', 'waiting'],
        ],
      );
    });

    it('secrets (write-only, sealed) and variables; given to jobs, none to runs from forks', async () => {
      const put = await t.req('PUT', `${api}/secrets/DEPLOY_KEY`, { token: alice.token, body: { value: 's3cr3t-value' } });
      assert.equal(put.status, 200, put.text);
      assert.deepEqual(Object.keys(put.body).sort(), ['created_at', 'name', 'updated_at']);
      const got = await t.req('GET', `${api}/secrets/DEPLOY_KEY`, { token: alice.token });
      assert.equal(got.status, 200);
      assert.equal(got.body.value, undefined);
      assert.doesNotMatch((await t.req('GET', `${api}/secrets`, { token: alice.token })).text, /s3cr3t/);
      const stored = await t.deps.db.selectFrom('ci_secrets').select('value').executeTakeFirstOrThrow();
      assert.doesNotMatch(stored.value, /s3cr3t/, 'sealed at rest');
      for (const bad of ['lower', 'WEFT_X', 'GITHUB_TOKEN', '1X'])
        assert.equal(
          (await t.req('PUT', `${api}/secrets/${bad}`, { token: alice.token, body: { value: 'x' } })).status,
          400,
          bad,
        );
      assert.equal((await t.req('GET', `${api}/secrets/DEPLOY_KEY`, { token: bob.token })).status, 404);
      const v = await t.req('PUT', `${api}/variables/REGION`, { token: alice.token, body: { value: 'eu' } });
      assert.equal(v.status, 200, v.text);
      assert.equal((await t.req('GET', `${api}/variables/REGION`, { token: alice.token })).body.value, 'eu');
      assert.equal((await t.req('DELETE', `${api}/variables/NOPE`, { token: alice.token })).status, 404);

      // run 2 (approved above) is queued: as a run from a fork it gets no secrets, but its variables
      await t.deps.db.updateTable('ci_runs').set({ fork: 1 }).where('number', '=', 2).execute();
      const forked = await runnerCall('/poll', { free: 1, running: [] });
      assert.equal(forked.body.jobs[0].run.number, 2);
      assert.deepEqual(forked.body.jobs[0].secrets, {});
      assert.deepEqual(forked.body.jobs[0].contexts.vars, { REGION: 'eu' });
      await runnerCall(`/jobs/${forked.body.jobs[0].uuid}/finish`, { conclusion: 'success' });
      await t.req('POST', `${api}/runs/2/cancel`, { token: alice.token });
      const own = await t.req('POST', `${api}/workflows/ci.yml/dispatches`, {
        token: alice.token,
        body: { inputs: { level: 'low' } },
      });
      assert.equal(own.status, 201, own.text);
      const polled = await runnerCall('/poll', { free: 1, running: [] });
      assert.equal(polled.body.jobs[0].run.number, own.body.number);
      assert.deepEqual(polled.body.jobs[0].secrets, { DEPLOY_KEY: 's3cr3t-value' });
      assert.equal((await t.req('DELETE', `${api}/secrets/DEPLOY_KEY`, { token: alice.token })).status, 204);
    });
  });
}
