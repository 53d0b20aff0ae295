/**
 * Live state in real Chromium (README "Web interface"): a pull page open in one person's browser
 * shows another person's approval, CI's checks and the merge as they happen through the API, in
 * place, without a reload; a thread page shows a new reply and the thread's closing the same way.
 * What the viewer typed in a form outside those parts stays. axe-clean at 375 px.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type GitClient, commitFiles, gitClient, makeWorkTree } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

type Person = { token: string; uuid: string; username: string };

for (const dialect of BROWSER_DIALECTS) {
  describe(
    `live pull and thread state in Chromium (${dialect})`,
    { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' },
    () => {
      let t: TestApp;
      let g: GitClient;
      let base: string;
      let browser: Browser;
      let alice: Person;
      let bob: Person;
      let page: Page;
      const repoPath = '/teams/live/app';
      const api = '/api/v1/teams/live/repos/app';
      const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);

      before(async () => {
        t = await startApp(dialect);
        g = await gitClient(t);
        base = g.base;
        alice = await t.user('alice');
        bob = await t.user('bob');
        ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Live', slug: 'live' } }));
        ok(await t.req('POST', '/api/v1/teams/live/members', { token: alice.token, body: { username: 'bob', role: 'member' } }));
        ok(
          await t.req('POST', '/api/v1/teams/live/repos', {
            token: alice.token,
            body: { name: 'App', slug: 'app', visibility: 'public' },
          }),
        );
        const dir = await makeWorkTree(g, 'work', [{ 'README.md': '# App\n' }]);
        await g.run(['-C', dir, 'push', '-q', g.url('/git/teams/live/app.git', alice.token), 'main']);
        await g.run(['-C', dir, 'checkout', '-q', '-b', 'feature']);
        await commitFiles(g, dir, [{ 'a.txt': 'a\n' }], 'feature');
        await g.run(['-C', dir, 'push', '-q', g.url('/git/teams/live/app.git', alice.token), 'feature']);
        ok(
          await t.req('POST', `${api}/protections`, {
            token: alice.token,
            body: { branch: 'main', required_approvals: 1, required_status_contexts: ['ci/test'] },
          }),
        );
        ok(
          await t.req('POST', `${api}/pulls`, {
            token: alice.token,
            body: { title: 'Feature', body: '', source_branch: 'feature', target_branch: 'main' },
          }),
        );
        ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'Plan', body: 'What next?' } }));
        browser = await launchBrowser();
        ({ page } = await newPage(browser));
        await signInPage(page, base, alice.username, PASSWORD);
      });
      after(async () => {
        await browser?.close();
        g?.cleanup();
        await t?.close();
      });

      it("updates the pull's approvals, checks and merge state in place while bob acts through the API", async () => {
        await page.goto(`${base}${repoPath}/pulls/1`);
        await page.locator('#live-status', { hasText: 'live' }).waitFor();
        assert.match((await page.locator('#pull-checks').textContent()) ?? '', /0 of 1 required approvals/);
        // the page is never reloaded: this mark stays until the end
        await page.evaluate(() => {
          (window as unknown as { notReloaded: boolean }).notReloaded = true;
        });

        ok(await t.req('POST', `${api}/pulls/1/reviews`, { token: bob.token, body: { status: 'approved', body: 'ship it' } }));
        await page.locator('#pull-checks', { hasText: '1 of 1 required approvals (bob)' }).waitFor();
        await page.locator('#pull-reviews', { hasText: 'ship it' }).waitFor();

        const pull = await t.req('GET', `${api}/pulls/1`, { token: alice.token });
        ok(
          await t.req('POST', `${api}/statuses/${pull.body.head_sha}`, {
            token: bob.token,
            body: { state: 'success', context: 'ci/test' },
          }),
        );
        await page.locator('#checks-state', { hasText: 'success' }).waitFor();
        await page.locator('#checks-required', { hasText: 'All 1 required checks passed.' }).waitFor();
        await checkPage(page, 'pull page after live updates');

        ok(await t.req('POST', `${api}/pulls/1/merge`, { token: bob.token, body: { merge_strategy: 'merge' } }), 200);
        await page.locator('#pull-status', { hasText: 'merged' }).waitFor();
        await page.locator('#pull-meta', { hasText: 'merged by bob' }).waitFor();
        assert.equal(
          await page.getByRole('button', { name: 'Merge', exact: true }).count(),
          0,
          'no Merge button on a merged pull',
        );
        assert.equal(
          await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded),
          true,
          'not reloaded',
        );
        await checkPage(page, 'merged pull page, updated live');
      });

      it("shows a thread's new reply and its closing in place", async () => {
        await page.goto(`${base}${repoPath}/threads/1`);
        await page.locator('#live-status', { hasText: 'live' }).waitFor();
        await page.fill('#reply-body', 'my draft');
        ok(await t.req('POST', `${api}/threads/1/replies`, { token: bob.token, body: { body: 'Bob says hello' } }));
        await page.locator('#thread-replies', { hasText: 'Bob says hello' }).waitFor();
        ok(await t.req('PATCH', `${api}/threads/1`, { token: bob.token, body: { state: 'closed' } }), 200);
        await page.locator('#thread-state', { hasText: 'Closed' }).waitFor();
        assert.equal(await page.inputValue('#reply-body'), 'my draft', 'the reply being typed stays');
        await checkPage(page, 'thread page after live updates');
      });

      it('lets a signed-out visitor browse the public repo: Explore, home, a file, commits, issues, pulls', async () => {
        const { context, page: anon } = await newPage(browser);
        await anon.goto(`${base}/explore`);
        await checkPage(anon, 'Explore signed out');
        await anon.goto(`${base}${repoPath}`);
        await checkPage(anon, 'repo home signed out');
        assert.equal(await anon.getByRole('link', { name: 'Sign in' }).count(), 1);
        for (const path of ['/blob/feature/a.txt', '/commits/main', '/threads', '/threads/1', '/pulls', '/pulls/1']) {
          const res = await anon.goto(`${base}${repoPath}${path}`);
          assert.equal(res?.status(), 200, path);
          assert.equal(await anon.locator('form[method="post"]').count(), 0, `${path}: no action`);
          await checkPage(anon, `${path} signed out`);
        }
        await context.close();
      });
    },
  );
}
