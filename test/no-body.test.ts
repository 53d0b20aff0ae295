import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';

/** Routes that declare no body refuse one (an empty object is tolerated), and change nothing. */
for (const dialect of DIALECTS) {
  describe(`routes without a body (${dialect})`, () => {
    let t: TestApp;
    let base: string;
    before(async () => {
      t = await startApp(dialect);
      const team = await seedTeam(t, 'nb-team');
      await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'nb-repo', { visibility: 'public' });
      base = '/api/v1/teams/nb-team/repos/nb-repo';
    });
    after(() => t.close());

    it('PUT archive and POST forks refuse a body with properties', async () => {
      for (const [method, url] of [
        ['PUT', `${base}/archive`],
        ['DELETE', `${base}/archive`],
        ['POST', `${base}/forks`],
      ] as const) {
        const res = await t.req(method, url, { body: { anything: true } });
        assert.equal(res.status, 400, `${method} ${url}`);
        assert.ok(isErrorBody(res.body, 'invalid_request'));
      }
      const repo = await t.req('GET', base);
      assert.equal(repo.body.is_archived, false);
      assert.equal((await t.req('GET', `${base}/forks`)).body.results.length, 0);
    });

    it('an empty object or no body is accepted', async () => {
      assert.equal((await t.req('PUT', `${base}/archive`, { body: {} })).status, 200);
      assert.equal((await t.req('DELETE', `${base}/archive`)).status, 200);
    });
  });
}
