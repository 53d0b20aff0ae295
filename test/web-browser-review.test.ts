/**
 * Code review on the pull page in real Chromium (README "Code review"): a reviewer comments on two
 * lines and on a range (shift-click), submits with changes requested; the author replies, applies
 * a suggestion and resolves (a refused reply shows beside its form, a reply is edited in place);
 * the reviewer sees only the changes since the review and approves; the merged pull still shows
 * its diff. Every page passes axe-core at 375 px wide.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

type Person = { token: string; uuid: string; username: string };
const lines = (n: number, change: Record<number, string> = {}) =>
  `${Array.from({ length: n }, (_, i) => change[i + 1] ?? `line ${i + 1}`).join('\n')}\n`;

for (const dialect of BROWSER_DIALECTS) {
  describe(`code review in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let g: GitClient;
    let base: string;
    let browser: Browser;
    let alice: Person;
    let bob: Person;
    const pages: Record<string, Page> = {};
    const repoPath = '/users/alice/rv';
    const api = '/api/v1/users/alice/repos/rv';
    const pullPath = `${repoPath}/pulls/1`;

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      base = g.base;
      alice = await t.user('alice');
      bob = await t.user('bob');
      const made = await t.req('POST', '/api/v1/users/alice/repos', {
        token: alice.token,
        body: { name: 'rv', slug: 'rv', visibility: 'public' },
      });
      assert.equal(made.status, 201, made.text);
      const work = await makeWorkTree(g, 'rv', [{ 'app.txt': lines(80), 's.txt': 'a\nb\nc\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/rv.git', alice.token), 'main']);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feature']);
      writeFileSync(join(work, 'app.txt'), lines(80, { 5: 'LINE 5', 40: 'LINE 40', 60: 'LINE 60' }));
      writeFileSync(join(work, 's.txt'), 'a\nB\nc\n');
      await g.run(['-C', work, 'commit', '-q', '-am', 'feature']);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/rv.git', alice.token), 'feature']);
      const pull = await t.req('POST', `${api}/pulls`, {
        token: alice.token,
        body: { title: 'Feature', body: 'Please review', source_branch: 'feature', target_branch: 'main' },
      });
      assert.equal(pull.status, 201, pull.text);
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

    const comment = async (p: Page, body: string, button: string) => {
      await p.locator('#new-comment').waitFor();
      await p.fill('#nc-body', body);
      await Promise.all([p.waitForURL(/tab=files/), p.getByRole('button', { name: button }).click()]);
    };

    it('a reviewer comments on two lines and a range, then requests changes', async () => {
      const b = pages.bob!;
      await b.goto(`${base}${pullPath}?tab=files`);
      await checkPage(b, 'files tab');
      await b.getByRole('link', { name: 'Comment on new line 5 of app.txt' }).click();
      await checkPage(b, 'files tab with a new comment form');
      await comment(b, 'Why upper case?', 'Start a review');
      await b.getByRole('link', { name: 'Comment on new line 2 of s.txt' }).click();
      await comment(b, 'Better:\n```suggestion\nbee\n```', 'Add to review');
      // a range: click its first line, shift-click its last
      await b.getByRole('link', { name: 'Comment on new line 57 of app.txt' }).click();
      await b.locator('#new-comment').waitFor();
      await b.getByRole('link', { name: 'Comment on new line 60 of app.txt' }).click({ modifiers: ['Shift'] });
      await b.waitForURL(/start_line=57/);
      assert.equal(await b.inputValue('#nc-start'), '57');
      await comment(b, 'This block could be shorter', 'Add to review');
      await b.getByText('Submit review (3 pending comments)').waitFor();
      await b.getByLabel('Request changes').check();
      await Promise.all([
        b.waitForURL(/\/pulls\/1$/),
        b.getByRole('button', { name: 'Submit review (3 pending comments)' }).click(),
      ]);
      await b.getByText('changes requested').first().waitFor();
      await checkPage(b, 'conversation tab with conversations');
      const comments = (await t.req('GET', `${api}/pulls/1/comments`, { token: alice.token })).body.results;
      assert.deepEqual(
        comments.map((c: { path: string; line: number; start_line: number | null; pending: boolean }) => [
          c.path,
          c.start_line,
          c.line,
          c.pending,
        ]),
        [
          ['app.txt', null, 5, false],
          ['app.txt', 57, 60, false],
          ['s.txt', null, 2, false],
        ],
      );
    });

    it('the author replies, applies the suggestion and resolves', async () => {
      const a = pages.alice!;
      const comments = (await t.req('GET', `${api}/pulls/1/comments`, { token: alice.token })).body.results;
      const onFive = comments[0].uuid as string;
      await a.goto(`${base}${pullPath}?tab=files`);
      const thread = a.locator(`#t-${onFive}`);
      // a refused reply (only spaces) comes back beside its form, swapped in place by htmx
      await thread.getByLabel('Reply').fill('   ');
      await thread.getByRole('button', { name: 'Reply' }).click();
      await a.locator(`#error-${onFive}`).getByText('a reply needs a body').waitFor();
      await checkPage(a, 'a refused reply beside its form');
      await thread.getByLabel('Reply').fill('House style');
      await thread.getByRole('button', { name: 'Reply' }).click();
      await thread.locator('.markdown').getByText('House style').waitFor();
      assert.equal(await a.locator(`#error-${onFive}`).count(), 0);
      // the reply's author edits it in place
      const reply = thread.locator('.comment').filter({ hasText: 'House style' });
      await reply.getByText('Edit comment').click();
      await reply.getByLabel('Comment (Markdown)').fill('House style, see #1');
      await reply.getByRole('button', { name: 'Save comment' }).click();
      await thread.locator('.markdown').getByText('House style, see #1').waitFor();
      await checkPage(a, 'an edited reply');
      await a.getByRole('heading', { name: 'Suggested change' }).waitFor();
      await checkPage(a, 'files tab with a suggestion');
      await Promise.all([a.waitForURL(/tab=files/), a.getByRole('button', { name: 'Apply suggestion' }).click()]);
      const head = (await t.req('GET', `${api}/pulls/1`, { token: alice.token })).body.head_sha as string;
      const file = await t.req('GET', `${api}/contents/s.txt?ref=${head}`, { token: alice.token });
      assert.equal(Buffer.from(file.body.content, 'base64').toString(), 'a\nbee\nc\n');
      await a.locator(`#t-${onFive}`).getByRole('button', { name: 'Resolve conversation' }).click();
      await a.locator(`#t-${onFive}`).getByText('resolved by alice').waitFor();
      await checkPage(a, 'files tab with a resolved conversation');
    });

    it('the reviewer sees only the changes since the review and approves; the merged pull keeps its diff', async () => {
      const b = pages.bob!;
      await b.goto(`${base}${pullPath}?tab=files`);
      await Promise.all([
        b.waitForURL(/since=review/),
        b.getByRole('link', { name: 'Show only the changes since your last review' }).click(),
      ]);
      await b.getByRole('heading', { name: 'Files changed (1)' }).waitFor();
      assert.equal(await b.locator('.diff h3', { hasText: 'app.txt' }).count(), 0);
      assert.equal(await b.locator('.diff h3', { hasText: 's.txt' }).count(), 1);
      await checkPage(b, 'changes since the last review');
      await b.getByLabel('Approve').check();
      await Promise.all([b.waitForURL(/\/pulls\/1$/), b.getByRole('button', { name: 'Submit review' }).click()]);
      const a = pages.alice!;
      await a.goto(`${base}${pullPath}`);
      await Promise.all([a.waitForURL(/\/pulls\/1$/), a.getByRole('button', { name: 'Merge', exact: true }).click()]);
      await a.locator('#pull-status', { hasText: 'merged' }).waitFor();
      await a.getByRole('link', { name: 'Files changed' }).click();
      await a.getByRole('heading', { name: 'Files changed (2)' }).waitFor();
      await a.getByText('+LINE 40').waitFor();
      await checkPage(a, 'a merged pull keeps its diff');
      await a.getByRole('navigation', { name: 'Pull tabs' }).getByRole('link', { name: 'Commits' }).click();
      await a.getByRole('heading', { name: 'Commits (2)' }).waitFor();
      await checkPage(a, 'commits tab');
    });
  });
}
