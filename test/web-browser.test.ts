/**
 * The web interface in real Chromium (README "Web interface"): sign in, browse a repo, open a
 * pull, approve it as a second user, merge it, see the merge arrive live on a third user's
 * dashboard, edit a reply and open its history; a form post without the CSRF token is refused;
 * an outsider gets 404 on a private repo's page. Every page visited passes axe-core (no serious
 * or critical violation) at 375 px wide without sideways scrolling.
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
/** WEFT_SCREENSHOTS=DIR saves the main pages there (docs/screenshots is made this way). */
const SHOTS = process.env.WEFT_SCREENSHOTS;

for (const dialect of BROWSER_DIALECTS) {
  describe(`web interface in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let g: GitClient;
    let base: string;
    let browser: Browser;
    let alice: Person;
    let bob: Person;
    let carol: Person;
    let dave: Person;
    const pages: Record<string, Page> = {};
    const repoPath = '/teams/core/api';

    const shot = async (page: Page, name: string, width = 1200) => {
      if (!SHOTS) return;
      mkdirSync(SHOTS, { recursive: true });
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
      await page.setViewportSize({ width: 375, height: 800 });
    };

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      base = g.base;
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
      dave = await t.user('dave');
      const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Core', slug: 'core' } }));
      ok(await t.req('POST', '/api/v1/teams/core/members', { token: alice.token, body: { username: 'bob', role: 'member' } }));
      ok(await t.req('POST', '/api/v1/teams/core/members', { token: alice.token, body: { username: 'carol', role: 'reader' } }));
      ok(
        await t.req('POST', '/api/v1/teams/core/repos', {
          token: alice.token,
          body: { name: 'API', slug: 'api', description: 'The service API', visibility: 'private' },
        }),
      );
      const dir = await makeWorkTree(g, 'work', [
        { 'README.md': '# API\n\nThe service.\n', 'src/app.ts': 'export const x = 1;\n' },
      ]);
      const url = g.url('/git/teams/core/api.git', alice.token);
      await g.run(['-C', dir, 'tag', 'v1']);
      await g.run(['-C', dir, 'push', '-q', url, 'main', 'v1']);
      await g.run(['-C', dir, 'checkout', '-q', '-b', 'feature']);
      await commitFiles(g, dir, [{ 'src/app.ts': 'export const x = 2;\nexport const added = true;\n' }], 'feature change');
      await g.run(['-C', dir, 'push', '-q', url, 'feature']);
      ok(
        await t.req('POST', '/api/v1/teams/core/repos/api/protections', {
          token: alice.token,
          body: { branch: 'main', required_approvals: 1 },
        }),
      );
      browser = await launchBrowser();
      for (const p of [alice, bob, carol, dave]) {
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

    it('signs in to a dashboard listing my teams and repos', async () => {
      const page = pages.alice!;
      await page.goto(`${base}/`);
      await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
      // the team in "My teams" (the live activity names it too: "created team Core")
      const teams = page.getByRole('region', { name: 'My teams' });
      assert.ok(await teams.getByRole('link', { name: 'Core', exact: true }).isVisible());
      assert.ok(await page.locator('#dashboard-feed').getByRole('link', { name: 'Core', exact: true }).isVisible());
      assert.ok(await page.getByRole('link', { name: 'core/api' }).first().isVisible());
      await checkPage(page, 'dashboard');
      await page.goto(`${base}/teams/core`);
      await page.getByRole('heading', { name: 'Members' }).waitFor();
      await checkPage(page, 'team page');
      await page.goto(`${base}/users/alice`);
      await checkPage(page, 'user page');
    });

    it('browses the repo and its branches', async () => {
      const page = pages.alice!;
      await page.goto(`${base}/`);
      await page.getByRole('link', { name: 'core/api' }).first().click();
      await page.waitForURL(`${base}${repoPath}`);
      await page.getByText('The service API').first().waitFor();
      await checkPage(page, 'repo page');
      // the tree at the default branch with its README, then a file, highlighted
      await page.locator('.markdown h1', { hasText: 'API' }).waitFor();
      await page.getByRole('link', { name: 'src/', exact: true }).click();
      await page.waitForURL(`${base}${repoPath}/tree/main/src`);
      await checkPage(page, 'tree page');
      await page.getByRole('link', { name: 'app.ts' }).click();
      await page.waitForURL(`${base}${repoPath}/blob/main/src/app.ts`);
      await page.locator('code.hljs .hljs-keyword', { hasText: 'export' }).first().waitFor();
      await checkPage(page, 'file page');
      await shot(page, 'file');
      await page.getByRole('link', { name: 'History' }).click();
      await page.waitForURL(`${base}${repoPath}/commits/main?path=src%2Fapp.ts`);
      await checkPage(page, 'commits page');
      await page.getByRole('link', { name: 'change 1' }).click();
      await page.locator('.diff h3', { hasText: 'README.md' }).waitFor();
      await checkPage(page, 'commit page');
      await page.goto(`${base}${repoPath}/compare/main...feature`);
      await page.getByText('1 ahead, 0 behind').waitFor();
      assert.ok(await page.getByText('export const added = true;').isVisible());
      await checkPage(page, 'compare page');
      await page.goto(`${base}${repoPath}/tags`);
      await page.getByText('v1').waitFor();
      await checkPage(page, 'tags page');
      await page.goto(`${base}${repoPath}`);
      await shot(page, 'repo-tree');
      await page.goto(`${base}${repoPath}/branches`);
      await page.getByText('feature', { exact: true }).waitFor();
      await checkPage(page, 'branches page');
    });

    it('opens a pull, a second user approves it, the author merges it, and the merge shows live on a third dashboard', async () => {
      const a = pages.alice!;
      await a.goto(`${base}${repoPath}/pulls/new?source=feature`);
      await checkPage(a, 'new pull page');
      await a.fill('#title', 'Bump x');
      await a.fill('#body', 'Raises **x** to 2.');
      await Promise.all([a.waitForURL(`${base}${repoPath}/pulls/1`), a.getByRole('button', { name: 'Open pull' }).click()]);
      await a.locator('strong', { hasText: 'x' }).first().waitFor();
      await a.goto(`${base}${repoPath}/pulls/1?tab=files`);
      assert.ok(await a.getByText('export const added = true;').isVisible(), 'the diff shows the added line');
      await a.goto(`${base}${repoPath}/pulls/1`);
      assert.ok(await a.getByText('0 of 1 required approvals').isVisible());
      await checkPage(a, 'pull page');

      // carol watches her dashboard
      const c = pages.carol!;
      await c.goto(`${base}/`);
      await c.locator('#live-status', { hasText: 'live' }).waitFor();

      const b = pages.bob!;
      await b.goto(`${base}${repoPath}/pulls/1`);
      await b.getByLabel('Approve').check();
      await b.fill('#review-body', 'Looks right.');
      await Promise.all([b.waitForURL(`${base}${repoPath}/pulls/1`), b.getByRole('button', { name: 'Submit review' }).click()]);
      await b.locator('.badge.approved', { hasText: 'approved' }).first().waitFor();

      await a.goto(`${base}${repoPath}/pulls/1`);
      assert.ok(await a.getByText('1 of 1 required approvals').isVisible());
      await a.selectOption('#merge_strategy', 'squash');
      await Promise.all([
        a.waitForURL(`${base}${repoPath}/pulls/1`),
        a.getByRole('button', { name: 'Merge', exact: true }).click(),
      ]);
      await a.locator('#pull-status', { hasText: 'merged' }).waitFor();
      await shot(a, 'pull-page');

      // live on carol's dashboard, without a reload
      await c.locator('#dashboard-feed article[data-kind="pull-merged"]').waitFor({ timeout: 20_000 });
      assert.equal(await c.locator('#dashboard-feed article[data-kind="pull-merged"]').count(), 1);
      await checkPage(c, 'dashboard with live events');
      await shot(c, 'dashboard');

      await a.goto(`${base}${repoPath}/pulls?status=merged`);
      await a.getByRole('link', { name: '#1 Bump x' }).waitFor();
      await checkPage(a, 'pulls list');
    });

    it('starts a thread, replies, edits the reply and opens its version history', async () => {
      const a = pages.alice!;
      await a.goto(`${base}${repoPath}/threads/new`);
      await a.fill('#f-title', 'Release plan');
      await a.fill('#f-body', 'When do we ship?');
      await Promise.all([a.waitForURL(`${base}${repoPath}/threads/1`), a.getByRole('button', { name: 'Create issue' }).click()]);
      await a.fill('#reply-body', 'Friday, maybe.');
      await Promise.all([a.waitForURL(/\/threads\/1/), a.getByRole('button', { name: 'Reply' }).click()]);
      await a.getByText('Friday, maybe.').waitFor();
      await checkPage(a, 'thread page');
      await a.setInputFiles('#attach-file', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('ship it\n') });
      await Promise.all([a.waitForURL(/\/threads\/1$/), a.getByRole('button', { name: 'Attach', exact: true }).click()]);
      await a.getByText('notes.txt').waitFor();
      const attached = await t.req('GET', '/api/v1/teams/core/repos/api/threads/1/attachments', { token: alice.token });
      assert.equal(attached.body.results[0].upload.filename, 'notes.txt');
      await a.locator('#reply-1').getByRole('link', { name: 'Edit' }).click();
      await a.fill('#reply-body', 'Thursday, for sure.');
      await Promise.all([a.waitForURL(/\/threads\/1/), a.getByRole('button', { name: 'Save' }).click()]);
      await a.getByText('Thursday, for sure.').waitFor();
      await a.getByRole('link', { name: 'edited (version 2)' }).click();
      await a.getByRole('heading', { name: /History of reply 1/ }).waitFor();
      assert.ok(await a.getByText('Friday, maybe.').isVisible());
      assert.ok(await a.getByText('Thursday, for sure.').isVisible());
      await checkPage(a, 'reply history');
      await shot(a, 'reply-history');
      await a.goto(`${base}${repoPath}/threads/1`);
      await shot(a, 'thread');
      await a.goto(`${base}${repoPath}/threads`);
      await checkPage(a, 'threads list');
    });

    it('refuses a form post without the CSRF token, and changes nothing', async () => {
      const a = pages.alice!;
      const res = await a.context().request.post(`${base}${repoPath}/threads/1/replies`, { form: { body: 'forged' } });
      assert.equal(res.status(), 403);
      assert.match(await res.text(), /<h1>Not allowed<\/h1>/);
      const forged = await a
        .context()
        .request.post(`${base}${repoPath}/threads/1/replies`, { form: { body: 'forged', _csrf: 'x' } });
      assert.equal(forged.status(), 403);
      const replies = await t.req('GET', '/api/v1/teams/core/repos/api/threads/1/replies', { token: alice.token });
      assert.equal(replies.body.results.length, 1);
    });

    it("answers 404 to an outsider on a private repo's pages", async () => {
      const d = pages.dave!;
      for (const path of [repoPath, `${repoPath}/pulls/1`, `${repoPath}/threads/1`, '/teams/core']) {
        const res = await d.goto(`${base}${path}`);
        assert.equal(res?.status(), 404, path);
        await d.getByRole('heading', { name: 'Not found' }).waitFor();
      }
      await checkPage(d, 'not found page');
      const login = await pages.dave!.context().browser()!.newContext();
      const anon = await login.newPage();
      await anon.goto(`${base}/login`);
      await checkPage(anon, 'sign-in page');
      await login.close();
    });
  });
}
