/**
 * docs/ci.md "Pages" in real Chromium at 375 px, with a real `weft runner`: the CI settings
 * (a registration token shown once and used by the runner, a secret set and deleted, names
 * only), approving a first-time contributor's fork pull run from its run page, and a slow job's
 * log growing live through the repo's event stream (job-log signals) with no line twice. Every
 * page passes axe-core and fits the width.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import type { Person } from './common.ts';
import { type GitClient, commitFiles, gitClient, makeWorkTree } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

const SLOW = `name: Slow
on:
  push:
    branches: [main]
jobs:
  slow:
    runs-on: linux
    steps:
      - name: Count slowly
        run: for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "line-$i"; sleep 1; done
`;
// pull runs wait on a label no runner has: the approved run stays queued
const PULLS = `name: Pulls
on:
  pull_request:
    branches: [main]
jobs:
  check:
    runs-on: nowhere
    steps:
      - run: echo checked
`;

/** WEFT_SCREENSHOTS=DIR saves the Actions tab, a run and a live log there (docs/screenshots is made this way). */
const SHOTS = process.env.WEFT_SCREENSHOTS;
const shot = async (page: Page, name: string) => {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.setViewportSize({ width: 1200, height: 900 });
  await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
  await page.setViewportSize({ width: 375, height: 800 });
};

const BIN = join(import.meta.dirname, '..', 'bin', 'weft.mjs');
const weft = (args: string[], cwd: string): ChildProcess =>
  spawn(process.execPath, [BIN, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env } });
const exited = (p: ChildProcess) => new Promise<number>((r) => p.on('exit', (code) => r(code ?? -1)));

