/**
 * Issue 30, item 6: a blank username on token routes, control characters in names and titles,
 * JSON media types other than application/json, GET bodies, the 404 of another user's timer,
 * and the security headers of JSON responses and /docs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seedRepo, seedTeam } from './fixtures.ts';
import { snapshot } from './foundation-helpers.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';

for (const dialect of DIALECTS) {
  describe(`API hardening, issue 30 (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    const repoBase = '/api/v1/teams/hard/repos/tool';
    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      bob = await t.user('bob');
      const team = await seedTeam(t, 'hard', [{ uuid: alice.uuid, role: 'owner' }]);
      await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'tool');
    });
    after(() => t.close());

    /** A refused request: its status, error code, and nothing changed. */
    async function refused(status: number, code: string, method: string, url: string, opts: Parameters<TestApp['req']>[2] = {}) {
      const before = await snapshot(t);
      const res = await t.req(method, url, opts);
      assert.equal(res.status, status, `${method} ${url}: ${res.text}`);
      assert.ok(isErrorBody(res.body, code), res.text);
      assert.deepEqual(await snapshot(t), before, 'a refused request changes nothing');
      return res;
    }

    it('a blank username on token routes is 400, not the caller', async () => {
      for (const username of ['', '  ', '\t']) {
        const res = await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', {
          token: alice.token,
          body: { name: 'x', username },
        });
        assert.match(res.body.detail, /username/);
      }
      await refused(400, 'invalid_request', 'GET', '/api/v1/api-tokens?username=%20%20', { token: alice.token });
      // omitted or null is still the caller
      const own = await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'mine', username: null } });
      assert.equal(own.status, 201);
      assert.equal(own.body.username, 'alice');
    });

    it('control characters and ANSI escapes are refused in names, titles and display_name', async () => {
      const bad = ['red \u001b[31mtext', 'two\nlines', 'tab\there', 'nul\u0000', 'del\u007f', 'c1\u009b31m'];
      for (const value of bad) {
        await refused(400, 'invalid_request', 'PUT', '/api/v1/users/alice', {
          token: alice.token,
          body: { display_name: value },
        });
        await refused(400, 'invalid_request', 'POST', '/api/v1/users', {
          body: { username: 'ctl', email: 'ctl@example.com', display_name: value },
        });
        await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', { token: alice.token, body: { name: value } });
        await refused(400, 'invalid_request', 'POST', '/api/v1/teams', {
          token: alice.token,
          body: { name: value, slug: 'ctl' },
        });
        await refused(400, 'invalid_request', 'PUT', '/api/v1/teams/hard', { token: alice.token, body: { name: value } });
        await refused(400, 'invalid_request', 'PUT', repoBase, { token: alice.token, body: { name: value } });
        await refused(400, 'invalid_request', 'POST', `${repoBase}/threads`, { token: alice.token, body: { title: value } });
        await refused(400, 'invalid_request', 'POST', `${repoBase}/pulls`, {
          token: alice.token,
          body: { title: value, body: '', source_branch: 'a', target_branch: 'b' },
        });
        await refused(400, 'invalid_request', 'POST', '/api/v1/signup', {
          token: null,
          body: { username: 'ctl2', email: 'ctl2@example.com', display_name: value },
        });
      }
      // printable text beyond ASCII stays welcome
      const ok = await t.req('PUT', '/api/v1/users/alice', { token: alice.token, body: { display_name: 'Alïce 🦊 — Ω' } });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.display_name, 'Alïce 🦊 — Ω');
    });

    it('only application/json is JSON: +json media types are 415', async () => {
      for (const ct of ['application/vnd.api+json', 'application/merge-patch+json', 'application/json-patch+json', 'text/json']) {
        await refused(415, 'unsupported_media_type', 'POST', '/api/v1/api-tokens', {
          token: alice.token,
          rawBody: '{"name":"ct"}',
          headers: { 'content-type': ct },
        });
      }
    });

    it('a GET with a body is 400', async () => {
      const res = await t.req('GET', '/api/v1/user', {
        token: alice.token,
        rawBody: '{"x":1}',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 400, res.text);
      assert.ok(isErrorBody(res.body, 'invalid_request'));
      assert.match(res.body.detail, /no body/);
      const plain = await t.req('GET', '/api/v1/user', {
        token: alice.token,
        rawBody: 'hello',
        headers: { 'content-type': 'text/plain' },
      });
      assert.equal(plain.status, 400);
      assert.equal((await t.req('GET', '/api/v1/user', { token: alice.token })).status, 200);
    });

    it("another user's timer is 404 Timer not found, as an unknown one is", async () => {
      const made = await t.req('POST', '/api/v1/users/bob/timers', { token: bob.token, body: { message: 'mine', run_in: '1h' } });
      assert.equal(made.status, 201, made.text);
      for (const [method, body] of [
        ['GET', undefined],
        ['PATCH', { status: 'paused' }],
        ['DELETE', undefined],
      ] as const) {
        const res = await refused(404, 'not_found', method, `/api/v1/users/bob/timers/${made.body.uuid}`, {
          token: alice.token,
          ...(body ? { body } : {}),
        });
        assert.equal(res.body.detail, 'Timer not found.');
      }
      const unknown = await t.req('GET', '/api/v1/users/bob/timers/00000000-0000-4000-8000-000000000000', { token: bob.token });
      assert.equal(unknown.body.detail, 'Timer not found.');
    });

    it('JSON responses say nosniff; /docs has a CSP and may not be framed', async () => {
      for (const url of ['/api/v1/user', '/api/v1/nope', '/healthz', '/api/v1/openapi.json']) {
        const res = await t.req('GET', url, { token: alice.token });
        assert.equal(res.headers['x-content-type-options'], 'nosniff', url);
      }
      const docs = await t.app.inject({ method: 'GET', url: '/docs' });
      assert.equal(docs.statusCode, 200);
      assert.equal(docs.headers['x-frame-options'], 'DENY');
      const csp = String(docs.headers['content-security-policy']);
      assert.match(csp, /default-src 'self'/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.doesNotMatch(csp, /upgrade-insecure-requests/);
      const script = await t.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
      assert.equal(script.headers['x-frame-options'], 'DENY');
    });
  });
}
