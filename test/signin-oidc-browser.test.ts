/**
 * OIDC sign-in in real Chromium (docs/signin.md "OIDC"): the sign-in page's "Sign in with Corp SSO"
 * button, the provider's own login and consent pages (a real `oidc-provider` on 127.0.0.1), and back
 * to Weft signed in as the user made from the claims; the identity is listed on Security settings.
 * Weft's pages pass axe-core at 375 px wide.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, BROWSER_DIALECTS } from './browser.ts';
import { type TestApp, startApp } from './helpers.ts';
import { type TestProvider, startProvider } from './oidc-provider.ts';
import { freePort } from './server-process.ts';

for (const dialect of BROWSER_DIALECTS) {
  describe(`OIDC sign-in in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let op: TestProvider;
    let base: string;
    let browser: Browser;

    before(async () => {
      const port = await freePort();
      base = `http://127.0.0.1:${port}`;
      op = await startProvider([`${base}/login/oidc/corp/callback`]);
      t = await startApp(dialect, { config: { publicUrl: base } });
      await t.app.listen({ port, host: '127.0.0.1' });
      const created = await t.req('POST', '/api/v1/admin/auth-sources', {
        body: {
          kind: 'oidc',
          name: 'corp',
          display_name: 'Corp SSO',
          oidc: { issuer: op.issuer, client_id: 'weft', client_secret: 'weft-client-secret' },
        },
      });
      assert.equal(created.status, 201, created.text);
      op.accounts.set('sub-olga', { username: 'olga', email: 'olga@corp.test' });
      browser = await launchBrowser();
    });
    after(async () => {
      await browser?.close();
      await t?.close();
      await op?.close();
    });

    it('signs in through the provider and lands signed in, the identity linked', async () => {
      const { page } = await newPage(browser);
      await page.goto(`${base}/login`);
      await checkPage(page, 'sign-in page with a source');
      await page.click('text=Sign in with Corp SSO');
      // the provider's pages (not Weft's): its login form, then its consent form
      await page.waitForURL((u) => u.href.startsWith(op.issuer));
      await page.fill('input[name="login"]', 'sub-olga');
      await page.fill('input[name="password"]', 'any');
      await page.click('button[type="submit"]');
      for (let i = 0; i < 3 && page.url().startsWith(op.issuer); i++) {
        await page.waitForLoadState();
        if (!page.url().startsWith(op.issuer)) break;
        const button = page.locator('button[type="submit"]');
        if ((await button.count()) > 0) await button.first().click();
        await page.waitForTimeout(200);
      }
      await page.waitForURL((u) => u.href.startsWith(base) && !u.pathname.startsWith('/login'));
      await checkPage(page, 'signed in after OIDC');
      await page.goto(`${base}/settings/security`);
      assert.match((await page.textContent('main'))!, /Corp SSO/);
      assert.match((await page.textContent('main'))!, /sub-olga/);
      await checkPage(page, 'security settings with a linked identity');
      const user = await t.req('GET', '/api/v1/users/olga');
      assert.equal(user.status, 200, user.text);
      assert.equal(user.body.email, 'olga@corp.test');
    });
  });
}
