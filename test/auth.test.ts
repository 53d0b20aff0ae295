import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { basic } from './foundation-helpers.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';

const WWW = 'Bearer realm="api", Basic realm="api"';

for (const dialect of DIALECTS) {
  describe(`authentication (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string; username: string };
    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
    });
    after(() => t.close());

    const whoami = async (authorization: string) => {
      const res = await t.req('GET', '/api/v1/user', { token: null, headers: { authorization } });
      return res;
    };

    const assert401 = (res: Awaited<ReturnType<TestApp['req']>>) => {
      assert.equal(res.status, 401, res.text);
      assert.ok(isErrorBody(res.body, 'unauthorized'), res.text);
      assert.equal(res.headers['www-authenticate'], WWW);
    };

    it('accepts Bearer (any case of the scheme name)', async () => {
      for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
        const res = await whoami(`${scheme} ${alice.token}`);
        assert.equal(res.status, 200);
        assert.equal(res.body.username, 'alice');
      }
    });

    it('accepts Basic with an empty username and the token as password (what git sends)', async () => {
      const res = await whoami(basic('', alice.token));
      assert.equal(res.status, 200);
      assert.equal(res.body.username, 'alice');
      // git may fill in a username; the password is what authenticates, as on GitHub and Gitea
      const named = await whoami(basic('alice', alice.token));
      assert.equal(named.body.username, 'alice');
      const otherName = await whoami(basic('someone-else', alice.token));
      assert.equal(otherName.body.username, 'alice');
    });

    it('refuses malformed and unknown credentials with 401 and WWW-Authenticate', async () => {
      for (const header of [
        'Bearer',
        'Bearer ',
        `Bearer ${alice.token} extra`,
        `Bearer ${alice.token}x`,
        `Bearer ${alice.token.slice(0, -1)}`,
        `Bearer ${'x'.repeat(5000)}`,
        `Token ${alice.token}`,
        alice.token,
        'Basic',
        'Basic !!!not-base64!!!',
        `Basic ${Buffer.from(alice.token).toString('base64')}`,
        basic('alice', ''),
        basic('', `${alice.token}x`),
        basic(alice.token, ''),
      ]) {
        assert401(await whoami(header));
      }
    });

    it('public routes need no credentials', async () => {
      for (const url of ['/api/v1/check-username?username=free-name', '/api/v1/openapi.json', '/healthz', '/readyz', '/docs']) {
        const res = await t.req('GET', url, { token: null });
        assert.equal(res.status, 200, `${url}: ${res.text}`);
      }
      const login = await t.req('POST', '/api/v1/auth/login', {
        token: null,
        body: { username: 'alice', password: 'correct horse battery', token_name: 'x' },
      });
      assert.equal(login.status, 201);
    });

    it('bad credentials are 401 even on a public route', async () => {
      assert401(await t.req('GET', '/api/v1/check-username?username=x', { token: 'weft_nope' }));
      assert401(await t.req('GET', '/api/v1/openapi.json', { token: null, headers: { authorization: 'Bearer nope' } }));
    });

    it('every route the OpenAPI document marks as secured refuses anonymous callers with 401', async () => {
      const doc = (await t.req('GET', '/api/v1/openapi.json', { token: null })).body;
      let checked = 0;
      for (const [path, ops] of Object.entries<Record<string, { security?: unknown[] }>>(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          const url = `/api/v1${path.replace(/\{[^}]+\}/g, 'x')}`;
          const secured = (op.security ?? []).length > 0;
          const res = await t.req(method.toUpperCase(), url, {
            token: null,
            body: method === 'get' || method === 'delete' ? undefined : {},
          });
          if (secured) {
            assert401(res);
            checked++;
          } else {
            assert.notEqual(res.status, 401, `${method} ${path} is public`);
          }
        }
      }
      assert.ok(checked >= 12, `checked ${checked} secured routes`);
    });

    it('revoked, expired, deleted tokens and deactivated users get 401 on every kind of route', async () => {
      const mk = async (name: string, username = 'alice') =>
        (await t.req('POST', '/api/v1/api-tokens', { body: { name, username } })).body as { uuid: string; token: string };
      const revoked = await mk('revoked');
      await t.req('PUT', `/api/v1/api-tokens/${revoked.uuid}/revoke`);
      const deleted = await mk('deleted');
      await t.req('DELETE', `/api/v1/api-tokens/${deleted.uuid}`);
      const expired = await mk('expired');
      await t.deps.db
        .updateTable('api_tokens')
        .set({ expires_at: '2001-01-01T00:00:00.000Z' })
        .where('uuid', '=', expired.uuid)
        .execute();
      const bob = await t.user('bob');
      await t.req('PUT', '/api/v1/users/bob', { body: { is_active: false } });

      for (const secret of [revoked.token, deleted.token, expired.token, bob.token]) {
        for (const authorization of [`Bearer ${secret}`, basic('', secret)]) {
          assert401(await t.req('GET', '/api/v1/user', { token: null, headers: { authorization } }));
          assert401(await t.req('GET', '/api/v1/check-username?username=zz', { token: null, headers: { authorization } }));
          assert401(await t.req('POST', '/api/v1/api-tokens', { token: null, headers: { authorization }, body: { name: 'x' } }));
        }
      }
    });
  });
}
