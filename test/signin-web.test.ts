import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { ManualClock } from './limits-fixtures.ts';
import { totpAt } from './signin-helpers.ts';
import { PASSWORD, loginForm, pageReq, signIn } from './web-helpers.ts';

const qrcode = createRequire(import.meta.url)('qrcode') as {
  toString(text: string, o: { type: 'svg'; errorCorrectionLevel: 'M'; margin: number }): Promise<string>;
};
const qrcodeSvg = (text: string) => qrcode.toString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });

/** docs/signin.md: the staff "Sign-in sources" page, Security settings and the two-step web sign-in. */
const cookiesOf = (setCookie: unknown): string[] =>
  (Array.isArray(setCookie) ? setCookie : setCookie === undefined ? [] : [String(setCookie)]).map(
    (c: string) => c.split(';')[0]!,
  );

for (const dialect of DIALECTS) {
  describe(`sign-in pages (${dialect})`, () => {
    let t: TestApp;
    let clock: ManualClock;

    before(async () => {
      clock = new ManualClock(Date.parse('2030-01-01T00:00:10.000Z'));
      t = await startApp(dialect, { deps: { clock } });
      await t.user('staffer', { staff: true });
      await t.user('carol');
    });
    after(() => t.close());

    it('staff add an LDAP source from the page; the test button says what failed; others get 403', async () => {
      const staff = await signIn(t, 'staffer');
      const empty = await pageReq(t, 'GET', '/admin/auth-sources', { cookie: staff.cookie });
      assert.equal(empty.status, 200);
      assert.match(empty.text, /No sign-in sources/);
      const add = await pageReq(t, 'POST', '/admin/auth-sources', {
        cookie: staff.cookie,
        form: {
          _csrf: staff.csrf,
          kind: 'ldap',
          name: 'corp',
          display_name: 'Corp',
          enabled: 'on',
          auto_create_users: 'on',
          ldap_url: 'ldap://127.0.0.1:1',
          ldap_bind_dn: 'cn=svc,dc=corp',
          ldap_bind_password: 'the-bind-password',
          ldap_user_base: 'dc=corp',
        },
      });
      assert.equal(add.status, 303, add.text);
      const list = await pageReq(t, 'GET', '/admin/auth-sources', { cookie: staff.cookie });
      assert.match(list.text, /Corp/);
      assert.doesNotMatch(list.text, /the-bind-password/);
      const uuid = /id="source-([0-9a-f-]{36})"/.exec(list.text)![1]!;
      const tested = await pageReq(t, 'POST', `/admin/auth-sources/${uuid}/test`, {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf },
      });
      assert.equal(tested.status, 200);
      assert.match(tested.text, /Failed: Connecting to ldap:\/\/127.0.0.1:1 failed/);
      const edit = await pageReq(t, 'GET', `/admin/auth-sources/${uuid}`, { cookie: staff.cookie });
      assert.match(edit.text, /A password is stored; leave empty to keep it/);
      const bad = await pageReq(t, 'POST', '/admin/auth-sources', {
        cookie: staff.cookie,
        form: { _csrf: staff.csrf, kind: 'ldap', name: 'x', display_name: 'X', ldap_url: 'http://nope', ldap_user_base: 'dc=x' },
      });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /ldap:\/\/host/);
      const carol = await signIn(t, 'carol');
      assert.equal((await pageReq(t, 'GET', '/admin/auth-sources', { cookie: carol.cookie })).status, 403);
    });

    it('Security settings: set up an authenticator app, recovery codes shown once; then the two-step sign-in', async () => {
      const carol = await signIn(t, 'carol');
      const sec = await pageReq(t, 'GET', '/settings/security', { cookie: carol.cookie });
      assert.equal(sec.status, 200);
      assert.match(sec.text, /Set up an authenticator app/);
      assert.equal(
        (await pageReq(t, 'POST', '/settings/security/totp', { cookie: carol.cookie, form: { _csrf: carol.csrf } })).status,
        303,
      );
      const setup = await pageReq(t, 'GET', '/settings/security', { cookie: carol.cookie });
      const secret = /id="totp-secret"[^>]*>([A-Z2-7 ]+)</.exec(setup.text)![1]!.replace(/ /g, '');
      assert.match(setup.text, /href="otpauth:\/\/totp\/Weft:carol\?/);
      // the QR code is drawn on the server, inline, and encodes the otpauth:// link shown beside it
      const uri = /href="(otpauth:[^"]+)"/.exec(setup.text)![1]!.replace(/&amp;/g, '&');
      const svg = /<div class="qr" id="totp-qr">(<svg [\s\S]*?<\/svg>)/.exec(setup.text)?.[1];
      assert.ok(svg, 'inline SVG QR code');
      assert.match(svg, /role="img" aria-label="QR code/);
      const expected = await qrcodeSvg(uri);
      assert.equal(
        / d="([^"]+)"\/><\/svg>/.exec(svg)![1],
        / d="([^"]+)"\/><\/svg>/.exec(expected)![1],
        'same modules as the URI encoded',
      );
      const confirmed = await pageReq(t, 'POST', '/settings/security/totp/confirm', {
        cookie: carol.cookie,
        form: { _csrf: carol.csrf, code: totpAt(secret, clock.ms) },
      });
      assert.equal(confirmed.status, 200, confirmed.text);
      const codes = [...confirmed.text.matchAll(/<li><code>([a-z0-9]{5}-[a-z0-9]{5})<\/code><\/li>/g)].map((m) => m[1]!);
      assert.equal(codes.length, 10);
      const again = await pageReq(t, 'GET', '/settings/security', { cookie: carol.cookie });
      assert.doesNotMatch(again.text, new RegExp(codes[0]!), 'shown once');
      assert.match(again.text, /id="codes-left">10</);

      // the two-step sign-in: the password gives the code page and no session
      const form = await loginForm(t);
      const step1 = await pageReq(t, 'POST', '/login', {
        cookie: form.cookie,
        form: { _csrf: form.csrf, username: 'carol', password: PASSWORD, next: '/settings' },
      });
      assert.equal(step1.status, 200);
      assert.match(step1.text, /Two-factor sign-in/);
      const set = cookiesOf(step1.headers['set-cookie']);
      assert.ok(!set.some((c) => c.startsWith('weft_session=')), 'no session before the code');
      const pending = set.find((c) => c.startsWith('weft_2fa='))!;
      const cookie = `${form.cookie}; ${pending}`;
      const wrong = await pageReq(t, 'POST', '/login/two-factor', {
        cookie,
        form: { _csrf: form.csrf, code: totpAt(secret, clock.ms) === '000000' ? '111111' : '000000', next: '/settings' },
      });
      assert.equal(wrong.status, 401);
      assert.match(wrong.text, /That code is not right/);
      // the pending cookie alone (another browser's sign-in form) does not pass
      const other = await loginForm(t);
      const stolen = await pageReq(t, 'POST', '/login/two-factor', {
        cookie: `${other.cookie}; ${pending}`,
        form: { _csrf: other.csrf, code: codes[0]!, next: '/settings' },
      });
      assert.equal(stolen.status, 303);
      assert.match(String(stolen.headers.location), /^\/login/);
      clock.advance(30_000);
      const ok = await pageReq(t, 'POST', '/login/two-factor', {
        cookie,
        form: { _csrf: form.csrf, code: totpAt(secret, clock.ms), next: '/settings' },
      });
      assert.equal(ok.status, 303, ok.text);
      assert.equal(ok.headers.location, '/settings');
      const session = cookiesOf(ok.headers['set-cookie']).find((c) => c.startsWith('weft_session=') && c.length > 14)!;
      assert.equal((await pageReq(t, 'GET', '/settings', { cookie: session })).status, 200);
      // a recovery code works in the second step too, once
      const form2 = await loginForm(t);
      const s1 = await pageReq(t, 'POST', '/login', {
        cookie: form2.cookie,
        form: { _csrf: form2.csrf, username: 'carol', password: PASSWORD },
      });
      const c2 = `${form2.cookie}; ${cookiesOf(s1.headers['set-cookie']).find((c) => c.startsWith('weft_2fa='))!}`;
      const rec = await pageReq(t, 'POST', '/login/two-factor', { cookie: c2, form: { _csrf: form2.csrf, code: codes[1]! } });
      assert.equal(rec.status, 303);
      assert.equal(rec.headers.location, '/');
    });
  });
}
