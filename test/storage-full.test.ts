/**
 * A full disk (README "Storage lifetimes and crash recovery"): uploads, pushes and repo creation
 * answer 507 insufficient_storage with a clear detail instead of 500, change nothing, and work
 * again once space is freed. DATA_DIR is a small tmpfs mounted for the test (root only; the test
 * is skipped where mounting is not allowed); the database stays on the ordinary disk.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';

function tryMount(dir: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Writes until the file system is full. */
function fill(dir: string): string {
  const file = join(dir, 'filler');
  try {
    writeFileSync(file, Buffer.alloc(8 * 1024 * 1024));
  } catch (err) {
    assert.equal((err as { code?: string }).code, 'ENOSPC');
  }
  return file;
}

for (const dialect of DIALECTS) {
  const mountPoint = mkdtempSync(join(tmpdir(), 'weft-full-'));
  const mounted = tryMount(mountPoint);
  describe(
    `a full disk is 507 insufficient_storage (${dialect})`,
    { skip: mounted ? false : 'cannot mount a tmpfs here (needs root)' },
    () => {
      let t: TestApp;
      let g: GitClient;
      let alice: { token: string; uuid: string; username: string };
      before(async () => {
        t = await startApp(dialect, { config: { dataDir: mountPoint } });
        g = await gitClient(t);
        alice = await t.user(`alice${dialect}`);
      });
      after(async () => {
        await t?.close();
        g?.cleanup();
        execFileSync('umount', [mountPoint]);
        rmSync(mountPoint, { recursive: true, force: true });
      });

      it('uploads, pushes and repo creation on a full disk: 507 with a clear detail, nothing changed; fine once space is freed', async () => {
        const repo = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
          token: alice.token,
          body: { name: 'full', slug: 'full', visibility: 'private' },
        });
        assert.equal(repo.status, 201, repo.text);
        const base = `/api/v1/users/${alice.username}/repos/full`;
        const gitUrl = g.url(`/git/users/${alice.username}/full.git`, alice.token);
        const work = await makeWorkTree(g, 'w', [{ 'a.bin': randomBytes(300_000).toString('base64') }]);
        const filler = fill(mountPoint);

        const upload = await t.req('POST', `${base}/uploads?filename=a.bin`, {
          token: alice.token,
          rawBody: randomBytes(200_000),
          headers: { 'content-type': 'application/octet-stream' },
        });
        assert.equal(upload.status, 507, upload.text);
        assert.ok(isErrorBody(upload.body, 'insufficient_storage'));
        assert.match(upload.body.detail, /full/);
        const push = await g.run(['-C', work, 'push', gitUrl, 'main'], { ok: false });
        assert.notEqual(push.code, 0);
        assert.match(push.stderr, /507/);
        const another = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
          token: alice.token,
          body: { name: 'more', slug: 'more', visibility: 'private' },
        });
        assert.equal(another.status, 507, another.text);
        assert.ok(isErrorBody(another.body, 'insufficient_storage'));

        // Nothing changed: no upload row, no usage, no branch, no event, no repo.
        const after1 = await t.req('GET', base, { token: alice.token });
        assert.equal(after1.body.disk_usage_bytes, 0);
        assert.equal((await t.req('GET', `${base}/uploads`, { token: alice.token })).body.results.length, 0);
        assert.equal((await t.req('GET', `${base}/branches`, { token: alice.token })).body.results.length, 0);
        const events = await t.req('GET', `/api/v1/events?scope=repo:${repo.body.uuid}&kind=branch-pushed`, {
          token: alice.token,
        });
        assert.equal(events.body.results.length, 0);
        assert.equal((await t.req('GET', `/api/v1/users/${alice.username}/repos/more`, { token: alice.token })).status, 404);
        const tmp = join(mountPoint, 'blobs', 'tmp');
        assert.deepEqual(existsSync(tmp) ? readdirSync(tmp) : [], [], 'no partial upload left');

        // Space again: everything works, and the repository is sound.
        rmSync(filler);
        const ok = await t.req('POST', `${base}/uploads?filename=a.bin`, {
          token: alice.token,
          rawBody: randomBytes(200_000),
          headers: { 'content-type': 'application/octet-stream' },
        });
        assert.equal(ok.status, 201, ok.text);
        await g.run(['-C', work, 'push', '-q', gitUrl, 'main']);
        assert.equal((await t.req('GET', `${base}/branches`, { token: alice.token })).body.results.length, 1);
        const fsck = await g.run(['--git-dir', join(mountPoint, 'git', `${repo.body.uuid}.git`), 'fsck', '--full'], {
          ok: false,
        });
        assert.equal(fsck.code, 0, fsck.stderr);
      });
    },
  );
}
