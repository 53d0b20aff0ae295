/**
 * The settings pages over HTTP (README "Web interface"): user settings (profile, email,
 * password, tokens, sessions, SSH keys), team settings (name, members, timers) and repo settings
 * (general, archive, delete, protections, timers, forks) through the same services as the API.
 * CSRF is enforced, pages a caller may not see are 404 (403 below the needed role, as the API),
 * a refused form shows the API's detail beside its field with what was typed kept.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser as Chromium, Page } from 'playwright-core';
import { type SshServer, startSshServer } from '../src/ssh/server.ts';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { gitSshCommand, keyDir } from './ssh-fixtures.ts';
import { type Browser, PASSWORD, pageReq, signIn } from './web-helpers.ts';

/** The text of the element with this id (a field's error paragraph). */
const byId = (page: string, id: string): string | undefined => new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(page)?.[1];
/** The value attribute of the input with this id. */
const valueOf = (page: string, id: string): string | undefined => new RegExp(`id="${id}"[^>]*value="([^"]*)"`).exec(page)?.[1];

for (const dialect of BROWSER_DIALECTS) {
  describe(`settings pages over HTTP (${dialect})`, () => {
    let t: TestApp;
    let ann: { token: string; uuid: string };
    let bob: { token: string; uuid: string };
    let annB: Browser;
    let bobB: Browser;
    let olgaB: Browser;
    const keys = keyDir();
    const api = '/api/v1/teams/core/repos/api';
    const repo = '/teams/core/api';

    before(async () => {
      t = await startApp(dialect);
      ann = await t.user('ann');
      bob = await t.user('bob');
      await t.user('olga');
      const ok = (res: { status: number; text: string }) => assert.ok(res.status < 300, res.text);
      ok(await t.req('POST', '/api/v1/teams', { token: ann.token, body: { name: 'Core', slug: 'core' } }));
      ok(await t.req('POST', '/api/v1/teams/core/members', { token: ann.token, body: { username: 'bob', role: 'member' } }));
      ok(
        await t.req('POST', '/api/v1/teams/core/repos', {
          token: ann.token,
          body: { name: 'API', slug: 'api', visibility: 'private' },
        }),
      );
      annB = await signIn(t, 'ann');
      bobB = await signIn(t, 'bob');
      olgaB = await signIn(t, 'olga');
    });
    after(async () => {
      keys.cleanup();
      await t.close();
    });

    const post = (b: Browser, url: string, form: Record<string, string>) =>
      pageReq(t, 'POST', url, { cookie: b.cookie, form: { _csrf: b.csrf, ...form } });

    it('user settings: profile saved, a bad email refused beside its field with the typed value kept', async () => {
      const page = await pageReq(t, 'GET', '/settings', { cookie: annB.cookie });
      assert.equal(page.status, 200);
      assert.match(page.text, /<a href="\/settings">Settings<\/a>/);
      const saved = await post(annB, '/settings/profile', { display_name: 'Ann Example', ping_mentions: 'team_only' });
      assert.equal(saved.status, 303);
      const me = await t.req('GET', '/api/v1/user', { token: ann.token });
      assert.equal(me.body.display_name, 'Ann Example');
      assert.equal(me.body.ping_mentions, 'team_only');
      const bad = await post(annB, '/settings/email', { email: 'not-an-email' });
      assert.equal(bad.status, 400);
      assert.equal(byId(bad.text, 'f-email-error'), 'The email must be an email address.');
      assert.equal(valueOf(bad.text, 'f-email'), 'not-an-email');
      assert.match(bad.text, /id="f-email"[^>]*aria-invalid="true"/);
      // another user's email: the API's 409, beside the field
      const taken = await post(annB, '/settings/email', { email: 'bob@example.com' });
      assert.equal(taken.status, 409);
      assert.ok(byId(taken.text, 'f-email-error'));
    });

    it('user settings: the password needs the current one; a short one gets the API detail', async () => {
      const wrong = await post(annB, '/settings/password', { current_password: 'nope', new_password: 'a much better one' });
      assert.equal(wrong.status, 403);
      assert.ok(byId(wrong.text, 'f-current_password-error'));
      const short = await post(annB, '/settings/password', { current_password: PASSWORD, new_password: 'short' });
      assert.equal(short.status, 400);
      assert.match(byId(short.text, 'f-new_password-error') ?? '', /The password must have at least 8 characters/);
      assert.doesNotMatch(short.text, /value="short"/);
      const ok = await post(annB, '/settings/password', { current_password: PASSWORD, new_password: 'a much better one' });
      assert.equal(ok.status, 303);
      const back = await post(annB, '/settings/password', { current_password: 'a much better one', new_password: PASSWORD });
      assert.equal(back.status, 303);
    });

    it('refuses a settings post without the CSRF token, and sends the signed-out to sign in', async () => {
      const res = await pageReq(t, 'POST', '/settings/profile', { cookie: annB.cookie, form: { display_name: 'X' } });
      assert.equal(res.status, 403);
      const other = await pageReq(t, 'POST', '/settings/profile', {
        cookie: annB.cookie,
        form: { _csrf: bobB.csrf, display_name: 'X' },
      });
      assert.equal(other.status, 403);
      assert.equal((await t.req('GET', '/api/v1/user', { token: ann.token })).body.display_name, 'Ann Example');
      for (const [path, form] of [
        ['/teams/core/-/settings/members', { username: 'olga', role: 'owner' }],
        [`${repo}/settings/archive`, { archived: 'true' }],
        ['/settings/tokens', { name: 'forged' }],
      ] as const) {
        assert.equal((await pageReq(t, 'POST', path, { cookie: annB.cookie, form })).status, 403, path);
      }
      assert.equal((await t.req('GET', api, { token: ann.token })).body.is_archived, false);
      assert.equal((await t.req('GET', '/api/v1/teams/core/members/olga', { token: ann.token })).status, 404);
      for (const path of [
        '/settings',
        '/settings/tokens',
        '/settings/sessions',
        '/settings/keys',
        `${repo}/settings`,
        '/teams/core/-/settings',
      ]) {
        const anon = await pageReq(t, 'GET', path);
        assert.equal(anon.status, 303, path);
        assert.match(String(anon.headers.location), /^\/login\?next=/);
      }
    });

    it('tokens: created with a scope and a repo (secret shown once), listed, revoked', async () => {
      const bad = await post(annB, '/settings/tokens', { name: 'ci', repos: 'teams/core/nope' });
      assert.equal(bad.status, 404);
      assert.ok(byId(bad.text, 'f-repos-error'));
      assert.equal(valueOf(bad.text, 'f-name'), 'ci');
      const blank = await post(annB, '/settings/tokens', { name: '' });
      assert.equal(blank.status, 400);
      assert.ok(byId(blank.text, 'f-name-error'));
      const form = new URLSearchParams({ _csrf: annB.csrf, name: 'ci', repos: repo });
      form.append('scopes', 'read:repo');
      form.append('scopes', 'read:user');
      const res = await t.app.inject({
        method: 'POST',
        url: '/settings/tokens',
        headers: { cookie: annB.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: form.toString(),
      });
      assert.equal(res.statusCode, 200, res.body);
      const secret = valueOf(res.body, 'new-token')!;
      assert.match(secret, /^weft_/);
      const listed = await pageReq(t, 'GET', '/settings/tokens', { cookie: annB.cookie });
      assert.doesNotMatch(listed.text, new RegExp(secret));
      assert.match(listed.text, /scopes: read:user, read:repo/);
      const write = await t.req('PUT', api, { token: secret, body: { description: 'x' } });
      assert.equal(write.status, 403);
      assert.equal(write.body.error, 'insufficient_scope');
      const tokens = await t.req('GET', '/api/v1/api-tokens?name=ci', { token: ann.token });
      const uuid = tokens.body.results[0].uuid as string;
      assert.deepEqual(tokens.body.results[0].repos.length, 1);
      assert.equal((await post(annB, `/settings/tokens/${uuid}/revoke`, {})).status, 303);
      assert.equal((await t.req('GET', '/api/v1/user', { token: secret })).status, 401);
      // another user's token is 404, as in the API
      assert.equal((await post(bobB, `/settings/tokens/${uuid}/revoke`, {})).status, 404);
    });

    it('sessions: listed, one ended, all others ended while this one stays', async () => {
      const second = await signIn(t, 'ann', PASSWORD);
      const third = await signIn(t, 'ann', PASSWORD);
      const page = await pageReq(t, 'GET', '/settings/sessions', { cookie: annB.cookie });
      assert.equal(page.status, 200);
      assert.match(page.text, /this session/);
      const list = await t.req('GET', '/api/v1/sessions', { token: ann.token });
      const open = (list.body.results as { uuid: string; revoked_at: string | null }[]).filter((s) => !s.revoked_at);
      assert.ok(open.length >= 3);
      // end the newest (third) from the first
      assert.equal((await post(annB, `/settings/sessions/${open[0]!.uuid}/revoke`, {})).status, 303);
      assert.equal((await pageReq(t, 'GET', '/settings', { cookie: third.cookie })).status, 303);
      assert.equal((await post(annB, '/settings/sessions/revoke-others', {})).status, 303);
      assert.equal((await pageReq(t, 'GET', '/settings', { cookie: second.cookie })).status, 303);
      assert.equal((await pageReq(t, 'GET', '/settings', { cookie: annB.cookie })).status, 200);
    });

    it('SSH keys: added with its fingerprint shown, a duplicate refused beside the field, deleted', async () => {
      const key = keys.make('ann', 'ed25519');
      const added = await post(annB, '/settings/keys', { title: 'laptop', key: key.pub });
      assert.equal(added.status, 303);
      const page = await pageReq(t, 'GET', '/settings/keys', { cookie: annB.cookie });
      assert.ok(page.text.includes(key.fingerprint));
      const dup = await post(bobB, '/settings/keys', { title: 'mine', key: key.pub });
      assert.equal(dup.status, 409);
      assert.ok(byId(dup.text, 'f-key-error'));
      assert.equal(valueOf(dup.text, 'f-title'), 'mine');
      const bad = await post(bobB, '/settings/keys', { title: 'x', key: 'ssh-ed25519 nonsense' });
      assert.equal(bad.status, 400);
      const listed = await t.req('GET', '/api/v1/user/keys', { token: ann.token });
      const uuid = listed.body.results[0].uuid as string;
      assert.equal((await post(bobB, `/settings/keys/${uuid}/delete`, {})).status, 404);
      assert.equal((await post(annB, `/settings/keys/${uuid}/delete`, {})).status, 303);
      assert.equal((await t.req('GET', '/api/v1/user/keys', { token: ann.token })).body.results.length, 0);
    });

    it('team settings: owners only (403 to a member, 404 to an outsider, as the API), roles changed, last owner refused', async () => {
      assert.equal((await pageReq(t, 'GET', '/teams/core/-/settings', { cookie: bobB.cookie })).status, 403);
      assert.equal((await pageReq(t, 'GET', '/teams/core/-/settings', { cookie: olgaB.cookie })).status, 404);
      assert.equal((await post(olgaB, '/teams/core/-/settings/members', { username: 'olga', role: 'owner' })).status, 404);
      assert.equal((await post(bobB, '/teams/core/-/settings/members/bob/role', { role: 'owner' })).status, 403);
      assert.equal((await pageReq(t, 'GET', '/teams/core/-/settings/timers', { cookie: bobB.cookie })).status, 403);
      const page = await pageReq(t, 'GET', '/teams/core/-/settings', { cookie: annB.cookie });
      assert.equal(page.status, 200);
      assert.match(page.text, /href="\/teams\/core\/-\/settings\/hooks"/);
      // a repo slugged "settings" keeps its own page: the team's settings live under /-/
      const named = await t.req('POST', '/api/v1/teams/core/repos', {
        token: ann.token,
        body: { name: 'Settings', slug: 'settings', visibility: 'private' },
      });
      assert.equal(named.status, 201, named.text);
      const repoPage = await pageReq(t, 'GET', '/teams/core/settings', { cookie: annB.cookie });
      assert.equal(repoPage.status, 200);
      assert.match(repoPage.text, /<title>core\/settings · Weft<\/title>/);
      assert.doesNotMatch(repoPage.text, /name="role"/);
      // the last owner cannot step down: the API's 409 as a message beside the member
      const last = await post(annB, '/teams/core/-/settings/members/ann/role', { role: 'member' });
      assert.equal(last.status, 409);
      assert.match(last.text, /role="alert">A team must keep at least one owner/);
      assert.doesNotMatch(last.text, /last_owner/);
      const unknown = await post(annB, '/teams/core/-/settings/members', { username: 'nobody-here', role: 'member' });
      assert.equal(unknown.status, 404);
      const dup = await post(annB, '/teams/core/-/settings/members', { username: 'bob', role: 'reader' });
      assert.equal(dup.status, 409);
      assert.equal(valueOf(dup.text, 'add-username'), 'bob');
      assert.equal((await post(annB, '/teams/core/-/settings/members', { username: 'olga', role: 'reader' })).status, 303);
      assert.equal((await post(annB, '/teams/core/-/settings/members/olga/role', { role: 'member' })).status, 303);
      const member = await t.req('GET', '/api/v1/teams/core/members/olga', { token: ann.token });
      assert.equal(member.body.role, 'member');
      assert.equal((await post(annB, '/teams/core/-/settings/members/olga/remove', {})).status, 303);
      assert.equal((await t.req('GET', '/api/v1/teams/core/members/olga', { token: ann.token })).status, 404);
      const badName = await post(annB, '/teams/core/-/settings', { name: 'Core', slug: 'Not a slug!' });
      assert.equal(badName.status, 400);
      assert.ok(byId(badName.text, 'f-slug-error'));
      assert.equal(valueOf(badName.text, 'f-slug'), 'Not a slug!');
    });

    it('team timers: created, a bad schedule refused with the API detail, deleted', async () => {
      const bad = await post(annB, '/teams/core/-/settings/timers', { message: 'standup', run_in: 'soon' });
      assert.equal(bad.status, 400);
      assert.equal(valueOf(bad.text, 'f-message'), 'standup');
      const ok = await post(annB, '/teams/core/-/settings/timers', {
        message: 'standup',
        time_of_day: '09:00',
        days_of_week: 'Mon',
        timezone: 'UTC',
      });
      assert.equal(ok.status, 303);
      const list = await t.req('GET', '/api/v1/teams/core/timers', { token: ann.token });
      assert.equal(list.body.results.length, 1);
      const page = await pageReq(t, 'GET', '/teams/core/-/settings/timers', { cookie: annB.cookie });
      assert.match(page.text, /standup/);
      assert.equal((await post(annB, `/teams/core/-/settings/timers/${list.body.results[0].uuid}/delete`, {})).status, 303);
      assert.equal((await t.req('GET', '/api/v1/teams/core/timers', { token: ann.token })).body.results.length, 0);
    });

    it('repo settings: maintainers only; about saved; a bad branch refused beside its field', async () => {
      assert.equal((await pageReq(t, 'GET', `${repo}/settings`, { cookie: olgaB.cookie })).status, 404);
      assert.equal((await pageReq(t, 'GET', `${repo}/settings`, { cookie: bobB.cookie })).status, 403);
      assert.equal((await pageReq(t, 'GET', `${repo}/settings/protections`, { cookie: olgaB.cookie })).status, 404);
      assert.equal((await post(olgaB, `${repo}/settings`, { description: 'x' })).status, 404);
      const page = await pageReq(t, 'GET', `${repo}/settings`, { cookie: annB.cookie });
      assert.equal(page.status, 200);
      assert.match(page.text, /href="\/teams\/core\/api\/settings\/hooks"/);
      const form = {
        description: 'The API',
        about: '# About',
        visibility: 'private',
        default_branch: 'main',
        public_repo_pull_policy: 'any',
      };
      assert.equal((await post(annB, `${repo}/settings`, form)).status, 303);
      assert.equal((await t.req('GET', api, { token: ann.token })).body.description, 'The API');
      const bad = await post(annB, `${repo}/settings`, { ...form, default_branch: 'bad..name' });
      assert.equal(bad.status, 400);
      assert.ok(byId(bad.text, 'f-default_branch-error'));
      assert.equal(valueOf(bad.text, 'f-default_branch'), 'bad..name');
      const policy = await post(annB, `${repo}/settings`, { ...form, public_repo_pull_policy: 'team' });
      assert.equal(policy.status, 409);
      assert.ok(byId(policy.text, 'f-public_repo_pull_policy-error'));
    });

    it("repo settings of a user's repo: its owner only", async () => {
      assert.equal(
        (
          await t.req('POST', '/api/v1/users/ann/repos', {
            token: ann.token,
            body: { name: 'Mine', slug: 'mine', visibility: 'public' },
          })
        ).status,
        201,
      );
      assert.equal((await pageReq(t, 'GET', '/users/ann/mine/settings', { cookie: annB.cookie })).status, 200);
      assert.equal((await pageReq(t, 'GET', '/users/ann/mine/settings/protections', { cookie: annB.cookie })).status, 200);
      assert.equal((await pageReq(t, 'GET', '/users/ann/mine/settings', { cookie: bobB.cookie })).status, 403);
      assert.equal((await post(bobB, '/users/ann/mine/settings/archive', { archived: 'true' })).status, 403);
      assert.equal((await post(annB, '/users/ann/mine/settings/timers', { message: 'ping', run_in: '1h' })).status, 303);
      const timers = await t.req('GET', '/api/v1/users/ann/repos/mine/timers', { token: ann.token });
      assert.equal(timers.body.results.length, 1);
    });

    it('repo protections: created with approvers and required checks, edited, deleted', async () => {
      const base = `${repo}/settings/protections`;
      const bad = await post(annB, base, { branch: 'main', required_approvals: '101', required_status_contexts: '' });
      assert.equal(bad.status, 400);
      assert.ok(byId(bad.text, 'new-required_approvals-error'));
      assert.equal(
        (await post(annB, base, { branch: 'main', required_approvals: '2', required_status_contexts: 'ci\nlint' })).status,
        303,
      );
      const list = await t.req('GET', `${api}/protections`, { token: ann.token });
      const p = list.body.results[0];
      assert.deepEqual(p.required_status_contexts, ['ci', 'lint']);
      assert.equal(p.required_approvals, 2);
      const dup = await post(annB, base, { branch: 'main' });
      assert.equal(dup.status, 409);
      assert.equal(
        (await post(annB, `${base}/${p.uuid}`, { branch: 'main', required_approvals: '1', required_status_contexts: 'ci' }))
          .status,
        303,
      );
      assert.deepEqual((await t.req('GET', `${api}/protections/${p.uuid}`, { token: ann.token })).body.required_status_contexts, [
        'ci',
      ]);
      assert.equal((await post(annB, `${base}/${p.uuid}/approvers`, { username: 'bob' })).status, 303);
      const noUser = await post(annB, `${base}/${p.uuid}/approvers`, { username: 'nobody-here' });
      assert.equal(noUser.status, 404);
      const page = await pageReq(t, 'GET', base, { cookie: annB.cookie });
      assert.match(page.text, /<li>\s*bob/);
      assert.equal((await post(annB, `${base}/${p.uuid}/approvers/${bob.uuid}/remove`, {})).status, 303);
      assert.equal((await post(bobB, `${base}/${p.uuid}/delete`, {})).status, 403);
      assert.equal((await post(annB, `${base}/${p.uuid}/delete`, {})).status, 303);
      assert.equal((await t.req('GET', `${api}/protections`, { token: ann.token })).body.results.length, 0);
    });

    it('repo archive: the settings and the repo pages turn read-only; unarchive; delete needs the typed name', async () => {
      assert.equal((await t.req('POST', `${api}/threads`, { token: ann.token, body: { title: 'Before' } })).status, 201);
      assert.match((await pageReq(t, 'GET', `${repo}/threads/1`, { cookie: annB.cookie })).text, /class="primary"/);
      assert.equal((await post(annB, `${repo}/settings/archive`, { archived: 'true' })).status, 303);
      assert.equal((await t.req('GET', api, { token: ann.token })).body.is_archived, true);
      const settings = await pageReq(t, 'GET', `${repo}/settings`, { cookie: annB.cookie });
      assert.match(settings.text, /archived: it is read-only/);
      assert.doesNotMatch(settings.text, /action="\/teams\/core\/api\/settings" /);
      for (const path of [
        `${repo}/settings/protections`,
        `${repo}/settings/timers`,
        `${repo}/threads`,
        `${repo}/threads/1`,
        `${repo}/threads/new`,
        `${repo}/pulls`,
        `${repo}/pulls/new`,
      ]) {
        const res = await pageReq(t, 'GET', path, { cookie: annB.cookie });
        assert.equal(res.status, 200, path);
        assert.doesNotMatch(res.text, /class="primary"/, path);
      }
      const refused = await post(annB, `${repo}/settings/timers`, { message: 'x', run_in: '1h' });
      assert.equal(refused.status, 403);
      assert.match(refused.text, /The repo is archived and read-only/);
      assert.equal((await post(annB, `${repo}/settings/archive`, { archived: 'false' })).status, 303);
      const wrong = await post(annB, `${repo}/settings/delete`, { confirm: 'apx' });
      assert.equal(wrong.status, 400);
      assert.ok(byId(wrong.text, 'danger-confirm-error'));
      assert.equal(valueOf(wrong.text, 'danger-confirm'), 'apx');
      assert.equal((await t.req('GET', api, { token: ann.token })).status, 200);
      // the exact owner/slug: another case (or the bare name) deletes nothing
      for (const confirm of ['api', 'Core/API', 'CORE/api']) {
        assert.equal((await post(annB, `${repo}/settings/delete`, { confirm })).status, 400, confirm);
      }
      assert.equal((await t.req('GET', api, { token: ann.token })).status, 200);
      assert.equal((await post(annB, `${repo}/settings/delete`, { confirm: 'core/api' })).status, 303);
      assert.equal((await t.req('GET', api, { token: ann.token })).status, 404);
    });
  });
}

/** WEFT_SCREENSHOTS=DIR saves the settings pages there (docs/screenshots is made this way). */
const SHOTS = process.env.WEFT_SCREENSHOTS;

for (const dialect of BROWSER_DIALECTS) {
  describe(`settings pages in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let g: GitClient;
    let ssh: SshServer;
    let browser: Chromium;
    let page: Page;
    let alice: { token: string; uuid: string; username: string };
    const keys = keyDir();
    const repoPath = '/teams/crew/site';
    const api = '/api/v1/teams/crew/repos/site';

    const shot = async (name: string) => {
      if (!SHOTS) return;
      mkdirSync(SHOTS, { recursive: true });
      await page.setViewportSize({ width: 1200, height: 900 });
      await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
      await page.setViewportSize({ width: 375, height: 800 });
    };
    const submit = (name: string, url: string | RegExp) =>
      Promise.all([page.waitForURL(url), page.getByRole('button', { name, exact: true }).click()]);

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      ssh = await startSshServer(t.deps, { port: 0, host: '127.0.0.1' });
      alice = await t.user('alice');
      await t.user('bob');
      const ok = (res: { status: number; text: string }) => assert.ok(res.status < 300, res.text);
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Crew', slug: 'crew' } }));
      ok(await t.req('POST', '/api/v1/teams/crew/members', { token: alice.token, body: { username: 'bob', role: 'member' } }));
      ok(
        await t.req('POST', '/api/v1/teams/crew/repos', {
          token: alice.token,
          body: { name: 'Site', slug: 'site', visibility: 'private' },
        }),
      );
      const dir = await makeWorkTree(g, 'work', [{ 'README.md': '# Site\n' }]);
      await g.run(['-C', dir, 'push', '-q', g.url('/git/teams/crew/site.git', alice.token), 'main']);
      ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'Plans' } }));
      browser = await launchBrowser();
      ({ page } = await newPage(browser));
      await signInPage(page, g.base, 'alice', PASSWORD);
    });
    after(async () => {
      await browser?.close();
      await ssh?.close();
      g?.cleanup();
      keys.cleanup();
      await t?.close();
    });

    it('edits the profile; lists the sessions', async () => {
      await page.getByRole('link', { name: 'Settings', exact: true }).first().click();
      await page.waitForURL(`${g.base}/settings`);
      await page.fill('#f-display_name', 'Alice Example');
      await submit('Save profile', `${g.base}/settings`);
      assert.equal(await page.inputValue('#f-display_name'), 'Alice Example');
      await checkPage(page, 'profile settings');
      await page.fill('#f-email', 'not an email');
      await page.locator('#f-email').evaluate((el) => el.removeAttribute('type'));
      await submit('Save email', `${g.base}/settings/email`);
      await page.locator('#f-email-error').waitFor();
      await checkPage(page, 'profile settings with an error');
      await page.goto(`${g.base}/settings/sessions`);
      await page.getByText('this session').waitFor();
      await checkPage(page, 'sessions');
    });

    it('creates a token with a scope: the secret is shown once and a write with it is refused by the API', async () => {
      await page.goto(`${g.base}/settings/tokens`);
      await page.fill('#f-name', 'deploy');
      await page.check('#scope-read\\:repo');
      await page.fill('#f-repos', repoPath);
      await submit('Create token', `${g.base}/settings/tokens`);
      const secret = await page.inputValue('#new-token');
      assert.match(secret, /^weft_/);
      await checkPage(page, 'token created');
      assert.equal((await t.req('GET', api, { token: secret })).status, 200);
      const write = await t.req('PUT', api, { token: secret, body: { description: 'changed' } });
      assert.equal(write.status, 403);
      assert.equal(write.body.error, 'insufficient_scope');
      assert.match(String(write.headers['www-authenticate']), /scope="write:repo"/);
      await page.goto(`${g.base}/settings/tokens`);
      assert.equal(await page.locator('#new-token').count(), 0, 'the secret is not shown again');
      await shot('settings-tokens');
      await page.getByText('Revoke…').first().click();
      await submit('Revoke', `${g.base}/settings/tokens`);
      await page.getByText('revoked', { exact: true }).waitFor();
      assert.equal((await t.req('GET', api, { token: secret })).status, 401);
    });

    it('adds an SSH key and clones with it over SSH', async () => {
      const key = keys.make('alice', 'ed25519');
      await page.goto(`${g.base}/settings/keys`);
      await page.fill('#f-title', 'laptop');
      await page.fill('#f-key', key.pub);
      await submit('Add key', `${g.base}/settings/keys`);
      await page.getByText(key.fingerprint).waitFor();
      await checkPage(page, 'SSH keys');
      const dest = `${g.home}/cloned`;
      await g.run(['clone', '-q', `ssh://git@127.0.0.1:${ssh.port}${repoPath}.git`, dest], {
        env: { GIT_SSH_COMMAND: gitSshCommand(key.path, ssh.port) },
      });
      const log = await g.run(['-C', dest, 'log', '--oneline']);
      assert.ok(log.stdout.trim().length > 0);
    });

    it("changes a member's role; the last owner's refusal is shown", async () => {
      await page.goto(`${g.base}/teams/crew`);
      await Promise.all([
        page.waitForURL(`${g.base}/teams/crew/-/settings`),
        page.getByRole('link', { name: 'Team settings' }).click(),
      ]);
      await page.selectOption('#m-bob-role', 'maintainer');
      await page
        .locator('li', { has: page.locator('#m-bob-role') })
        .getByRole('button', { name: 'Change role' })
        .click();
      await page.waitForURL(`${g.base}/teams/crew/-/settings`);
      const member = await t.req('GET', '/api/v1/teams/crew/members/bob', { token: alice.token });
      assert.equal(member.body.role, 'maintainer');
      assert.equal(await page.inputValue('#m-bob-role'), 'maintainer');
      await checkPage(page, 'team settings');
      await shot('team-settings');
      await page.selectOption('#m-alice-role', 'member');
      await page
        .locator('li', { has: page.locator('#m-alice-role') })
        .getByRole('button', { name: 'Change role' })
        .click();
      await page.getByText('A team must keep at least one owner').waitFor();
      await checkPage(page, 'team settings with the last-owner refusal');
      await page.goto(`${g.base}/teams/crew/-/settings/timers`);
      await page.fill('#f-message', 'Standup');
      await page.fill('#f-run_in', '2h');
      await submit('Create timer', `${g.base}/teams/crew/-/settings/timers`);
      await page.getByText('Standup').waitFor();
      await checkPage(page, 'team timers');
    });

    it('protects a branch with a required check, then archives the repo and sees its pages read-only', async () => {
      await page.goto(`${g.base}${repoPath}`);
      await Promise.all([
        page.waitForURL(`${g.base}${repoPath}/settings`),
        page.getByRole('link', { name: 'Settings', exact: true }).last().click(),
      ]);
      await checkPage(page, 'repo settings');
      await shot('repo-settings');
      await page.goto(`${g.base}${repoPath}/settings/protections`);
      await page.fill('#new-branch', 'main');
      await page.fill('#new-required_status_contexts', 'ci/build');
      await submit('Add protection', `${g.base}${repoPath}/settings/protections`);
      await page.fill('#p1-a-username', 'bob');
      await submit('Add', `${g.base}${repoPath}/settings/protections`);
      await page.locator('li', { hasText: 'bob' }).first().waitFor();
      const list = await t.req('GET', `${api}/protections`, { token: alice.token });
      assert.deepEqual(list.body.results[0].required_status_contexts, ['ci/build']);
      await checkPage(page, 'protections');
      await shot('repo-protections');
      await page.goto(`${g.base}${repoPath}/settings/timers`);
      await checkPage(page, 'repo timers');
      await page.goto(`${g.base}${repoPath}/settings`);
      await page.getByText('Archive…').click();
      await submit('Archive', `${g.base}${repoPath}/settings`);
      await page.getByText('This repo is archived').first().waitFor();
      assert.equal((await t.req('GET', api, { token: alice.token })).body.is_archived, true);
      await checkPage(page, 'archived repo settings');
      for (const path of ['/threads', '/threads/1', '/pulls', '/settings/protections']) {
        await page.goto(`${g.base}${repoPath}${path}`);
        await page.getByText('This repo is archived').first().waitFor();
        assert.equal(await page.locator('main form button.primary').count(), 0, `${path}: no write form`);
        await checkPage(page, `archived ${path}`);
      }
      await page.goto(`${g.base}${repoPath}/settings`);
      await page.getByText('Unarchive…').click();
      await submit('Unarchive', `${g.base}${repoPath}/settings`);
      assert.equal((await t.req('GET', api, { token: alice.token })).body.is_archived, false);
      await page.fill('#danger-confirm', 'wrong');
      await submit('Delete this repo', `${g.base}${repoPath}/settings/delete`);
      await page.locator('#danger-confirm-error').waitFor();
      await checkPage(page, 'delete refused');
      await page.fill('#danger-confirm', 'crew/site');
      await submit('Delete this repo', `${g.base}/teams/crew`);
      assert.equal((await t.req('GET', api, { token: alice.token })).status, 404);
    });
  });
}
