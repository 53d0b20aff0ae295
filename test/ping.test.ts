import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Person, assertRefused, eventResults } from './common.ts';
import { seedTeam } from './fixtures.ts';
import { ISO_MS } from './foundation-helpers.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';

/** POST /users/{username}/ping (README "User ping"). */
for (const dialect of DIALECTS) {
  describe(`POST /users/{username}/ping (${dialect})`, () => {
    let t: TestApp;
    let alice: Person;
    let bob: Person;
    let carol: Person;
    const ping = (who: string, token: string, body?: unknown) =>
      t.req('POST', `/api/v1/users/${who}/ping`, body === undefined ? { token } : { token, body });
    const setPings = async (p: Person, value: string) =>
      assert.equal(
        (await t.req('PUT', `/api/v1/users/${p.username}`, { token: p.token, body: { ping_mentions: value } })).status,
        200,
      );

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
      await seedTeam(t, 'pingers', [
        { uuid: alice.uuid, role: 'owner' },
        { uuid: bob.uuid, role: 'member' },
      ]);
    });
    after(() => t.close());

    it('201 with the rendered payload; the user-mention event is in the target user scope', async () => {
      const res = await ping('BOB', alice.token, { body: 'hello **there** @carol <script>x</script>' });
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(Object.keys(res.body).sort(), ['body', 'body_html', 'created_at', 'event_id', 'from', 'kind', 'to']);
      assert.equal(res.body.kind, 'user-mention');
      assert.deepEqual(res.body.from, { uuid: alice.uuid, username: 'alice' });
      assert.deepEqual(res.body.to, { uuid: bob.uuid, username: 'bob' });
      assert.equal(res.body.body, 'hello **there** @carol <script>x</script>');
      assert.match(res.body.body_html, /<strong>there<\/strong>/);
      assert.match(res.body.body_html, /<a href="\/users\/carol" class="mention"/);
      assert.ok(!/<script/i.test(res.body.body_html));
      assert.match(res.body.created_at, ISO_MS);
      const events = await eventResults(t, `user:${bob.uuid}`, bob.token, 'user-mention');
      const event = events.find((e) => e.id === res.body.event_id)!;
      assert.ok(event, 'the event is readable by the target');
      assert.deepEqual(event.scopes, [`user:${bob.uuid}`]);
      assert.deepEqual(event.actor, { uuid: alice.uuid, username: 'alice' });
      assert.equal(event.payload.body_html, res.body.body_html);
      assert.equal((await t.req('GET', `/api/v1/events/${res.body.event_id}`, { token: carol.token })).status, 404);
    });

    it('a bare ping: no body, or an empty one', async () => {
      for (const body of [undefined, {}, { body: '' }]) {
        const res = await ping('bob', alice.token, body);
        assert.equal(res.status, 201, res.text);
        assert.equal(res.body.body, '');
        assert.equal(res.body.body_html, '');
      }
    });

    it('1,000 characters are allowed; more is 400 and changes nothing', async () => {
      assert.equal((await ping('bob', alice.token, { body: 'é'.repeat(1000) })).status, 201);
      await assertRefused(t, 400, 'invalid_request', 'POST', '/api/v1/users/bob/ping', {
        token: alice.token,
        body: { body: 'x'.repeat(1001) },
      });
      await assertRefused(t, 400, 'invalid_request', 'POST', '/api/v1/users/bob/ping', { token: alice.token, body: { body: 5 } });
      await assertRefused(t, 400, 'invalid_request', 'POST', '/api/v1/users/bob/ping', {
        token: alice.token,
        body: { body: 'x', extra: 1 },
      });
    });

    it('404 for an unknown or inactive user', async () => {
      await assertRefused(t, 404, 'not_found', 'POST', '/api/v1/users/nobody/ping', { token: alice.token, body: {} });
      const gone = await t.user('gone');
      assert.equal((await t.req('PUT', '/api/v1/users/gone', { body: { is_active: false } })).status, 200);
      await assertRefused(t, 404, 'not_found', 'POST', '/api/v1/users/gone/ping', { token: alice.token, body: {} });
      await assertRefused(t, 404, 'not_found', 'POST', '/api/v1/users/gone/ping', { body: {} });
      void gone;
    });

    it("the target's ping_mentions: disabled refuses all, team_only refuses those sharing no team", async () => {
      await setPings(bob, 'disabled');
      await assertRefused(t, 403, 'ping_mentions_disabled', 'POST', '/api/v1/users/bob/ping', { token: alice.token, body: {} });
      await assertRefused(t, 403, 'ping_mentions_disabled', 'POST', '/api/v1/users/bob/ping', { token: carol.token, body: {} });
      await setPings(bob, 'team_only');
      assert.equal((await ping('bob', alice.token, { body: 'team mate' })).status, 201);
      await assertRefused(t, 403, 'ping_mentions_team_only', 'POST', '/api/v1/users/bob/ping', { token: carol.token, body: {} });
      await setPings(bob, 'everyone');
      assert.equal((await ping('bob', carol.token, {})).status, 201);
    });

    it('anonymous callers get 401', async () => {
      assert.equal((await t.req('POST', '/api/v1/users/bob/ping', { token: null, body: {} })).status, 401);
    });

    it('the api:ping-user rate limit applies (429)', async () => {
      const rule = await t.req('POST', '/api/v1/rate-limits', {
        body: { scope: 'api:ping-user', max_requests: 1, window_seconds: 60, is_enabled: true },
      });
      assert.equal(rule.status, 201, rule.text);
      assert.equal((await t.req('PUT', '/api/v1/site-settings', { body: { rate_limits_enabled: true } })).status, 200);
      const dave = await t.user('dave');
      assert.equal((await ping('bob', dave.token, {})).status, 201);
      const refused = await ping('bob', dave.token, {});
      assert.equal(refused.status, 429, refused.text);
    });
  });
}
