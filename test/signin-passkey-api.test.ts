import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';

/**
 * docs/signin.md "Passkeys": the API routes. A real registration needs an authenticator: it is made
 * through Chromium's virtual authenticator in test/signin-passkey-browser.test.ts; here the options,
 * the list, and refusals.
 */
for (const dialect of DIALECTS) {
  describe(`passkey API (${dialect})`, () => {
    let t: TestApp;
    let ann: { token: string };
    before(async () => {
      t = await startApp(dialect, { config: { publicUrl: 'http://weft.example.test:3000' } });
      ann = await t.user('ann');
    });
    after(() => t.close());

    it('options for a discoverable credential; an empty list; a bad answer is 400; an unknown passkey 404', async () => {
      const options = await t.req('POST', '/api/v1/user/passkeys/options', { token: ann.token });
      assert.equal(options.status, 200, options.text);
      assert.equal(options.body.rp.id, 'weft.example.test');
      assert.equal(options.body.user.name, 'ann');
      assert.match(options.body.challenge, /^[A-Za-z0-9_-]{20,}$/);
      assert.equal(options.body.authenticatorSelection.residentKey, 'required');
      const list = await t.req('GET', '/api/v1/user/passkeys', { token: ann.token });
      assert.equal(list.status, 200);
      assert.deepEqual(list.body, []);
      const bad = await t.req('POST', '/api/v1/user/passkeys', {
        token: ann.token,
        body: { name: 'Laptop', response: { id: 'x', rawId: 'x', type: 'public-key', response: {} } },
      });
      assert.ok(bad.status === 400 || bad.status === 401, bad.text);
      assert.ok(bad.body.error, bad.text);
      assert.equal((await t.req('POST', '/api/v1/user/passkeys', { token: ann.token, body: { name: 'x' } })).status, 400);
      const gone = await t.req('DELETE', '/api/v1/user/passkeys/00000000-0000-4000-8000-000000000000', { token: ann.token });
      assert.equal(gone.status, 404, gone.text);
      assert.deepEqual((await t.req('GET', '/api/v1/user/passkeys', { token: ann.token })).body, []);
    });
  });
}
