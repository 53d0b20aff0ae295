/**
 * Creating from the pages in real Chromium (README "Web interface"): the first sign-in as the
 * README says (the bootstrap admin's password set with the console token), a new team, a new
 * repo in it, Explore, a fork, a refused merge keeping the pull page, and a reader who sees no
 * action they cannot take. Every page passes axe-core (no serious or critical violation)
 * at 375 px wide.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { ADMIN_TOKEN, type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

for (const dialect of BROWSER_DIALECTS) {
  describe(
    `creating from the pages in Chromium (${dialect})`,
    { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' },
    () => {
      let t: TestApp;
      let base: string;
      let browser: Browser;

      before(async () => {
        t = await startApp(dialect);
        await t.user('alice');
        await t.user('bob');
        base = await t.app.listen({ port: 0, host: '127.0.0.1' });
        browser = await launchBrowser();
      });
      after(async () => {
        await browser?.close();
        await t.close();
      });

      it('signs in for the first time as the README says: the admin’s password from the console token', async () => {
        const { page } = await newPage(browser);
        await page.goto(`${base}/`);
        await page.getByText('First run.').waitFor();
        await checkPage(page, 'sign-in on a first run');
        await Promise.all([
          page.waitForURL(`${base}/setup`),
          page.getByRole('link', { name: 'Set the admin’s password' }).click(),
        ]);
        await checkPage(page, 'set-up');
        await page.fill('#f-proof', 'wrong');
        await page.fill('#f-password', 'admin password 123');
        await page.getByRole('button', { name: 'Set the password' }).click();
        await page.locator('#f-proof-error').waitFor();
        await checkPage(page, 'set-up refused');
        await page.fill('#f-proof', ADMIN_TOKEN);
        await page.fill('#f-password', 'admin password 123');
        await Promise.all([page.waitForURL(`${base}/login`), page.getByRole('button', { name: 'Set the password' }).click()]);
        await signInPage(page, base, 'admin', 'admin password 123');
        await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
        await page.context().close();
      });

      it('creates a team and a repo, finds it on Explore and forks it', async () => {
        const { page } = await newPage(browser);
        await signInPage(page, base, 'alice', PASSWORD);
        await Promise.all([page.waitForURL(`${base}/teams/new`), page.getByRole('link', { name: 'New team' }).click()]);
        await checkPage(page, 'new team');
        await page.fill('#f-name', 'Core');
        await Promise.all([page.waitForURL(`${base}/teams/core`), page.getByRole('button', { name: 'Create team' }).click()]);
        await Promise.all([page.waitForURL(`${base}/new`), page.getByRole('link', { name: 'New repo' }).click()]);
        await checkPage(page, 'new repo');
        await page.selectOption('#f-owner', 'team:core');
        await page.fill('#f-name', 'Web');
        await page.fill('#f-slug', 'Not a slug!');
        await page.selectOption('#f-visibility', 'public');
        await page.getByRole('button', { name: 'Create repo' }).click();
        await page.locator('#f-slug-error').waitFor();
        assert.equal(await page.inputValue('#f-name'), 'Web', 'the input is kept');
        await checkPage(page, 'new repo refused');
        await page.fill('#f-slug', '');
        await Promise.all([page.waitForURL(`${base}/teams/core/web`), page.getByRole('button', { name: 'Create repo' }).click()]);
        await checkPage(page, 'the new repo');
        await page.context().close();

        const bob = (await newPage(browser)).page;
        await signInPage(bob, base, 'bob', PASSWORD);
        await Promise.all([bob.waitForURL(`${base}/explore`), bob.getByRole('link', { name: 'Explore' }).click()]);
        await checkPage(bob, 'explore');
        await Promise.all([bob.waitForURL(`${base}/teams/core/web`), bob.getByRole('link', { name: 'core/web' }).click()]);
        await Promise.all([
          bob.waitForURL(`${base}/teams/core/web/fork`),
          bob.getByRole('link', { name: 'Fork this repo' }).click(),
        ]);
        await checkPage(bob, 'fork');
        await Promise.all([bob.waitForURL(`${base}/users/bob/web`), bob.getByRole('button', { name: 'Fork' }).click()]);
        await checkPage(bob, 'the fork');
        await bob.context().close();
      });

      it('keeps the pull page after a refused merge, and shows a reader no action they cannot take', async () => {
        const api = '/api/v1/teams/core/repos/web';
        const alice = await t.req('POST', '/api/v1/api-tokens', { body: { name: 'b', username: 'alice' } });
        const token = alice.body.token as string;
        // a pull whose branches were never pushed: its merge is refused (409)
        const pull = await t.req('POST', `${api}/pulls`, {
          token,
          body: { title: 'Nothing yet', body: '', source_branch: 'gone', target_branch: 'main' },
        });
        assert.equal(pull.status, 201, pull.text);
        const add = await t.req('POST', '/api/v1/teams/core/members', { token, body: { username: 'bob', role: 'reader' } });
        assert.equal(add.status, 201, add.text);
        const { page } = await newPage(browser);
        await signInPage(page, base, 'alice', PASSWORD);
        await page.goto(`${base}/teams/core/web/pulls/1`);
        await page.getByRole('button', { name: 'Merge', exact: true }).click();
        await page.locator('#merge-error').waitFor();
        assert.match(await page.locator('h2').first().innerText(), /#1 Nothing yet/);
        await checkPage(page, 'refused merge');
        await page.context().close();
        const reader = (await newPage(browser)).page;
        await signInPage(reader, base, 'bob', PASSWORD);
        await reader.goto(`${base}/teams/core/web/pulls/1`);
        assert.equal(await reader.getByRole('button', { name: 'Merge', exact: true }).count(), 0);
        assert.equal(await reader.locator('nav[aria-label=Repo]').getByRole('link', { name: 'Settings' }).count(), 0);
        await checkPage(reader, 'pull as a reader');
        await reader.context().close();
      });
    },
  );
}
