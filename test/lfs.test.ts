/**
 * Git LFS (docs/lfs.md) with Debian's git-lfs client against a listening server: push and clone
 * over HTTP and over SSH (git-lfs-authenticate), locks, a wrong hash refused, a reader refused,
 * the quota, the raw route and forks sharing objects.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type SshServer, startSshServer } from '../src/ssh/server.ts';
import { type GitClient, gitClient } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { type KeyPair, gitSshCommand, keyDir } from './ssh-fixtures.ts';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

for (const dialect of DIALECTS) {
  describe(`Git LFS (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let ssh: SshServer;
    let keys: ReturnType<typeof keyDir>;
    let aliceKey: KeyPair;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    const big = randomBytes(300_000);
    const lfsJson = { 'content-type': 'application/vnd.git-lfs+json', accept: 'application/vnd.git-lfs+json' };

    const newRepo = async (slug: string, visibility = 'public') => {
      const res = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: slug, slug, visibility },
      });
      assert.equal(res.status, 201, res.text);
      return res.body.uuid as string;
    };
    const gitPath = (slug: string) => `/git/users/${alice.username}/${slug}.git`;

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      t.deps.config.publicUrl = g.base.replace(/\/$/, '');
      ssh = await startSshServer(t.deps, { port: 0, host: '127.0.0.1' });
      keys = keyDir();
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
      aliceKey = keys.make('alice', 'ed25519');
      const k = await t.req('POST', '/api/v1/user/keys', { token: alice.token, body: { title: 'k', key: aliceKey.pub } });
      assert.equal(k.status, 201, k.text);
      await g.run(['lfs', 'install', '--skip-repo']);
    });
    after(async () => {
      await ssh.close();
      await t.close();
      g.cleanup();
      keys.cleanup();
    });

    it(
      'push over HTTP stores the object once, counted in the quota; clone gets it; raw and the file view show it',
      { timeout: 120_000 },
      async () => {
        const uuid = await newRepo('h');
        const work = g.tmp('hw');
        await g.run(['init', '-q', '-b', 'main', work]);
        await g.run(['-C', work, 'lfs', 'track', '*.bin']);
        writeFileSync(join(work, 'big.bin'), big);
        writeFileSync(join(work, 'readme.txt'), 'hello\n');
        await g.run(['-C', work, 'add', '-A']);
        await g.run(['-C', work, 'commit', '-q', '-m', 'lfs']);
        const before = await t.req('GET', `/api/v1/users/${alice.username}/repos/h`, { token: alice.token });
        await g.run(['-C', work, 'push', '-q', g.url(gitPath('h'), alice.token), 'main']);
        const rows = await t.deps.db.selectFrom('lfs_objects').selectAll().where('repo_uuid', '=', uuid).execute();
        assert.deepEqual(
          rows.map((r) => [r.oid, Number(r.size)]),
          [[sha(big), big.length]],
        );
        assert.equal(await t.deps.blobs.size(sha(big)), big.length);
        const afterRepo = await t.req('GET', `/api/v1/users/${alice.username}/repos/h`, { token: alice.token });
        assert.ok(afterRepo.body.disk_usage_bytes - before.body.disk_usage_bytes >= big.length, 'the object counts in the usage');

        const dest = g.tmp('hc');
        await g.run(['clone', '-q', g.url(gitPath('h'), null), dest]);
        assert.ok(readFileSync(join(dest, 'big.bin')).equals(big), 'the clone has the content, not the pointer');

        const raw = await t.req('GET', `/api/v1/users/${alice.username}/repos/h/raw/main/big.bin`, { token: alice.token });
        assert.equal(raw.status, 200);
        assert.equal(raw.headers.etag, `"${sha(big)}"`);
        const ranged = await t.app.inject({
          method: 'GET',
          url: `/api/v1/users/${alice.username}/repos/h/raw/main/big.bin`,
          headers: { authorization: `Bearer ${alice.token}`, range: 'bytes=10-19' },
        });
        assert.equal(ranged.statusCode, 206);
        assert.ok(ranged.rawPayload.equals(big.subarray(10, 20)));

        // a fork holds the same object (the bytes are not copied)
        const fork = await t.req('POST', `/api/v1/users/${alice.username}/repos/h/forks`, { token: bob.token, body: {} });
        assert.equal(fork.status, 201, fork.text);
        const forkDest = g.tmp('hf');
        await g.run(['clone', '-q', g.url(`/git/users/${bob.username}/h.git`, bob.token), forkDest]);
        assert.ok(readFileSync(join(forkDest, 'big.bin')).equals(big));
      },
    );

    it('locks: lock, list, a reader cannot lock, unlock', { timeout: 60_000 }, async () => {
      await newRepo('l');
      const work = g.tmp('lw');
      await g.run(['init', '-q', '-b', 'main', work]);
      await g.run(['-C', work, 'lfs', 'track', '--lockable', '*.psd']);
      writeFileSync(join(work, 'a.psd'), 'art');
      await g.run(['-C', work, 'add', '-A']);
      await g.run(['-C', work, 'commit', '-q', '-m', 'art']);
      await g.run(['-C', work, 'remote', 'add', 'origin', g.url(gitPath('l'), alice.token)]);
      await g.run(['-C', work, 'push', '-q', 'origin', 'main']);
      await g.run(['-C', work, 'lfs', 'lock', 'a.psd']);
      const listed = await g.run(['-C', work, 'lfs', 'locks']);
      assert.match(listed.stdout, /a\.psd\s+alice/);
      const again = await g.run(['-C', work, 'lfs', 'lock', 'a.psd'], { ok: false });
      assert.notEqual(again.code, 0);

      const byBob = await t.app.inject({
        method: 'POST',
        url: `${gitPath('l')}/info/lfs/locks`,
        headers: { ...lfsJson, authorization: `Bearer ${bob.token}` },
        payload: JSON.stringify({ path: 'b.psd' }),
      });
      assert.equal(byBob.statusCode, 403, byBob.body);
      assert.match(JSON.parse(byBob.body).message, /write access/);

      await g.run(['-C', work, 'lfs', 'unlock', 'a.psd']);
      const none = await g.run(['-C', work, 'lfs', 'locks']);
      assert.equal(none.stdout.trim(), '');
    });

    it('a wrong hash and a reader are refused; the quota refuses a large object', async () => {
      const uuid = await newRepo('w');
      const content = randomBytes(1000);
      const oid = sha(content);
      const url = `${gitPath('w')}/info/lfs/objects`;
      const auth = (token: string) => ({ authorization: `Bearer ${token}` });
      const batchUpload = await t.app.inject({
        method: 'POST',
        url: `${url}/batch`,
        headers: { ...lfsJson, ...auth(alice.token) },
        payload: JSON.stringify({ operation: 'upload', transfers: ['basic'], objects: [{ oid, size: content.length }] }),
      });
      assert.equal(batchUpload.statusCode, 200, batchUpload.body);
      const obj = JSON.parse(batchUpload.body).objects[0];
      assert.ok(obj.actions.upload.href.endsWith(`${url}/${oid}`));
      const token = obj.actions.upload.header['X-Weft-LFS-Token'];
      assert.ok(token);

      const other = randomBytes(1000);
      const wrong = await t.app.inject({
        method: 'PUT',
        url: `${url}/${oid}`,
        headers: { 'x-weft-lfs-token': token },
        payload: other,
      });
      assert.equal(wrong.statusCode, 422, wrong.body);
      assert.match(JSON.parse(wrong.body).message, /SHA-256/);
      assert.equal(await t.deps.blobs.size(sha(other)), null, 'nothing kept');
      const short = await t.app.inject({
        method: 'PUT',
        url: `${url}/${sha(content.subarray(0, 10))}`,
        headers: { 'x-weft-lfs-token': token },
        payload: content.subarray(0, 10),
      });
      assert.equal(short.statusCode, 200, 'the token names the repo, not one object');
      const verifyMissing = await t.app.inject({
        method: 'POST',
        url: `${url}/${oid}/verify`,
        headers: { ...lfsJson, 'x-weft-lfs-token': token },
        payload: JSON.stringify({ oid, size: content.length }),
      });
      assert.equal(verifyMissing.statusCode, 404);
      const good = await t.app.inject({
        method: 'PUT',
        url: `${url}/${oid}`,
        headers: { 'x-weft-lfs-token': token },
        payload: content,
      });
      assert.equal(good.statusCode, 200, good.body);
      const verify = await t.app.inject({
        method: 'POST',
        url: `${url}/${oid}/verify`,
        headers: { ...lfsJson, 'x-weft-lfs-token': token },
        payload: JSON.stringify({ oid, size: content.length }),
      });
      assert.equal(verify.statusCode, 200);

      // bob reads the public repo: he downloads, he may not upload
      const down = await t.app.inject({
        method: 'POST',
        url: `${url}/batch`,
        headers: { ...lfsJson, ...auth(bob.token) },
        payload: JSON.stringify({
          operation: 'download',
          objects: [
            { oid, size: content.length },
            { oid: sha(other), size: 1000 },
          ],
        }),
      });
      assert.equal(down.statusCode, 200);
      const [have, missing] = JSON.parse(down.body).objects;
      assert.ok(have.actions.download.href);
      assert.equal(missing.error.code, 404);
      const got = await t.app.inject({
        method: 'GET',
        url: `${url}/${oid}`,
        headers: { 'x-weft-lfs-token': have.actions.download.header['X-Weft-LFS-Token'] },
      });
      assert.ok(got.rawPayload.equals(content));
      const up = await t.app.inject({
        method: 'POST',
        url: `${url}/batch`,
        headers: { ...lfsJson, ...auth(bob.token) },
        payload: JSON.stringify({ operation: 'upload', objects: [{ oid: sha(other), size: 1000 }] }),
      });
      assert.equal(up.statusCode, 403);
      const readToken = have.actions.download.header['X-Weft-LFS-Token'];
      const putWithRead = await t.app.inject({
        method: 'PUT',
        url: `${url}/${sha(other)}`,
        headers: { 'x-weft-lfs-token': readToken },
        payload: other,
      });
      assert.equal(putWithRead.statusCode, 403, 'a download token does not upload');
      const anon = await t.app.inject({
        method: 'POST',
        url: `${url}/batch`,
        headers: lfsJson,
        payload: JSON.stringify({ operation: 'upload', objects: [{ oid: sha(other), size: 1000 }] }),
      });
      assert.equal(anon.statusCode, 401);
      assert.match(String(anon.headers['lfs-authenticate']), /Basic/);

      // quota: 2,000 bytes left
      const repo = await t.deps.db
        .selectFrom('repos')
        .select('disk_usage_bytes')
        .where('uuid', '=', uuid)
        .executeTakeFirstOrThrow();
      await t.deps.db
        .updateTable('repos')
        .set({ max_disk_bytes: Number(repo.disk_usage_bytes) + 2000 })
        .where('uuid', '=', uuid)
        .execute();
      const large = randomBytes(5000);
      const overBatch = await t.app.inject({
        method: 'POST',
        url: `${url}/batch`,
        headers: { ...lfsJson, ...auth(alice.token) },
        payload: JSON.stringify({ operation: 'upload', objects: [{ oid: sha(large), size: large.length }] }),
      });
      assert.equal(JSON.parse(overBatch.body).objects[0].error.code, 413);
      const overPut = await t.app.inject({
        method: 'PUT',
        url: `${url}/${sha(large)}`,
        headers: { 'x-weft-lfs-token': token },
        payload: large,
      });
      assert.equal(overPut.statusCode, 413, overPut.body);
      assert.equal(await t.deps.blobs.size(sha(large)), null);
    });

    it('push and clone over SSH through git-lfs-authenticate', { timeout: 120_000 }, async () => {
      await newRepo('s', 'private');
      const env = { GIT_SSH_COMMAND: gitSshCommand(aliceKey.path, ssh.port) };
      const url = `ssh://git@127.0.0.1:${ssh.port}/users/${alice.username}/s.git`;
      const work = g.tmp('sw');
      await g.run(['init', '-q', '-b', 'main', work]);
      await g.run(['-C', work, 'lfs', 'track', '*.bin']);
      const blob = randomBytes(100_000);
      writeFileSync(join(work, 'x.bin'), blob);
      await g.run(['-C', work, 'add', '-A']);
      await g.run(['-C', work, 'commit', '-q', '-m', 'x']);
      await g.run(['-C', work, 'push', '-q', url, 'main'], { env });
      const dest = g.tmp('sc');
      await g.run(['clone', '-q', url, dest], { env });
      assert.ok(readFileSync(join(dest, 'x.bin')).equals(blob));
    });
  });
}
