import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';

for (const dialect of DIALECTS) {
  describe(`smoke (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(dialect);
    });
    after(() => t.close());

    it('serves GET /user for the bootstrap admin', async () => {
      const res = await t.req('GET', '/api/v1/user');
      assert.equal(res.status, 200);
      assert.equal(res.body.username, 'admin');
      assert.equal(res.body.is_staff, true);
    });
  });
}
