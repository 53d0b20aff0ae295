/**
 * The subscription and mail-settings pages without JavaScript, and their htmx answers
 * (docs/notifications.md "Subscriptions", "What users choose"): Watch on the repo page,
 * Subscribe / Unsubscribe on thread and pull pages, `/settings/notifications`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seedCommit } from './git-fixtures.ts';
import { DIALECTS, type Res, type TestApp, startApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

const ok = (res: Res, status = 200): Res => {
  assert.equal(res.status, status, `${status} expected: ${res.text}`);
  return res;
};

for (const dialect of DIALECTS) {
  describe(`notification pages (${dialect})`, () => {
    let t: TestApp;
    let carol: { token: string; uuid: string };
    let b: Browser;
    const api = '/api/v1/teams/crew/repos/tool';
    const page = '/teams/crew/tool';
    before(async () => {
      t = await startApp(dialect);
      const alice = await t.user('alice');
      carol = await t.user('carol');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Crew', slug: 'crew' } }), 201);
      ok(
        await t.req('POST', '/api/v1/teams/crew/members', { token: alice.token, body: { username: 'carol', role: 'member' } }),
        201,
      );
      ok(await t.req('POST', '/api/v1/teams/crew/repos', { token: alice.token, body: { name: 'Tool', slug: 'tool' } }), 201);
      ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'Flaky', body: 'text' } }), 201);
      const repoUuid = ok(await t.req('GET', api, { token: alice.token })).body.uuid as string;
      await seedCommit(t, repoUuid, 'feature/x', { onto: 'main' });
      ok(
        await t.req('POST', `${api}/pulls`, {
          token: alice.token,
          body: { title: 'Change', body: 'b', source_branch: 'feature/x', target_branch: 'main' },
        }),
        201,
      );
      b = await signIn(t, 'carol');
    });
    after(async () => t.close());

    it('Watch on the repo page: a plain form (303 back) and its htmx answer', async () => {
      const home = await pageReq(t, 'GET', page, { cookie: b.cookie });
      assert.equal(home.status, 200, home.text);
      assert.match(home.text, /<form id="watch"[^>]*action="\/teams\/crew\/tool\/watch"/);
      assert.match(home.text, /<option value="participating" selected>/);
      const saved = await pageReq(t, 'POST', `${page}/watch`, { cookie: b.cookie, form: { _csrf: b.csrf, level: 'watching' } });
      assert.equal(saved.status, 303, saved.text);
      assert.equal(saved.headers.location, page);
      assert.equal(ok(await t.req('GET', `${api}/subscription`, { token: carol.token })).body.level, 'watching');
      const hx = await pageReq(t, 'POST', `${page}/watch`, {
        cookie: b.cookie,
        form: { _csrf: b.csrf, level: 'ignoring' },
        headers: { 'hx-request': 'true' },
      });
      assert.equal(hx.status, 200, hx.text);
      assert.match(hx.text, /^<form id="watch"/);
      assert.match(hx.text, /Saved: ignoring\./);
      assert.equal(ok(await t.req('GET', `${api}/subscription`, { token: carol.token })).body.level, 'ignoring');
      const bad = await pageReq(t, 'POST', `${page}/watch`, { cookie: b.cookie, form: { _csrf: b.csrf, level: 'loud' } });
      assert.equal(bad.status, 400);
      const noCsrf = await pageReq(t, 'POST', `${page}/watch`, { cookie: b.cookie, form: { level: 'watching' } });
      assert.equal(noCsrf.status, 403);
    });

    for (const kind of ['threads', 'pulls'] as const) {
      it(`Subscribe / Unsubscribe on the ${kind === 'threads' ? 'thread' : 'pull'} page`, async () => {
        const at = `${page}/${kind}/1`;
        const shown = await pageReq(t, 'GET', at, { cookie: b.cookie });
        assert.equal(shown.status, 200, shown.text);
        // carol ignores the repo (the test before): not subscribed
        assert.match(shown.text, /<form id="subscribe"[\s\S]*?<button type="submit">Subscribe<\/button>/);
        const on = await pageReq(t, 'POST', `${at}/subscription`, {
          cookie: b.cookie,
          form: { _csrf: b.csrf, subscribed: 'true' },
        });
        assert.equal(on.status, 303, on.text);
        assert.equal(on.headers.location, at);
        assert.deepEqual(ok(await t.req('GET', `${api}/${kind}/1/subscription`, { token: carol.token })).body, {
          subscribed: true,
          explicit: true,
          level: 'ignoring',
        });
        assert.match((await pageReq(t, 'GET', at, { cookie: b.cookie })).text, /<button type="submit">Unsubscribe<\/button>/);
        const off = await pageReq(t, 'POST', `${at}/subscription`, {
          cookie: b.cookie,
          form: { _csrf: b.csrf, subscribed: 'false' },
          headers: { 'hx-request': 'true' },
        });
        assert.equal(off.status, 200, off.text);
        assert.match(off.text, /^<form id="subscribe"[\s\S]*Unsubscribed\./);
        assert.equal(ok(await t.req('GET', `${api}/${kind}/1/subscription`, { token: carol.token })).body.subscribed, false);
      });
    }

    it('the mail settings page: instant, daily, off and the timezone; an error beside its field', async () => {
      const shown = await pageReq(t, 'GET', '/settings/notifications', { cookie: b.cookie });
      assert.equal(shown.status, 200, shown.text);
      assert.match(shown.text, /<option value="instant"\s+selected>/);
      assert.match(shown.text, /aria-current="page"[^>]*>Notifications|href="\/settings\/notifications"\s+aria-current="page"/);
      const bad = await pageReq(t, 'POST', '/settings/notifications', {
        cookie: b.cookie,
        form: { _csrf: b.csrf, email_notifications: 'daily', timezone: 'Mars/Olympus' },
      });
      assert.equal(bad.status, 400, bad.text);
      assert.match(bad.text, /id="f-timezone-error"/);
      assert.match(bad.text, /value="Mars\/Olympus"/);
      const saved = await pageReq(t, 'POST', '/settings/notifications', {
        cookie: b.cookie,
        form: { _csrf: b.csrf, email_notifications: 'daily', timezone: 'Europe/Berlin' },
      });
      assert.equal(saved.status, 303, saved.text);
      assert.deepEqual(ok(await t.req('GET', '/api/v1/user/notification-settings', { token: carol.token })).body, {
        email_notifications: 'daily',
        timezone: 'Europe/Berlin',
        email_bouncing: false,
      });
      assert.match((await pageReq(t, 'GET', '/settings/notifications?saved=1', { cookie: b.cookie })).text, /Saved\./);
    });
  });
}
