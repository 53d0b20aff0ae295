import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { ISO_MS, TOKEN_SECRET, countRows, snapshot } from './foundation-helpers.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import { assertRefused } from './common.ts';
import type { RequestOptions } from './helpers.ts';

const TOKEN_KEYS = ['created_at', 'expires_at', 'last_used_at', 'name', 'repos', 'revoked_at', 'scopes', 'username', 'uuid'];
const WWW = 'Bearer realm="api", Basic realm="api"';

for (const dialect of DIALECTS) {
  describe(`API tokens (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      bob = await t.user('bob');
    });
    after(() => t.close());

    const refused = (status: number, code: string, method: string, url: string, opts: RequestOptions = {}) =>
      assertRefused(t, status, code, method, url, opts);

    const create = async (token: string, body: Record<string, unknown>) => {
      const res = await t.req('POST', '/api/v1/api-tokens', { token, body });
      assert.equal(res.status, 201, res.text);
      return res.body as { uuid: string; token: string; name: string; username: string; expires_at: string | null };
    };

    const events = async (userUuid: string, kind: string) =>
      (await t.req('GET', `/api/v1/events?scope=user:${userUuid}&kind=${kind}&per_page=100`)).body.results as Array<{
        kind: string;
        actor: { username: string } | null;
        payload: Record<string, unknown>;
      }>;

    describe('POST /api-tokens', () => {
      it('returns the secret once: weft_ + 40 base62, stored only as its SHA-256', async () => {
        const res = await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: ' laptop ' } });
        assert.equal(res.status, 201);
        assert.deepEqual(Object.keys(res.body).sort(), [...TOKEN_KEYS, 'token'].sort());
        assert.match(res.body.token, TOKEN_SECRET);
        assert.equal(res.body.name, 'laptop');
        assert.equal(res.body.username, 'alice');
        assert.equal(res.body.expires_at, null);
        assert.equal(res.body.last_used_at, null);
        assert.equal(res.body.revoked_at, null);
        assert.match(res.body.created_at, ISO_MS);

        const row = await t.deps.db
          .selectFrom('api_tokens')
          .selectAll()
          .where('uuid', '=', res.body.uuid)
          .executeTakeFirstOrThrow();
        assert.equal(row.token_hash, createHash('sha256').update(res.body.token).digest('hex'));
        assert.ok(!Object.values(row).some((v) => typeof v === 'string' && v.includes(res.body.token.slice(5))));

        const again = await t.req('GET', `/api/v1/api-tokens/${res.body.uuid}`, { token: alice.token });
        assert.deepEqual(Object.keys(again.body).sort(), TOKEN_KEYS);
        const list = await t.req('GET', '/api/v1/api-tokens', { token: alice.token });
        assert.ok(list.body.results.every((tok: Record<string, unknown>) => !('token' in tok)));
        assert.doesNotMatch(list.text, new RegExp(res.body.token));

        const works = await t.req('GET', '/api/v1/user', { token: res.body.token });
        assert.equal(works.body.username, 'alice');
      });

      it('two tokens never share a secret', async () => {
        const a = await create(alice.token, { name: 'a' });
        const b = await create(alice.token, { name: 'a' });
        assert.notEqual(a.token, b.token);
        assert.notEqual(a.uuid, b.uuid);
      });

      it('emits token-created in the owner scope in the same transaction', async () => {
        const before = await countRows(t, 'events');
        const tok = await create(alice.token, { name: 'evented' });
        assert.equal(await countRows(t, 'events'), before + 1);
        const ev = (await events(alice.uuid, 'token-created')).at(-1)!;
        assert.equal(ev.payload.token_uuid, tok.uuid);
        assert.equal(ev.payload.name, 'evented');
        assert.equal(ev.actor?.username, 'alice');
        assert.doesNotMatch(JSON.stringify(ev), new RegExp(tok.token));
      });

      it('expires_at: a future timestamp is canonicalised; past or malformed is 400', async () => {
        const tok = await create(alice.token, { name: 'exp', expires_at: '2099-06-01T12:00:00+02:00' });
        assert.equal(tok.expires_at, '2099-06-01T10:00:00.000Z');
        const leap = await create(alice.token, { name: 'leap', expires_at: '2096-02-29T23:59:59.5-01:30' });
        assert.equal(leap.expires_at, '2096-03-01T01:29:59.500Z');
        const none = await create(alice.token, { name: 'never', expires_at: null });
        assert.equal(none.expires_at, null);
        const past = new Date(Date.now() - 60_000).toISOString();
        const impossible = [
          '2099-02-30T00:00:00Z',
          '2099-04-31T00:00:00Z',
          '2099-02-29T00:00:00Z',
          '2099-01-01T24:00:00Z',
          '2099-01-01T12:60:00Z',
          '2099-01-01T00:00:00+23:60',
        ];
        for (const expires_at of [
          past,
          '2000-01-01T00:00:00Z',
          'tomorrow',
          '2099-13-01T00:00:00Z',
          '2099-01-01',
          '',
          17,
          ...impossible,
        ]) {
          const res = await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', {
            token: alice.token,
            body: { name: 'x', expires_at },
          });
          assert.match(res.body.detail, /expires_at/);
        }
      });

      it('validates name and rejects unknown properties', async () => {
        for (const body of [
          {},
          { name: '' },
          { name: '   ' },
          { name: 'x'.repeat(101) },
          { name: 3 },
          { name: 'x', scopes: ['all'] },
        ]) {
          await refused(400, 'invalid_request', 'POST', '/api/v1/api-tokens', { token: alice.token, body });
        }
      });

      it('username: oneself for anyone, someone else for staff only (403), unknown for staff 404', async () => {
        const own = await create(alice.token, { name: 'self', username: 'ALICE' });
        assert.equal(own.username, 'alice');
        const nullName = await create(alice.token, { name: 'self', username: null });
        assert.equal(nullName.username, 'alice');
        const forBob = await create(t.adminToken, { name: 'issued', username: 'bob' });
        assert.equal(forBob.username, 'bob');
        assert.equal((await t.req('GET', '/api/v1/user', { token: forBob.token })).body.username, 'bob');
        const ev = (await events(bob.uuid, 'token-created')).at(-1)!;
        assert.equal(ev.actor?.username, 'admin');
        assert.equal(ev.payload.username, 'bob');

        const res = await refused(403, 'forbidden', 'POST', '/api/v1/api-tokens', {
          token: alice.token,
          body: { name: 'x', username: 'bob' },
        });
        assert.match(res.body.detail, /staff/);
        await refused(403, 'forbidden', 'POST', '/api/v1/api-tokens', {
          token: alice.token,
          body: { name: 'x', username: 'nobody' },
        });
        await refused(404, 'not_found', 'POST', '/api/v1/api-tokens', { body: { name: 'x', username: 'nobody' } });
      });
    });

    describe('GET /api-tokens', () => {
      let carol: { token: string; uuid: string; username: string };
      before(async () => {
        carol = await t.user('carol');
        // carol has: 'test' (from t.user, used), then b, a, c created in that order
        for (const name of ['b', 'a', 'c']) {
          await sleep(3);
          await create(carol.token, { name });
        }
      });

      it("lists only the caller's tokens, oldest first", async () => {
        const res = await t.req('GET', '/api/v1/api-tokens', { token: carol.token });
        assert.equal(res.status, 200);
        assert.deepEqual(
          res.body.results.map((x: { name: string }) => x.name),
          ['test', 'b', 'a', 'c'],
        );
        assert.ok(res.body.results.every((x: { username: string }) => x.username === 'carol'));
      });

      it('ordering accepts the six values and nothing else', async () => {
        const order = async (o: string) =>
          (await t.req('GET', `/api/v1/api-tokens?ordering=${o}`, { token: carol.token })).body.results.map(
            (x: { name: string }) => x.name,
          );
        assert.deepEqual(await order('created_at'), ['test', 'b', 'a', 'c']);
        assert.deepEqual(await order('-created_at'), ['c', 'a', 'b', 'test']);
        assert.deepEqual(await order('name'), ['a', 'b', 'c', 'test']);
        assert.deepEqual(await order('-name'), ['test', 'c', 'b', 'a']);
        // 'test' is used by every request above; two new tokens are used in turn; a, b, c never.
        const secretsByName: Record<string, string> = {};
        for (const name of ['c', 'a']) {
          secretsByName[name] = (await create(t.adminToken, { name: `${name}-probe`, username: 'carol' })).token;
        }
        await sleep(3);
        await t.req('GET', '/api/v1/user', { token: secretsByName.c });
        await sleep(3);
        await t.req('GET', '/api/v1/user', { token: secretsByName.a });
        const used = await order('last_used_at');
        assert.deepEqual(used.slice(0, 3), ['test', 'c-probe', 'a-probe']);
        assert.deepEqual(used.slice(3).sort(), ['a', 'b', 'c'], 'never-used tokens come last');
        const usedDesc = await order('-last_used_at');
        assert.deepEqual(usedDesc.slice(0, 3), ['a-probe', 'c-probe', 'test']);
        assert.deepEqual(usedDesc.slice(3).sort(), ['a', 'b', 'c']);
        for (const bad of ['uuid', 'CREATED_AT', '--name', 'name,-name', '']) {
          const res = await refused(400, 'invalid_request', 'GET', `/api/v1/api-tokens?ordering=${bad}`, { token: carol.token });
          assert.match(res.body.detail, /ordering/);
        }
      });

      it('filters by exact name and pages', async () => {
        const res = await t.req('GET', '/api/v1/api-tokens?name=a', { token: carol.token });
        assert.deepEqual(
          res.body.results.map((x: { name: string }) => x.name),
          ['a'],
        );
        const page = await t.req('GET', '/api/v1/api-tokens?per_page=2&ordering=name', { token: carol.token });
        assert.equal(page.body.results.length, 2);
        assert.equal(page.body.next, '/api/v1/api-tokens?per_page=2&ordering=name&page=2');
        const page2 = await t.req('GET', page.body.next, { token: carol.token });
        assert.deepEqual(
          page2.body.results.map((x: { name: string }) => x.name),
          ['b', 'c'],
        );
      });

      it("staff list anyone's tokens with username; non-staff naming someone else get 403", async () => {
        const res = await t.req('GET', '/api/v1/api-tokens?username=carol&ordering=name');
        assert.equal(res.status, 200);
        assert.equal(res.body.results[0].name, 'a');
        assert.ok(res.body.results.every((x: { username: string }) => x.username === 'carol'));
        const own = await t.req('GET', '/api/v1/api-tokens?username=carol', { token: carol.token });
        assert.equal(own.status, 200);
        await refused(403, 'forbidden', 'GET', '/api/v1/api-tokens?username=alice', { token: carol.token });
        await refused(403, 'forbidden', 'GET', '/api/v1/api-tokens?username=nobody', { token: carol.token });
        await refused(404, 'not_found', 'GET', '/api/v1/api-tokens?username=nobody');
      });
    });

    describe('GET /api-tokens/self and /api-tokens/{uuid}', () => {
      it('self is the token used for the request, with last_used_at set', async () => {
        const tok = await create(alice.token, { name: 'whoami' });
        const res = await t.req('GET', '/api/v1/api-tokens/self', { token: tok.token });
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), TOKEN_KEYS);
        assert.equal(res.body.uuid, tok.uuid);
        assert.equal(res.body.name, 'whoami');
        assert.match(res.body.last_used_at, ISO_MS);
        const viaBasic = await t.req('GET', '/api/v1/api-tokens/self', {
          token: null,
          headers: { authorization: `Basic ${Buffer.from(`:${tok.token}`).toString('base64')}` },
        });
        assert.equal(viaBasic.body.uuid, tok.uuid);
      });

      it("one's own token by uuid; someone else's is 404 unless staff", async () => {
        const tok = await create(alice.token, { name: 'mine' });
        assert.equal((await t.req('GET', `/api/v1/api-tokens/${tok.uuid}`, { token: alice.token })).body.name, 'mine');
        await refused(404, 'not_found', 'GET', `/api/v1/api-tokens/${tok.uuid}`, { token: bob.token });
        const staff = await t.req('GET', `/api/v1/api-tokens/${tok.uuid}`);
        assert.equal(staff.status, 200);
        assert.equal(staff.body.username, 'alice');
        await refused(404, 'not_found', 'GET', '/api/v1/api-tokens/00000000-0000-4000-8000-000000000000', { token: alice.token });
        await refused(404, 'not_found', 'GET', '/api/v1/api-tokens/not-a-uuid', { token: alice.token });
        await refused(404, 'not_found', 'GET', '/api/v1/api-tokens/..%2Fself', { token: alice.token });
      });
    });

    describe('last_used_at', () => {
      it('is written on first use and then at most once a minute', async () => {
        const tok = await create(alice.token, { name: 'usage' });
        const stored = async () =>
          (await t.deps.db.selectFrom('api_tokens').select('last_used_at').where('uuid', '=', tok.uuid).executeTakeFirstOrThrow())
            .last_used_at;
        assert.equal(await stored(), null);
        await t.req('GET', '/api/v1/user', { token: tok.token });
        const first = await stored();
        assert.match(String(first), ISO_MS);
        await sleep(5);
        await t.req('GET', '/api/v1/user', { token: tok.token });
        assert.equal(await stored(), first, 'no write within the minute');

        const recent = new Date(Date.now() - 30_000).toISOString();
        await t.deps.db.updateTable('api_tokens').set({ last_used_at: recent }).where('uuid', '=', tok.uuid).execute();
        await t.req('GET', '/api/v1/user', { token: tok.token });
        assert.equal(await stored(), recent);

        const stale = new Date(Date.now() - 61_000).toISOString();
        await t.deps.db.updateTable('api_tokens').set({ last_used_at: stale }).where('uuid', '=', tok.uuid).execute();
        const startedAt = Date.now();
        await t.req('GET', '/api/v1/user', { token: tok.token });
        assert.ok(Date.parse(String(await stored())) >= startedAt - 5);
      });
    });

    describe('PUT /api-tokens/{uuid}/revoke', () => {
      it('revokes: 200 with revoked_at, then 401 everywhere; idempotent without a second event', async () => {
        const tok = await create(alice.token, { name: 'to-revoke' });
        const before = await countRows(t, 'events');
        const res = await t.req('PUT', `/api/v1/api-tokens/${tok.uuid}/revoke`, { token: alice.token });
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), TOKEN_KEYS);
        assert.match(res.body.revoked_at, ISO_MS);
        assert.equal(await countRows(t, 'events'), before + 1);
        const ev = (await events(alice.uuid, 'token-revoked')).at(-1)!;
        assert.equal(ev.payload.token_uuid, tok.uuid);

        for (const [method, url] of [
          ['GET', '/api/v1/user'],
          ['GET', '/api/v1/api-tokens/self'],
          ['GET', '/api/v1/api-tokens'],
          ['POST', '/api/v1/api-tokens'],
        ] as const) {
          const denied = await refused(401, 'unauthorized', method, url, {
            token: tok.token,
            body: method === 'POST' ? { name: 'x' } : undefined,
          });
          assert.equal(denied.headers['www-authenticate'], WWW);
        }
        const again = await t.req('PUT', `/api/v1/api-tokens/${tok.uuid}/revoke`, { token: alice.token });
        assert.equal(again.status, 200);
        assert.equal(again.body.revoked_at, res.body.revoked_at);
        assert.equal(await countRows(t, 'events'), before + 1);
        const listed = await t.req('GET', `/api/v1/api-tokens/${tok.uuid}`, { token: alice.token });
        assert.equal(listed.body.revoked_at, res.body.revoked_at);
      });

      it('concurrent revokes of one token: all 200 with the same revoked_at, one event', async () => {
        for (let round = 0; round < 5; round++) {
          const tok = await create(alice.token, { name: `race-${round}` });
          const before = await countRows(t, 'events');
          const results = await Promise.all(
            Array.from({ length: 4 }, () => t.req('PUT', `/api/v1/api-tokens/${tok.uuid}/revoke`, { token: alice.token })),
          );
          assert.deepEqual(
            results.map((r) => r.status),
            [200, 200, 200, 200],
          );
          assert.equal(new Set(results.map((r) => r.body.revoked_at)).size, 1, 'one revoked_at');
          const stored = await t.deps.db
            .selectFrom('api_tokens')
            .select('revoked_at')
            .where('uuid', '=', tok.uuid)
            .executeTakeFirstOrThrow();
          assert.equal(stored.revoked_at, results[0]!.body.revoked_at);
          assert.equal(await countRows(t, 'events'), before + 1, 'one token-revoked event');
        }
      });

      it('a token can revoke itself; the next request is 401', async () => {
        const tok = await create(alice.token, { name: 'suicide' });
        const res = await t.req('PUT', `/api/v1/api-tokens/${tok.uuid}/revoke`, { token: tok.token });
        assert.equal(res.status, 200);
        assert.equal((await t.req('GET', '/api/v1/user', { token: tok.token })).status, 401);
      });

      it("someone else's token is 404 for non-staff (unchanged, no event); staff may revoke it", async () => {
        const tok = await create(alice.token, { name: 'guarded' });
        await refused(404, 'not_found', 'PUT', `/api/v1/api-tokens/${tok.uuid}/revoke`, { token: bob.token });
        assert.equal((await t.req('GET', '/api/v1/user', { token: tok.token })).status, 200);
        const staff = await t.req('PUT', `/api/v1/api-tokens/${tok.uuid}/revoke`);
        assert.equal(staff.status, 200);
        assert.equal((await t.req('GET', '/api/v1/user', { token: tok.token })).status, 401);
        const ev = (await events(alice.uuid, 'token-revoked')).at(-1)!;
        assert.equal(ev.actor?.username, 'admin');
        await refused(404, 'not_found', 'PUT', '/api/v1/api-tokens/00000000-0000-4000-8000-000000000000/revoke', {
          token: bob.token,
        });
      });

      it('takes no body: an empty object is fine, anything else is 400 and changes nothing', async () => {
        const tok = await create(alice.token, { name: 'nobody-body' });
        for (const rawBody of ['{"reason":"x"}', '[]', '"x"', '{"revoked_at":null}']) {
          await refused(400, 'invalid_request', 'PUT', `/api/v1/api-tokens/${tok.uuid}/revoke`, {
            token: alice.token,
            rawBody,
            headers: { 'content-type': 'application/json' },
          });
          await refused(400, 'invalid_request', 'DELETE', `/api/v1/api-tokens/${tok.uuid}`, {
            token: alice.token,
            rawBody,
            headers: { 'content-type': 'application/json' },
          });
        }
        assert.equal((await t.req('GET', '/api/v1/user', { token: tok.token })).status, 200);
        const res = await t.req('PUT', `/api/v1/api-tokens/${tok.uuid}/revoke`, { token: alice.token, body: {} });
        assert.equal(res.status, 200);
        assert.notEqual(res.body.revoked_at, null);
        assert.equal((await t.req('DELETE', `/api/v1/api-tokens/${tok.uuid}`, { token: alice.token, body: {} })).status, 204);
      });
    });

    describe('DELETE /api-tokens/{uuid}', () => {
      it('204, the token stops working, the record is gone, token-deleted is emitted', async () => {
        const tok = await create(alice.token, { name: 'to-delete' });
        const before = await snapshot(t);
        const res = await t.req('DELETE', `/api/v1/api-tokens/${tok.uuid}`, { token: alice.token });
        assert.equal(res.status, 204);
        assert.equal(res.text, '');
        const after = await snapshot(t);
        assert.equal(after.tokens, before.tokens - 1);
        assert.equal(after.events, before.events + 1);
        const ev = (await events(alice.uuid, 'token-deleted')).at(-1)!;
        assert.equal(ev.payload.token_uuid, tok.uuid);
        const denied = await refused(401, 'unauthorized', 'GET', '/api/v1/user', { token: tok.token });
        assert.equal(denied.headers['www-authenticate'], WWW);
        await refused(404, 'not_found', 'GET', `/api/v1/api-tokens/${tok.uuid}`, { token: alice.token });
        await refused(404, 'not_found', 'DELETE', `/api/v1/api-tokens/${tok.uuid}`, { token: alice.token });
      });

      it('concurrent deletes of one token: one 204, the others 404, one event', async () => {
        for (let round = 0; round < 5; round++) {
          const tok = await create(alice.token, { name: `gone-${round}` });
          const before = await countRows(t, 'events');
          const results = await Promise.all(
            Array.from({ length: 4 }, () => t.req('DELETE', `/api/v1/api-tokens/${tok.uuid}`, { token: alice.token })),
          );
          assert.deepEqual(results.map((r) => r.status).sort(), [204, 404, 404, 404]);
          for (const r of results.filter((x) => x.status === 404)) assert.ok(isErrorBody(r.body, 'not_found'), r.text);
          assert.equal(await countRows(t, 'events'), before + 1, 'one token-deleted event');
        }
      });

      it("someone else's token is 404 for non-staff and stays; staff may delete it", async () => {
        const tok = await create(alice.token, { name: 'keep' });
        await refused(404, 'not_found', 'DELETE', `/api/v1/api-tokens/${tok.uuid}`, { token: bob.token });
        assert.equal((await t.req('GET', '/api/v1/user', { token: tok.token })).status, 200);
        assert.equal((await t.req('DELETE', `/api/v1/api-tokens/${tok.uuid}`)).status, 204);
        assert.equal((await t.req('GET', '/api/v1/user', { token: tok.token })).status, 401);
      });
    });

    describe('expiry', () => {
      it('an expired token is 401; one that expires later works', async () => {
        const tok = await create(alice.token, { name: 'short', expires_at: new Date(Date.now() + 3_600_000).toISOString() });
        assert.equal((await t.req('GET', '/api/v1/user', { token: tok.token })).status, 200);
        // set-up: move the expiry into the past (the API refuses a past expires_at)
        await t.deps.db
          .updateTable('api_tokens')
          .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
          .where('uuid', '=', tok.uuid)
          .execute();
        const res = await refused(401, 'unauthorized', 'GET', '/api/v1/api-tokens/self', { token: tok.token });
        assert.equal(res.headers['www-authenticate'], WWW);
        const listed = await t.req('GET', `/api/v1/api-tokens/${tok.uuid}`, { token: alice.token });
        assert.equal(listed.status, 200, 'the record of an expired token stays readable');
      });
    });
  });
}
