/**
 * Imports, pull mirrors and push mirrors (docs/bring-in.md) with real git on both sides: a local
 * `git daemon` and another Weft repo over HTTP with credentials; an address the allow-list
 * refuses; a source over the quota; a mirror following force-pushes and deletions; a push mirror
 * landing in another repo.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { commitFiles, type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

type Person = { token: string; uuid: string; username: string };

const MiB = 1024 * 1024;

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

for (const dialect of DIALECTS) {
  describe(`imports and mirrors (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person;
    let daemon: ChildProcess;
    let daemonUrl: string;
    let served: string;
    let work: string;

    const ok = (res: { status: number; text: string }, status = 200) => assert.equal(res.status, status, res.text);
    const repoApi = (slug: string) => `/api/v1/users/${alice.username}/repos/${slug}`;

    /** Waits until the import is no longer `importing`; the repo's JSON. */
    async function settled(slug: string) {
      for (let i = 0; i < 300; i++) {
        const res = await t.req('GET', repoApi(slug), { token: alice.token });
        ok(res);
        if (res.body.import_status !== 'importing') return res.body;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`the import of ${slug} did not finish`);
    }

    const lsRemote = async (url: string) => {
      const out = await g.run(['ls-remote', url]);
      return out.stdout
        .split('\n')
        .filter((l) => /\trefs\/(heads|tags)\//.test(l))
        .sort()
        .join('\n');
    };

    const importRepo = (slug: string, source: Record<string, unknown>) =>
      t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: slug, slug, import: source },
      });

    before(async () => {
      t = await startApp(dialect, { config: { defaultMaxDiskBytes: MiB } });
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
      // the source: a bare repo served by git daemon, with two branches and a tag
      served = g.tmp('served');
      mkdirSync(served);
      await g.run(['init', '-q', '--bare', join(served, 'src.git')]);
      work = await makeWorkTree(g, 'work', [{ 'README.md': '# Source\n' }, { 'a.txt': 'a\n' }]);
      await g.run(['-C', work, 'tag', 'v1']);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'topic']);
      await commitFiles(g, work, [{ 'b.txt': 'b\n' }], 'topic');
      await g.run(['-C', work, 'push', '-q', join(served, 'src.git'), 'main', 'topic', 'v1']);
      await g.run(['-C', work, 'checkout', '-q', 'main']);
      // a source larger than the 1 MiB quota: 2 MiB that do not compress
      await g.run(['init', '-q', '--bare', join(served, 'big.git')]);
      const big = await makeWorkTree(g, 'big', [{ 'README.md': 'big\n' }]);
      writeFileSync(join(big, 'blob.bin'), randomBytes(2 * MiB));
      await g.run(['-C', big, 'add', 'blob.bin']);
      await g.run(['-C', big, 'commit', '-q', '-m', 'big']);
      await g.run(['-C', big, 'push', '-q', join(served, 'big.git'), 'main']);

      const port = await freePort();
      daemon = spawn(
        'git',
        ['daemon', '--reuseaddr', '--export-all', `--base-path=${served}`, '--listen=127.0.0.1', `--port=${port}`, served],
        { stdio: 'ignore', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: g.home } },
      );
      daemonUrl = `git://127.0.0.1:${port}`;
      for (let i = 0; i < 100; i++) {
        if ((await g.run(['ls-remote', `${daemonUrl}/src.git`], { ok: false })).code === 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    });
    after(async () => {
      daemon?.kill();
      g?.cleanup();
      await t?.close();
    });

    it('refuses an address the allow-list does not allow (loopback), and transports other than http(s), ssh, git', async () => {
      const created = await importRepo('refused', { url: `${daemonUrl}/src.git` });
      ok(created, 201);
      assert.equal(created.body.import_status, 'importing');
      const repo = await settled('refused');
      assert.equal(repo.import_status, 'failed');
      assert.match(repo.import_error, /address_not_allowed/);
      assert.equal((await g.run(['ls-remote', g.url(`/git/users/${alice.username}/refused.git`, alice.token)])).stdout, '');
      for (const url of [
        `file://${served}/src.git`,
        'ext::sh -c touch% /tmp/pwned',
        `${served}/src.git`,
        'ftp://example.com/x.git',
      ]) {
        const bad = await importRepo('bad', { url });
        assert.equal(bad.status, 400, url);
      }
      ok(await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['127.0.0.1'] } }));
    });

    it('imports every branch and tag from a git daemon; the import status is readable', async () => {
      ok(await importRepo('fromdaemon', { url: `${daemonUrl}/src.git` }), 201);
      const repo = await settled('fromdaemon');
      assert.equal(repo.import_status, 'done', repo.import_error);
      assert.equal(repo.mirror, null);
      assert.ok(repo.disk_usage_bytes > 0);
      const mine = await lsRemote(g.url(`/git/users/${alice.username}/fromdaemon.git`, alice.token));
      assert.equal(mine, await lsRemote(`${daemonUrl}/src.git`));
      assert.match(mine, /refs\/heads\/topic/);
      assert.match(mine, /refs\/tags\/v1/);
      const status = await t.req('GET', `${repoApi('fromdaemon')}/import`, { token: alice.token });
      ok(status);
      assert.equal(status.body.import_status, 'done');
      // the imported repo takes pushes once imported
      await g.run(['-C', work, 'push', '-q', g.url(`/git/users/${alice.username}/fromdaemon.git`, alice.token), 'main:pushed']);
    });

    it('imports another Weft repo over HTTP with credentials that are never returned nor shown in errors', async () => {
      const bob = await t.user(`bob${dialect}`);
      ok(
        await t.req('POST', `/api/v1/users/${bob.username}/repos`, {
          token: bob.token,
          body: { name: 'secret', slug: 'secret' },
        }),
        201,
      );
      await g.run(['-C', work, 'push', '-q', g.url(`/git/users/${bob.username}/secret.git`, bob.token), 'main', 'topic', 'v1']);
      const url = `${g.base}/git/users/${bob.username}/secret.git`;
      const created = await importRepo('fromweft', { url, username: 'x', password: bob.token });
      ok(created, 201);
      assert.ok(!created.text.includes(bob.token));
      const repo = await settled('fromweft');
      assert.equal(repo.import_status, 'done', repo.import_error);
      assert.ok(!JSON.stringify(repo).includes(bob.token));
      assert.equal(
        await lsRemote(g.url(`/git/users/${alice.username}/fromweft.git`, alice.token)),
        await lsRemote(g.url(`/git/users/${bob.username}/secret.git`, bob.token)),
      );
      const row = await t.deps.db
        .selectFrom('repo_imports')
        .select('credentials')
        .where('repo_uuid', '=', repo.uuid)
        .executeTakeFirstOrThrow();
      assert.ok(row.credentials && !row.credentials.includes(bob.token), 'the credentials are sealed');

      // wrong credentials (in the URL too): a failure that names neither
      const wrong = `wrong-${randomBytes(8).toString('hex')}`;
      const u = new URL(url);
      u.username = 'x';
      u.password = wrong;
      const refused = await importRepo('wrongcreds', { url: u.toString() });
      ok(refused, 201);
      assert.ok(!refused.text.includes(wrong));
      const failed = await settled('wrongcreds');
      assert.equal(failed.import_status, 'failed');
      assert.ok(failed.import_error.length > 0);
      assert.ok(!JSON.stringify(failed).includes(wrong), failed.import_error);
      assert.ok(!failed.import_error.includes(Buffer.from(`x:${wrong}`).toString('base64')));
    });

    it('a source over the quota fails cleanly and leaves nothing', async () => {
      ok(await importRepo('toobig', { url: `${daemonUrl}/big.git` }), 201);
      const repo = await settled('toobig');
      assert.equal(repo.import_status, 'failed');
      assert.match(repo.import_error, /quota_exceeded/);
      assert.equal(repo.disk_usage_bytes, 0);
      assert.equal((await g.run(['ls-remote', g.url(`/git/users/${alice.username}/toobig.git`, alice.token)])).stdout, '');
      const size = await (t.deps.git as unknown as { size(u: string): Promise<number> }).size(repo.uuid);
      assert.ok(size < 64 * 1024, `the object store keeps ${size} bytes`);
    });

    it('a pull mirror follows force-pushes and deletions, refuses pushes, and says what moved', async () => {
      ok(await importRepo('mirror', { url: `${daemonUrl}/src.git`, mirror: true }), 201);
      const repo = await settled('mirror');
      assert.equal(repo.import_status, 'done', repo.import_error);
      assert.equal(repo.mirror.url, `${daemonUrl}/src.git`);
      assert.equal(repo.mirror.interval_seconds, 28_800);
      const mirrorUrl = g.url(`/git/users/${alice.username}/mirror.git`, alice.token);
      const push = await g.run(['-C', work, 'push', mirrorUrl, 'main:other'], { ok: false });
      assert.notEqual(push.code, 0);
      assert.match(push.stderr, /remote: this repo is a mirror of git:\/\/127\.0\.0\.1/);

      // the source: topic rewritten (a force push), v1 and main's sibling deleted, a new branch
      const source = join(served, 'src.git');
      await g.run(['-C', work, 'checkout', '-q', '-b', 'rewritten', 'main']);
      await commitFiles(g, work, [{ 'c.txt': 'c\n' }], 'rewritten');
      await g.run(['-C', work, 'push', '-q', '--force', source, 'rewritten:topic', 'rewritten:fresh', ':refs/tags/v1']);
      const before = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}`, { token: alice.token });
      const seen = new Set(before.body.results.map((e: { id: number }) => e.id));
      ok(await t.req('POST', `${repoApi('mirror')}/mirror/sync`, { token: alice.token }), 202);
      let synced = '';
      for (let i = 0; i < 300; i++) {
        synced = await lsRemote(mirrorUrl);
        if (synced === (await lsRemote(`${daemonUrl}/src.git`))) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(synced, await lsRemote(`${daemonUrl}/src.git`));
      assert.doesNotMatch(synced, /refs\/tags\/v1/);
      let moved: Array<{ kind: string; payload: { ref: string; forced: boolean; after: string } }> = [];
      for (let i = 0; i < 100 && moved.length < 3; i++) {
        const events = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}`, { token: alice.token });
        moved = events.body.results.filter((e: { id: number; kind: string }) => !seen.has(e.id) && e.kind === 'branch-pushed');
        await new Promise((r) => setTimeout(r, 50));
      }
      const byRef = new Map(moved.map((e) => [e.payload.ref, e.payload]));
      assert.equal(byRef.get('refs/heads/topic')?.forced, true);
      assert.equal(byRef.get('refs/tags/v1')?.after, '0'.repeat(40));
      assert.ok(byRef.has('refs/heads/fresh'));
      const after = await t.req('GET', repoApi('mirror'), { token: alice.token });
      assert.ok(after.body.mirror.last_sync_at);
      assert.equal(after.body.mirror.last_error, null);
      // a repo that is no mirror has nothing to sync
      assert.equal((await t.req('POST', `${repoApi('fromdaemon')}/mirror/sync`, { token: alice.token })).status, 404);
    });

    it('a pull mirror syncs on its interval: one timed job per due time, which queues the next', async () => {
      const repo = (await t.req('GET', repoApi('mirror'), { token: alice.token })).body;
      const ticks = () =>
        t.deps.db
          .selectFrom('jobs')
          .select(['id', 'run_at', 'dedupe_key'])
          .where('kind', '=', 'mirror-sync')
          .where('dedupe_key', 'like', `mirror-tick:${repo.uuid}:%`)
          .where('failed_at', 'is', null)
          .execute();
      // the import queued the first timed sync, the interval (8 hours) from then
      let queued = await ticks();
      assert.equal(queued.length, 1, JSON.stringify(queued));
      const due = Date.parse(queued[0]!.run_at);
      assert.ok(due > Date.now() + 7 * 3600_000 && due <= Date.now() + 8 * 3600_000 + 60_000, queued[0]!.run_at);
      // the source moves; the due time comes (moved here, as a clock would): the mirror follows by itself
      await commitFiles(g, work, [{ 'timed.txt': 'timed\n' }], 'timed');
      await g.run(['-C', work, 'push', '-q', join(served, 'src.git'), 'HEAD:refs/heads/timed']);
      await t.deps.db
        .updateTable('jobs')
        .set({ run_at: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', queued[0]!.id)
        .execute();
      const mirrorUrl = g.url(`/git/users/${alice.username}/mirror.git`, alice.token);
      let synced = '';
      for (let i = 0; i < 300 && !synced.includes('refs/heads/timed'); i++) {
        await new Promise((r) => setTimeout(r, 100));
        synced = await lsRemote(mirrorUrl);
      }
      assert.match(synced, /refs\/heads\/timed/);
      // and the next timed sync is queued, once, an interval after this one
      for (let i = 0; i < 100; i++) {
        queued = await ticks();
        if (
          queued.length === 1 &&
          queued[0]!.dedupe_key !== undefined &&
          Date.parse(queued[0]!.run_at) > Date.now() + 7 * 3600_000
        )
          break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(queued.length, 1, JSON.stringify(queued));
      assert.ok(Date.parse(queued[0]!.run_at) > Date.now() + 7 * 3600_000, queued[0]!.run_at);
    });

    it('a push mirror lands every push in another repo, with its status recorded', async () => {
      ok(
        await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
          token: alice.token,
          body: { name: 'origin', slug: 'origin' },
        }),
        201,
      );
      ok(
        await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
          token: alice.token,
          body: { name: 'target', slug: 'target' },
        }),
        201,
      );
      const added = await t.req('POST', `${repoApi('origin')}/push-mirrors`, {
        token: alice.token,
        body: { url: `${g.base}/git/users/${alice.username}/target.git`, username: 'x', password: alice.token },
      });
      ok(added, 201);
      assert.ok(!added.text.includes(alice.token));
      assert.equal(added.body.sync_on_push, true);
      const originUrl = g.url(`/git/users/${alice.username}/origin.git`, alice.token);
      const targetUrl = g.url(`/git/users/${alice.username}/target.git`, alice.token);
      await g.run(['-C', work, 'push', '-q', originUrl, 'main', 'rewritten:feature']);
      let landed = '';
      for (let i = 0; i < 300; i++) {
        landed = await lsRemote(targetUrl);
        if (landed === (await lsRemote(originUrl)) && landed !== '') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(landed, await lsRemote(originUrl));
      // a deleted branch is deleted there too
      await g.run(['-C', work, 'push', '-q', originUrl, ':feature']);
      for (let i = 0; i < 300; i++) {
        landed = await lsRemote(targetUrl);
        if (!landed.includes('refs/heads/feature')) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.doesNotMatch(landed, /refs\/heads\/feature/);
      const list = await t.req('GET', `${repoApi('origin')}/push-mirrors`, { token: alice.token });
      ok(list);
      assert.equal(list.body.length, 1);
      assert.ok(list.body[0].last_sync_at);
      assert.equal(list.body[0].last_error, null);
      ok(await t.req('POST', `${repoApi('origin')}/push-mirrors/${added.body.uuid}/sync`, { token: alice.token }), 202);
      ok(await t.req('DELETE', `${repoApi('origin')}/push-mirrors/${added.body.uuid}`, { token: alice.token }), 204);
      assert.equal((await t.req('GET', `${repoApi('origin')}/push-mirrors`, { token: alice.token })).body.length, 0);
    });
  });
}
