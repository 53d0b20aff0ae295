/**
 * The tracker's pages in real Chromium (docs/tracker.md "Pages"): an issue created from the form
 * with a label, an assignee and a milestone; the Issues tab filtered through its query box and a
 * label chip; an issue closed from the side bar with a reason; a `Fixes #N` pull merged and the
 * thread shown closed by it in its timeline; labels and a milestone set through the side bar; a
 * draft pull marked ready for review from its page; a refused side bar form (an unknown assignee)
 * showing its error in place with htmx (`data-refusals`); the labels and milestones pages. Every page passes
 * axe-core (no serious or critical violation) at 375 px wide without sideways scrolling.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type GitClient, commitFiles, gitClient, makeWorkTree } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

for (const dialect of BROWSER_DIALECTS) {
  describe(`tracker pages in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let g: GitClient;
    let base: string;
    let browser: Browser;
    let page: Page;
    let alice: { token: string; uuid: string };
    let dir: string;
    const repoPath = '/teams/core/api';
    const api = '/api/v1/teams/core/repos/api';
    const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      base = g.base;
      alice = await t.user('alice');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Core', slug: 'core' } }));
      ok(await t.req('POST', '/api/v1/teams/core/repos', { token: alice.token, body: { name: 'API', slug: 'api' } }));
      dir = await makeWorkTree(g, 'work', [{ 'README.md': '# API\n' }]);
      await g.run(['-C', dir, 'push', '-q', g.url('/git/teams/core/api.git', alice.token), 'main']);
      ok(
        await t.req('POST', `${api}/labels`, {
          token: alice.token,
          body: { name: 'bug', color: 'd73a4a', description: 'Broken' },
        }),
      );
      ok(await t.req('POST', `${api}/labels`, { token: alice.token, body: { name: 'docs', color: 'fbca04' } }));
      ok(await t.req('POST', `${api}/milestones`, { token: alice.token, body: { title: 'v1', due_on: '2030-01-31' } }));
      browser = await launchBrowser();
      page = (await newPage(browser)).page;
      await signInPage(page, base, 'alice', PASSWORD);
    });
    after(async () => {
      await browser?.close();
      g?.cleanup();
      await t?.close();
    });

    it('creates an issue with a label, an assignee and a milestone from the form', async () => {
      await page.goto(`${base}${repoPath}/threads/new`);
      await checkPage(page, 'new issue form');
      await page.fill('#f-title', 'Login fails');
      await page.fill('#f-body', 'It says **no**.');
      await page.getByRole('checkbox', { name: 'bug' }).check();
      await page.fill('#f-assignees', 'alice');
      await page.selectOption('#f-milestone', { label: 'v1' });
      await Promise.all([
        page.waitForURL(`${base}${repoPath}/threads/1`),
        page.getByRole('button', { name: 'Create issue' }).click(),
      ]);
      const side = page.getByRole('complementary', { name: 'Issue details' });
      await side.getByText('bug').first().waitFor();
      await side.getByRole('link', { name: 'alice' }).waitFor();
      await side.getByRole('link', { name: 'v1' }).waitFor();
      await checkPage(page, 'thread page with its side bar');
      const th = await t.req('GET', `${api}/threads/1`, { token: alice.token });
      assert.deepEqual(
        [th.body.labels.map((l: { name: string }) => l.name), th.body.assignees.length, th.body.milestone.title],
        [['bug'], 1, 'v1'],
      );
    });

    it('filters the Issues tab through the query box and a label chip', async () => {
      ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'Write the guide', labels: ['docs'] } }));
      await page.goto(`${base}${repoPath}/threads`);
      await page.getByRole('link', { name: '#2 Write the guide' }).waitFor();
      await checkPage(page, 'issues tab');
      await page.fill('#issue-box', 'is:open label:bug');
      await Promise.all([page.waitForURL(/box=/), page.getByRole('button', { name: 'Filter' }).click()]);
      await page.getByRole('link', { name: '#1 Login fails' }).waitFor();
      assert.equal(await page.getByRole('link', { name: '#2 Write the guide' }).count(), 0);
      // a chip adds its label to the filter (every label must be on the issue): none has both
      await Promise.all([
        page.waitForURL(/labels=bug%2Cdocs/),
        page.getByRole('navigation', { name: 'Filter by label' }).getByRole('link', { name: 'docs' }).click(),
      ]);
      await page.getByText('No issues match.').waitFor();
      await page.goto(`${base}${repoPath}/threads`);
      await Promise.all([
        page.waitForURL(/labels=docs/),
        page.getByRole('navigation', { name: 'Filter by label' }).getByRole('link', { name: 'docs' }).click(),
      ]);
      await page.getByRole('link', { name: '#2 Write the guide' }).waitFor();
      await checkPage(page, 'issues tab filtered');
    });

    it('closes an issue from the side bar with a reason, then shows it in the timeline', async () => {
      await page.goto(`${base}${repoPath}/threads/2`);
      await page.selectOption('#side-reason', 'not_planned');
      await page.getByRole('button', { name: 'Close issue' }).click();
      await page.getByRole('button', { name: 'Reopen issue' }).waitFor();
      await page.getByText('closed this as not planned').waitFor();
      await checkPage(page, 'closed thread');
      const th = await t.req('GET', `${api}/threads/2`, { token: alice.token });
      assert.equal(th.body.state_reason, 'not_planned');
    });

    it('a merged pull whose body says Fixes #1 closes the issue; the timeline says so', async () => {
      await g.run(['-C', dir, 'checkout', '-q', '-b', 'fix-login']);
      await commitFiles(g, dir, [{ 'login.ts': 'export const ok = true;\n' }], 'Repair the login');
      await g.run(['-C', dir, 'push', '-q', g.url('/git/teams/core/api.git', alice.token), 'fix-login']);
      const pull = await t.req('POST', `${api}/pulls`, {
        token: alice.token,
        body: { title: 'Repair login', body: 'Fixes #1', source_branch: 'fix-login', target_branch: 'main' },
      });
      ok(pull);
      ok(await t.req('POST', `${api}/pulls/${pull.body.number}/merge`, { token: alice.token, body: {} }), 200);
      await page.goto(`${base}${repoPath}/threads/1`);
      await page.getByText(`closed this as completed with pull !${pull.body.number}`).waitFor();
      await page.getByText('referenced this from').waitFor();
      await checkPage(page, 'thread closed by a pull');
    });

    it('sets labels and a milestone through the side bar', async () => {
      ok(await t.req('POST', `${api}/milestones`, { token: alice.token, body: { title: 'v2' } }));
      const made = await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'Dark mode' } });
      ok(made);
      await page.goto(`${base}${repoPath}/threads/${made.body.number}`);
      const side = page.getByRole('complementary', { name: 'Issue details' });
      await side.getByText('Edit labels').click();
      await side.getByRole('checkbox', { name: 'bug' }).check();
      await side.getByRole('checkbox', { name: 'docs' }).check();
      await side.getByRole('button', { name: 'Save labels' }).click();
      await page.getByText('added the label').first().waitFor();
      await page.selectOption('#side-milestone-input', { label: 'v2' });
      await page.getByRole('button', { name: 'Save milestone' }).click();
      await page.getByText('added this to the milestone').waitFor();
      await checkPage(page, 'labels and milestone set through the side bar');
      const th = await t.req('GET', `${api}/threads/${made.body.number}`, { token: alice.token });
      assert.deepEqual([th.body.labels.map((l: { name: string }) => l.name), th.body.milestone?.title], [['bug', 'docs'], 'v2']);
    });

    it('a refused side bar form shows its error in place (htmx swaps the 400 in)', async () => {
      const made = await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'Assign me' } });
      ok(made);
      await page.goto(`${base}${repoPath}/threads/${made.body.number}`);
      const side = page.getByRole('complementary', { name: 'Issue details' });
      await side.getByLabel('Assignees (usernames, comma-separated)').fill('nobody-here');
      const answered = page.waitForResponse((r) => r.url().endsWith(`/threads/${made.body.number}/assignees`));
      await side.getByRole('button', { name: 'Save assignees' }).click();
      assert.equal((await answered).status(), 400);
      await side.locator('#side-assignees-error').getByText('cannot be assigned').waitFor();
      assert.equal(await side.getByLabel('Assignees (usernames, comma-separated)').inputValue(), 'nobody-here');
      assert.equal(page.url(), `${base}${repoPath}/threads/${made.body.number}`, 'htmx swapped it in: no navigation');
      await checkPage(page, 'refused side bar form');
    });

    it('marks a draft pull ready for review from its page', async () => {
      await g.run(['-C', dir, 'checkout', '-q', '-b', 'draft-work', 'main']);
      await commitFiles(g, dir, [{ 'draft.ts': 'export const draft = 1;\n' }], 'Start the draft');
      await g.run(['-C', dir, 'push', '-q', g.url('/git/teams/core/api.git', alice.token), 'draft-work']);
      const pull = await t.req('POST', `${api}/pulls`, {
        token: alice.token,
        body: { title: 'Work in progress', body: '', source_branch: 'draft-work', target_branch: 'main', draft: true },
      });
      ok(pull);
      assert.equal(pull.body.draft, true);
      await page.goto(`${base}${repoPath}/pulls/${pull.body.number}`);
      const side = page.getByRole('region', { name: 'Reviewers and draft' });
      await side.getByText('not ready to merge').waitFor();
      await checkPage(page, 'draft pull page');
      await side.getByRole('button', { name: 'Ready for review' }).click();
      await side.getByRole('button', { name: 'Convert to draft' }).waitFor();
      await checkPage(page, 'pull marked ready for review');
      assert.equal((await t.req('GET', `${api}/pulls/${pull.body.number}`, { token: alice.token })).body.draft, false);
    });

    it('labels page: creates a label through its form; milestones pages show progress', async () => {
      await page.goto(`${base}${repoPath}/labels`);
      await checkPage(page, 'labels page');
      await page.fill('#f-name', 'ui');
      await page.fill('#f-color', '#a2eeef');
      await Promise.all([
        page.waitForURL(`${base}${repoPath}/labels`),
        page.getByRole('button', { name: 'Create label' }).click(),
      ]);
      await page.getByRole('link', { name: 'Edit ui' }).waitFor();
      await page.goto(`${base}${repoPath}/milestones`);
      await page.getByText('100% complete').waitFor();
      await checkPage(page, 'milestones page');
      await page.getByRole('link', { name: 'v1' }).click();
      await page.getByRole('link', { name: '#1 Login fails' }).waitFor();
      await checkPage(page, 'one milestone');
    });
  });
}
