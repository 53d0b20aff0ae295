/**
 * Notifications in real Chromium (docs/notifications.md "Live", "Pages", "Subscriptions"): the
 * header badge counting up without reload while another user mentions this one; the inbox marking
 * read and done; Watch on the repo page and Unsubscribe on a thread page (htmx swaps the control).
 * Every page passes axe-core at 375 px wide without sideways scrolling.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

for (const dialect of BROWSER_DIALECTS) {
  describe(`notifications in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let base: string;
    let browser: Browser;
    let page: Page;
    let alice: { token: string; uuid: string };
    let carol: { token: string; uuid: string };
    const api = '/api/v1/teams/crew/repos/tool';
    const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);
    const badge = () => page.locator('#inbox-count');

    before(async () => {
      t = await startApp(dialect);
      base = (await t.app.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');
      alice = await t.user('alice');
      carol = await t.user('carol');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Crew', slug: 'crew' } }));
      ok(await t.req('POST', '/api/v1/teams/crew/members', { token: alice.token, body: { username: 'carol', role: 'member' } }));
      ok(await t.req('POST', '/api/v1/teams/crew/repos', { token: alice.token, body: { name: 'Tool', slug: 'tool' } }));
      browser = await launchBrowser();
      page = (await newPage(browser)).page;
      await signInPage(page, base, 'carol', PASSWORD);
    });
    after(async () => {
      await browser?.close();
      await t?.close();
    });

    it('the header badge counts up live while alice mentions carol', async () => {
      await page.goto(`${base}/notifications`);
      await checkPage(page, 'the empty inbox');
      assert.equal(await badge().isHidden(), true);
      ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'First', body: 'Hey @carol' } }));
      await page.waitForFunction(() => document.getElementById('inbox-count')?.textContent === '1');
      ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'Second', body: 'And @carol again' } }));
      await page.waitForFunction(() => document.getElementById('inbox-count')?.textContent === '2');
      assert.equal(await badge().isVisible(), true);
    });

    it('the inbox marks read and done', async () => {
      await page.goto(`${base}/notifications`);
      await page.getByRole('link', { name: 'Second' }).waitFor();
      await checkPage(page, 'the inbox with two notifications');
      await page.getByRole('button', { name: 'Mark read: Second' }).click();
      await page.waitForFunction(() => document.getElementById('inbox-count')?.textContent === '1');
      await page.getByRole('button', { name: 'Mark done: First' }).click();
      await page.waitForURL(/\/notifications/);
      await page.goto(`${base}/notifications?tab=done`);
      await page.getByRole('link', { name: 'First' }).waitFor();
      await checkPage(page, 'the done tab');
      const done = await t.req('GET', '/api/v1/notifications?state=done', { token: carol.token });
      assert.deepEqual(
        done.body.results.map((n: { subject: { title: string } }) => n.subject.title),
        ['First'],
      );
    });

    it('Watch on the repo page and Unsubscribe on a thread page', async () => {
      await page.goto(`${base}/teams/crew/tool`);
      await checkPage(page, 'the repo page with its Watch control');
      await page.selectOption('#watch-level', 'watching');
      await page.getByRole('button', { name: 'Watch', exact: true }).click();
      await page.getByText('Saved: watching.').waitFor();
      assert.equal((await t.req('GET', `${api}/subscription`, { token: carol.token })).body.level, 'watching');
      await checkPage(page, 'the repo page after Watch');

      await page.goto(`${base}/teams/crew/tool/threads/1`);
      await checkPage(page, 'the thread page with Unsubscribe');
      await page.getByRole('button', { name: 'Unsubscribe', exact: true }).click();
      await page.getByText('Unsubscribed.', { exact: false }).waitFor();
      assert.equal((await t.req('GET', `${api}/threads/1/subscription`, { token: carol.token })).body.subscribed, false);
      await page.getByRole('button', { name: 'Subscribe', exact: true }).click();
      await page.getByText(/^Subscribed\./).waitFor();
      assert.equal((await t.req('GET', `${api}/threads/1/subscription`, { token: carol.token })).body.subscribed, true);
      await checkPage(page, 'the thread page after Subscribe');
    });
  });
}
