/**
 * Reading code in real Chromium (docs/web.md "Reading code"): line links and a range marked by a
 * shift-click, the permalink keeping it; the blame view with a range; the branch switcher opening
 * a pull from a branch; the dashboard showing the viewer's own events live as sentences with
 * relative times. Every page passes axe-core (no serious or critical violation) at 375 px wide.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type GitClient, commitFiles, gitClient, makeWorkTree } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

const APP = Array.from({ length: 12 }, (_, i) => `export const v${i + 1} = ${i + 1};`).join('\n') + '\n';

for (const dialect of BROWSER_DIALECTS) {
  describe(`reading code in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let g: GitClient;
    let base: string;
    let browser: Browser;
    let token = '';
    let work = '';
    let head = '';
    const repo = '/teams/core/proj';

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      base = g.base;
      const alice = await t.user('alice');
      token = alice.token;
      const ok = (res: { status: number; text: string }) => assert.equal(res.status, 201, res.text);
      ok(await t.req('POST', '/api/v1/teams', { token, body: { name: 'Core', slug: 'core' } }));
      ok(await t.req('POST', '/api/v1/teams/core/repos', { token, body: { name: 'proj', slug: 'proj', visibility: 'private' } }));
      work = await makeWorkTree(g, 'work', [{ 'README.md': '# Proj\n', 'src/app.ts': APP }]);
      await commitFiles(g, work, [{ 'src/app.ts': APP.replace('v5 = 5', 'v5 = 50') }], 'Change v5');
      head = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      await g.run(['-C', work, 'tag', 'v1.0']);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feature/login']);
      await commitFiles(g, work, [{ 'src/login.ts': 'export const login = true;\n' }], 'Login');
      await g.run(['-C', work, 'checkout', '-q', 'main']);
      await g.run(['-C', work, 'push', '-q', g.url('/git/teams/core/proj.git', token), 'main', 'feature/login', 'v1.0']);
      browser = await launchBrowser();
    });
    after(async () => {
      await browser?.close();
      g?.cleanup();
      await t?.close();
    });

    it('marks a line range chosen by click and shift-click, and the permalink keeps it; the blame view too', async () => {
      const { page } = await newPage(browser);
      await signInPage(page, base, 'alice', PASSWORD);
      await page.goto(`${base}${repo}/blob/main/src/app.ts`);
      await page.locator('a[data-ln="3"]').click();
      await page.locator('a[data-ln="6"]').click({ modifiers: ['Shift'] });
      assert.equal(new URL(page.url()).hash, '#L3-L6');
      const mark = page.locator('.line-mark');
      await mark.waitFor();
      assert.equal(await mark.getAttribute('data-range'), '3-6');
      const box = await mark.boundingBox();
      const l3 = await page.locator('#L3').boundingBox();
      const l6 = await page.locator('#L6').boundingBox();
      assert.ok(box && l3 && l6, 'the mark and the lines are laid out');
      assert.ok(Math.abs(box.y - l3.y) < 2, `the mark starts at line 3 (${box.y} vs ${l3.y})`);
      assert.ok(Math.abs(box.y + box.height - (l6.y + l6.height)) < 2, 'the mark ends at line 6');
      assert.equal(await page.locator('a.hl[data-ln]').count(), 4);
      assert.equal(await page.getAttribute('#permalink', 'href'), `${base}${repo}/blob/${head}/src/app.ts#L3-L6`);
      await checkPage(page, 'a file with a range of lines marked');

      // the range in the address, opened as it is: marked and scrolled to
      await page.goto(`${base}${repo}/blob/${head}/src/app.ts#L8-L10`);
      await page.locator('.line-mark[data-range="8-10"]').waitFor();

      // the blame, from the file's Blame link
      await page.goto(`${base}${repo}/blob/main/src/app.ts`);
      await Promise.all([
        page.waitForURL(`${base}${repo}/blame/main/src/app.ts`),
        page.getByRole('link', { name: 'Blame' }).click(),
      ]);
      assert.equal(await page.locator('td.blame-commit').count(), 3);
      await page.getByRole('link', { name: 'Change v5 1' }).waitFor();
      await page.locator('a[data-ln="4"]').click();
      await page.locator('a[data-ln="7"]').click({ modifiers: ['Shift'] });
      assert.equal(new URL(page.url()).hash, '#L4-L7');
      // lines 4 to 7 cross three groups: one mark in each
      assert.equal(await page.locator('.line-mark').count(), 3);
      assert.equal(await page.locator('a.hl[data-ln]').count(), 4);
      await checkPage(page, 'the blame view with a range marked');
      await page.context().close();
    });

    it('opens a pull from a branch chosen in the switcher, and switches refs keeping the path', async () => {
      const { page } = await newPage(browser);
      await signInPage(page, base, 'alice', PASSWORD);
      await page.goto(`${base}${repo}/tree/main/src`);
      await page.locator('#ref-switcher summary').click();
      await page.fill('#ref-filter', 'login');
      assert.equal(await page.locator('#ref-switcher li[data-ref]:visible').count(), 1, 'the filter narrows the menu');
      await checkPage(page, 'the branch switcher open');
      // the tag, keeping the path
      await page.fill('#ref-filter', '');
      await Promise.all([
        page.waitForURL(`${base}${repo}/tree/v1.0/src`),
        page.locator('#ref-switcher a', { hasText: 'v1.0' }).click(),
      ]);
      await page.locator('#ref-switcher summary', { hasText: 'Tag: v1.0' }).waitFor();
      await page.locator('#ref-switcher summary').click();
      await Promise.all([
        page.waitForURL(/\/pulls\/new\?source=feature%2Flogin$/),
        page.locator('#ref-switcher li[data-ref="feature/login"] a', { hasText: 'New pull' }).click(),
      ]);
      assert.equal(await page.inputValue('#source_branch'), 'feature/login');
      await page.fill('#title', 'Sign in');
      await Promise.all([page.waitForURL(`${base}${repo}/pulls/1`), page.getByRole('button', { name: 'Open pull' }).click()]);
      await page.getByRole('heading', { name: /Sign in/ }).waitFor();
      await checkPage(page, 'the pull opened from the switcher');
      await page.context().close();
    });

    it('shows the viewer’s own events on the dashboard live, as sentences with links and relative times', async () => {
      const { page } = await newPage(browser);
      await signInPage(page, base, 'alice', PASSWORD);
      await page.locator('#live-status', { hasText: 'live' }).waitFor({ timeout: 20_000 });
      // alice pushes a tag and opens an issue elsewhere (the API, git): both arrive without a reload
      await g.run(['-C', work, 'tag', 'v2.0']);
      await g.run(['-C', work, 'push', '-q', g.url('/git/teams/core/proj.git', token), 'v2.0']);
      const res = await t.req('POST', '/api/v1/teams/core/repos/proj/threads', {
        token,
        body: { title: 'Live plan', body: 'x' },
      });
      assert.equal(res.status, 201, res.text);
      const tag = page.locator('#dashboard-feed article[data-kind="branch-pushed"]', { hasText: 'pushed tag v2.0' });
      await tag.waitFor({ timeout: 20_000 });
      assert.equal(await tag.locator('.actor').textContent(), 'alice');
      const issue = page.locator('#dashboard-feed article[data-kind="thread-created"]', {
        hasText: /opened issue #\d+ Live plan/,
      });
      await issue.waitFor({ timeout: 20_000 });
      // a relative time, the exact one on hover
      const time = issue.locator('time');
      await page.waitForFunction(() => /just now|ago/.test(document.querySelector('#dashboard-feed time')?.textContent ?? ''));
      assert.match((await time.getAttribute('title')) ?? '', /^\d{4}-\d\d-\d\dT/);
      await checkPage(page, 'the dashboard with live sentences');
      // the sentence's link leads to the tag's tree
      await Promise.all([page.waitForURL(`${base}${repo}/tree/v2.0`), tag.getByRole('link', { name: 'v2.0' }).click()]);
      await page.context().close();
    });
  });
}
