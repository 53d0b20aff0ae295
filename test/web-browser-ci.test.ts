/**
 * docs/ci.md "Pages" in real Chromium at 375 px: a run page followed live to its end, a failing
 * job's log with the failing step open and coloured, re-run of the failed jobs, cancel. The
 * runner is played through the runner protocol. Every page passes axe-core and fits the width.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

const CI = `name: CI
on: push
jobs:
  build:
    runs-on: linux
    steps:
      - run: echo build
      - run: exit 1
`;

for (const dialect of BROWSER_DIALECTS) {
  describe(`CI pages in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let g: GitClient;
    let base: string;
    let browser: Browser;
    let secret: string;
    const api = '/api/v1/users/alice/repos/app';
    const web = '/users/alice/app';
    const runnerCall = (path: string, body: unknown) =>
      t.req('POST', `/api/v1/runner${path}`, { token: null, body, headers: { 'x-weft-runner-secret': secret } });

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      base = g.base;
      const alice = await t.user('alice');
      const res = await t.req('POST', '/api/v1/users/alice/repos', {
        token: alice.token,
        body: { name: 'app', slug: 'app', visibility: 'public' },
      });
      assert.equal(res.status, 201, res.text);
      const work = await makeWorkTree(g, 'app', [{ 'README.md': 'hi\n', '.weft/workflows/ci.yml': CI }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/app.git', alice.token), 'main']);
      const reg = await t.req('POST', `${api}/runners/registration-token`, { token: alice.token });
      const r = await t.req('POST', '/api/v1/runner/register', {
        token: null,
        body: { token: reg.body.token, name: 'r1', labels: ['linux'] },
      });
      assert.equal(r.status, 201, r.text);
      secret = r.body.secret;
      browser = await launchBrowser();
    });
    after(async () => {
      await browser?.close();
      await t.close();
      g.cleanup();
    });

    it('a run page shown live to the end; the failing step open and coloured; re-run failed; cancel', async () => {
      const { page } = await newPage(browser);
      await signInPage(page, base, 'alice', PASSWORD);
      await page.goto(`${base}${web}/actions`);
      await checkPage(page, 'Actions tab');
      await page.getByRole('link', { name: 'CI #1' }).click();
      await page.waitForURL(/\/runs\/1$/);
      await checkPage(page, 'run page, queued');

      const polled = await runnerCall('/poll', { free: 1, running: [] });
      const job = polled.body.jobs[0];
      const ts = new Date().toISOString();
      const log = [
        `${ts} ##[group]Run echo build\n${ts} build\n${ts} ##[endgroup] success\n`,
        `${ts} ##[group]Run exit 1\n${ts} \u001b[31mboom\u001b[0m\n${ts} ##[endgroup] failure\n`,
      ];
      await runnerCall(`/jobs/${job.uuid}/log`, { offset: 0, data: log[0] });
      await page.locator('#run-jobs').getByText('in progress').first().waitFor({ timeout: 15_000 });

      // the job page follows the log while the job runs
      await page.getByRole('link', { name: 'build' }).click();
      await page.waitForURL(/\/jobs\//);
      await page.locator('#L2').waitFor({ state: 'attached' });
      await runnerCall(`/jobs/${job.uuid}/log`, { offset: Buffer.byteLength(log[0]!), data: log[1] });
      await page.locator('.ansi-red-fg').waitFor({ timeout: 15_000 });
      assert.equal(await page.locator('.log-line').count(), 6, 'no line twice');
      await checkPage(page, 'job page, running');

      await runnerCall(`/jobs/${job.uuid}/steps`, {
        steps: [
          { number: 1, status: 'completed', conclusion: 'success', started_at: ts, completed_at: ts },
          { number: 2, status: 'completed', conclusion: 'failure', started_at: ts, completed_at: ts },
        ],
      });
      assert.equal((await runnerCall(`/jobs/${job.uuid}/finish`, { conclusion: 'failure' })).status, 204);
      // the page reloads when the job ends: the failed step is open, the passed one closed
      await page.locator('h2 .badge.failure').waitFor({ timeout: 15_000 });
      assert.equal(await page.locator('details.log-step').nth(1).getAttribute('open'), '');
      assert.equal(await page.locator('details.log-step').nth(0).getAttribute('open'), null);
      const color = await page.locator('.ansi-red-fg').evaluate((el) => getComputedStyle(el).color);
      assert.equal(color, 'rgb(255, 123, 114)');
      await checkPage(page, 'failed job page');

      await page.goto(`${base}${web}/runs/1`);
      await page.getByRole('button', { name: 'Re-run failed jobs' }).click();
      await page.getByText('attempt 2').waitFor();
      await checkPage(page, 'run page, attempt 2');
      await page.getByRole('button', { name: 'Cancel run' }).click();
      await page.locator('#run-jobs-h .badge', { hasText: 'cancelled' }).waitFor();
    });
  });
}
