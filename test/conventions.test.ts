import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../src/app.ts';
import { openDatabase } from '../src/db/index.ts';
import { createDeps } from '../src/root.ts';
import { DIALECTS, type TestApp, freshStore, isErrorBody, startApp, testConfig } from './helpers.ts';
import { assertRefused } from './common.ts';
import type { RequestOptions } from './helpers.ts';

const JSON_CT = { 'content-type': 'application/json' };

for (const dialect of DIALECTS) {
  describe(`HTTP conventions (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string; username: string };
    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
    });
    after(() => t.close());

    /** Sends a request that must be refused with `status`/`code` and must change nothing. */
    const refused = (status: number, code: string, method: string, url: string, opts: RequestOptions = {}) =>
      assertRefused(t, status, code, method, url, opts);

    describe('400 invalid_request', () => {
      it('wrong types, missing required fields, bad enum values', async () => {
        let res = await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', { body: { name: 5 } });
        assert.match(res.body.detail, /name/);
        res = await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', { body: {} });
        assert.match(res.body.detail, /name/);
        await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', { body: { name: 'x', expires_at: 12 } });
        await refused(400, 'invalid_request', 'PUT', '/api/v1/users/alice', { body: { ping_mentions: 'sometimes' } });
        await refused(400, 'invalid_request', 'PUT', '/api/v1/users/alice', { body: { is_staff: 'true' } });
      });

      it('unknown body properties are rejected, not stripped', async () => {
        const res = await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', {
          body: { name: 'ok', is_admin: true },
        });
        assert.match(res.body.detail, /is_admin/);
        await refused(400, 'invalid_request', 'PUT', '/api/v1/users/alice', {
          token: alice.token,
          body: { display_name: 'Alice', color: 'red' },
        });
        const me = await t.req('GET', '/api/v1/user', { token: alice.token });
        assert.equal(me.body.display_name, '');
      });

      it('malformed JSON, a body that is not an object, an empty JSON body', async () => {
        for (const raw of ['{"name":', '{name: "x"}', "{'name':'x'}", '{"name":"x",}', 'nul']) {
          const res = await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', { rawBody: raw, headers: JSON_CT });
          assert.match(res.body.detail, /JSON/);
        }
        for (const raw of ['[]', 'null', '"name"', '42', 'true', '']) {
          await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', { rawBody: raw, headers: JSON_CT });
        }
        // no body at all on a route that needs one
        await refused(400, 'invalid_request', 'PUT', '/api/v1/users/alice');
      });

      it('bad UTF-8 bytes, NUL characters, prototype keys and deep nesting in a body', async () => {
        const badUtf8 = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]);
        let res = await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', { rawBody: badUtf8, headers: JSON_CT });
        assert.match(res.body.detail, /UTF-8/);
        res = await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', { body: { name: 'a\u0000b' } });
        assert.match(res.body.detail, /NUL/);
        await refused(400, 'invalid_request', 'PUT', '/api/v1/users/alice', { body: { display_name: '\u0000' } });
        res = await refused(400, 'invalid_request', 'PUT', '/api/v1/users/alice', {
          rawBody: '{"display_name":"x\\ud800y"}',
          headers: JSON_CT,
        });
        assert.match(res.body.detail, /surrogate/);
        const emoji = await t.req('PUT', '/api/v1/users/alice', {
          token: alice.token,
          body: { display_name: 'Alice \ud83e\uddf5' },
        });
        assert.equal(emoji.body.display_name, 'Alice 🧵');
        await t.req('PUT', '/api/v1/users/alice', { token: alice.token, body: { display_name: '' } });
        await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', {
          rawBody: '{"name":"x","a\\u0000":1}',
          headers: JSON_CT,
        });
        await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', {
          rawBody: '{"name":"x","__proto__":{"is_staff":true}}',
          headers: JSON_CT,
        });
        await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', {
          rawBody: `{"name":"x","deep":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
          headers: JSON_CT,
        });
      });

      it('NUL and broken percent-encoding in the path or query string', async () => {
        await refused(400, 'invalid_request', 'GET', '/api/v1/users/alice%00');
        await refused(400, 'invalid_request', 'GET', '/api/v1/api-tokens/abc%00def');
        await refused(400, 'invalid_request', 'PUT', '/api/v1/users/alice%00', { body: { display_name: 'x' } });
        await refused(400, 'invalid_request', 'GET', '/api/v1/users?search=a%00');
        await refused(400, 'invalid_request', 'GET', '/api/v1/users?search=%FF');
        await refused(400, 'invalid_request', 'GET', '/api/v1/users?search=%');
        await refused(400, 'invalid_request', 'GET', '/api/v1/users/%FF');
        await refused(400, 'invalid_request', 'GET', `/api/v1/users/${'a'.repeat(600)}`);
        // well-formed encodings still work
        const ok = await t.req('GET', '/api/v1/users?search=%61lice');
        assert.equal(ok.status, 200);
        assert.deepEqual(
          ok.body.results.map((u: { username: string }) => u.username),
          ['alice'],
        );
      });
    });

    describe('401 unauthorized', () => {
      it('missing, malformed, unknown credentials; WWW-Authenticate is set', async () => {
        const cases: Array<Record<string, string>> = [
          {},
          { authorization: 'Bearer' },
          { authorization: 'Bearer weft_unknownunknownunknownunknownunknownunkn' },
          { authorization: 'Token whatever' },
          { authorization: 'Bearer a b' },
          { authorization: `Basic ${Buffer.from(t.adminToken).toString('base64')}` },
        ];
        for (const headers of cases) {
          const res = await refused(401, 'unauthorized', 'GET', '/api/v1/user', { token: null, headers });
          assert.equal(res.headers['www-authenticate'], 'Bearer realm="api", Basic realm="api"');
        }
      });

      it('a write without credentials changes nothing', async () => {
        await refused(401, 'unauthorized', 'POST', '/api/v1/api-tokens', { token: null, body: { name: 'x' } });
        await refused(401, 'unauthorized', 'POST', '/api/v1/users', {
          token: 'nope',
          body: { username: 'mallory', email: 'm@example.com' },
        });
      });
    });

    it('403 forbidden is an envelope', async () => {
      await refused(403, 'forbidden', 'GET', '/api/v1/users', { token: alice.token });
      await refused(403, 'forbidden', 'POST', '/api/v1/users', {
        token: alice.token,
        body: { username: 'bob', email: 'b@example.com' },
      });
    });

    it('404 not_found for unknown routes, 405 with Allow for a known path asked with another method', async () => {
      for (const token of [null, t.adminToken]) {
        let res = await refused(404, 'not_found', 'GET', '/api/v1/no-such-thing', { token });
        assert.match(res.body.detail, /no-such-thing/);
        await refused(404, 'not_found', 'GET', '/nope', { token });
        res = await refused(405, 'method_not_allowed', 'PATCH', '/api/v1/user', { token });
        assert.equal(res.headers.allow, 'GET, HEAD');
        res = await refused(405, 'method_not_allowed', 'DELETE', '/api/v1/users/alice', { token });
        assert.equal(res.headers.allow, 'GET, HEAD, PUT');
        await refused(404, 'not_found', 'POST', '/api/v1/no-such-thing', { token, body: { a: 1 } });
        res = await t.req('HEAD', '/api/v1/no-such-thing', { token });
        assert.equal(res.status, 404);
      }
      await refused(404, 'not_found', 'GET', '/api/v1/users/nobody');
    });

    it('413 payload_too_large for a body over 1 MiB', async () => {
      const huge = JSON.stringify({ name: 'x'.repeat(1024 * 1024) });
      const res = await refused(413, 'payload_too_large', 'POST', '/api/v1/api-tokens', { rawBody: huge, headers: JSON_CT });
      assert.match(res.body.detail, /too large/);
      // just under the limit is parsed (and then refused by the schema, not the size)
      const big = JSON.stringify({ name: 'x'.repeat(1000 * 1000) });
      await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', { rawBody: big, headers: JSON_CT });
    });

    it('415 unsupported_media_type for bodies that are not JSON', async () => {
      const body = '{"name":"x"}';
      for (const ct of [
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/xml',
      ]) {
        await refused(415, 'unsupported_media_type', 'POST', '/api/v1/api-tokens', {
          rawBody: body,
          headers: { 'content-type': ct },
        });
      }
      await refused(415, 'unsupported_media_type', 'POST', '/api/v1/api-tokens', { rawBody: body });
      await refused(415, 'unsupported_media_type', 'POST', '/api/v1/api-tokens', {
        rawBody: body,
        headers: { 'content-type': 'application/json; charset=latin1' },
      });
      // a compressed body is not read as if it were plain JSON
      for (const encoding of ['gzip', 'deflate', 'br', 'compress', 'gzip, identity']) {
        const res = await refused(415, 'unsupported_media_type', 'POST', '/api/v1/api-tokens', {
          rawBody: body,
          headers: { ...JSON_CT, 'content-encoding': encoding },
        });
        assert.match(res.body.detail, /Content-Encoding/);
      }
      const identity = await t.req('POST', '/api/v1/api-tokens', {
        token: alice.token,
        rawBody: '{"name":"plain"}',
        headers: { ...JSON_CT, 'content-encoding': 'identity' },
      });
      assert.equal(identity.status, 201, identity.text);
    });

    it('JSON with a charset parameter is accepted', async () => {
      for (const ct of ['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON']) {
        const res = await t.req('POST', '/api/v1/api-tokens', {
          token: alice.token,
          rawBody: '{"name":"ct"}',
          headers: { 'content-type': ct },
        });
        assert.equal(res.status, 201, `${ct}: ${res.text}`);
      }
    });

    it('every response carries a request id; a sane X-Request-Id is echoed', async () => {
      const res = await t.req('GET', '/api/v1/user', { headers: { 'x-request-id': 'trace-42.a_b' } });
      assert.equal(res.headers['x-request-id'], 'trace-42.a_b');
      const generated = await t.req('GET', '/api/v1/nope', { headers: { 'x-request-id': 'bad id with spaces' } });
      assert.match(String(generated.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    });

    describe('page envelope', () => {
      /** the pager users in list order (users created in the same millisecond tie-break on uuid) */
      let pagers: string[];
      before(async () => {
        for (let i = 0; i < 104; i++) {
          const res = await t.req('POST', '/api/v1/users', {
            body: { username: `pager-${String(i).padStart(3, '0')}`, email: `p${i}@example.com` },
          });
          assert.equal(res.status, 201);
        }
        const rows = await t.deps.db
          .selectFrom('users')
          .select('username')
          .where('username', 'like', 'pager-%')
          .orderBy('created_at')
          .orderBy('uuid')
          .execute();
        pagers = rows.map((r) => r.username);
        assert.equal(pagers.length, 104);
      });

      it('is exactly {results, next, previous}, default 30 per page, oldest first', async () => {
        const res = await t.req('GET', '/api/v1/users');
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), ['next', 'previous', 'results']);
        assert.equal(res.body.results.length, 30);
        assert.equal(res.body.previous, null);
        assert.equal(res.body.next, '/api/v1/users?page=2&per_page=30');
        assert.equal(res.body.results[0].username, 'admin');
        assert.deepEqual(
          res.body.results.slice(2).map((u: { username: string }) => u.username),
          pagers.slice(0, 28),
        );
      });

      it('per_page above 100 is clamped to 100', async () => {
        const res = await t.req('GET', '/api/v1/users?per_page=1000');
        assert.equal(res.status, 200);
        assert.equal(res.body.results.length, 100);
        assert.equal(res.body.next, '/api/v1/users?per_page=100&page=2');
        const last = await t.req('GET', res.body.next);
        assert.equal(last.body.results.length, 6);
        assert.equal(last.body.next, null);
        assert.equal(last.body.previous, '/api/v1/users?per_page=100&page=1');
      });

      it('page and per_page below 1 or not integers are 400', async () => {
        for (const q of [
          'page=0',
          'page=-1',
          'page=1.5',
          'page=abc',
          'page=',
          'page=1&page=2',
          'per_page=0',
          'per_page=-5',
          'per_page=2.5',
          'per_page=x',
          'page=99999999999',
          'page=0x10',
          'page=1e2',
          'page=%2B1',
          'page=%201',
          'per_page=Infinity',
          'per_page=1e2',
        ]) {
          await refused(400, 'invalid_request', 'GET', `/api/v1/users?${q}`);
        }
        await refused(400, 'invalid_request', 'GET', '/api/v1/api-tokens?per_page=0', { token: alice.token });
      });

      it('next and previous keep every other query parameter and work as they are', async () => {
        const res = await t.req('GET', '/api/v1/users?search=pager-&per_page=20&page=2&extra=kept');
        assert.equal(res.status, 200);
        assert.equal(res.body.results.length, 20);
        assert.equal(res.body.results[0].username, pagers[20]);
        const next = new URL(res.body.next, 'http://x');
        const prev = new URL(res.body.previous, 'http://x');
        assert.equal(next.pathname, '/api/v1/users');
        assert.deepEqual(Object.fromEntries(next.searchParams), { search: 'pager-', per_page: '20', page: '3', extra: 'kept' });
        assert.deepEqual(Object.fromEntries(prev.searchParams), { search: 'pager-', per_page: '20', page: '1', extra: 'kept' });
        const followed = await t.req('GET', res.body.next);
        assert.equal(followed.body.results[0].username, pagers[40]);
        const back = await t.req('GET', res.body.previous);
        assert.equal(back.body.results[0].username, pagers[0]);
        assert.equal(back.body.previous, null);
      });

      it('sets a Link header with first, prev and next: absolute URLs on PUBLIC_URL, as GitHub sends them', async () => {
        const res = await t.req('GET', '/api/v1/users?per_page=10&page=3');
        const link = String(res.headers.link);
        const base = t.deps.config.publicUrl;
        assert.match(base, /^http:\/\/127\.0\.0\.1:3000$/);
        assert.equal(
          link,
          `<${base}/api/v1/users?per_page=10&page=1>; rel="first", <${base}${res.body.previous}>; rel="prev", <${base}${res.body.next}>; rel="next"`,
        );
        assert.equal(res.body.next, '/api/v1/users?per_page=10&page=4');
        const lastPage = await t.req('GET', '/api/v1/users?per_page=100&page=2');
        assert.doesNotMatch(String(lastPage.headers.link), /rel="next"/);
      });

      it('Link URLs keep the path of a PUBLIC_URL behind a proxy', async () => {
        const proxied = await startApp(dialect, { config: { publicUrl: 'https://weft.example/base' } });
        try {
          await proxied.user('second');
          const res = await proxied.req('GET', '/api/v1/users?per_page=1');
          assert.equal(res.body.next, '/api/v1/users?per_page=1&page=2');
          assert.equal(
            res.headers.link,
            '<https://weft.example/base/api/v1/users?per_page=1&page=1>; rel="first", <https://weft.example/base/api/v1/users?per_page=1&page=2>; rel="next"',
          );
        } finally {
          await proxied.close();
        }
      });

      it('a page past the end is empty with a previous link', async () => {
        const res = await t.req('GET', '/api/v1/users?page=50');
        assert.equal(res.status, 200);
        assert.deepEqual(res.body.results, []);
        assert.equal(res.body.next, null);
        assert.equal(res.body.previous, '/api/v1/users?page=49&per_page=30');
      });
    });

    it('requests the HTTP parser rejects get the error envelope over a real socket', async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      const address = t.app.server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      const send = (request: string) =>
        new Promise<{ status: number; body: unknown }>((resolve, reject) => {
          const socket = connect(port, '127.0.0.1', () => socket.write(request));
          let data = '';
          socket.on('data', (d) => {
            data += d;
          });
          socket.on('close', () =>
            resolve({ status: Number(data.slice(9, 12)), body: JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4)) }),
          );
          socket.on('error', reject);
        });
      const malformed = await send('GET /api/v1/user HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n');
      assert.equal(malformed.status, 400);
      assert.ok(isErrorBody(malformed.body, 'invalid_request'));
      const huge = await send(`GET /api/v1/user HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
      assert.equal(huge.status, 431);
      assert.ok(isErrorBody(huge.body, 'request_header_fields_too_large'));
    });
  });
}

describe('500 internal_error', () => {
  it('hides the error and its stack', async () => {
    const store = await freshStore('sqlite');
    const database = await openDatabase({ url: null, dataDir: store.dataDir });
    const deps = createDeps(testConfig(store.dataDir), database);
    const app = await buildApp(deps, { logger: false });
    app.get('/boom', { config: { public: true } }, async () => {
      throw new Error('secret internals at /srv/weft/src/x.ts:12:3');
    });
    const res = await app.inject({ method: 'GET', url: '/boom' });
    assert.equal(res.statusCode, 500);
    assert.deepEqual(res.json(), { error: 'internal_error', detail: 'An internal error occurred.' });
    assert.doesNotMatch(res.body, /secret|stack|x\.ts/);
    await app.close();
    await database.close();
    await store.drop();
  });
});
