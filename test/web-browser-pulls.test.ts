/**
 * The pull pages' later parts in real Chromium (README "Web interface"): a contributor opens a
 * pull from their fork through the new-pull form (the head repo chosen, then its branch), CI's
 * statuses show on the pull page with the required checks not passed, a file is attached to the
 * pull, and the file view's raw link serves the file's bytes. Every page passes axe-core (no
 * serious or critical violation) at 375 px wide without sideways scrolling.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type GitClient, commitFiles, gitClient, makeWorkTree } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

type Person = { token: string; uuid: string; username: string };
/** WEFT_SCREENSHOTS=DIR saves the pull page with its checks there (docs/screenshots is made this way). */
const SHOTS = process.env.WEFT_SCREENSHOTS;

for (const dialect of BROWSER_DIALECTS) {
  describe(
    `pull pages in Chromium: forks, checks, attachments, raw (${dialect})`,
    { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' },
    () => {
      let t: TestApp;
      let g: GitClient;
      let base: string;
      let browser: Browser;
      let alice: Person;
      let bob: Person;
      const pages: Record<string, Page> = {};
      const repoPath = '/teams/core/api';
      const api = '/api/v1/teams/core/repos/api';
      const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);

      before(async () => {
        t = await startApp(dialect);
        g = await gitClient(t);
        base = g.base;
        alice = await t.user('alice');
        bob = await t.user('bob');
        ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Core', slug: 'core' } }));
        ok(
          await t.req('POST', '/api/v1/teams/core/repos', {
            token: alice.token,
            body: { name: 'API', slug: 'api', visibility: 'public' },
          }),
        );
        const dir = await makeWorkTree(g, 'work', [{ 'README.md': '# API\n', 'src/app.ts': 'export const x = 1;\n' }]);
        await g.run(['-C', dir, 'push', '-q', g.url('/git/teams/core/api.git', alice.token), 'main']);
        ok(await t.req('POST', `${api}/forks`, { token: bob.token }));
        await g.run(['-C', dir, 'checkout', '-q', '-b', 'faster']);
        await commitFiles(g, dir, [{ 'src/app.ts': 'export const x = 2;\nexport const fast = true;\n' }], 'faster');
        await g.run(['-C', dir, 'push', '-q', g.url('/git/users/bob/api.git', bob.token), 'faster']);
        ok(
          await t.req('POST', `${api}/protections`, {
            token: alice.token,
            body: { branch: 'main', required_approvals: 1, required_status_contexts: ['ci/test'] },
          }),
        );
        browser = await launchBrowser();
        for (const p of [alice, bob]) {
          const { page } = await newPage(browser);
          await signInPage(page, base, p.username, PASSWORD);
          pages[p.username] = page;
        }
      });
      after(async () => {
        await browser?.close();
        g?.cleanup();
        await t?.close();
      });

      it('opens a pull from a fork through the form: the head repo, then its branch', async () => {
        const b = pages.bob!;
        await b.goto(`${base}${repoPath}/pulls/new`);
        await checkPage(b, 'new pull page');
        await b.selectOption('#source_repo', { label: 'bob/api (your fork)' });
        await Promise.all([b.waitForURL(/source_repo=/), b.getByRole('button', { name: 'Show its branches' }).click()]);
        await b.getByText('From branch of bob/api').waitFor();
        await checkPage(b, 'new pull page with a fork chosen');
        await b.selectOption('#source_branch', 'faster');
        await b.fill('#title', 'Faster x');
        await Promise.all([b.waitForURL(`${base}${repoPath}/pulls/1`), b.getByRole('button', { name: 'Open pull' }).click()]);
        await b.getByText('bob/api:faster').waitFor();
        await b.goto(`${base}${repoPath}/pulls/1?tab=files`);
        assert.ok(await b.getByText('export const fast = true;').isVisible(), 'the diff shows the fork branch');
        const pull = await t.req('GET', `${api}/pulls/1`, { token: alice.token });
        assert.equal(pull.body.source_repo.full_name, 'bob/api');
        assert.equal(pull.body.source_branch, 'faster');
      });

      it("shows CI's statuses and the required check not passed, then attaches a file", async () => {
        const a = pages.alice!;
        const pull = await t.req('GET', `${api}/pulls/1`, { token: alice.token });
        ok(
          await t.req('POST', `${api}/statuses/${pull.body.head_sha}`, {
            token: alice.token,
            body: {
              state: 'failure',
              context: 'ci/test',
              description: '3 tests failed',
              target_url: 'https://ci.example.com/run/7',
            },
          }),
        );
        ok(
          await t.req('POST', `${api}/statuses/${pull.body.head_sha}`, {
            token: alice.token,
            body: { state: 'success', context: 'ci/lint' },
          }),
        );
        await a.goto(`${base}${repoPath}/pulls/1`);
        await a.locator('#checks-state', { hasText: 'failure' }).waitFor();
        assert.ok(await a.getByText('3 tests failed').isVisible());
        assert.equal(await a.getByRole('link', { name: 'Details' }).getAttribute('href'), 'https://ci.example.com/run/7');
        assert.match(
          (await a.locator('#checks-required').textContent()) ?? '',
          /Required checks not passed:\s*ci\/test\s*failure/,
        );
        await checkPage(a, 'pull page with status checks');
        await a.setInputFiles('#attach-file', { name: 'trace.txt', mimeType: 'text/plain', buffer: Buffer.from('stack\n') });
        await Promise.all([a.waitForURL(/\/pulls\/1$/), a.getByRole('button', { name: 'Attach', exact: true }).click()]);
        await a.getByText('trace.txt').waitFor();
        const attached = await t.req('GET', `${api}/pulls/1/attachments`, { token: alice.token });
        assert.equal(attached.body.results[0].upload.filename, 'trace.txt');
        if (SHOTS) {
          mkdirSync(SHOTS, { recursive: true });
          await a.setViewportSize({ width: 1200, height: 900 });
          await a.screenshot({ path: `${SHOTS}/pull-checks.png`, fullPage: true });
          await a.setViewportSize({ width: 375, height: 800 });
        }
      });

      it("links the file view to the raw bytes and to the file's history", async () => {
        const a = pages.alice!;
        await a.goto(`${base}${repoPath}/blob/main/src/app.ts`);
        const raw = await a.getByRole('link', { name: 'Raw' }).getAttribute('href');
        assert.equal(raw, `${repoPath}/raw/main/src/app.ts`);
        const res = await a.context().request.get(`${base}${raw}`);
        assert.equal(res.status(), 200);
        assert.equal(await res.text(), 'export const x = 1;\n');
        assert.equal(res.headers()['x-content-type-options'], 'nosniff');
        assert.match(res.headers()['content-security-policy'] ?? '', /sandbox/);
        await a.getByRole('link', { name: 'History' }).click();
        await a.waitForURL(`${base}${repoPath}/commits/main?path=src%2Fapp.ts`);
        await a.getByText('touching').waitFor();
        await checkPage(a, 'commits of a path');
      });
    },
  );
}
