import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { firstRunCode } from '../src/web/first-run-state.ts';
import { ADMIN_TOKEN, DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Browser, loginForm, pageReq, signIn } from './web-helpers.ts';

/** Creating from the pages, Explore, and the first run's password set-up (README "Web interface"). */
for (const dialect of DIALECTS) {
  describe(`web pages that create (${dialect})`, () => {
    let t: TestApp;
    let ann: Browser;
    let bob: Browser;
    let annToken: string;

    before(async () => {
      t = await startApp(dialect);
      annToken = (await t.user('ann')).token;
      await t.user('bob');
      ann = await signIn(t, 'ann');
      bob = await signIn(t, 'bob');
    });
    after(() => t.close());

    it('creates a team and a repo from forms, refusing bad input beside its field with the input kept', async () => {
      const form = await pageReq(t, 'GET', '/teams/new', { cookie: ann.cookie });
      assert.equal(form.status, 200);
      const team = await pageReq(t, 'POST', '/teams/new', {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, name: 'Core Team', slug: '' },
      });
      assert.equal(team.status, 303, team.text);
      assert.equal(team.headers.location, '/teams/core-team');
      const taken = await pageReq(t, 'POST', '/teams/new', {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, name: 'Other', slug: 'core-team' },
      });
      assert.equal(taken.status, 409);
      assert.match(taken.text, /id="f-slug-error"/);
      assert.match(taken.text, /name="name" type="text" value="Other"/);

      const page = await pageReq(t, 'GET', '/new', { cookie: ann.cookie });
      assert.equal(page.status, 200);
      assert.match(page.text, /<option value="team:core-team"/);
      const bad = await pageReq(t, 'POST', '/new', {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, owner: 'team:core-team', name: 'Web', slug: 'no spaces', visibility: 'public' },
      });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /id="f-slug-error"/);
      assert.match(bad.text, /value="no spaces"/);
      const made = await pageReq(t, 'POST', '/new', {
        cookie: ann.cookie,
        form: {
          _csrf: ann.csrf,
          owner: 'team:core-team',
          name: 'Web App',
          slug: '',
          description: 'The site',
          visibility: 'public',
        },
      });
      assert.equal(made.status, 303, made.text);
      assert.equal(made.headers.location, '/teams/core-team/web-app');
      const home = await pageReq(t, 'GET', '/teams/core-team/web-app', { cookie: ann.cookie });
      assert.match(home.text, /id="push-help">\s*git remote add origin http:\/\/[^<]+\/git\/teams\/core-team\/web-app\.git/);
      const api = await t.req('GET', '/api/v1/teams/core-team/repos/web-app', { token: annToken });
      assert.equal(api.body.visibility, 'public');
      assert.equal(api.body.description, 'The site');
      // bob is no member of core-team: refused beside the owner field, nothing made
      const refused = await pageReq(t, 'POST', '/new', {
        cookie: bob.cookie,
        form: { _csrf: bob.csrf, owner: 'team:core-team', name: 'Sneaky', visibility: 'private' },
      });
      assert.ok(refused.status === 403 || refused.status === 404, String(refused.status));
      const forged = await pageReq(t, 'POST', '/new', { cookie: ann.cookie, form: { name: 'x' } });
      assert.equal(forged.status, 403);
    });

    it('forks a repo into the caller’s namespace from its page, and lists public repos on Explore', async () => {
      const home = await pageReq(t, 'GET', '/teams/core-team/web-app', { cookie: bob.cookie });
      assert.match(home.text, /href="\/teams\/core-team\/web-app\/fork"/);
      const form = await pageReq(t, 'GET', '/teams/core-team/web-app/fork', { cookie: bob.cookie });
      assert.equal(form.status, 200);
      assert.match(form.text, /<option value="user:bob"/);
      const fork = await pageReq(t, 'POST', '/teams/core-team/web-app/fork', {
        cookie: bob.cookie,
        form: { _csrf: bob.csrf, owner: 'user:bob' },
      });
      assert.equal(fork.status, 303, fork.text);
      assert.equal(fork.headers.location, '/users/bob/web-app');
      const again = await pageReq(t, 'POST', '/teams/core-team/web-app/fork', {
        cookie: bob.cookie,
        form: { _csrf: bob.csrf, owner: 'user:bob' },
      });
      assert.equal(again.status, 409);
      assert.match(again.text, /id="fork-owner-error"/);
      assert.equal(
        (await t.req('POST', '/api/v1/users/ann/repos', { token: annToken, body: { name: 'Secret', slug: 'secret' } })).status,
        201,
      );
      const explore = await pageReq(t, 'GET', '/explore', { cookie: bob.cookie });
      assert.equal(explore.status, 200);
      assert.match(explore.text, /href="\/teams\/core-team\/web-app"/);
      assert.match(explore.text, /href="\/users\/bob\/web-app"/);
      assert.doesNotMatch(explore.text, /secret/);
    });

    it('sets the bootstrap admin’s password on the first run, then /setup is gone', async () => {
      const signInPage = await pageReq(t, 'GET', '/login');
      assert.match(signInPage.text, /First run/);
      const get = await pageReq(t, 'GET', '/setup');
      assert.equal(get.status, 200);
      assert.match(get.text, /staff user <strong>admin<\/strong>/);
      const lf = await loginForm(t);
      const wrong = await pageReq(t, 'POST', '/setup', {
        cookie: lf.cookie,
        form: { _csrf: lf.csrf, proof: 'not-the-token', password: 'a good long password' },
      });
      assert.equal(wrong.status, 403);
      assert.match(wrong.text, /id="f-proof-error"/);
      const badCode = await pageReq(t, 'POST', '/setup', {
        cookie: lf.cookie,
        form: { _csrf: lf.csrf, code: 'nope', password: 'a good long password' },
      });
      assert.equal(badCode.status, 403);
      const noCsrf = await pageReq(t, 'POST', '/setup', { form: { proof: ADMIN_TOKEN, password: 'a good long password' } });
      assert.equal(noCsrf.status, 403);
      assert.ok(firstRunCode().length > 20);
      const ok = await pageReq(t, 'POST', '/setup', {
        cookie: lf.cookie,
        form: { _csrf: lf.csrf, proof: ADMIN_TOKEN, password: 'a good long password' },
      });
      assert.equal(ok.status, 303, ok.text);
      assert.equal(ok.headers.location, '/login');
      await signIn(t, 'admin', 'a good long password');
      assert.equal((await pageReq(t, 'GET', '/setup')).status, 404);
      assert.doesNotMatch((await pageReq(t, 'GET', '/login')).text, /First run/);
    });
  });
}
