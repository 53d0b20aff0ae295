/**
 * Quota accounting under concurrent pushes (README "Quota accounting"): pushes of one repo take
 * turns under its git write lock, so each quota check sees the pushes before it and each push
 * adds its own objects to `disk_usage_bytes`, never another push's.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dirSize } from '../src/git/bare-store.ts';
import { type GitClient, gitClient } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

const MAX = 2 * 1024 * 1024;

for (const dialect of DIALECTS) {
  describe(`quota accounting under concurrent pushes (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: { token: string; uuid: string; username: string };
    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    it(
      'three concurrent 0.8 MB pushes into a 2 MiB repo: two fit, the third is refused, usage is the object store',
      { timeout: 240_000 },
      async () => {
        const res = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
          token: alice.token,
          body: { name: 'q', slug: 'q', visibility: 'private' },
        });
        assert.equal(res.status, 201, res.text);
        const uuid: string = res.body.uuid;
        await t.deps.db.updateTable('repos').set({ max_disk_bytes: MAX }).where('uuid', '=', uuid).execute();
        const url = g.url(`/git/users/${alice.username}/q.git`, alice.token);
        const works: string[] = [];
        for (let i = 0; i < 3; i++) {
          const dir = g.tmp(`w${i}`);
          await g.run(['init', '-q', '-b', `b${i}`, dir]);
          writeFileSync(join(dir, 'blob.bin'), randomBytes(800_000));
          await g.run(['-C', dir, 'add', '-A']);
          await g.run(['-C', dir, 'commit', '-q', '-m', `push ${i}`]);
          works.push(dir);
        }
        const results = await Promise.all(works.map((dir, i) => g.run(['-C', dir, 'push', '-q', url, `b${i}`], { ok: false })));
        const accepted = results.filter((r) => r.code === 0).length;
        assert.equal(accepted, 2, results.map((r) => r.stderr).join('\n---\n'));
        const refused = results.find((r) => r.code !== 0)!;
        assert.match(refused.stderr, /quota/);
        const objects = join(t.deps.config.dataDir, 'git', `${uuid}.git`, 'objects');
        const repo = await t.req('GET', `/api/v1/users/${alice.username}/repos/q`, { token: alice.token });
        assert.equal(repo.body.disk_usage_bytes, await dirSize(objects), 'usage counts each push once');
        assert.ok(repo.body.disk_usage_bytes <= MAX);
        const branches = await t.req('GET', `/api/v1/users/${alice.username}/repos/q/branches`, { token: alice.token });
        assert.equal(branches.body.results.length, 2);
        const events = await t.req('GET', `/api/v1/events?scope=repo:${uuid}&kind=branch-pushed`, { token: alice.token });
        assert.equal(events.body.results.length, 2);
      },
    );
  });
}
