/**
 * The dashboard's live activity in real Chromium (README "Web interface", docs/web.md "Live
 * parts"): the viewer's own reply, posted through the API in a repo the dashboard does not follow
 * (it follows four), appears in place as a sentence with links and a relative time, without a
 * reload, over the page's one stream. axe-clean at 375 px.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type TestApp, startApp } from './helpers.ts';
import { listen } from './sse-client.ts';
import { PASSWORD } from './web-helpers.ts';

type Person = { token: string; uuid: string; username: string };

for (const dialect of BROWSER_DIALECTS) {
  describe(
    `the dashboard's live activity in Chromium (${dialect})`,
    { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' },
    () => {
      let t: TestApp;
      let base: string;
      let browser: Browser;
      let alice: Person;
      let page: Page;
      const repos = new Map<string, string>();
      const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);

      before(async () => {
        t = await startApp(dialect);
        base = await listen(t);
        alice = await t.user('alice');
        ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Crew', slug: 'crew' } }));
        for (let i = 1; i <= 6; i++) {
          const made = await t.req('POST', '/api/v1/teams/crew/repos', {
            token: alice.token,
            body: { name: `R${i}`, slug: `r${i}`, visibility: 'private' },
          });
          ok(made);
          repos.set(made.body.uuid as string, `r${i}`);
        }
        browser = await launchBrowser();
        ({ page } = await newPage(browser));
        await signInPage(page, base, alice.username, PASSWORD);
      });
      after(async () => {
        await browser?.close();
        await t?.close();
      });

      it('shows the reply the viewer posts in a repo it does not follow, live, as a sentence with links and a relative time', async () => {
        await page.goto(`${base}/`);
        await page.locator('#live-status', { hasText: 'live' }).waitFor();
        const connect = await page.locator('[sse-connect]').getAttribute('sse-connect');
        assert.equal(await page.locator('[sse-connect]').count(), 1, 'one stream on the page');
        const scopes = new URL(connect!, base).searchParams.get('scope')!.split(',');
        assert.ok(scopes.includes(`actor:${alice.uuid}`), connect!);
        const [uuid, slug] = [...repos].find(([u]) => !scopes.includes(`repo:${u}`))!;
        await page.evaluate(() => {
          (window as unknown as { notReloaded: boolean }).notReloaded = true;
        });

        const api = `/api/v1/teams/crew/repos/${slug}`;
        ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'Plan', body: 'What next?' } }));
        ok(await t.req('POST', `${api}/threads/1/replies`, { token: alice.token, body: { body: 'My own reply, live' } }));

        const reply = page.locator('#dashboard-feed article[data-kind="reply-created"]', {
          has: page.locator(`a[href="/repos/${uuid}/threads/1"]`),
        });
        await reply.waitFor();
        assert.match((await reply.locator('header').textContent()) ?? '', /alice\s+replied on #1/);
        const link = reply.locator(`header a[href="/repos/${uuid}/threads/1"]`);
        assert.equal(await link.count(), 1, 'the sentence links to the thread');
        const time = reply.locator('time');
        // the page's script turns the time into a relative one as the event arrives
        let shown = '';
        for (let i = 0; i < 50 && !/^(just now|now|\d+ seconds? ago)$/.test(shown); i++) {
          shown = ((await time.textContent()) ?? '').trim();
          if (i) await new Promise((r) => setTimeout(r, 100));
        }
        assert.match(shown, /^(just now|now|\d+ seconds? ago)$/);
        assert.match((await time.getAttribute('title')) ?? '', /^\d{4}-\d\d-\d\dT/, 'the exact time on hover');
        await page.locator('#dashboard-feed article[data-kind="thread-created"]', { hasText: 'Plan' }).waitFor();
        assert.equal(await reply.count(), 1, 'shown once');
        assert.equal(
          await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded),
          true,
          'not reloaded',
        );
        await checkPage(page, 'dashboard after a live event');

        await Promise.all([page.waitForURL(new RegExp(`/teams/crew/${slug}/threads/1$`)), link.click()]);
        await page.locator('text=My own reply, live').first().waitFor();
      });
    },
  );
}
