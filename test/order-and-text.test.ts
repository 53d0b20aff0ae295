import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { keyDir } from './ssh-fixtures.ts';

/**
 * docs/behaviour.md "Errors": 404 before 403. In an archived repo, a write to a sub-resource that
 * does not exist is 404 (or 400 for a malformed request), never 403 repo_archived: every write
 * route of the OpenAPI document with a parameter past the repo is tried.
 */
const FILL: Record<string, string> = {
  number: '999999',
  uuid: '00000000-0000-4000-8000-000000000000',
};
const fill = (name: string, schema: { type?: string; format?: string; pattern?: string } | undefined): string => {
  if (FILL[name]) return FILL[name]!;
  if (schema?.type === 'integer' || schema?.type === 'number') return '999999';
  if (schema?.format === 'uuid' || /uuid/i.test(name)) return FILL.uuid!;
  if (name === 'sha' || /\[0-9a-f\]\{40\}/.test(schema?.pattern ?? '')) return 'ab'.repeat(20);
  return 'nosuchthing';
};

for (const dialect of DIALECTS) {
  describe(`archived repo: 404 before 403 repo_archived (${dialect})`, () => {
    let t: TestApp;
    let owner: { token: string; uuid: string; username: string };
    let protectionUuid: string;

    before(async () => {
      t = await startApp(dialect);
      owner = await t.user(`arch${dialect}`);
      const res = await t.req('POST', `/api/v1/users/${owner.username}/repos`, {
        token: owner.token,
        body: { name: 'old', slug: 'old', visibility: 'private' },
      });
      assert.equal(res.status, 201, res.text);
      const protection = await t.req('POST', `/api/v1/users/${owner.username}/repos/old/protections`, {
        token: owner.token,
        body: { branch: 'main' },
      });
      assert.equal(protection.status, 201, protection.text);
      protectionUuid = protection.body.uuid;
      const archived = await t.req('PUT', `/api/v1/users/${owner.username}/repos/old/archive`, { token: owner.token });
      assert.ok(archived.status < 300, archived.text);
    });
    after(() => t.close());

    it('every write to a missing sub-resource is 404 (or 400), not 403 repo_archived', async () => {
      const doc = (await t.req('GET', '/api/v1/openapi.json', { token: null })).body;
      const wrong: string[] = [];
      let tried = 0;
      for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
        const m = /^\/users\/\{[^}]+\}\/repos\/\{[^}]+\}\/(.*\{.*)$/.exec(path);
        if (!m) continue;
        for (const [method, op] of Object.entries(ops)) {
          if (!['post', 'put', 'patch', 'delete'].includes(method)) continue;
          const params = new Map<string, any>(
            (op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => [p.name, p.schema]),
          );
          const names = [...path.matchAll(/\{([^}]+)\}/g)].map((x) => x[1]!);
          const url = path.replace(/\{([^}]+)\}/g, (_, name: string) => {
            if (name === names[0]) return owner.username;
            if (name === names[1]) return 'old';
            return encodeURIComponent(fill(name, params.get(name)));
          });
          const body = method === 'delete' ? undefined : {};
          const res = await t.req(method.toUpperCase(), `/api/v1${url}`, { token: owner.token, body });
          tried++;
          if (res.status === 403 && res.body?.error === 'repo_archived') wrong.push(`${method.toUpperCase()} ${path}`);
        }
      }
      assert.ok(tried > 10, `${tried} routes tried`);
      assert.deepEqual(wrong, []);
    });

    it('a write to a sub-resource that exists is still 403 repo_archived, and changes nothing', async () => {
      const path = `/api/v1/users/${owner.username}/repos/old/protections/${protectionUuid}`;
      for (const [method, body] of [
        ['PUT', { required_approvals: 3 }],
        ['DELETE', undefined],
      ] as const) {
        const res = await t.req(method, path, { token: owner.token, body });
        assert.equal(res.status, 403, res.text);
        assert.equal(res.body.error, 'repo_archived');
      }
      const kept = await t.req('GET', path, { token: owner.token });
      assert.equal(kept.status, 200);
      assert.equal(kept.body.required_approvals, 1);
    });
  });
}

/** docs/behaviour.md "Conventions": one-line text fields hold no control characters (400, nothing stored). */
for (const dialect of DIALECTS) {
  describe(`one-line text fields refuse control characters (${dialect})`, () => {
    let t: TestApp;
    let owner: { token: string; uuid: string; username: string };
    const keys = keyDir();

    before(async () => {
      t = await startApp(dialect);
      owner = await t.user(`text${dialect}`);
      const res = await t.req('POST', `/api/v1/users/${owner.username}/repos`, {
        token: owner.token,
        body: { name: 'r', slug: 'r', visibility: 'private' },
      });
      assert.equal(res.status, 201, res.text);
    });
    after(async () => {
      await t.close();
      keys.cleanup();
    });

    it('SSH key titles, status contexts, required contexts, hook branch_filter, ticket kind and token_name: 400', async () => {
      const key = keys.make('k', 'ed25519');
      const repo = `/api/v1/users/${owner.username}/repos/r`;
      const sha = 'ab'.repeat(20);
      for (const bad of ['ci\u001b[31mred', 'two\nlines', 'tab\there', 'nul\u0000', 'c1\u009b']) {
        const cases: Array<[string, string, Record<string, unknown>]> = [
          ['POST', '/api/v1/user/keys', { title: bad, key: key.pub }],
          ['POST', `${repo}/statuses/${sha}`, { state: 'success', context: bad }],
          ['POST', `${repo}/protections`, { branch: 'main', required_status_contexts: [bad] }],
          ['POST', `${repo}/hooks`, { url: 'https://example.com/hook', events: ['branch-pushed'], branch_filter: bad }],
          ['POST', '/api/v1/tail-events/tickets', { scope: `user:${owner.uuid}`, kind: bad }],
          ['POST', '/api/v1/auth/login', { username: owner.username, password: 'correct horse battery', token_name: bad }],
        ];
        for (const [method, path, body] of cases) {
          const res = await t.req(method, path, { token: path.endsWith('/login') ? null : owner.token, body });
          assert.equal(res.status, 400, `${method} ${path} ${JSON.stringify(body)}: ${res.status} ${res.text}`);
        }
      }
      assert.equal((await t.req('GET', '/api/v1/user/keys', { token: owner.token })).body.results.length, 0);
      assert.equal((await t.req('GET', `${repo}/protections`, { token: owner.token })).body.results.length, 0);
      assert.equal((await t.req('GET', `${repo}/hooks`, { token: owner.token })).body.results.length, 0);
      // the same fields without control characters are accepted
      const ok = await t.req('POST', '/api/v1/user/keys', {
        token: owner.token,
        body: { title: 'laptop (work) ✓', key: key.pub },
      });
      assert.equal(ok.status, 201, ok.text);
    });
  });
}
