/**
 * The settings pages over HTTP (README "Web interface"): user settings (profile, email,
 * password, tokens, sessions, SSH keys), team settings (name, members, timers) and repo settings
 * (general, archive, delete, protections, timers, forks) through the same services as the API.
 * CSRF is enforced, pages a caller may not see are 404 (403 below the needed role, as the API),
 * a refused form shows the API's detail beside its field with what was typed kept.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { keyDir } from './ssh-fixtures.ts';
import { type Browser, PASSWORD, pageReq, signIn } from './web-helpers.ts';

/** The text of the element with this id (a field's error paragraph). */
const byId = (page: string, id: string): string | undefined => new RegExp(`id="${id}"[^>]*>([^<]*)<`).exec(page)?.[1];
/** The value attribute of the input with this id. */
const valueOf = (page: string, id: string): string | undefined => new RegExp(`id="${id}"[^>]*value="([^"]*)"`).exec(page)?.[1];

for (const dialect of DIALECTS) {
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
      assert.equal(byId(bad.text, 'f-email-error'), 'body.email must match format &quot;email&quot;.');
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
      assert.match(byId(short.text, 'f-new_password-error') ?? '', /body\.password must NOT have fewer than 8 characters/);
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
      for (const path of [
        '/settings',
        '/settings/tokens',
        '/settings/sessions',
        '/settings/keys',
        `${repo}/settings`,
        '/teams/core/settings',
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

    void olgaB;
    void bob;
  });
}
