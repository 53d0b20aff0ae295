import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { inTransaction } from '../src/core/transaction.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { eventFrames, listen, openSse } from './sse-client.ts';

/**
 * Two server instances on one database must behave as one: what one writes the other serves,
 * revocations are seen at once, and per-repo counters and merge claims hold across instances.
 */
// Several instances are a PostgreSQL deployment (docs/behaviour.md "Serving and configuration"); SQLite serves one process.
for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`two instances on one database (${dialect})`, () => {
    let a: TestApp;
    let b: TestApp;
    before(async () => {
      const first = await startApp(dialect);
      a = first;
      b = await startApp(dialect, { store: first.store });
    });
    after(async () => {
      await b.close();
      await a.close();
    });

    it('an event created on one instance reaches a live subscriber of the other, in order', async () => {
      const me = (await a.req('GET', '/api/v1/user')).body.uuid as string;
      const sse = await openSse(await listen(b), `/api/v1/tail-events?scope=user:${me}&kind=user-mention`, b.adminToken);
      try {
        await sse.waitFor((f) => f.length >= 1);
        await new Promise((r) => setTimeout(r, 100));
        const made: string[] = [];
        for (let i = 0; i < 50; i++) {
          const e = await inTransaction(a.deps, (tx) =>
            tx.emit({ kind: 'user-mention', scopes: [`user:${me}`], actor: null, payload: { i } }),
          );
          made.push(e.id);
        }
        await sse.waitFor((f) => eventFrames(f).length >= made.length, 10_000);
        assert.deepEqual(
          eventFrames(sse.frames).map((f) => f.id),
          made,
        );
      } finally {
        sse.close();
      }
    });

    it('a live signal sent on one instance reaches the streams of both that asked for its kind, once, without an id', async () => {
      const me = (await a.req('GET', '/api/v1/user')).body.uuid as string;
      const path = `/api/v1/tail-events?scope=user:${me}`;
      const onB = await openSse(await listen(b), `${path}&kind=job-log`, b.adminToken);
      const onA = await openSse(await listen(a), `${path}&kind=job-log`, a.adminToken);
      const plain = await openSse(await listen(b), path, b.adminToken);
      try {
        for (const s of [onA, onB, plain]) await s.waitFor((f) => f.length >= 1);
        await new Promise((r) => setTimeout(r, 100));
        for (let i = 0; i < 5; i++) a.deps.bus.signal({ scope: `user:${me}`, kind: 'job-log', key: `k${i}`, data: { i } });
        const signals = (s: typeof onA) => s.frames.filter((f) => f.event === 'job-log');
        await onB.waitFor(() => signals(onB).length >= 5, 10_000);
        await onA.waitFor(() => signals(onA).length >= 5, 10_000);
        await new Promise((r) => setTimeout(r, 500));
        for (const s of [onA, onB]) {
          assert.deepEqual(
            signals(s).map((f) => JSON.parse(f.data).i),
            [0, 1, 2, 3, 4],
          );
          assert.ok(signals(s).every((f) => f.id === undefined));
        }
        assert.equal(signals(plain).length, 0, 'only to streams that asked for the kind');
      } finally {
        for (const s of [onA, onB, plain]) s.close();
      }
    });

    it('a token revoked on one instance is refused by the other at once', async () => {
      const alice = await a.user('mi-alice');
      assert.equal((await b.req('GET', '/api/v1/user', { token: alice.token })).status, 200);
      const self = await a.req('GET', '/api/v1/api-tokens/self', { token: alice.token });
      assert.equal((await a.req('PUT', `/api/v1/api-tokens/${self.body.uuid}/revoke`, { token: alice.token })).status, 200);
      const res = await b.req('GET', '/api/v1/user', { token: alice.token });
      assert.equal(res.status, 401);
      assert.equal(res.body.error, 'unauthorized');
    });

    it('a team created on one instance is served, with its events, by the other', async () => {
      const created = await a.req('POST', '/api/v1/teams', { body: { name: 'Multi', slug: 'multi' } });
      assert.equal(created.status, 201);
      const got = await b.req('GET', '/api/v1/teams/multi');
      assert.equal(got.status, 200);
      assert.equal(got.body.uuid, created.body.uuid);
      const events = await b.req('GET', `/api/v1/events?scope=team:${created.body.uuid}`);
      assert.equal(events.status, 200);
      assert.ok(events.body.results.some((e: { kind: string }) => e.kind === 'team-created'));
      const dup = await b.req('POST', '/api/v1/teams', { body: { name: 'Again', slug: 'multi' } });
      assert.equal(dup.status, 409);
      assert.equal(dup.body.error, 'slug_taken');
    });

    it('pull numbers stay unique and gap-free when created through both instances at once', async () => {
      const team = await a.req('POST', '/api/v1/teams', { body: { name: 'Pulls', slug: 'mi-pulls' } });
      assert.equal(team.status, 201);
      const { seedRepo } = await import('./fixtures.ts');
      const repo = await seedRepo(a, { kind: 'team', uuid: team.body.uuid }, 'mi-repo');
      const base = '/api/v1/teams/mi-pulls/repos/mi-repo/pulls';
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? a : b).req('POST', base, {
            body: { title: `pull ${i}`, body: '', source_branch: `feature/${i}`, target_branch: 'main' },
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        Array(20).fill(201),
      );
      const numbers = results.map((r) => r.body.number as number).sort((x, y) => x - y);
      assert.deepEqual(
        numbers,
        Array.from({ length: 20 }, (_, i) => i + 1),
      );

      // one merge on each instance at the same moment: exactly one wins (its source has a commit to land)
      const { seedCommit } = await import('./git-fixtures.ts');
      const first = results.find((r) => r.body.number === 1)!.body;
      await seedCommit(a, repo.uuid, first.source_branch, { onto: 'main' });
      const merges = await Promise.all([
        a.req('POST', `${base}/1/merge`, { body: {} }),
        b.req('POST', `${base}/1/merge`, { body: {} }),
      ]);
      const statuses = merges.map((m) => m.status).sort();
      assert.deepEqual(statuses, [200, 409]);
      assert.equal(merges.find((m) => m.status === 409)!.body.error, 'pull_merged');
      const merged = await b.req('GET', `${base}/1`);
      assert.equal(merged.body.status, 'merged');
      const events = await a.req('GET', `/api/v1/events?scope=pull:${merged.body.uuid}&kind=pull-merged`);
      assert.equal(events.body.results.length, 1);
    });
  });
}
