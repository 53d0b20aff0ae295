/**
 * Passkeys in real Chromium (docs/signin.md "Passkeys"), with the browser's virtual WebAuthn
 * authenticator (DevTools protocol): registered from Security settings, used as the second step
 * after the password, and to sign in without a username. The answers the browser posts are
 * caught on the way and sent again over HTTP: a replayed challenge and a wrong origin are refused.
 * The team Sync page (docs/signin.md "Group sync") is checked with axe on the way.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { checkPage, hasChromium, launchBrowser, newPage, signInPage, BROWSER_DIALECTS } from './browser.ts';
import { type TestApp, startApp } from './helpers.ts';
import { PASSWORD } from './web-helpers.ts';

/** A free port: WebAuthn wants a host name (localhost), so PUBLIC_URL is known before the server starts. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

async function virtualAuthenticator(page: Page): Promise<void> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
}

/** The passkey answer of a posted form with its client data's origin changed. */
function withOrigin(body: string, origin: string): string {
  const form = new URLSearchParams(body);
  const answer = JSON.parse(form.get('response')!) as { response: { clientDataJSON: string } };
  const client = JSON.parse(Buffer.from(answer.response.clientDataJSON, 'base64url').toString('utf8')) as Record<string, unknown>;
  answer.response.clientDataJSON = Buffer.from(JSON.stringify({ ...client, origin })).toString('base64url');
  form.set('response', JSON.stringify(answer));
  return form.toString();
}

interface Caught {
  body: string;
  cookie: string;
}

/** The next POST to `url` the page sends: its body and cookies, to send again over HTTP. */
async function catchPost(page: Page, url: string): Promise<{ caught: Promise<Caught> }> {
  const caught = page
    .waitForRequest((r) => r.method() === 'POST' && r.url() === url)
    .then(async (r) => ({ body: r.postData() ?? '', cookie: (await r.allHeaders()).cookie ?? '' }));
  return { caught };
}

const post = (url: string, caught: Caught) =>
  fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: caught.cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: caught.body,
  });

for (const dialect of BROWSER_DIALECTS) {
  describe(`passkeys in Chromium (${dialect})`, { skip: !hasChromium && 'no Chromium at /usr/bin/chromium' }, () => {
    let t: TestApp;
    let base: string;
    let browser: Browser;

    before(async () => {
      const port = await freePort();
      base = `http://localhost:${port}`;
      t = await startApp(dialect, { config: { publicUrl: base } });
      await t.app.listen({ port, host: '127.0.0.1' });
      const ann = await t.user('ann');
      // for the team Sync page: a source (never contacted here), a team and one rule
      const source = await t.req('POST', '/api/v1/admin/auth-sources', {
        body: {
          kind: 'ldap',
          name: 'corp',
          display_name: 'Corp',
          ldap: { url: 'ldap://127.0.0.1:9', bind_dn: 'cn=admin,dc=x', bind_password: 'x', user_base: 'dc=x' },
        },
      });
      assert.equal(source.status, 201, source.text);
      assert.equal(
        (await t.req('POST', '/api/v1/teams', { token: ann.token, body: { name: 'crew', slug: 'crew' } })).status,
        201,
      );
      const rule = await t.req('POST', '/api/v1/teams/crew/sync-rules', {
        token: ann.token,
        body: { source: 'corp', group: 'devs', role: 'member' },
      });
      assert.equal(rule.status, 201, rule.text);
      browser = await launchBrowser();
    });
    after(async () => {
      await browser?.close();
      await t?.close();
    });

    it('registers a passkey, uses it as the second step and to sign in without a username; replays and other origins are refused', async () => {
      const { page, context } = await newPage(browser);
      await virtualAuthenticator(page);
      await signInPage(page, base, 'ann', PASSWORD);
      await page.goto(`${base}/teams/crew/-/settings/sync`);
      assert.match((await page.textContent('#sync-rules'))!, /devs/);
      await checkPage(page, 'team Sync settings');
      await page.goto(`${base}/settings/security`);
      assert.ok(await page.isVisible('button:has-text("Add a passkey")'), 'the form shows once the script finds WebAuthn');
      await checkPage(page, 'security settings with passkeys');

      // the genuine answer registers it; the same answer again is refused (its challenge is used)
      await page.fill('#passkey-name', 'Laptop');
      const { caught: registration } = await catchPost(page, `${base}/settings/security/passkeys`);
      await Promise.all([page.waitForURL(`${base}/settings/security`), page.click('button:has-text("Add a passkey")')]);
      const caughtRegistration = await registration;
      await page.waitForSelector('#passkeys li');
      assert.match((await page.textContent('#passkeys'))!, /Laptop/);
      const replayed = await post(`${base}/settings/security/passkeys`, caughtRegistration);
      assert.equal(replayed.status, 400);
      assert.match(await replayed.text(), /expired or was already used/);
      // an answer whose client data names another origin is refused before anything else
      const otherOrigin = await post(`${base}/settings/security/passkeys`, {
        ...caughtRegistration,
        body: withOrigin(caughtRegistration.body, 'https://evil.example'),
      });
      assert.equal(otherOrigin.status, 400);
      assert.match(await otherOrigin.text(), /made for another site/);

      // a passkey is a second factor: the password leads to the second step, where the passkey answers
      await context.clearCookies();
      await page.goto(`${base}/login`);
      await page.fill('#username', 'ann');
      await page.fill('#password', PASSWORD);
      await Promise.all([page.waitForLoadState(), page.click('button[type=submit].primary')]);
      assert.match((await page.textContent('h1'))!, /Two-factor sign-in/);
      await checkPage(page, 'second step with a passkey');
      const { caught: second } = await catchPost(page, `${base}/login/two-factor/passkey`);
      await Promise.all([page.waitForURL(`${base}/`), page.click('button:has-text("Use a passkey")')]);
      const caughtSecond = await second;
      const again = await post(`${base}/login/two-factor/passkey`, caughtSecond);
      assert.notEqual(again.status, 303, 'a replayed answer starts no session');
      assert.equal(again.headers.getSetCookie().filter((c) => c.startsWith('weft_session=') && !/=;/.test(c)).length, 0);

      // without a username: the authenticator offers its discoverable passkey
      await context.clearCookies();
      await page.goto(`${base}/login`);
      await checkPage(page, 'sign-in page with a passkey');
      const { caught: signIn } = await catchPost(page, `${base}/login/passkey`);
      await Promise.all([page.waitForURL(`${base}/`), page.click('button:has-text("Sign in with a passkey")')]);
      const caughtSignIn = await signIn;
      await page.goto(`${base}/settings/security`);
      assert.match((await page.textContent('#passkeys'))!, /Laptop/, 'signed in as ann');
      for (const replay of [caughtSignIn, { ...caughtSignIn, body: withOrigin(caughtSignIn.body, 'https://evil.example') }]) {
        const res = await post(`${base}/login/passkey`, replay);
        assert.equal(res.status, 401);
        assert.match(await res.text(), /could not sign you in/);
      }
      await context.close();
    });
  });
}
