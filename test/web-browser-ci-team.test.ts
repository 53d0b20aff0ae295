/**
 * docs/ci.md "Pages" in real Chromium at 375 px: a team's Runners, Secrets and Variables settings
 * tabs and the staff Site runners page, a registration token shown once on each runners page. Every
 * page passes axe-core and fits the width.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type GitClient, gitClient } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

for (const dialect of BROWSER_DIALECTS) {
  describe(
    `Team and site CI settings in Chromium (${dialect})`,
    { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' },
    () => {
      let t: TestApp;
      let g: GitClient;
      let base: string;
      let browser: Browser;

      before(async () => {
        t = await startApp(dialect);
        g = await gitClient(t);
        base = g.base.replace(/\/$/, '');
        const alice = await t.user('alice');
        await t.user('sam', { staff: true });
        const made = await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Crew', slug: 'crew' } });
        assert.equal(made.status, 201, made.text);
        browser = await launchBrowser();
      });
      after(async () => {
        await browser?.close();
        await t.close();
        g.cleanup();
      });

      it('a team owner: runners (a token once), secrets and variables set through the forms', async () => {
        const { context, page } = await newPage(browser);
        try {
          await signInPage(page, base, 'alice', PASSWORD);
          const web = `${base}/teams/crew/-/settings`;
          await page.goto(`${web}/runners`);
          await checkPage(page, 'team runners, empty');
          await page.click('button:has-text("Create a registration token")');
          const token = await page.locator('#runner-token').textContent();
          assert.match(token ?? '', /^wrr_/);
          await checkPage(page, 'team runners, a token shown once');

          await page.goto(`${web}/secrets`);
          await page.fill('#secret-name', 'DEPLOY_KEY');
          await page.fill('#secret-value', 'hunter2');
          await Promise.all([page.waitForURL(`${web}/secrets`), page.click('button:has-text("Set secret")')]);
          assert.equal(await page.locator('code', { hasText: 'DEPLOY_KEY' }).count(), 1);
          assert.equal(await page.getByText('hunter2').count(), 0);
          await checkPage(page, 'team secrets');

          await page.goto(`${web}/variables`);
          await page.fill('#variable-name', 'REGION');
          await page.fill('#variable-value', 'eu-west');
          await Promise.all([page.waitForURL(`${web}/variables`), page.click('button:has-text("Set variable")')]);
          assert.equal(await page.locator('code', { hasText: 'eu-west' }).count(), 1);
          await checkPage(page, 'team variables');
        } finally {
          await context.close();
        }
      });

      it('staff: the Site runners page, a token once', async () => {
        const { context, page } = await newPage(browser);
        try {
          await signInPage(page, base, 'sam', PASSWORD);
          await page.goto(`${base}/admin/runners`);
          await checkPage(page, 'site runners, empty');
          await page.click('button:has-text("Create a registration token")');
          assert.match((await page.locator('#runner-token').textContent()) ?? '', /^wrr_/);
          await checkPage(page, 'site runners, a token shown once');
        } finally {
          await context.close();
        }
      });
    },
  );
}
