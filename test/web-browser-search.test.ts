/**
 * docs/search.md in real Chromium at 375 px: the header's search box (scoped to the repo on a
 * repo's page), the results page with its tabs and counts, highlighted matches, and a code
 * result's line linking to that line in the file view. Every page passes axe-core (no serious
 * or critical violation) and fits the width.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';
import { waitUntil } from './webhooks-helpers.ts';

for (const dialect of BROWSER_DIALECTS) {
  describe(`search pages in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let g: GitClient;
    let base: string;
    let browser: Browser;

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      base = g.base;
      const alice = await t.user('alice');
      const res = await t.req('POST', '/api/v1/users/alice/repos', {
        token: alice.token,
        body: { name: 'tools', slug: 'tools', visibility: 'public' },
      });
      assert.equal(res.status, 201, res.text);
      const work = await makeWorkTree(g, 'tools', [{ 'src/parse.ts': 'export function parse() {\n  return "walrus";\n}\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/tools.git', alice.token), 'main']);
      const thread = await t.req('POST', '/api/v1/users/alice/repos/tools/threads', {
        token: alice.token,
        body: { title: 'Parser trouble', body: 'It <b>eats</b> walrus input.' },
      });
      assert.equal(thread.status, 201, thread.text);
      await waitUntil(
        async () => (await t.req('GET', '/api/v1/users/alice/repos/tools/search-index')).body.state === 'ready',
        30_000,
        'the index',
      );
      browser = await launchBrowser();
    });
    after(async () => {
      await browser?.close();
      await t.close();
      g.cleanup();
    });

    it('searches from the header of a repo page, shows tabs with counts, marks matches and links lines', async () => {
      const { page } = await newPage(browser);
      await signInPage(page, base, 'alice', PASSWORD);
      await page.goto(`${base}/users/alice/tools`);
      await checkPage(page, 'repo page with the search box');
      await page.getByLabel('Search alice/tools').fill('walrus');
      await Promise.all([
        page.waitForURL(/\/search\?/),
        page.getByRole('button', { name: 'Search', exact: true }).first().click(),
      ]);
      await page.getByRole('heading', { name: 'Search in alice/tools' }).waitFor();
      await checkPage(page, 'code results');
      const tabs = page.getByRole('navigation', { name: 'Result kinds' });
      assert.equal(await tabs.getByRole('link', { name: 'Code (1)' }).count(), 1);
      assert.equal(await tabs.getByRole('link', { name: 'Issues and pulls (1)' }).count(), 1);
      assert.equal(await page.locator('li.hit mark').first().textContent(), 'walrus');
      const line = page.locator('li.hit a.ln').first();
      assert.equal(await line.textContent(), '2');
      await Promise.all([page.waitForURL(/#L2$/), line.click()]);
      assert.equal(await page.locator('#L2').count(), 1);
      await checkPage(page, 'the file view at the line');

      await page.goto(`${base}/search?q=walrus&type=threads`);
      await page.getByRole('link', { name: 'Parser trouble' }).waitFor();
      const snippet = await page.locator('ul.plain li div').first().innerHTML();
      assert.match(snippet, /<mark>walrus<\/mark>/);
      assert.ok(!snippet.includes('<b>'), 'the body is escaped');
      await checkPage(page, 'thread results');

      await page.goto(`${base}/search?q=${encodeURIComponent('/a.b/')}`);
      await page.getByRole('alert').waitFor();
      await checkPage(page, 'a refused query');
      await page.context().close();
    });
  });
}
