/**
 * docs/ci.md "Auto-merge" in real Chromium at 375 px: on a pull whose target needs a CI check,
 * "Enable auto-merge" on the pull page; a real `weft runner` then runs the pull's workflow, its
 * success is the required status, and the server merges the pull by itself: the page shows it
 * merged live. Every page passes axe-core and fits the width.
 */
import assert from 'node:assert/strict';
import { type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type GitClient, commitFiles, gitClient, makeWorkTree } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { runWeft, spawnWeft } from './server-process.ts';
import { PASSWORD } from './web-helpers.ts';

const CI = `name: PR
on:
  pull_request:
    types: [opened, synchronize, reopened]
jobs:
  check:
    runs-on: linux
    steps:
      - run: echo checked
`;

for (const dialect of BROWSER_DIALECTS) {
  describe(`auto-merge in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let g: GitClient;
    let browser: Browser;
    let dir: string;
    let runner: ChildProcess | null = null;
    const api = '/api/v1/users/alice/repos/app';
    const web = '/users/alice/app';

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      dir = mkdtempSync(join(tmpdir(), 'weft-am-browser-'));
      browser = await launchBrowser();
    });
    after(async () => {
      if (runner && runner.exitCode === null && runner.signalCode === null) {
        runner.kill('SIGTERM');
        await once(runner, 'exit');
      }
      await browser?.close();
      await t.close();
      g.cleanup();
      rmSync(dir, { recursive: true, force: true });
    });

    it('Enable auto-merge, then a real runner run succeeding merges the pull; the page shows it live', async () => {
      const alice = await t.user('alice');
      const created = await t.req('POST', '/api/v1/users/alice/repos', {
        token: alice.token,
        body: { name: 'app', slug: 'app', visibility: 'public' },
      });
      assert.equal(created.status, 201, created.text);
      const work = await makeWorkTree(g, 'app', [{ 'README.md': 'hi\n', '.weft/workflows/pr.yml': CI }]);
      const remote = g.url('/git/users/alice/app.git', alice.token);
      await g.run(['-C', work, 'push', '-q', remote, 'main']);
      const prot = await t.req('POST', `${api}/protections`, {
        token: alice.token,
        body: { branch: 'main', required_approvals: 0, required_status_contexts: ['PR / check'] },
      });
      assert.equal(prot.status, 201, prot.text);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feat']);
      await commitFiles(g, work, [{ 'feature.txt': 'a feature\n' }]);
      await g.run(['-C', work, 'push', '-q', remote, 'feat']);
      const pull = await t.req('POST', `${api}/pulls`, {
        token: alice.token,
        body: { title: 'A feature', body: 'Merges itself.', source_branch: 'feat', target_branch: 'main' },
      });
      assert.equal(pull.status, 201, pull.text);

      const { page } = await newPage(browser);
      await signInPage(page, g.base, 'alice', PASSWORD);
      await page.goto(`${g.base}${web}/pulls/${pull.body.number}`);
      await page.getByRole('button', { name: 'Merge', exact: true }).waitFor();
      await checkPage(page, 'pull page, auto-merge off');
      await page.getByRole('button', { name: 'Enable auto-merge' }).click();
      await page.getByRole('button', { name: 'Disable auto-merge' }).waitFor({ timeout: 15_000 });
      await page.locator('#auto-merge-state').waitFor();
      assert.equal((await t.req('GET', `${api}/pulls/${pull.body.number}`)).body.auto_merge.enabled_by.username, 'alice');
      assert.equal(await page.locator('#pull-status').textContent(), 'open', 'waits for its check');
      await checkPage(page, 'pull page, auto-merge on');

      // a real runner takes the pull's run
      const reg = await t.req('POST', `${api}/runners/registration-token`, { token: alice.token });
      assert.equal(reg.status, 201, reg.text);
      const config = join(dir, 'runner.json');
      const env = { HOME: dir };
      const registered = await runWeft(
        'cli',
        [
          'runner',
          'register',
          '--url',
          g.base,
          '--token',
          reg.body.token,
          '--name',
          'r1',
          '--labels',
          'linux',
          '--config',
          config,
        ],
        env,
      );
      assert.equal(registered.code, 0, registered.stderr);
      runner = spawnWeft('cli', ['runner', '--config', config, '--workdir', join(dir, 'wd')], env);

      await page.locator('#pull-status', { hasText: 'merged' }).waitFor({ timeout: 90_000 });
      const merged = (await t.req('GET', `${api}/pulls/${pull.body.number}`)).body;
      assert.equal(merged.status, 'merged');
      assert.equal(merged.merged_by_username, 'alice');
      assert.equal(merged.auto_merge, null);
      await page.getByRole('button', { name: 'Enable auto-merge' }).waitFor({ state: 'detached' });
      await checkPage(page, 'pull page, merged by auto-merge');
    });
  });
}
