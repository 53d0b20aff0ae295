import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { BareGitStore } from '../src/git/bare-store.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { waitUntil } from './webhooks-helpers.ts';

/**
 * README "Git maintenance": a push queues the repo's maintenance job, which packs its refs
 * (`git pack-refs --all`) and loose objects under the repo's lock; the repo still clones, its
 * disk usage follows, and a burst of pushes queues one job.
 */
for (const dialect of DIALECTS) {
  describe(`git maintenance (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: { token: string; uuid: string; username: string };

    before(async () => {
      t = await startApp(dialect, { config: { gitMaintenanceDelayMs: 300 } });
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    it('a push of 200 branches: one queued job packs them; the repo clones and its usage matches its objects', async () => {
      const res = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: 'refs', slug: 'refs', visibility: 'private' },
      });
      assert.equal(res.status, 201, res.text);
      const url = g.url(`/git/users/${alice.username}/refs.git`, alice.token);
      const work = await makeWorkTree(g, 'w', [{ 'a.txt': 'a\n' }, { 'b.txt': 'b\n' }]);
      const refspecs = ['main', ...Array.from({ length: 200 }, (_, i) => `HEAD:refs/heads/b/${i}`)];
      await g.run(['-C', work, 'push', '-q', url, ...refspecs]);
      await g.run(['-C', work, 'push', '-q', url, 'HEAD:refs/heads/later']);
      const dir = (t.deps.git as BareGitStore).pathOf(res.body.uuid);
      const loose = () => (existsSync(join(dir, 'refs', 'heads', 'b')) ? readdirSync(join(dir, 'refs', 'heads', 'b')).length : 0);
      await waitUntil(
        async () =>
          loose() === 0 &&
          Number(
            (
              await t.deps.db
                .selectFrom('jobs')
                .select((eb) => eb.fn.countAll().as('n'))
                .where('kind', '=', 'git-maintenance')
                .executeTakeFirst()
            )?.n,
          ) === 0,
        30_000,
        'the maintenance job to pack the refs',
      );
      const packed = readFileSync(join(dir, 'packed-refs'), 'utf8');
      assert.ok(packed.includes('refs/heads/b/199'));
      assert.ok(packed.includes('refs/heads/later'));
      const clone = g.tmp('clone');
      await g.run(['clone', '-q', url, clone]);
      assert.equal(
        (await g.run(['-C', clone, 'branch', '-r'])).stdout.split('\n').filter((l) => l.includes('origin/b/')).length,
        200,
      );
      const fsck = await g.run(['--git-dir', dir, 'fsck', '--no-progress'], { ok: false });
      assert.equal(fsck.code, 0, fsck.stderr);
      const repo = await t.req('GET', `/api/v1/users/${alice.username}/repos/refs`, { token: alice.token });
      assert.equal(repo.body.disk_usage_bytes, await (t.deps.git as BareGitStore).size(res.body.uuid));
    });
  });
}
