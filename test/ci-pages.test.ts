import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { type GitClient, commitFiles, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { listen, openSse } from './sse-client.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

const CI = `name: CI
on: push
jobs:
  build:
    runs-on: linux
    steps:
      - run: echo build
      - run: exit 1
  test:
    needs: build
    runs-on: linux
    steps:
      - run: echo test
`;

/** The Actions pages (docs/ci.md "Pages"): list with filters, run page and its forms, job page with the log. */
for (const dialect of DIALECTS) {
  describe(`CI pages (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person;
    let a: Browser;
    let b: Browser;
    let secret: string;
    let jobUuid: string;
    let work: string;
    const api = '/api/v1/users/alice/repos/app';
    const web = '/users/alice/app';

    const runnerCall = (path: string, body: unknown) =>
      t.req('POST', `/api/v1/runner${path}`, { token: null, body, headers: { 'x-weft-runner-secret': secret } });

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      await t.user('bob');
      const created = await t.req('POST', '/api/v1/users/alice/repos', {
        token: alice.token,
        body: { name: 'app', slug: 'app', visibility: 'public' },
      });
      assert.equal(created.status, 201, created.text);
      work = await makeWorkTree(g, 'w', [{ 'README.md': 'hi\n', '.weft/workflows/ci.yml': CI }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/app.git', alice.token), 'main']);
      const reg = await t.req('POST', `${api}/runners/registration-token`, { token: alice.token });
      const r = await t.req('POST', '/api/v1/runner/register', {
        token: null,
        body: { token: reg.body.token, name: 'r1', labels: ['linux'] },
      });
      assert.equal(r.status, 201, r.text);
      secret = r.body.secret;
      a = await signIn(t, 'alice');
      b = await signIn(t, 'bob');
    });
    after(async () => {
      g.cleanup();
      await t.close();
    });

    it('the Actions tab lists runs with filters; the run page shows jobs and, to write access only, cancel', async () => {
      const list = await pageReq(t, 'GET', `${web}/actions`, { cookie: a.cookie });
      assert.equal(list.status, 200, list.text);
      assert.match(list.text, /aria-current="page"[^>]*>Actions|href="\/users\/alice\/app\/actions"\s+aria-current="page"/);
      assert.match(list.text, /CI #1/);
      assert.match(list.text, /push/);
      const none = await pageReq(t, 'GET', `${web}/actions?event=schedule`, { cookie: a.cookie });
      assert.doesNotMatch(none.text, /CI #1/);
      assert.match(none.text, /No runs/);
      const run = await pageReq(t, 'GET', `${web}/runs/1`, { cookie: a.cookie });
      assert.equal(run.status, 200);
      assert.match(run.text, /action="\/users\/alice\/app\/runs\/1\/cancel"/);
      assert.match(run.text, /hx-get="\/users\/alice\/app\/runs\/1\/jobs-part"/, 'a running run refreshes its jobs');
      assert.ok(run.text.indexOf('>build<') < run.text.indexOf('>test<'), 'needs order');
      const asBob = await pageReq(t, 'GET', `${web}/runs/1`, { cookie: b.cookie });
      assert.equal(asBob.status, 200);
      assert.doesNotMatch(asBob.text, /\/cancel"/, 'no write access: no forms');
      const refused = await pageReq(t, 'POST', `${web}/runs/1/cancel`, { cookie: b.cookie, form: { _csrf: b.csrf } });
      assert.ok([403, 404].includes(refused.status), String(refused.status));
    });

    it('the job page: steps, coloured and escaped log lines with anchors, the live part, the summary', async () => {
      const polled = await runnerCall('/poll', { free: 1, running: [] });
      jobUuid = polled.body.jobs[0].uuid;
      const ts = '2026-01-01T00:00:00.000Z';
      const lines = [
        `${ts} ##[group]Run echo build\n`,
        `${ts} build <script>alert(1)</script>\n`,
        `${ts} ##[endgroup] success\n`,
        `${ts} ##[group]Run exit 1\n`,
        `${ts} \u001b[31mboom\u001b[0m \u001b[1mbold\u001b[0m\n`,
        `${ts} [summary] ## Result **bad** <img src=x onerror=alert(1)>\n`,
        `${ts} ##[endgroup] failure\n`,
      ];
      let offset = 0;
      for (const l of lines.slice(0, 3)) {
        assert.equal((await runnerCall(`/jobs/${jobUuid}/log`, { offset, data: l })).status, 200);
        offset += Buffer.byteLength(l);
      }
      const first = await pageReq(t, 'GET', `${web}/runs/1/jobs/${jobUuid}`, { cookie: a.cookie });
      assert.equal(first.status, 200, first.text);
      assert.match(first.text, /id="L2"/);
      assert.match(first.text, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
      assert.doesNotMatch(first.text, /<script>alert/);
      const follow = /data-next="([^"]*log-part\?from=(\d+)[^"]*)"/.exec(first.text);
      assert.ok(follow, 'a running job follows its log');
      assert.equal(Number(follow[2]), offset);
      // the repo's stream, asked for kind=job-log, says the log grew: a signal with no id, not stored
      const repo = await t.req('GET', api, { token: alice.token });
      const stream = await openSse(await listen(t), `/api/v1/tail-events?scope=repo:${repo.body.uuid}&kind=job-log`, alice.token);
      assert.equal(stream.status, 200);
      const before = await t.req('GET', `/api/v1/events?scope=repo:${repo.body.uuid}&per_page=100`, { token: alice.token });
      for (const l of lines.slice(3)) {
        assert.equal((await runnerCall(`/jobs/${jobUuid}/log`, { offset, data: l })).status, 200);
        offset += Buffer.byteLength(l);
      }
      await stream.waitFor((frames) => frames.some((f) => f.event === 'job-log' && JSON.parse(f.data).size === offset), 15_000);
      const signals = stream.frames.filter((f) => f.event === 'job-log');
      assert.ok(
        signals.every((f) => f.id === undefined && JSON.parse(f.data).job_uuid === jobUuid),
        stream.raw(),
      );
      const afterwards = await t.req('GET', `/api/v1/events?scope=repo:${repo.body.uuid}&per_page=100`, { token: alice.token });
      assert.equal(afterwards.body.results.length, before.body.results.length, 'a signal is not an event');
      const part = await pageReq(t, 'GET', follow[1]!.replace(/&amp;/g, '&'), { cookie: a.cookie });
      assert.equal(part.status, 200, part.text);
      assert.doesNotMatch(part.text, /alert\(1\)&lt;\/script/, 'no line twice');
      assert.match(part.text, /id="L5"/, 'numbers go on');
      assert.match(part.text, /<span class="ansi-red-fg">boom<\/span>/);
      assert.match(part.text, /class="ansi-bold"/);
      assert.doesNotMatch(part.text, /style=/);
      assert.match(part.text, /log-part\?from=\d+/, 'still following');
      await runnerCall(`/jobs/${jobUuid}/steps`, {
        steps: [
          { number: 1, status: 'completed', conclusion: 'success', started_at: ts, completed_at: '2026-01-01T00:00:02.000Z' },
          { number: 2, status: 'completed', conclusion: 'failure', started_at: ts, completed_at: '2026-01-01T00:01:05.000Z' },
        ],
      });
      assert.equal((await runnerCall(`/jobs/${jobUuid}/finish`, { conclusion: 'failure' })).status, 204);
      await stream.waitFor(
        (frames) => frames.some((f) => f.event === 'job-log' && JSON.parse(f.data).completed === true),
        15_000,
      );
      stream.close();
      const done = await pageReq(t, 'GET', `${web}/runs/1/jobs/${jobUuid}`, { cookie: a.cookie });
      assert.doesNotMatch(done.text, /log-part\?from/, 'a completed job no longer follows');
      assert.match(done.text, /1m 05s/);
      assert.match(done.text, /<details class="log-step"\s+open>\s*<summary>\s*Run exit 1/, 'the failed step is open');
      assert.match(done.text, /<details class="log-step"\s+>\s*<summary>\s*Run echo build/, 'a passed step is closed');
      assert.match(done.text, /<\/a>Result <strong>bad<\/strong>/);
      assert.doesNotMatch(done.text, /<img[^>]*onerror/);
      const ended = await pageReq(t, 'GET', follow[1]!.replace(/&amp;/g, '&'), { cookie: a.cookie });
      assert.equal(ended.headers['hx-refresh'], 'true');
      const redirect = await pageReq(t, 'GET', `/alice/app/runs/1/jobs/${jobUuid}`, { cookie: a.cookie });
      assert.equal(redirect.status, 303);
      assert.equal(redirect.headers.location, `${web}/runs/1/jobs/${jobUuid}`);
    });

    it('re-run failed jobs and cancel through the forms; a 409 re-renders the run page', async () => {
      const run = await pageReq(t, 'GET', `${web}/runs/1`, { cookie: a.cookie });
      assert.match(run.text, /Re-run failed jobs/);
      const rerun = await pageReq(t, 'POST', `${web}/runs/1/rerun`, {
        cookie: a.cookie,
        form: { _csrf: a.csrf, failed_only: 'true' },
      });
      assert.equal(rerun.status, 303, rerun.text);
      const again = await t.req('GET', `${api}/runs/1`, { token: alice.token });
      assert.equal(again.body.attempt, 2);
      const twice = await pageReq(t, 'POST', `${web}/runs/1/rerun`, { cookie: a.cookie, form: { _csrf: a.csrf } });
      assert.equal(twice.status, 409);
      assert.match(twice.text, /role="alert"/);
      const cancel = await pageReq(t, 'POST', `${web}/runs/1/cancel`, { cookie: a.cookie, form: { _csrf: a.csrf } });
      assert.equal(cancel.status, 303);
      assert.equal((await t.req('GET', `${api}/runs/1`, { token: alice.token })).body.conclusion, 'cancelled');
    });

    it('a large log shows its tail, earlier parts on demand', async () => {
      const old = await pageReq(t, 'GET', `${web}/runs/1/jobs/${jobUuid}?before=100`, { cookie: a.cookie });
      assert.equal(old.status, 200);
      assert.match(old.text, /id="L1"/);
      assert.doesNotMatch(old.text, /id="L3"/, 'only the bytes before 100');
    });

    it('the pull page: its checks link to their jobs with state and duration', async () => {
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feat']);
      await commitFiles(g, work, [{ 'b.txt': 'b\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/app.git', alice.token), 'feat']);
      const pull = await t.req('POST', `${api}/pulls`, {
        token: alice.token,
        body: { title: 'Feat', body: '', source_branch: 'feat', target_branch: 'main' },
      });
      assert.equal(pull.status, 201, pull.text);
      const run = await t.req('GET', `${api}/runs?branch=feat`, { token: alice.token });
      const build = run.body.results[0];
      const jobs = (await t.req('GET', `${api}/runs/${build.number}`, { token: alice.token })).body.jobs;
      const page = await pageReq(t, 'GET', `${web}/pulls/${pull.body.number}`, { cookie: a.cookie });
      assert.equal(page.status, 200, page.text);
      assert.ok(page.text.includes(`href="${web}/runs/${build.number}/jobs/${jobs[0].uuid}"`), 'a link to the job page');
      assert.match(page.text, /badge state pending/);
      assert.doesNotMatch(page.text, /Re-run/, 'nothing to re-run yet');
      const polled = await runnerCall('/poll', { free: 1, running: [] });
      assert.equal(polled.body.jobs[0].uuid, jobs[0].uuid);
      assert.equal((await runnerCall(`/jobs/${jobs[0].uuid}/finish`, { conclusion: 'failure' })).status, 204);
      const failed = await pageReq(t, 'GET', `${web}/pulls/${pull.body.number}`, { cookie: a.cookie });
      assert.match(failed.text, new RegExp(`action="${web}/runs/${build.number}/rerun"`));
      const rerun = await pageReq(t, 'POST', `${web}/runs/${build.number}/rerun`, {
        cookie: a.cookie,
        form: { _csrf: a.csrf, failed_only: 'true' },
      });
      assert.equal(rerun.status, 303);
      assert.equal((await t.req('GET', `${api}/runs/${build.number}`, { token: alice.token })).body.attempt, 2);
    });
  });
}
