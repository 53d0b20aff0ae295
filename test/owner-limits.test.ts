/**
 * Issue 30, item 2: per-owner limits on what a user can make without bound, as site settings
 * (unfinished timers per owner, versions per reply), and a page of versions bounded in size.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';

for (const dialect of DIALECTS) {
  describe(`per-owner limits (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string; username: string };
    const base = '/api/v1/teams/lim/repos/notes';
    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      const team = await seedTeam(t, 'lim', [{ uuid: alice.uuid, role: 'owner' }]);
      await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'notes');
    });
    after(() => t.close());
    beforeEach(async () => {
      const res = await t.req('PUT', '/api/v1/site-settings', { body: { max_timers_per_owner: 1000, max_reply_versions: 1000 } });
      assert.equal(res.status, 200, res.text);
    });

    const settings = (body: Record<string, unknown>, token = t.adminToken) =>
      t.req('PUT', '/api/v1/site-settings', { token, body });
    const count = async (table: 'timers' | 'reply_versions' | 'events') =>
      Number(
        (
          await t.deps.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    it('the limits are site settings: defaults 1000, staff only, bad values 400', async () => {
      const got = await t.req('GET', '/api/v1/site-settings');
      assert.equal(got.body.max_timers_per_owner, 1000);
      assert.equal(got.body.max_reply_versions, 1000);
      assert.equal((await settings({ max_timers_per_owner: 5 }, alice.token)).status, 403);
      for (const body of [
        { max_timers_per_owner: -1 },
        { max_timers_per_owner: 1.5 },
        { max_timers_per_owner: 1_000_001 },
        { max_reply_versions: 0 },
        { max_reply_versions: 'many' },
      ]) {
        const res = await settings(body);
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.ok(isErrorBody(res.body, 'invalid_request'));
      }
      assert.equal((await t.req('GET', '/api/v1/site-settings')).body.max_timers_per_owner, 1000);
      const set = await settings({ max_timers_per_owner: 7, max_reply_versions: 9 });
      assert.equal(set.status, 200);
      assert.equal(set.body.max_timers_per_owner, 7);
      assert.equal(set.body.max_reply_versions, 9);
    });

    it('an owner holds at most max_timers_per_owner unfinished timers, exactly, under parallel creates', async () => {
      assert.equal((await settings({ max_timers_per_owner: 5 })).status, 200);
      const path = '/api/v1/users/alice/timers';
      const made = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          t.req('POST', path, { token: alice.token, body: { message: `t${i}`, run_in: '1h' } }),
        ),
      );
      assert.equal(made.filter((r) => r.status === 201).length, 5);
      const refusedOnes = made.filter((r) => r.status !== 201);
      assert.equal(refusedOnes.length, 7);
      for (const r of refusedOnes) {
        assert.equal(r.status, 409, r.text);
        assert.ok(isErrorBody(r.body, 'limit_reached'));
        assert.match(r.body.detail, /max_timers_per_owner/);
      }
      const timers = await count('timers');
      const events = await count('events');
      const again = await t.req('POST', path, {
        token: alice.token,
        body: { message: 'one more', run_in: '1h', status: 'paused' },
      });
      assert.equal(again.status, 409, 'paused timers count too');
      assert.deepEqual([await count('timers'), await count('events')], [timers, events], 'a refused create changes nothing');
      // another owner has its own count
      const team = await t.req('POST', '/api/v1/teams/lim/timers', {
        token: alice.token,
        body: { message: 'team', run_in: '1h' },
      });
      assert.equal(team.status, 201, team.text);
      // a cancelled timer no longer counts
      const one = made.find((r) => r.status === 201)!.body.uuid as string;
      assert.equal((await t.req('PATCH', `${path}/${one}`, { token: alice.token, body: { status: 'cancelled' } })).status, 200);
      assert.equal((await t.req('POST', path, { token: alice.token, body: { message: 'room', run_in: '1h' } })).status, 201);
      assert.equal((await t.req('POST', path, { token: alice.token, body: { message: 'full', run_in: '1h' } })).status, 409);
    });

    it('a reply holds at most max_reply_versions versions', async () => {
      const thread = await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'Edits' } });
      assert.equal(thread.status, 201, thread.text);
      const url = `${base}/threads/${thread.body.number}/replies`;
      assert.equal((await t.req('POST', url, { token: alice.token, body: { body: 'v1' } })).status, 201);
      assert.equal((await settings({ max_reply_versions: 3 })).status, 200);
      for (const body of ['v2', 'v3'])
        assert.equal((await t.req('PATCH', `${url}/1`, { token: alice.token, body: { body } })).status, 200);
      const before = [await count('reply_versions'), await count('events')];
      const refused = await t.req('PATCH', `${url}/1`, { token: alice.token, body: { body: 'v4' } });
      assert.equal(refused.status, 409, refused.text);
      assert.ok(isErrorBody(refused.body, 'limit_reached'));
      assert.match(refused.body.detail, /max_reply_versions/);
      assert.deepEqual([await count('reply_versions'), await count('events')], before);
      assert.equal((await t.req('GET', `${url}/1`, { token: alice.token })).body.body, 'v3');
      // a PATCH that changes nothing is still fine
      assert.equal((await t.req('PATCH', `${url}/1`, { token: alice.token, body: { body: 'v3' } })).status, 200);
    });

    it('a page of versions is bounded in size; its next link continues without a gap or a repeat', async () => {
      const thread = await t.req('POST', `${base}/threads`, { token: alice.token, body: { title: 'Big edits' } });
      const url = `${base}/threads/${thread.body.number}/replies`;
      const big = (i: number) => `${String(i).padStart(4, '0')} ${'lorem ipsum '.repeat(5400)}`; // about 64 KB
      assert.equal((await t.req('POST', url, { token: alice.token, body: { body: big(1) } })).status, 201);
      for (let i = 2; i <= 24; i++) {
        const res = await t.req('PATCH', `${url}/1`, { token: alice.token, body: { body: big(i) } });
        assert.equal(res.status, 200, res.text.slice(0, 200));
      }
      let next: string | null = `${url}/1/versions?per_page=100`;
      const seen: number[] = [];
      let pages = 0;
      while (next !== null) {
        const res = await t.req('GET', next, { token: alice.token });
        assert.equal(res.status, 200, res.text.slice(0, 200));
        assert.ok(res.text.length < 1_600_000, `a page of ${res.text.length} bytes`);
        assert.ok(res.body.results.length >= 1);
        seen.push(...res.body.results.map((v: { version: number }) => v.version));
        next = res.body.next;
        if (next !== null) assert.match(next, /after_version=\d+/);
        pages++;
        assert.ok(pages < 30);
      }
      assert.ok(pages >= 2, 'the versions did not fit one page');
      assert.deepEqual(
        seen,
        Array.from({ length: 24 }, (_, i) => i + 1),
      );
      const bad = await t.req('GET', `${url}/1/versions?after_version=-1`, { token: alice.token });
      assert.equal(bad.status, 400);
    });
  });
}
