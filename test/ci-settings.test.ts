/**
 * docs/ci.md "Pages" (settings) and "Runners": a repo's runners, secrets and variables pages for
 * maintainers (404 to outsiders, 403 below maintain), the registration token shown once, the
 * API's checks with the error beside its field, a secret's value never shown; GET/DELETE
 * {repo}/runners with a removed runner's running job failing as runner_removed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

for (const dialect of DIALECTS) {
  describe(`CI settings (${dialect})`, () => {
    let t: TestApp;
    let alice: Person;
    let bob: Person;
    let a: Browser;
    let b: Browser;
    let c: Browser;
    const api = '/api/v1/teams/crew/repos/app';
    const web = '/teams/crew/app/settings';

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      bob = await t.user('bob');
      await t.user('carol');
      assert.equal(
        (await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Crew', slug: 'crew' } })).status,
        201,
      );
      const m = await t.req('POST', '/api/v1/teams/crew/members', {
        token: alice.token,
        body: { username: 'bob', role: 'member' },
      });
      assert.equal(m.status, 201, m.text);
      const r = await t.req('POST', '/api/v1/teams/crew/repos', {
        token: alice.token,
        body: { name: 'app', slug: 'app', visibility: 'private' },
      });
      assert.equal(r.status, 201, r.text);
      a = await signIn(t, 'alice');
      b = await signIn(t, 'bob');
      c = await signIn(t, 'carol');
    });
    after(() => t.close());

    it('a runner removed while it runs a job: the job fails as runner_removed, with a notice in its log', async () => {
      const g: GitClient = await gitClient(t);
      try {
        const ci = 'name: CI\non: push\njobs:\n  build:\n    runs-on: linux\n    steps:\n      - run: sleep 60\n';
        const work = await makeWorkTree(g, 'w', [{ 'README.md': 'hi\n', '.weft/workflows/ci.yml': ci }]);
        await g.run(['-C', work, 'push', '-q', g.url('/git/teams/crew/app.git', alice.token), 'main']);
        const tok = await t.req('POST', `${api}/runners/registration-token`, { token: alice.token });
        const reg = await t.req('POST', '/api/v1/runner/register', {
          token: null,
          body: { token: tok.body.token, name: 'doomed', labels: ['linux'] },
        });
        const headers = { 'x-weft-runner-secret': reg.body.secret };
        const polled = await t.req('POST', '/api/v1/runner/poll', { token: null, body: { free: 1, running: [] }, headers });
        const job = polled.body.jobs[0];
        assert.ok(job, polled.text);
        const listed = await t.req('GET', `${api}/runners`, { token: alice.token });
        assert.equal(listed.body.results.find((r: { name: string }) => r.name === 'doomed').status, 'busy');
        assert.equal((await t.req('DELETE', `${api}/runners/${reg.body.uuid}`, { token: alice.token })).status, 204);
        const run = await t.req('GET', `${api}/runs/1`, { token: alice.token });
        assert.equal(run.body.jobs[0].conclusion, 'failure');
        const log = await t.req('GET', `${api}/runs/1/jobs/${job.uuid}/log`, { token: alice.token });
        assert.match(log.text, /\[weft\] runner_removed/);
        const status = await t.req('GET', `${api}/commits/${run.body.head_sha}/status`, { token: alice.token });
        assert.match(JSON.stringify(status.body), /runner_removed/);
      } finally {
        g.cleanup();
      }
    });

    it('only maintainers: 404 to an outsider, 403 to a member with write access', async () => {
      for (const page of ['runners', 'secrets', 'variables']) {
        assert.equal((await pageReq(t, 'GET', `${web}/${page}`, { cookie: c.cookie })).status, 404, page);
        assert.equal((await pageReq(t, 'GET', `${web}/${page}`, { cookie: b.cookie })).status, 403, page);
        const ok = await pageReq(t, 'GET', `${web}/${page}`, { cookie: a.cookie });
        assert.equal(ok.status, 200, ok.text);
        assert.match(ok.text, new RegExp(`href="/teams/crew/app/settings/${page}"\\s+aria-current="page"`));
      }
      const post = await pageReq(t, 'POST', `${web}/runners/token`, { cookie: c.cookie, form: { _csrf: c.csrf } });
      assert.equal(post.status, 404);
      const set = await pageReq(t, 'POST', `${web}/secrets`, {
        cookie: b.cookie,
        form: { _csrf: b.csrf, name: 'X', value: 'v' },
      });
      assert.equal(set.status, 403);
      assert.equal((await t.req('GET', `${api}/secrets`, { token: alice.token })).body.results.length, 0, 'nothing changed');
    });

    it('runners: a registration token shown once with the command, the runner listed with its state, removed', async () => {
      const made = await pageReq(t, 'POST', `${web}/runners/token`, { cookie: a.cookie, form: { _csrf: a.csrf } });
      assert.equal(made.status, 201, made.text);
      const token = /id="runner-token">(wrr_[A-Za-z0-9_-]+)</.exec(made.text)?.[1];
      assert.ok(token, made.text);
      assert.match(made.text, new RegExp(`weft runner register --url \\S+ --token ${token} --name NAME --labels linux`));
      assert.match(String(made.headers['cache-control']), /no-store/);
      const again = await pageReq(t, 'GET', `${web}/runners`, { cookie: a.cookie });
      assert.doesNotMatch(again.text, new RegExp(token!), 'shown once');
      assert.match(again.text, /No runners yet/);

      const reg = await t.req('POST', '/api/v1/runner/register', {
        token: null,
        body: { token, name: 'box-1', labels: ['linux', 'big'], version: '0.1.0' },
      });
      assert.equal(reg.status, 201, reg.text);
      const listed = await pageReq(t, 'GET', `${web}/runners`, { cookie: a.cookie });
      assert.match(listed.text, /<strong>box-1<\/strong>\s*<span class="badge state success"\s*>online<\/span/);
      assert.match(listed.text, /linux, big/);
      const viaApi = await t.req('GET', `${api}/runners`, { token: alice.token });
      assert.equal(viaApi.status, 200, viaApi.text);
      assert.deepEqual(
        viaApi.body.results.map((r: { name: string; status: string; labels: string[] }) => [r.name, r.status, r.labels]),
        [['box-1', 'idle', ['linux', 'big']]],
      );
      assert.equal((await t.req('GET', `${api}/runners`, { token: bob.token })).status, 403);

      const uuid = viaApi.body.results[0].uuid as string;
      const gone = await pageReq(t, 'POST', `${web}/runners/${uuid}/remove`, { cookie: a.cookie, form: { _csrf: a.csrf } });
      assert.equal(gone.status, 303, gone.text);
      assert.equal((await t.req('GET', `${api}/runners`, { token: alice.token })).body.results.length, 0);
      const poll = await t.req('POST', '/api/v1/runner/poll', {
        token: null,
        body: { free: 1, running: [] },
        headers: { 'x-weft-runner-secret': reg.body.secret },
      });
      assert.equal(poll.status, 401, 'a removed runner’s secret stops working');
      const missing = await t.req('DELETE', `${api}/runners/${uuid}`, { token: alice.token });
      assert.equal(missing.status, 404);
    });

    it('secrets: set (the error beside its field, the name kept, the value never sent back), replaced, deleted', async () => {
      const bad = await pageReq(t, 'POST', `${web}/secrets`, {
        cookie: a.cookie,
        form: { _csrf: a.csrf, name: 'WEFT_TOKEN', value: 'hunter2-secret' },
      });
      assert.equal(bad.status, 400, bad.text);
      assert.match(bad.text, /id="secret-name-error"[^>]*>A name may not start with WEFT_ or GITHUB_/);
      assert.match(bad.text, /id="secret-name"[^>]*value="WEFT_TOKEN"/);
      assert.doesNotMatch(bad.text, /hunter2-secret/);
      const lower = await pageReq(t, 'POST', `${web}/secrets`, {
        cookie: a.cookie,
        form: { _csrf: a.csrf, name: 'lower', value: 'x' },
      });
      assert.equal(lower.status, 400);
      assert.match(lower.text, /id="secret-name-error"/);

      for (const value of ['first-value', 'second-value']) {
        const ok = await pageReq(t, 'POST', `${web}/secrets`, {
          cookie: a.cookie,
          form: { _csrf: a.csrf, name: 'DEPLOY_KEY', value },
        });
        assert.equal(ok.status, 303, ok.text);
      }
      const list = await pageReq(t, 'GET', `${web}/secrets`, { cookie: a.cookie });
      assert.match(list.text, /<code>DEPLOY_KEY<\/code>/);
      assert.doesNotMatch(list.text, /first-value|second-value/, 'names only');
      assert.equal((await t.req('GET', `${api}/secrets`, { token: alice.token })).body.results.length, 1, 'replaced');
      const del = await pageReq(t, 'POST', `${web}/secrets/delete`, {
        cookie: a.cookie,
        form: { _csrf: a.csrf, name: 'DEPLOY_KEY' },
      });
      assert.equal(del.status, 303);
      assert.match((await pageReq(t, 'GET', `${web}/secrets`, { cookie: a.cookie })).text, /No secrets/);
    });

    it('variables: name and value shown, the too-large value refused beside its field with the input kept, deleted', async () => {
      const big = 'x'.repeat(48 * 1024 + 1);
      const refused = await pageReq(t, 'POST', `${web}/variables`, {
        cookie: a.cookie,
        form: { _csrf: a.csrf, name: 'BIG', value: big },
      });
      assert.equal(refused.status, 400, refused.text.slice(0, 500));
      assert.match(refused.text, /id="variable-value-error"[^>]*>The value is over 48 KiB/);
      assert.ok(refused.text.includes(big), 'the typed value kept');
      const ok = await pageReq(t, 'POST', `${web}/variables`, {
        cookie: a.cookie,
        form: { _csrf: a.csrf, name: 'REGION', value: 'eu-west' },
      });
      assert.equal(ok.status, 303);
      const list = await pageReq(t, 'GET', `${web}/variables`, { cookie: a.cookie });
      assert.match(list.text, /<code>REGION<\/code>\s*= <code class="wrap">eu-west<\/code>/);
      await pageReq(t, 'POST', `${web}/variables/delete`, { cookie: a.cookie, form: { _csrf: a.csrf, name: 'REGION' } });
      assert.equal((await t.req('GET', `${api}/variables`, { token: alice.token })).body.results.length, 0);
    });
  });
}
