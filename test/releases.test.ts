/**
 * Releases (docs/releases.md): the tag made when missing, drafts for write access only, `latest`,
 * streamed assets counted in the quota and their downloads, events.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { seedCommit } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

for (const dialect of DIALECTS) {
  describe(`releases (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    let base: string;
    let uuid: string;
    let mainSha: string;

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
      const res = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: 'app', slug: 'app', visibility: 'public' },
      });
      assert.equal(res.status, 201, res.text);
      uuid = res.body.uuid;
      base = `/api/v1/users/${alice.username}/repos/app`;
      mainSha = await seedCommit(t, uuid, 'main');
    });
    after(() => t.close());

    it('publishing creates the tag at target_commitish; list, one, latest; drafts for write access only', async () => {
      const created = await t.req('POST', `${base}/releases`, {
        token: alice.token,
        body: { tag_name: 'v1.0.0', name: 'First', body: '# Notes\n\n- one' },
      });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.target_commitish, 'main');
      assert.equal(created.body.draft, false);
      assert.ok(created.body.published_at);
      assert.deepEqual(created.body.author, { uuid: alice.uuid, username: alice.username });
      const tag = await t.deps.git.refSha(uuid, 'refs/tags/v1.0.0');
      assert.equal(tag, mainSha, 'the tag was created at main');
      const dup = await t.req('POST', `${base}/releases`, { token: alice.token, body: { tag_name: 'v1.0.0' } });
      assert.equal(dup.status, 409);
      const bad = await t.req('POST', `${base}/releases`, { token: alice.token, body: { tag_name: 'a..b' } });
      assert.equal(bad.status, 400);
      const byReader = await t.req('POST', `${base}/releases`, { token: bob.token, body: { tag_name: 'v9' } });
      assert.equal(byReader.status, 403);

      const draft = await t.req('POST', `${base}/releases`, { token: alice.token, body: { tag_name: 'v2.0.0', draft: true } });
      assert.equal(draft.status, 201);
      assert.equal(draft.body.published_at, null);
      assert.equal(await t.deps.git.refSha(uuid, 'refs/tags/v2.0.0'), null, 'a draft makes no tag');
      const pre = await t.req('POST', `${base}/releases`, {
        token: alice.token,
        body: { tag_name: 'v1.1.0-rc', prerelease: true },
      });
      assert.equal(pre.status, 201);

      const mine = await t.req('GET', `${base}/releases`, { token: alice.token });
      assert.deepEqual(
        mine.body.results.map((r: { tag_name: string }) => r.tag_name),
        ['v1.1.0-rc', 'v2.0.0', 'v1.0.0'],
      );
      const theirs = await t.req('GET', `${base}/releases`, { token: bob.token });
      assert.deepEqual(
        theirs.body.results.map((r: { tag_name: string }) => r.tag_name),
        ['v1.1.0-rc', 'v1.0.0'],
      );
      assert.equal((await t.req('GET', `${base}/releases/v2.0.0`, { token: bob.token })).status, 404);
      assert.equal((await t.req('GET', `${base}/releases/v2.0.0`, { token: alice.token })).status, 200);
      const latest = await t.req('GET', `${base}/releases/latest`, { token: bob.token });
      assert.equal(latest.body.tag_name, 'v1.0.0', 'no draft, no prerelease');

      const published = await t.req('PATCH', `${base}/releases/v2.0.0`, { token: alice.token, body: { draft: false } });
      assert.equal(published.status, 200, published.text);
      assert.ok(published.body.published_at);
      assert.equal(await t.deps.git.refSha(uuid, 'refs/tags/v2.0.0'), mainSha);
      assert.equal((await t.req('GET', `${base}/releases/latest`, { token: bob.token })).body.tag_name, 'v2.0.0');
      const back = await t.req('PATCH', `${base}/releases/v2.0.0`, { token: alice.token, body: { draft: true } });
      assert.equal(back.status, 400);

      const events = await t.req('GET', `/api/v1/events?scope=repo:${uuid}`, { token: alice.token });
      const kinds = events.body.results.map((e: { kind: string }) => e.kind);
      assert.equal(kinds.filter((k: string) => k === 'release-published').length, 3, kinds.join(','));
    });

    it('assets stream in under the quota, download counted, delete gives the bytes back', async () => {
      const rel = `${base}/releases/v1.0.0`;
      const before = (await t.req('GET', base, { token: alice.token })).body.disk_usage_bytes;
      const bytes = randomBytes(50_000);
      const up = await t.req('POST', `${rel}/assets?name=app.tar.gz`, {
        token: alice.token,
        rawBody: bytes,
        headers: { 'content-type': 'application/gzip' },
      });
      assert.equal(up.status, 201, up.text);
      assert.equal(up.body.size, bytes.length);
      assert.equal(up.body.download_count, 0);
      assert.ok(up.body.url.endsWith(`/releases/v1.0.0/assets/${up.body.uuid}`));
      const same = await t.req('POST', `${rel}/assets?name=app.tar.gz`, { token: alice.token, rawBody: 'x' });
      assert.equal(same.status, 409);
      assert.equal((await t.req('GET', base, { token: alice.token })).body.disk_usage_bytes, before + bytes.length);

      for (let i = 0; i < 2; i++) {
        const got = await t.app.inject({
          method: 'GET',
          url: `${rel}/assets/${up.body.uuid}`,
          headers: { authorization: `Bearer ${bob.token}` },
        });
        assert.equal(got.statusCode, 200);
        assert.equal(got.headers['content-type'], 'application/gzip');
        assert.ok(got.rawPayload.equals(bytes));
      }
      const one = await t.req('GET', rel, { token: bob.token });
      assert.equal(one.body.assets[0].download_count, 2);

      // the quota: 1,000 bytes left
      await t.deps.db
        .updateTable('repos')
        .set({ max_disk_bytes: before + bytes.length + 1000 })
        .where('uuid', '=', uuid)
        .execute();
      const big = await t.req('POST', `${rel}/assets?name=big.bin`, { token: alice.token, rawBody: randomBytes(5000) });
      assert.equal(big.status, 413, big.text);
      assert.equal(big.body.error, 'quota_exceeded');
      assert.equal((await t.req('GET', rel, { token: alice.token })).body.assets.length, 1);

      const del = await t.req('DELETE', `${rel}/assets/${up.body.uuid}`, { token: alice.token });
      assert.equal(del.status, 204);
      assert.equal((await t.req('GET', base, { token: alice.token })).body.disk_usage_bytes, before);
      const gone = await t.app.inject({
        method: 'GET',
        url: `${rel}/assets/${up.body.uuid}`,
        headers: { authorization: `Bearer ${bob.token}` },
      });
      assert.equal(gone.statusCode, 404);

      const delRel = await t.req('DELETE', `${base}/releases/v1.1.0-rc`, { token: alice.token });
      assert.equal(delRel.status, 204);
      assert.equal(await t.deps.git.refSha(uuid, 'refs/tags/v1.1.0-rc'), mainSha, 'the tag stays');
    });
  });
}
