/**
 * The hooks, staff and signup pages in real Chromium (README "Web interface"): a maintainer adds
 * a hook whose receiver is a real HTTP server on 127.0.0.1, sees a delivery on the deliveries
 * page, makes the receiver fail, sees the failed attempt, redelivers with one click and sees it
 * succeed; staff creates a signup invite and a new person signs up with it. Every page visited
 * passes axe-core (no serious or critical violation) at 375 px wide without sideways scrolling.
 * WEFT_SCREENSHOTS=DIR saves the hooks list, a delivery and the staff users page there.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';
import { Receiver } from './webhooks-helpers.ts';

const SHOTS = process.env.WEFT_SCREENSHOTS;

for (const dialect of BROWSER_DIALECTS) {
  describe(
    `hooks, staff and signup pages in Chromium (${dialect})`,
    { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' },
    () => {
      let t: TestApp;
      let rx: Receiver;
      let base: string;
      let browser: Browser;
      let ann: { token: string };
      const pages: Record<string, Page> = {};
      const hooks = '/teams/core/api/settings/hooks';

      const shot = async (page: Page, name: string) => {
        if (!SHOTS) return;
        mkdirSync(SHOTS, { recursive: true });
        await page.setViewportSize({ width: 1200, height: 900 });
        await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
        await page.setViewportSize({ width: 375, height: 800 });
      };
      /** Reloads the page until `text` shows (a delivery is recorded a moment after it is sent). */
      const reloadUntil = async (page: Page, text: RegExp, ms = 20_000) => {
        const deadline = Date.now() + ms;
        while (!text.test(await page.content())) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${text} on ${page.url()}`);
          await new Promise((r) => setTimeout(r, 200));
          await page.reload();
        }
      };

      before(async () => {
        t = await startApp(dialect);
        rx = await new Receiver().start();
        base = (await t.app.listen({ port: 0, host: '127.0.0.1' })).replace(/\/$/, '');
        await t.user('sam', { staff: true });
        ann = await t.user('ann');
        const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);
        ok(await t.req('POST', '/api/v1/teams', { token: ann.token, body: { name: 'Core', slug: 'core' } }));
        ok(await t.req('POST', '/api/v1/teams/core/repos', { token: ann.token, body: { name: 'API', slug: 'api' } }));
        // the receiver is on 127.0.0.1: the site setting allows it, as the webhook tests do
        ok(await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['127.0.0.1'] } }), 200);
        ok(
          await t.req('POST', '/api/v1/rate-limits', {
            body: { scope: 'api:create-repo', max_requests: 100, window_seconds: 3600, is_enabled: true },
          }),
        );
        browser = await launchBrowser();
        for (const name of ['sam', 'ann']) {
          const { page } = await newPage(browser);
          await signInPage(page, base, name, PASSWORD);
          pages[name] = page;
        }
      });
      after(async () => {
        await browser?.close();
        await rx?.close();
        await t?.close();
      });

      it('adds a hook, sees a delivery, sees a failure and redelivers it with one click', async () => {
        const page = pages.ann!;
        await page.goto(`${base}${hooks}`);
        await page.getByRole('heading', { name: 'Hooks', exact: true }).waitFor();
        await checkPage(page, 'hooks list (empty)');
        await page.fill('#f-url', rx.url('/ci'));
        await page.fill('#f-events', 'thread-created, pull-opened');
        await page.getByRole('button', { name: 'Add hook' }).click();
        await page.locator('#hook-secret').waitFor();
        assert.match((await page.locator('#hook-secret').textContent()) ?? '', /^whsec_/);
        await checkPage(page, 'new hook with its secret');
        await page.goto(`${base}${hooks}`);
        await page.getByRole('link', { name: rx.url('/ci') }).waitFor();
        await checkPage(page, 'hooks list');

        // an event of the repo: a delivery the receiver answers 200
        assert.equal(
          (await t.req('POST', '/api/v1/teams/core/repos/api/threads', { token: ann.token, body: { title: 'Build it' } })).status,
          201,
        );
        await page.getByRole('link', { name: rx.url('/ci') }).click();
        await page.getByRole('link', { name: 'Deliveries' }).click();
        await reloadUntil(page, /HTTP 200/);
        await checkPage(page, 'deliveries');
        await page.getByRole('link', { name: 'thread-created' }).click();
        await page.getByRole('heading', { name: 'Delivery of thread-created' }).waitFor();
        await page.getByText('Build it').first().waitFor();
        await checkPage(page, 'a delivery');
        await shot(page, 'hook-delivery');

        // the receiver fails: the attempt's answer is on the delivery page
        rx.respond = (_req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('broken build server');
        await page.getByRole('link', { name: 'All deliveries of this hook' }).click();
        const hookPage = page.url().replace(/\/deliveries$/, '');
        await page.goto(hookPage);
        await page.getByRole('button', { name: 'Send a ping' }).click();
        await page.getByRole('heading', { name: 'Delivery of ping' }).waitFor();
        await reloadUntil(page, /HTTP 500/);
        await page.getByText('broken build server').waitFor();
        await checkPage(page, 'a failed delivery');
        const attempts = rx.received.length;
        // fixed: one click sends it again at once (the scheduled retry is about 10 s away)
        rx.respond = (_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('green');
        const clicked = Date.now();
        await page.getByRole('button', { name: 'Redeliver' }).click();
        await reloadUntil(page, /HTTP 200/);
        assert.ok(Date.now() - clicked < 8_000, 'the redelivery went out at once');
        await page.locator('.badge', { hasText: 'success' }).first().waitFor();
        assert.equal(rx.received.length, attempts + 1);
        const [failed, again] = rx.received.slice(-2);
        assert.equal(again!.headers['webhook-id'], failed!.headers['webhook-id']);
        assert.equal(again!.headers['x-weft-attempt'], '2');
        await page.goto(`${page.url().replace(/\/deliveries\/.*$/, '')}/deliveries?status=success`);
        assert.equal(await page.locator('li.delivery').count(), 2);
        await checkPage(page, 'deliveries, filtered');
        await page.goto(`${base}${hooks}`);
        await page.locator('.badge', { hasText: 'last: success' }).waitFor();
        await shot(page, 'hooks');
      });

      it('staff creates an invite and a new person signs up with it', async () => {
        const page = pages.sam!;
        await page.goto(`${base}/`);
        await page.getByRole('link', { name: 'Admin' }).click();
        await page.getByRole('heading', { name: 'Users' }).waitFor();
        await checkPage(page, 'staff: users');
        await shot(page, 'admin-users');
        await page.getByRole('link', { name: 'ann', exact: true }).click();
        await page.getByRole('button', { name: 'Make staff' }).waitFor();
        await checkPage(page, 'staff: a user');
        for (const [path, heading] of [
          ['/admin/rate-limits', 'Rate limits'],
          ['/admin/settings', 'Site settings'],
          ['/admin/hooks', 'Hooks'],
        ] as const) {
          await page.goto(`${base}${path}`);
          await page.getByRole('heading', { name: heading, exact: true }).waitFor();
          await checkPage(page, `staff: ${path}`);
        }
        await page.goto(`${base}/admin/invites`);
        await page.fill('#f-email', 'nia@example.com');
        await page.getByRole('button', { name: 'Create invite' }).click();
        await page.locator('#invite-link').waitFor();
        await checkPage(page, 'staff: invites');
        const link = (await page.locator('#invite-link').textContent())!;
        assert.match(link, /\/signup\?invite=[0-9a-f-]{36}$/);

        // the new person: a browser without a session
        const { context, page: anon } = await newPage(browser);
        await anon.goto(`${base}/login`);
        await anon.getByRole('link', { name: 'Create an account' }).waitFor();
        await anon.goto(link.replace(/^https?:\/\/[^/]+/, base));
        await anon.getByRole('heading', { name: 'Create your Weft account' }).waitFor();
        await checkPage(anon, 'signup');
        await anon.fill('#f-username', 'nia');
        await anon.fill('#f-email', 'someone-else@example.com');
        await anon.fill('#f-password', 'a long password');
        await anon.getByRole('button', { name: 'Sign up' }).click();
        // the invite is for another address: the error beside the field, what was typed kept
        await anon.locator('#f-invite_uuid-error, #f-email-error, p.error').first().waitFor();
        assert.equal(await anon.inputValue('#f-username'), 'nia');
        await checkPage(anon, 'signup refused');
        await anon.fill('#f-email', 'nia@example.com');
        await anon.fill('#f-password', 'a long password');
        await Promise.all([anon.waitForURL(`${base}/`), anon.getByRole('button', { name: 'Sign up' }).click()]);
        await anon.getByRole('link', { name: 'nia', exact: true }).waitFor();
        await anon.getByRole('heading', { name: 'Dashboard' }).waitFor();
        await context.close();
        await page.goto(`${base}/admin/invites?status=accepted`);
        await page.getByText('accepted by nia').waitFor();
      });
    },
  );
}
