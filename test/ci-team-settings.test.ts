/**
 * docs/ci.md "Pages" (team settings and staff): a team's runners, secrets and variables pages for the
 * team's maintain level (404 to outsiders, 403 to a member below maintainer), the API's checks with
 * the error beside its field, a secret's value never shown; the staff page of site runners (403 to
 * others); registration tokens shown once, runners listed and removed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

for (const dialect of DIALECTS) {
  describe(`CI settings of a team (${dialect})`, () => {
    let t: TestApp;
    let alice: Person;
    let a: Browser; // owner
    let m: Browser; // maintainer
    let b: Browser; // member
    let c: Browser; // not in the team
    let s: Browser; // staff
    const api = '/api/v1/teams/crew';
    const web = '/teams/crew/-/settings';

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      await t.user('mia');
      await t.user('bob');
      await t.user('carol');
      await t.user('sam', { staff: true });
      const made = await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Crew', slug: 'crew' } });
      assert.equal(made.status, 201, made.text);
      for (const [username, role] of [
        ['mia', 'maintainer'],
        ['bob', 'member'],
      ]) {
        const added = await t.req('POST', `${api}/members`, { token: alice.token, body: { username, role } });
        assert.equal(added.status, 201, added.text);
      }
      a = await signIn(t, 'alice');
      m = await signIn(t, 'mia');
      b = await signIn(t, 'bob');
      c = await signIn(t, 'carol');
      s = await signIn(t, 'sam');
    });
    after(() => t.close());

    it('the team maintain level only: 404 to an outsider, 403 to a member, tabs in the team settings', async () => {
      for (const page of ['runners', 'secrets', 'variables']) {
        assert.equal((await pageReq(t, 'GET', `${web}/${page}`, { cookie: c.cookie })).status, 404, page);
        assert.equal((await pageReq(t, 'GET', `${web}/${page}`, { cookie: b.cookie })).status, 403, page);
        for (const who of [a, m]) {
          const ok = await pageReq(t, 'GET', `${web}/${page}`, { cookie: who.cookie });
          assert.equal(ok.status, 200, ok.text);
          assert.match(ok.text, new RegExp(`href="${web}/${page}"\\s+aria-current="page"`));
        }
      }
      const general = await pageReq(t, 'GET', web, { cookie: a.cookie });
      assert.match(general.text, new RegExp(`href="${web}/secrets"`));
      for (const who of [b, c]) {
        const set = await pageReq(t, 'POST', `${web}/secrets`, {
          cookie: who.cookie,
          form: { _csrf: who.csrf, name: 'X', value: 'v' },
        });
        assert.equal(set.status, who === b ? 403 : 404);
        const del = await pageReq(t, 'POST', `${web}/variables/delete`, {
          cookie: who.cookie,
          form: { _csrf: who.csrf, name: 'X' },
        });
        assert.equal(del.status, who === b ? 403 : 404);
      }
      assert.equal((await t.req('GET', `${api}/secrets`, { token: alice.token })).body.results.length, 0, 'nothing changed');
    });

    it('secrets: refused beside its field (value never sent back), set by a maintainer, listed by name only, deleted', async () => {
      const bad = await pageReq(t, 'POST', `${web}/secrets`, {
        cookie: m.cookie,
        form: { _csrf: m.csrf, name: 'GITHUB_X', value: 'hunter2-team' },
      });
      assert.equal(bad.status, 400, bad.text);
      assert.match(bad.text, /id="secret-name-error"[^>]*>A name may not start with WEFT_ or GITHUB_/);
      assert.match(bad.text, /id="secret-name"[^>]*value="GITHUB_X"/);
      assert.doesNotMatch(bad.text, /hunter2-team/);
      const ok = await pageReq(t, 'POST', `${web}/secrets`, {
        cookie: m.cookie,
        form: { _csrf: m.csrf, name: 'DEPLOY_KEY', value: 'hunter2-team' },
      });
      assert.equal(ok.status, 303, ok.text);
      assert.equal(ok.headers.location, `${web}/secrets`);
      const list = await pageReq(t, 'GET', `${web}/secrets`, { cookie: a.cookie });
      assert.match(list.text, /<code>DEPLOY_KEY<\/code>/);
      assert.doesNotMatch(list.text, /hunter2-team/);
      const viaApi = await t.req('GET', `${api}/secrets`, { token: alice.token });
      assert.deepEqual(
        viaApi.body.results.map((r: { name: string }) => r.name),
        ['DEPLOY_KEY'],
      );
      const del = await pageReq(t, 'POST', `${web}/secrets/delete`, {
        cookie: a.cookie,
        form: { _csrf: a.csrf, name: 'DEPLOY_KEY' },
      });
      assert.equal(del.status, 303, del.text);
      assert.match((await pageReq(t, 'GET', `${web}/secrets`, { cookie: a.cookie })).text, /No secrets/);
      const gone = await pageReq(t, 'POST', `${web}/secrets/delete`, {
        cookie: a.cookie,
        form: { _csrf: a.csrf, name: 'DEPLOY_KEY' },
      });
      assert.equal(gone.status, 404, 'deleting a missing one: the page with the API’s 404');
    });

    it('variables: name and value shown, a too-large value refused with the input kept, deleted', async () => {
      const refused = await pageReq(t, 'POST', `${web}/variables`, {
        cookie: a.cookie,
        form: { _csrf: a.csrf, name: 'REGION', value: 'x'.repeat(49 * 1024) },
      });
      assert.equal(refused.status, 400);
      assert.match(refused.text, /id="variable-value-error"[^>]*>The value is over 48 KiB/);
      const ok = await pageReq(t, 'POST', `${web}/variables`, {
        cookie: a.cookie,
        form: { _csrf: a.csrf, name: 'REGION', value: 'eu-west' },
      });
      assert.equal(ok.status, 303, ok.text);
      const list = await pageReq(t, 'GET', `${web}/variables`, { cookie: m.cookie });
      assert.match(list.text, /readable by any member of the team/);
      assert.match(list.text, /<code>REGION<\/code>\s*= <code class="wrap">eu-west<\/code>/);
      const viaApi = await t.req('GET', `${api}/variables/REGION`, { token: alice.token });
      assert.equal(viaApi.body.value, 'eu-west');
      await pageReq(t, 'POST', `${web}/variables/delete`, { cookie: m.cookie, form: { _csrf: m.csrf, name: 'REGION' } });
      assert.equal((await t.req('GET', `${api}/variables`, { token: alice.token })).body.results.length, 0);
    });

    it('team runners: a token shown once with the command, the runner listed with its scope, removed', async () => {
      const refused = await pageReq(t, 'POST', `${web}/runners/token`, { cookie: b.cookie, form: { _csrf: b.csrf } });
      assert.equal(refused.status, 403);
      const byMaintainer = await pageReq(t, 'POST', `${web}/runners/token`, { cookie: m.cookie, form: { _csrf: m.csrf } });
      assert.equal(byMaintainer.status, 403, 'the team owner makes team runner tokens');
      const made = await pageReq(t, 'POST', `${web}/runners/token`, { cookie: a.cookie, form: { _csrf: a.csrf } });
      assert.equal(made.status, 201, made.text);
      assert.match(made.text, /Runners run the jobs of every repo of the team/);
      const token = /id="runner-token">(wrr_[A-Za-z0-9_-]+)</.exec(made.text)?.[1];
      assert.ok(token, made.text);
      assert.doesNotMatch((await pageReq(t, 'GET', `${web}/runners`, { cookie: m.cookie })).text, new RegExp(token!));
      const reg = await t.req('POST', '/api/v1/runner/register', {
        token: null,
        body: { token, name: 'crew-box', labels: ['linux'] },
      });
      assert.equal(reg.status, 201, reg.text);
      assert.equal(reg.body.scope, 'team');
      const listed = await pageReq(t, 'GET', `${web}/runners`, { cookie: a.cookie });
      assert.match(listed.text, /<strong>crew-box<\/strong>/);
      const gone = await pageReq(t, 'POST', `${web}/runners/${reg.body.uuid}/remove`, {
        cookie: m.cookie,
        form: { _csrf: m.csrf },
      });
      assert.equal(gone.status, 303, gone.text);
      assert.deepEqual((await t.req('GET', `${api}/runners`, { token: alice.token })).body.results, []);
    });

    it('site runners: the staff page (403 to others), a token once, the runner listed and removed', async () => {
      for (const who of [a, c]) {
        assert.equal((await pageReq(t, 'GET', '/admin/runners', { cookie: who.cookie })).status, 403);
        const post = await pageReq(t, 'POST', '/admin/runners/token', { cookie: who.cookie, form: { _csrf: who.csrf } });
        assert.equal(post.status, 403);
      }
      const empty = await pageReq(t, 'GET', '/admin/runners', { cookie: s.cookie });
      assert.equal(empty.status, 200, empty.text);
      assert.match(empty.text, /href="\/admin\/runners"\s+aria-current="page"/);
      assert.match(empty.text, /No runners yet/);
      const made = await pageReq(t, 'POST', '/admin/runners/token', { cookie: s.cookie, form: { _csrf: s.csrf } });
      assert.equal(made.status, 201, made.text);
      assert.match(made.text, /Runners run the jobs of every repo of the site/);
      const token = /id="runner-token">(wrr_[A-Za-z0-9_-]+)</.exec(made.text)?.[1];
      assert.ok(token, made.text);
      const reg = await t.req('POST', '/api/v1/runner/register', {
        token: null,
        body: { token, name: 'site-box', labels: ['linux'] },
      });
      assert.equal(reg.status, 201, reg.text);
      assert.equal(reg.body.scope, 'site');
      assert.match((await pageReq(t, 'GET', '/admin/runners', { cookie: s.cookie })).text, /<strong>site-box<\/strong>/);
      const gone = await pageReq(t, 'POST', `/admin/runners/${reg.body.uuid}/remove`, {
        cookie: s.cookie,
        form: { _csrf: s.csrf },
      });
      assert.equal(gone.status, 303, gone.text);
      assert.deepEqual((await t.req('GET', '/api/v1/runners', { token: t.adminToken })).body.results, []);
    });
  });
}
