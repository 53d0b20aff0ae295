import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertRefused } from './common.ts';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { q, whileUncommitted } from './locks.ts';
import { openPull, seedProtection } from './pulls-fixtures.ts';

/** Issue 13, defects 3 to 5: merge time after the lock, the pull-policy rule, X-Request-Id on router errors. */
for (const dialect of DIALECTS) {
  describe(`hardening (${dialect})`, () => {
    let t: TestApp & { store: { dataDir: string; schema?: string } };
    let n = 0;
    before(async () => {
      t = await startApp(dialect);
    });
    after(() => t.close());

    it('a merge is time-stamped after the review it counted, even when it waited for that review', async () => {
      const alice = await t.user(`alice${++n}`);
      const team = await seedTeam(t, `mt${n}`, [{ uuid: alice.uuid, role: 'member' }]);
      const repo = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'tool');
      const base = `/api/v1/teams/${team.slug}/repos/tool`;
      await seedProtection(t, repo.uuid, 'main', { required: 1 });
      const pull = await openPull(t, base);
      // A review being submitted holds the pull's row (its counter update); the merge arrives
      // meanwhile and must wait, then count the review and be stamped after it.
      const reviewedAt = new Date(Date.now() + 100).toISOString();
      const res = await whileUncommitted(
        t,
        null,
        [
          `update pulls set review_seq = review_seq + 1 where uuid = ${q(pull.uuid)}`,
          `insert into reviews (uuid, pull_uuid, author_uuid, status, body, created_at, removed_at, seq) values ` +
            `(${q(crypto.randomUUID())}, ${q(pull.uuid)}, ${q(alice.uuid)}, 'approved', '', ${q(reviewedAt)}, null, 1)`,
        ],
        () => t.req('POST', `${base}/pulls/${pull.number}/merge`, { body: {} }),
      );
      assert.equal(res.status, 200, res.text);
      assert.ok(
        res.body.merged_at >= reviewedAt,
        `merged_at ${res.body.merged_at} is before the review it counted (${reviewedAt})`,
      );
      assert.equal(res.body.pull.merged_at, res.body.merged_at);
    });

    it('the team pull policy is checked against the resulting repo: no change to private keeps it', async () => {
      const team = await seedTeam(t, `pt${++n}`);
      await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'pub', { visibility: 'public' });
      const base = `/api/v1/teams/${team.slug}/repos/pub`;
      const set = await t.req('PUT', base, { body: { public_repo_pull_policy: 'team' } });
      assert.equal(set.status, 200, set.text);
      await assertRefused(t, 409, 'invalid_pull_policy', 'PUT', base, { body: { visibility: 'private' } });
      await assertRefused(t, 409, 'invalid_pull_policy', 'PUT', base, { body: { visibility: 'private', description: 'x' } });
      const both = await t.req('PUT', base, { body: { visibility: 'private', public_repo_pull_policy: 'any' } });
      assert.equal(both.status, 200, both.text);
      assert.equal(both.body.visibility, 'private');
      assert.equal(both.body.public_repo_pull_policy, 'any');
      await assertRefused(t, 409, 'invalid_pull_policy', 'PUT', base, { body: { public_repo_pull_policy: 'team' } });
    });

    it('router-level 400s carry X-Request-Id (the client-sent one when valid)', async () => {
      for (const url of ['/api/v1/users/a%ffb', `/api/v1/users/${'a'.repeat(600)}`, '/api/v1/users/a%ffb/repos/x']) {
        const echoed = await t.req('GET', url, { headers: { 'x-request-id': 'probe-13' } });
        assert.equal(echoed.status, 400, echoed.text);
        assert.equal(echoed.headers['x-request-id'], 'probe-13', url);
        const fresh = await t.req('GET', url);
        assert.match(String(fresh.headers['x-request-id']), /^[0-9a-f-]{36}$/, url);
      }
    });
  });
}
