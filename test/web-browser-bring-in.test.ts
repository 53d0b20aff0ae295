/**
 * Bringing repos in, in real Chromium (docs/bring-in.md): "New repo → import from URL" with its
 * progress page until the import is done, the push mirrors settings, a release page, and the file
 * view of a Git LFS file. Every page passes axe-core at 375 px wide without sideways scrolling.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

for (const dialect of BROWSER_DIALECTS) {
  describe(`import, mirrors, releases and LFS pages in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium' }, () => {
    let t: TestApp;
    let g: GitClient;
    let base: string;
    let browser: Browser;
    let page: Page;
    let ann: { token: string; uuid: string; username: string };
    const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);

    const reloadUntil = async (text: RegExp, ms = 30_000) => {
      const deadline = Date.now() + ms;
      while (!text.test(await page.content())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${text} on ${page.url()}`);
        await new Promise((r) => setTimeout(r, 300));
        await page.reload();
      }
    };

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      base = g.base.replace(/\/$/, '');
      ann = await t.user('ann');
      ok(await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['127.0.0.1'] } }), 200);
      ok(await t.req('POST', '/api/v1/users/ann/repos', { token: ann.token, body: { name: 'src', slug: 'src' } }));
      // an LFS object, and a commit holding its pointer
      const content = Buffer.from('Large file text, stored with Git LFS.\n'.repeat(20));
      const oid = createHash('sha256').update(content).digest('hex');
      const lfs = '/git/users/ann/src.git/info/lfs/objects';
      const batch = await t.app.inject({
        method: 'POST',
        url: `${lfs}/batch`,
        headers: {
          'content-type': 'application/vnd.git-lfs+json',
          accept: 'application/vnd.git-lfs+json',
          authorization: `Bearer ${ann.token}`,
        },
        payload: JSON.stringify({ operation: 'upload', transfers: ['basic'], objects: [{ oid, size: content.length }] }),
      });
      assert.equal(batch.statusCode, 200, batch.body);
      const token = JSON.parse(batch.body).objects[0].actions.upload.header['X-Weft-LFS-Token'];
      const put = await t.app.inject({
        method: 'PUT',
        url: `${lfs}/${oid}`,
        headers: { 'x-weft-lfs-token': token },
        payload: content,
      });
      assert.equal(put.statusCode, 200, put.body);
      const work = await makeWorkTree(g, 'work', [{ 'README.md': '# Source\n' }]);
      writeFileSync(
        join(work, 'notes.txt'),
        `version https://git-lfs.github.com/spec/v1\noid sha256:${oid}\nsize ${content.length}\n`,
      );
      await g.run(['-C', work, 'add', 'notes.txt']);
      await g.run(['-C', work, 'commit', '-q', '-m', 'notes']);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/ann/src.git', ann.token), 'main']);
      ok(
        await t.req('POST', '/api/v1/users/ann/repos/src/releases', {
          token: ann.token,
          body: { tag_name: 'v1.0.0', name: 'First release', body: '## Notes\n\n- the first one' },
        }),
      );
      browser = await launchBrowser();
      page = (await newPage(browser)).page;
      await signInPage(page, base, 'ann', PASSWORD);
    });
    after(async () => {
      await browser?.close();
      g?.cleanup();
      await t?.close();
    });

    it('New repo → import from a URL, with its progress page until it is done', async () => {
      await page.goto(`${base}/new`);
      await checkPage(page, 'the new repo form with its import fields');
      await page.fill('#f-name', 'imported');
      await page.fill('#f-import_url', 'file:///etc');
      await page.click('button[type=submit].primary');
      assert.match(await page.content(), /no file:\/\/ or other transports/);
      await checkPage(page, 'the new repo form with a refused source');
      await page.fill('#f-import_url', `${base}/git/users/ann/src.git`);
      await page.fill('#f-import_username', 'x');
      await page.fill('#f-import_password', ann.token);
      await page.click('button[type=submit].primary');
      assert.match(page.url(), /\/users\/ann\/imported\/import$/);
      assert.match(await page.content(), /Status: <strong>(importing|done)<\/strong>/);
      await checkPage(page, 'the import progress page');
      assert.ok(!(await page.content()).includes(ann.token));
      await reloadUntil(/Status: <strong>done<\/strong>/);
      await checkPage(page, 'the finished import');
      await page.goto(`${base}/users/ann/imported/blob/main/README.md`);
      assert.match(await page.content(), /Source/);
    });

    it('the push mirrors settings add a mirror', async () => {
      ok(await t.req('POST', '/api/v1/users/ann/repos', { token: ann.token, body: { name: 'copy', slug: 'copy' } }));
      await page.goto(`${base}/users/ann/src/settings/mirrors`);
      await checkPage(page, 'the push mirrors settings');
      await page.fill('#f-url', 'ftp://example.com/x.git');
      await page.click('button[type=submit].primary');
      assert.match(await page.content(), /absolute http/);
      await page.fill('#f-url', `${base}/git/users/ann/copy.git`);
      await page.fill('#f-username', 'x');
      await page.fill('#f-password', ann.token);
      await page.click('button[type=submit].primary');
      assert.match(page.url(), /\/settings\/mirrors$/);
      assert.match(await page.content(), /copy\.git/);
      await checkPage(page, 'the push mirrors settings with a mirror');
    });

    it('a release page and an LFS file view', async () => {
      await page.goto(`${base}/users/ann/src/releases/tag/v1.0.0`);
      assert.match(await page.content(), /First release/);
      await checkPage(page, 'a release page');
      await page.goto(`${base}/users/ann/src/blob/main/notes.txt`);
      const text = await page.content();
      assert.match(text, /Stored with Git LFS/);
      assert.match(text, /Large file text/);
      await checkPage(page, 'an LFS file view');
    });
  });
}