for (const dialect of BROWSER_DIALECTS) {
  describe(
    `CI settings, approval and the live log in Chromium (${dialect})`,
    { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' },
    () => {
      let t: TestApp;
      let g: GitClient;
      let base: string;
      let browser: Browser;
      let alice: Person;
      let bob: Person;
      let dir: string;
      let work: string;
      let runner: ChildProcess | null = null;
      let token = '';
      const api = '/api/v1/users/alice/repos/app';
      const web = '/users/alice/app';

      before(async () => {
        t = await startApp(dialect);
        g = await gitClient(t);
        base = g.base;
        alice = await t.user('alice');
        bob = await t.user('bob');
        dir = mkdtempSync(join(tmpdir(), 'weft-browser-ci-'));
        const res = await t.req('POST', '/api/v1/users/alice/repos', {
          token: alice.token,
          body: { name: 'app', slug: 'app', visibility: 'public' },
        });
        assert.equal(res.status, 201, res.text);
        work = await makeWorkTree(g, 'app', [{ 'README.md': 'hi\n', '.weft/workflows/pulls.yml': PULLS }]);
        await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/app.git', alice.token), 'main']);
        browser = await launchBrowser();
      });
      after(async () => {
        runner?.kill('SIGTERM');
        if (runner && runner.exitCode === null) await exited(runner);
        await browser?.close();
        await t.close();
        g.cleanup();
        rmSync(dir, { recursive: true, force: true });
      });

      it('settings: a registration token shown once; a secret set and deleted, its name only shown', async () => {
        const { page } = await newPage(browser);
        await signInPage(page, base, 'alice', PASSWORD);
        await page.goto(`${base}${web}/settings`);
        await page.getByRole('link', { name: 'Runners' }).click();
        await page.waitForURL(/\/settings\/runners$/);
        await page.getByText('No runners yet.', { exact: true }).waitFor();
        await checkPage(page, 'runners settings');
        await page.getByRole('button', { name: 'Create a registration token' }).click();
        token = (await page.locator('#runner-token').textContent())!.trim();
        assert.match(token, /^wrr_/);
        assert.match(
          (await page.locator('#runner-command').textContent())!,
          new RegExp(`weft runner register --url .* --token ${token}`),
        );
        await checkPage(page, 'runners settings, a token shown once');
        await page.goto(`${base}${web}/settings/runners`);
        assert.equal(await page.locator('#runner-token').count(), 0, 'not shown again');
        assert.equal(await page.getByText(token).count(), 0);

        // the runner registers with that token
        const code = await exited(
          weft(
            [
              'runner',
              'register',
              '--url',
              base,
              '--token',
              token,
              '--name',
              'box-1',
              '--labels',
              'linux',
              '--config',
              join(dir, 'r.json'),
            ],
            dir,
          ),
        );
        assert.equal(code, 0);
        await page.reload();
        await page.getByText('box-1', { exact: true }).waitFor();
        await page.locator('.runners .badge', { hasText: 'online' }).waitFor();
        await checkPage(page, 'runners settings, one runner');

        await page.getByRole('link', { name: 'Secrets' }).click();
        await page.waitForURL(/\/settings\/secrets$/);
        await page.fill('#secret-name', 'GITHUB_X');
        await page.fill('#secret-value', 'hunter2-value');
        await page.getByRole('button', { name: 'Set secret' }).click();
        await page.locator('#secret-name-error').waitFor();
        assert.equal(await page.inputValue('#secret-name'), 'GITHUB_X', 'the name kept');
        assert.equal(await page.inputValue('#secret-value'), '', 'the value not sent back');
        await checkPage(page, 'secrets settings, refused');
        await page.fill('#secret-name', 'DEPLOY_KEY');
        await page.fill('#secret-value', 'hunter2-value');
        await page.getByRole('button', { name: 'Set secret' }).click();
        await page.waitForURL(/\/settings\/secrets$/);
        await page.locator('.named code', { hasText: 'DEPLOY_KEY' }).waitFor();
        assert.equal(await page.getByText('hunter2-value').count(), 0, 'names only');
        assert.ok(!(await page.content()).includes('hunter2-value'));
        await checkPage(page, 'secrets settings, one secret');
        await page.locator('.named summary', { hasText: 'Delete' }).click();
        await page.locator('.named').getByRole('button', { name: 'Delete' }).click();
        await page.getByText('No secrets.', { exact: true }).waitFor();

        await page.getByRole('link', { name: 'Variables' }).click();
        await page.fill('#variable-name', 'REGION');
        await page.fill('#variable-value', 'eu-west');
        await page.getByRole('button', { name: 'Set variable' }).click();
        await page.locator('.named', { hasText: 'eu-west' }).waitFor();
        await checkPage(page, 'variables settings');
        await page.context().close();
      });

      it("approve a first-time contributor's fork pull run from the run page", async () => {
        const fork = await t.req('POST', `${api}/forks`, { token: bob.token });
        assert.equal(fork.status, 201, fork.text);
        await g.run(['-C', work, 'checkout', '-q', '-b', 'bobfix']);
        await commitFiles(g, work, [{ 'bob.txt': 'bob\n' }]);
        await g.run(['-C', work, 'push', '-q', g.url('/git/users/bob/app.git', bob.token), 'bobfix']);
        await g.run(['-C', work, 'checkout', '-q', 'main']);
        const pull = await t.req('POST', `${api}/pulls`, {
          token: bob.token,
          body: { title: 'Bob', body: '', source_branch: 'bobfix', target_branch: 'main', source_repo: fork.body.repo.uuid },
        });
        assert.equal(pull.status, 201, pull.text);
        const runs = await t.req('GET', `${api}/runs?event=pull_request`, { token: alice.token });
        const run = runs.body.results[0];
        assert.equal(run.status, 'waiting');

        const { page } = await newPage(browser);
        await signInPage(page, base, 'bob', PASSWORD);
        await page.goto(`${base}${web}/runs/${run.number}`);
        assert.equal(await page.getByRole('button', { name: 'Approve and run' }).count(), 0, 'no write access: no approval');
        await page.context().close();

        const a = await newPage(browser);
        await signInPage(a.page, base, 'alice', PASSWORD);
        await a.page.goto(`${base}${web}/actions?event=pull_request`);
        await a.page.locator('.runs .badge', { hasText: 'waiting' }).waitFor();
        await a.page.getByRole('link', { name: `Pulls #${run.number}` }).click();
        await a.page.locator('#run-jobs-h .badge', { hasText: 'waiting' }).waitFor();
        await checkPage(a.page, 'run page, waiting for approval');
        await a.page.getByRole('button', { name: 'Approve and run' }).click();
        await a.page.locator('#run-jobs-h .badge', { hasText: 'queued' }).waitFor();
        assert.equal(await a.page.getByRole('button', { name: 'Approve and run' }).count(), 0);
        await checkPage(a.page, 'run page, approved');
        assert.equal((await t.req('GET', `${api}/runs/${run.number}`, { token: alice.token })).body.status, 'queued');
        await a.context.close();
      });

      it("a slow job's log grows live through the stream while a real runner runs it, no line twice", async () => {
        await commitFiles(g, work, [{ '.weft/workflows/slow.yml': SLOW }]);
        await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/app.git', alice.token), 'main']);
        const runs = await t.req('GET', `${api}/runs?event=push`, { token: alice.token });
        const run = runs.body.results[0];
        assert.equal(run.workflow.name, 'Slow');
        const job = (await t.req('GET', `${api}/runs/${run.number}`, { token: alice.token })).body.jobs[0];

        const { page } = await newPage(browser);
        const streams: string[] = [];
        page.on('request', (r) => {
          if (r.url().includes('/api/v1/tail-events')) streams.push(r.url());
        });
        await signInPage(page, base, 'alice', PASSWORD);
        runner = weft(['runner', '--config', join(dir, 'r.json'), '--workdir', join(dir, 'work')], dir);
        let stderr = '';
        runner.stderr!.on('data', (c) => (stderr += String(c)));
        const deadline = Date.now() + 60_000;
        for (;;) {
          const j = await t.req('GET', `${api}/runs/${run.number}/jobs/${job.uuid}`, { token: alice.token });
          if (j.body.status === 'in_progress') break;
          if (Date.now() > deadline) assert.fail(`the job did not start: ${j.text}\n${stderr}`);
          await new Promise((r) => setTimeout(r, 200));
        }
        await page.goto(`${base}${web}/runs/${run.number}/jobs/${job.uuid}`);
        assert.equal(await page.locator('[data-job-log][data-live]').count(), 1, 'the page follows a running job');
        // a mark the page keeps until it reloads: lines that come before it is gone came live
        await page.evaluate(() => ((globalThis as unknown as { weftMark: number }).weftMark = 1));
        const first = await page.locator('.log-line', { hasText: /line-\d+$/ }).count();
        await page.locator('.log-line', { hasText: 'line-9' }).waitFor({ timeout: 60_000 });
        const mark = await page.evaluate(() => (globalThis as unknown as { weftMark?: number }).weftMark);
        assert.equal(mark, 1, 'the lines came without a reload');
        assert.ok(first < 9, `the page had ${first} lines at first`);
        assert.ok(
          streams.some((u) => u.includes('kind=job-log') && u.includes('scope=repo%3A')),
          `the page follows the repo's stream: ${streams.join(' ')}`,
        );
        await checkPage(page, 'job page, log growing');
        await shot(page, 'ci-log');
        // the job ends: the page reloads with the final state; each line once
        await page.locator('h2 .badge.success').waitFor({ timeout: 60_000 });
        for (const n of [1, 5, 9, 12])
          assert.equal(await page.locator('.log-line', { hasText: new RegExp(`line-${n}$`) }).count(), 1, `line-${n} once`);
        await checkPage(page, 'job page, succeeded');
        if (SHOTS) {
          await page.goto(`${base}${web}/actions`);
          await shot(page, 'ci-actions');
          await page.goto(`${base}${web}/runs/${run.number}`);
          await shot(page, 'ci-run');
        }
        await page.context().close();
      });
    },
  );
}
