import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { EventRecord } from '../src/events/service.ts';
import { inTransaction } from '../src/core/transaction.ts';
import { ISO_MS, countRows } from './foundation-helpers.ts';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import type { Person } from './common.ts';

const EVENT_KEYS = ['actor', 'created_at', 'id', 'kind', 'payload', 'scopes'];

for (const dialect of DIALECTS) {
  describe(`events (${dialect})`, () => {
    let t: TestApp;
    let people = 0;
    const idsOf = (body: { results: Array<{ id: string }> }) => body.results.map((e) => Number(e.id));

    /**
     * Two new users for one test, so every test builds what it asserts and runs alone or in any
     * order. With `events` (the default) alice gets 33 more events (35 in all, with user-created
     * and her first token-created) interleaved with bob's, so the scope filter matters.
     */
    const seeded = async ({ events = true } = {}) => {
      const n = ++people;
      const alice: Person = await t.user(`alice${n}`);
      const bob: Person = await t.user(`bob${n}`);
      const scope = `user:${alice.uuid}`;
      /** every event id in alice's scope, ascending */
      const aliceIds = async () =>
        (
          await t.deps.db.selectFrom('event_scopes').select('event_id').where('scope', '=', scope).orderBy('event_id').execute()
        ).map((r) => Number(r.event_id));
      for (let i = 0; events && i < 33; i++) {
        await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: `a${i}` } });
        if (i % 3 === 0) await t.req('POST', '/api/v1/api-tokens', { token: bob.token, body: { name: `b${i}` } });
      }
      const get = (url: string, token = alice.token) => t.req('GET', url, { token });
      /**
       * Alice's event ids once the API shows the newest: on PostgreSQL a reader sees events below
       * the settled bound only, which any older transaction still running in the same database
       * (another test file's, say) holds back for a moment.
       */
      const settledIds = async () => {
        const all = await aliceIds();
        for (let i = 0; ; i++) {
          const newest = await get(`/api/v1/events?scope=${scope}&per_page=1`);
          if (Number(newest.body.results.at(-1)?.id) === all.at(-1)) return all;
          assert.ok(i < 200, 'the newest event becomes visible within 10 s');
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      const ids = await settledIds();
      if (events) assert.equal(ids.length, 35);
      const q = (params: Record<string, string | number>) =>
        `/api/v1/events?${new URLSearchParams(Object.entries({ scope, ...params }).map(([k, v]) => [k, String(v)]))}`;
      return { alice, bob, scope, ids, settledIds, get, q };
    };

    before(async () => {
      t = await startApp(dialect);
    });
    after(() => t.close());

    it('an event is {id, kind, scopes, actor, payload, created_at}; id is a decimal string', async () => {
      const { alice, scope, get, q } = await seeded();
      const res = await get(q({ per_page: 1 }));
      assert.equal(res.status, 200);
      const [event] = res.body.results;
      assert.deepEqual(Object.keys(event).sort(), EVENT_KEYS);
      assert.match(event.id, /^\d+$/);
      assert.equal(event.kind, 'token-created');
      assert.deepEqual(event.scopes, [scope]);
      assert.deepEqual(event.actor, { uuid: alice.uuid, username: alice.username });
      assert.equal(event.payload.name, 'a32');
      assert.match(event.created_at, ISO_MS);
    });

    it('no cursor: the newest per_page (default 30) events, ascending; previous set, next null', async () => {
      const { scope, ids, get, q } = await seeded();
      const res = await get(q({}));
      assert.equal(res.status, 200);
      assert.deepEqual(Object.keys(res.body).sort(), ['next', 'previous', 'results']);
      assert.deepEqual(idsOf(res.body), ids.slice(-30));
      assert.equal(res.body.next, null);
      const prev = new URL(res.body.previous, 'http://x');
      assert.equal(prev.pathname, '/api/v1/events');
      assert.deepEqual(Object.fromEntries(prev.searchParams), { scope, before_id: String(ids.at(-30)), per_page: '30' });
      assert.equal(res.headers.link, `<${t.deps.config.publicUrl}${res.body.previous}>; rel="prev"`);
    });

    it('before_id=X: the per_page events just before X; after_id=X: just after X', async () => {
      const { scope, ids, get, q } = await seeded();
      const x = ids[20]!;
      const before = await get(q({ before_id: x, per_page: 5 }));
      assert.deepEqual(idsOf(before.body), ids.slice(15, 20));
      assert.ok(before.body.next && before.body.previous);
      const afterRes = await get(q({ after_id: x, per_page: 5 }));
      assert.deepEqual(idsOf(afterRes.body), ids.slice(21, 26));
      const base = t.deps.config.publicUrl;
      assert.equal(
        afterRes.headers.link,
        `<${base}${afterRes.body.previous}>; rel="prev", <${base}${afterRes.body.next}>; rel="next"`,
      );
      const next = new URL(afterRes.body.next, 'http://x');
      assert.deepEqual(Object.fromEntries(next.searchParams), { scope, after_id: String(ids[25]), per_page: '5' });
      const prev = new URL(afterRes.body.previous, 'http://x');
      assert.deepEqual(Object.fromEntries(prev.searchParams), { scope, before_id: String(ids[21]), per_page: '5' });
      // a cursor need not be an id of this scope
      const k = ids.findIndex((id, i) => i + 1 < ids.length && ids[i + 1]! - id > 1);
      assert.ok(k >= 0, "bob's events leave gaps in alice's ids");
      const between = await get(q({ after_id: ids[k]! + 1, per_page: 2 }));
      assert.deepEqual(idsOf(between.body), ids.slice(k + 1, k + 3));
    });

    it('following previous from the newest page visits every event once, then previous is null', async () => {
      const { ids, get, q } = await seeded();
      const seen: number[] = [];
      let url: string | null = q({ per_page: 7 });
      let pages = 0;
      let last: { next: string | null; previous: string | null } | null = null;
      while (url) {
        const res = await get(url);
        assert.equal(res.status, 200);
        const pageIds = idsOf(res.body);
        assert.deepEqual(
          pageIds,
          [...pageIds].sort((a, b) => a - b),
          'each page ascends',
        );
        seen.unshift(...pageIds);
        last = res.body;
        url = res.body.previous;
        pages++;
        assert.ok(pages < 20);
      }
      assert.deepEqual(seen, ids);
      assert.equal(pages, 5);
      assert.equal(last?.previous, null);
      assert.notEqual(last?.next, null);
    });

    it('following next from the start visits every event once, then next is null', async () => {
      const { ids, get, q } = await seeded();
      const seen: number[] = [];
      let url: string | null = q({ after_id: 0, per_page: 8 });
      let res = await get(url);
      assert.equal(res.body.previous, null, 'nothing is older than the first page');
      while (url) {
        res = await get(url);
        seen.push(...idsOf(res.body));
        url = res.body.next;
      }
      assert.deepEqual(seen, ids);
      assert.equal(res.body.next, null);
      assert.notEqual(res.body.previous, null);
    });

    it('empty pages at either end point back to the events', async () => {
      const { ids, get, q } = await seeded();
      const older = await get(q({ before_id: ids[0]!, per_page: 4 }));
      assert.deepEqual(older.body.results, []);
      assert.equal(older.body.previous, null);
      assert.notEqual(older.body.next, null);
      assert.deepEqual(idsOf((await get(older.body.next)).body), ids.slice(0, 4));

      const newer = await get(q({ after_id: ids.at(-1)!, per_page: 4 }));
      assert.deepEqual(newer.body.results, []);
      assert.equal(newer.body.next, null);
      assert.notEqual(newer.body.previous, null);
      assert.deepEqual(idsOf((await get(newer.body.previous)).body), ids.slice(-4));

      const before0 = await get(q({ before_id: 0 }));
      assert.deepEqual(before0.body.results, []);
      assert.equal(before0.body.previous, null);
      // everything is newer than "before 0": next is a cursor the API accepts, and leads there
      assert.notEqual(before0.body.next, null);
      const fromStart = await get(before0.body.next);
      assert.equal(fromStart.status, 200, fromStart.text);
      assert.deepEqual(idsOf(fromStart.body), ids.slice(0, 30));
      assert.equal(fromStart.body.previous, null);
      // the largest cursor the API accepts: previous is a cursor it accepts too
      const farAfter = await get(q({ after_id: '999999999999999', per_page: 4 }));
      assert.deepEqual(farAfter.body.results, []);
      assert.equal(farAfter.body.next, null);
      const back = await get(farAfter.body.previous);
      assert.equal(back.status, 200, back.text);
      assert.deepEqual(idsOf(back.body), ids.slice(-4));
    });

    it('a new event shows up after the last cursor; next is null only while nothing newer exists', async () => {
      const { alice, get, q } = await seeded();
      const newest = await get(q({ per_page: 3 }));
      assert.equal(newest.body.next, null);
      const lastId = idsOf(newest.body).at(-1)!;
      const created = await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'fresh' } });
      const stale = await get(q({ before_id: lastId + 1, per_page: 3 }));
      assert.notEqual(stale.body.next, null, 'something newer exists now');
      const res = await get(q({ after_id: lastId }));
      assert.equal(res.body.results.length, 1);
      assert.equal(res.body.results[0].payload.token_uuid, created.body.uuid);
      assert.equal(res.body.next, null);
    });

    it('kind filters, and the cursors keep the filter', async () => {
      const { alice, get, q } = await seeded({ events: false });
      await t.req('PUT', `/api/v1/users/${alice.username}`, { token: alice.token, body: { display_name: 'Alice' } });
      await t.req('PUT', `/api/v1/users/${alice.username}`, { token: alice.token, body: { display_name: 'Alice 2' } });
      await t.req('PUT', `/api/v1/users/${alice.username}`, { token: alice.token, body: { display_name: 'Alice 3' } });
      const res = await get(q({ kind: 'user-updated', per_page: 2 }));
      assert.deepEqual(
        res.body.results.map((e: { kind: string }) => e.kind),
        ['user-updated', 'user-updated'],
      );
      assert.equal(new URL(res.body.previous, 'http://x').searchParams.get('kind'), 'user-updated');
      const older = await get(res.body.previous);
      assert.equal(older.body.results.length, 1);
      assert.equal(older.body.results[0].payload.fields[0], 'display_name');
      assert.equal(older.body.previous, null);
      const none = await get(q({ kind: 'no-such-kind' }));
      assert.deepEqual(none.body, { results: [], next: null, previous: null });
    });

    it('per_page: default 30, clamped at 100, below 1 or not an integer is 400', async () => {
      const { alice, settledIds, get, q } = await seeded();
      for (let i = 0; i < 70; i++) await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: `bulk${i}` } });
      const ids = await settledIds();
      assert.ok(ids.length > 100);
      const res = await get(q({ per_page: 500 }));
      assert.deepEqual(idsOf(res.body), ids.slice(-100));
      assert.equal(new URL(res.body.previous, 'http://x').searchParams.get('per_page'), '100');
      for (const bad of ['0', '-1', '1.5', 'x', '']) {
        const r = await get(q({ per_page: bad }));
        assert.equal(r.status, 400, bad);
        assert.ok(isErrorBody(r.body, 'invalid_request'));
      }
    });

    it('malformed cursors, both cursors at once, and a missing scope are 400', async () => {
      const { get, q } = await seeded({ events: false });
      for (const params of <Array<Record<string, string | number>>>[
        { before_id: 'abc' },
        { after_id: '-1' },
        { after_id: '1.5' },
        { before_id: '12345678901234567' },
        { after_id: '' },
        { before_id: 5, after_id: 1 },
      ]) {
        const r = await get(q(params));
        assert.equal(r.status, 400, JSON.stringify(params));
        assert.ok(isErrorBody(r.body, 'invalid_request'));
      }
      const missing = await get('/api/v1/events');
      assert.equal(missing.status, 400);
      assert.match(missing.body.detail, /scope/);
    });

    it('a malformed scope is 400; an unknown or invisible one 404', async () => {
      const { alice, bob, get } = await seeded();
      for (const s of [
        '',
        'user',
        'user:',
        'user:nope',
        `foo:${alice.uuid}`,
        `USER:${alice.uuid}`,
        `user:${alice.uuid.toUpperCase()}`,
        `${alice.uuid}`,
        `user:${alice.uuid}:x`,
        `user: ${alice.uuid}`,
      ]) {
        const r = await get(`/api/v1/events?scope=${encodeURIComponent(s)}`);
        assert.equal(r.status, 400, s);
        assert.ok(isErrorBody(r.body, 'invalid_request'));
      }
      const team = await seedTeam(t, 'crew', [{ uuid: bob.uuid, role: 'reader' }]);
      const repo = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'secret', { visibility: 'private' });
      const publicRepo = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'open', { visibility: 'public' });
      for (const s of [
        `user:${bob.uuid}`,
        `user:${randomUUID()}`,
        `team:${team.uuid}`,
        `team:${randomUUID()}`,
        `repo:${repo.uuid}`,
        `thread:${randomUUID()}`,
        `timer:${randomUUID()}`,
      ]) {
        const r = await get(`/api/v1/events?scope=${s}`);
        assert.equal(r.status, 404, s);
        assert.ok(isErrorBody(r.body, 'not_found'));
      }
      assert.equal((await get(`/api/v1/events?scope=repo:${publicRepo.uuid}`)).status, 200);
      assert.equal((await get(`/api/v1/events?scope=team:${team.uuid}`, bob.token)).status, 200);
      assert.equal((await get(`/api/v1/events?scope=repo:${repo.uuid}`, bob.token)).status, 200);
      // staff read any user scope
      const staff = await get(`/api/v1/events?scope=user:${bob.uuid}`, t.adminToken);
      assert.equal(staff.status, 200);
      assert.ok(staff.body.results.length >= 2);
      assert.equal((await get(`/api/v1/events?scope=user:${randomUUID()}`, t.adminToken)).status, 404);
    });

    describe('GET /events/{id}', () => {
      it('200 when the caller may read one of its scopes, else 404', async () => {
        const { bob, ids, get } = await seeded({ events: false });
        const own = ids[0]!;
        const res = await get(`/api/v1/events/${own}`);
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), EVENT_KEYS);
        assert.equal(res.body.id, String(own));
        assert.equal(res.body.kind, 'user-created');
        assert.equal(res.body.actor.username, 'admin');

        const bobsId = (await get(`/api/v1/events?scope=user:${bob.uuid}&per_page=1`, bob.token)).body.results[0].id;
        const hidden = await get(`/api/v1/events/${bobsId}`);
        assert.equal(hidden.status, 404);
        assert.ok(isErrorBody(hidden.body, 'not_found'));
        assert.equal((await get(`/api/v1/events/${bobsId}`, t.adminToken)).status, 200);

        for (const id of ['999999999', '0', 'abc', '-1', '1.0', '1e3', '9'.repeat(40)]) {
          const r = await get(`/api/v1/events/${id}`);
          assert.equal(r.status, id.length > 40 ? 400 : 404, id);
        }
      });

      it('an event with several scopes is visible through any of them', async () => {
        const { alice, bob, get } = await seeded({ events: false });
        const event = await inTransaction(t.deps, (tx) =>
          tx.emit({ kind: 'user-mention', scopes: [`user:${alice.uuid}`, `user:${bob.uuid}`], actor: null, payload: { n: 1 } }),
        );
        for (const token of [alice.token, bob.token, t.adminToken]) {
          const r = await get(`/api/v1/events/${event.id}`, token);
          assert.equal(r.status, 200);
          assert.deepEqual(r.body.scopes, [`user:${alice.uuid}`, `user:${bob.uuid}`]);
          assert.equal(r.body.actor, null);
        }
        const carol = await t.user('carol');
        assert.equal((await get(`/api/v1/events/${event.id}`, carol.token)).status, 404);
      });
    });

    describe('outbox', () => {
      it('a change and its event commit together, and are published only after commit', async () => {
        const { alice, get } = await seeded({ events: false });
        const published: EventRecord[] = [];
        const unsubscribe = t.deps.bus.subscribe((e) => published.push(e));
        try {
          const tokensBefore = await countRows(t, 'api_tokens');
          const eventsBefore = await countRows(t, 'events');
          await assert.rejects(
            inTransaction(t.deps, async (tx) => {
              await tx.db
                .insertInto('api_tokens')
                .values({
                  uuid: randomUUID(),
                  user_uuid: alice.uuid,
                  name: 'doomed',
                  token_hash: 'f'.repeat(64),
                  expires_at: null,
                  created_at: new Date().toISOString(),
                  last_used_at: null,
                  revoked_at: null,
                })
                .execute();
              await tx.emit({ kind: 'token-created', scopes: [`user:${alice.uuid}`], actor: null, payload: {} });
              throw new Error('refused after the event was emitted');
            }),
          );
          assert.equal(await countRows(t, 'api_tokens'), tokensBefore);
          assert.equal(await countRows(t, 'events'), eventsBefore);
          assert.equal(published.length, 0);

          const res = await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'published' } });
          assert.equal(published.length, 1);
          assert.equal(published[0]!.kind, 'token-created');
          assert.equal(published[0]!.payload.token_uuid, res.body.uuid);
          const stored = await get(`/api/v1/events/${published[0]!.id}`);
          assert.equal(stored.status, 200);
        } finally {
          unsubscribe();
        }
      });

      it('refused token changes write no event', async () => {
        const { alice, bob } = await seeded({ events: false });
        const tok = (await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'kept' } })).body;
        const before = await countRows(t, 'events');
        assert.equal(
          (await t.req('POST', '/api/v1/api-tokens', { token: bob.token, body: { name: 'x', username: alice.username } })).status,
          403,
        );
        assert.equal((await t.req('PUT', `/api/v1/api-tokens/${tok.uuid}/revoke`, { token: bob.token })).status, 404);
        assert.equal((await t.req('DELETE', `/api/v1/api-tokens/${tok.uuid}`, { token: bob.token })).status, 404);
        assert.equal(
          (
            await t.req('POST', '/api/v1/api-tokens', {
              token: bob.token,
              body: { name: 'x', expires_at: '2000-01-01T00:00:00Z' },
            })
          ).status,
          400,
        );
        assert.equal(await countRows(t, 'events'), before);
      });
    });
  });
}
