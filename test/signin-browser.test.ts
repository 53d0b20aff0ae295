/**
 * The second factor in real Chromium (docs/signin.md "Two-factor", "Requiring it"): a team owner
 * sets up an authenticator app from Settings, Security, sees who a team requirement affects and
 * turns it on; a member without a second factor is sent to Security settings; the owner signs in
 * again in two steps (password, then a TOTP code computed by the test's own RFC 6238 code). Every
 * page visited passes axe-core at 375 px wide without sideways scrolling.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { seedTeam } from './fixtures.ts';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type TestApp, startApp } from './helpers.ts';
import { ManualClock } from './limits-fixtures.ts';
import { totpAt } from './signin-helpers.ts';
import { PASSWORD } from './web-helpers.ts';

for (const dialect of BROWSER_DIALECTS) {
  describe(`the second factor in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let clock: ManualClock;
    let base: string;
    let browser: Browser;

    before(async () => {
      clock = new ManualClock(Date.parse('2030-01-01T00:00:10.000Z'));
      t = await startApp(dialect, { deps: { clock } });
      base = (await t.app.listen({ port: 0, host: '127.0.0.1' })).replace(/\/$/, '');
      const ann = await t.user('ann');
      const bob = await t.user('bob');
      await seedTeam(t, 'crew', [
        { uuid: ann.uuid, role: 'owner' },
        { uuid: bob.uuid, role: 'member' },
      ]);
      const repo = await t.req('POST', '/api/v1/teams/crew/repos', { token: ann.token, body: { name: 'App', slug: 'app' } });
      assert.equal(repo.status, 201, repo.text);
      browser = await launchBrowser();
    });
    after(async () => {
      await browser?.close();
      await t?.close();
    });

    it('sets up TOTP, requires it of a team, sends a member to enrol, and signs in in two steps', async () => {
      const { page: ann } = await newPage(browser);
      await signInPage(ann, base, 'ann', PASSWORD);
      await ann.goto(`${base}/settings/security`);
      await checkPage(ann, 'security settings');
      await Promise.all([ann.waitForURL(`${base}/settings/security`), ann.click('text=Set up an authenticator app')]);
      const secret = (await ann.textContent('#totp-secret'))!.replace(/\s/g, '');
      await checkPage(ann, 'TOTP enrolment');
      await ann.fill('#confirm-code', totpAt(secret, clock.ms));
      await Promise.all([ann.waitForLoadState(), ann.click('button:has-text("Turn on")')]);
      assert.equal(await ann.locator('#recovery-codes li').count(), 10);
      await checkPage(ann, 'recovery codes');

      // the team requirement: who is affected, before the switch
      await ann.goto(`${base}/teams/crew/-/settings/two-factor`);
      assert.match((await ann.textContent('#affected'))!, /bob/);
      assert.match((await ann.textContent('#require-state'))!, /off/);
      await checkPage(ann, 'team two-factor requirement');
      await Promise.all([ann.waitForLoadState(), ann.click('button:has-text("Require a second factor")')]);
      assert.match((await ann.textContent('#require-state'))!, /on/);

      // bob (no second factor) is sent to Security settings
      const { page: bob } = await newPage(browser);
      await signInPage(bob, base, 'bob', PASSWORD);
      await bob.goto(`${base}/teams/crew/app`);
      assert.equal(new URL(bob.url()).pathname, '/settings/security');
      assert.match((await bob.textContent('#two-factor-required'))!, /Required by crew/);
      await checkPage(bob, 'security settings, required');

      // ann signs in again: password, then a code
      clock.advance(30_000);
      const { page: again } = await newPage(browser);
      await again.goto(`${base}/login`);
      await again.fill('#username', 'ann');
      await again.fill('#password', PASSWORD);
      await Promise.all([again.waitForLoadState(), again.click('button[type=submit].primary')]);
      assert.ok(await again.isVisible('#code'), 'the code step');
      await checkPage(again, 'second step');
      await again.fill('#code', totpAt(secret, clock.ms));
      await Promise.all([again.waitForURL(`${base}/`), again.click('button:has-text("Verify")')]);
      await again.goto(`${base}/teams/crew/app`);
      assert.equal(new URL(again.url()).pathname, '/teams/crew/app');
    });
  });
}
