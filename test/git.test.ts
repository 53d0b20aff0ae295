import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seedTeam } from './fixtures.ts';
import { commitFiles, type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

for (const dialect of DIALECTS) {
  describe(`git smart HTTP (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    let n = 0;
    const newRepo = async (visibility: 'public' | 'private' = 'private') => {
      const slug = `g${++n}`;
      const res = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: slug, slug, visibility },
      });
      assert.equal(res.status, 201, res.text);
      return {
        slug,
        uuid: res.body.uuid as string,
        api: `/api/v1/users/${alice.username}/repos/${slug}`,
        git: `/git/users/${alice.username}/${slug}.git`,
        clone_url: res.body.clone_url as string,
      };
    };

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    it('push then clone over v0 and v2, with and without .git', async () => {
      const repo = await newRepo();
      const work = await makeWorkTree(g, `w${n}`, [{ 'a.txt': 'one\n' }, { 'b/c.txt': 'two\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url(repo.git, alice.token), 'main']);
      const events = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}`, { token: alice.token });
      const pushed = events.body.results.filter((e: { kind: string }) => e.kind === 'branch-pushed');
      assert.equal(pushed.length, 1);
      const head = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      assert.deepEqual(pushed[0].payload.ref, 'refs/heads/main');
      assert.equal(pushed[0].payload.after, head);
      assert.equal(pushed[0].payload.before, '0'.repeat(40));
      assert.deepEqual(pushed[0].payload.pusher, { uuid: alice.uuid, username: alice.username });
      for (const [proto, suffix] of [
        ['0', '.git'],
        ['2', ''],
      ] as const) {
        const dest = g.tmp(`clone${n}-${proto}`);
        const url = g.url(repo.git.replace(/\.git$/, suffix), alice.token);
        await g.run(['-c', `protocol.version=${proto}`, 'clone', '-q', url, dest]);
        assert.equal((await g.run(['-C', dest, 'rev-parse', 'HEAD'])).stdout.trim(), head);
        assert.equal((await g.run(['-C', dest, 'show', 'HEAD:b/c.txt'])).stdout, 'two\n');
      }
      const after = await t.req('GET', repo.api, { token: alice.token });
      assert.ok(after.body.disk_usage_bytes > 0);
    });

    it('access: anonymous public clone, 401 challenge, 404 for outsiders, 403 push without write', async () => {
      const priv = await newRepo('private');
      const pub = await newRepo('public');
      const work = await makeWorkTree(g, `w${n}`, [{ 'x.txt': 'x\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url(pub.git, alice.token), 'main']);
      await g.run(['-C', work, 'push', '-q', g.url(priv.git, alice.token), 'main']);
      await g.run(['clone', '-q', g.url(pub.git, null), g.tmp(`anon${n}`)]);

      const res = await fetch(new URL(`${priv.git}/info/refs?service=git-upload-pack`, g.base));
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('www-authenticate'), 'Basic realm="weft"');
      const basic = (tok: string) => ({ authorization: `Basic ${Buffer.from(`x:${tok}`).toString('base64')}` });
      assert.equal(
        (await fetch(new URL(`${priv.git}/info/refs?service=git-upload-pack`, g.base), { headers: basic(bob.token) })).status,
        404,
      );
      assert.equal((await fetch(new URL(`${pub.git}/info/refs?service=git-receive-pack`, g.base))).status, 401);
      assert.equal(
        (await fetch(new URL(`${pub.git}/info/refs?service=git-receive-pack`, g.base), { headers: basic(bob.token) })).status,
        403,
      );
      assert.equal(
        (await fetch(new URL(`${pub.git}/info/refs?service=git-evil`, g.base), { headers: basic(alice.token) })).status,
        400,
      );
      assert.equal((await fetch(new URL(`${pub.git}/info/refs`, g.base))).status, 400);
      assert.equal(
        (
          await fetch(new URL(`/git/users/nobody/none.git/info/refs?service=git-upload-pack`, g.base), {
            headers: basic(bob.token),
          })
        ).status,
        404,
      );

      const denied = await g.run(['clone', '-q', g.url(priv.git, bob.token), g.tmp(`bob${n}`)], { ok: false });
      assert.notEqual(denied.code, 0);
      const push = await g.run(['-C', work, 'push', g.url(pub.git, bob.token), 'main:other'], { ok: false });
      assert.notEqual(push.code, 0);
      assert.match(push.stderr, /403/);
    });

    it('archived repos and inactive teams refuse pushes', async () => {
      const repo = await newRepo('public');
      const work = await makeWorkTree(g, `w${n}`, [{ 'x.txt': 'x\n' }]);
      assert.equal((await t.req('PUT', `${repo.api}/archive`, { token: alice.token })).status, 200);
      const push = await g.run(['-C', work, 'push', g.url(repo.git, alice.token), 'main'], { ok: false });
      assert.notEqual(push.code, 0);
      await g.run(['clone', '-q', g.url(repo.git, alice.token), g.tmp(`arch${n}`)]);

      const team = await seedTeam(t, `gteam${dialect}`, [{ uuid: alice.uuid, role: 'owner' }]);
      const created = await t.req('POST', `/api/v1/teams/${team.slug}/repos`, {
        token: alice.token,
        body: { name: 'tr', slug: 'tr' },
      });
      assert.equal(created.status, 201, created.text);
      await g.run(['-C', work, 'push', '-q', g.url(`/git/teams/${team.slug}/tr.git`, alice.token), 'main']);
      await t.deps.db.updateTable('teams').set({ is_active: 0 }).where('uuid', '=', team.uuid).execute();
      const refused = await g.run(['-C', work, 'push', g.url(`/git/teams/${team.slug}/tr.git`, alice.token), 'main:b2'], {
        ok: false,
      });
      assert.notEqual(refused.code, 0);
    });

    it('protected branches refuse direct pushes with a message; other branches pass', async () => {
      const repo = await newRepo();
      const work = await makeWorkTree(g, `w${n}`, [{ 'x.txt': 'x\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url(repo.git, alice.token), 'main']);
      const prot = await t.req('POST', `${repo.api}/protections`, { token: alice.token, body: { branch: 'release/*' } });
      assert.equal(prot.status, 201, prot.text);
      const prot2 = await t.req('POST', `${repo.api}/protections`, { token: alice.token, body: { branch: 'main' } });
      assert.equal(prot2.status, 201, prot2.text);
      await commitFiles(g, work, [{ 'x.txt': 'y\n' }]);
      const refused = await g.run(['-C', work, 'push', g.url(repo.git, alice.token), 'main'], { ok: false });
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /main: the branch is protected/);
      const refused2 = await g.run(['-C', work, 'push', g.url(repo.git, alice.token), 'main:release/1'], { ok: false });
      assert.notEqual(refused2.code, 0);
      assert.match(refused2.stderr, /release\/1: the branch is protected/);
      await g.run(['-C', work, 'push', '-q', g.url(repo.git, alice.token), 'main:release/1/deep']);
      const ls = await g.run(['ls-remote', g.url(repo.git, alice.token)]);
      assert.doesNotMatch(ls.stdout, /refs\/heads\/release\/1\n/);
      assert.match(ls.stdout, /refs\/heads\/release\/1\/deep/);
    });

    it('the quota refuses a push that would pass max_disk_bytes and keeps nothing', async () => {
      const repo = await newRepo();
      const work = await makeWorkTree(g, `w${n}`, [{ 'x.txt': 'x\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url(repo.git, alice.token), 'main']);
      const before = (await t.req('GET', repo.api, { token: alice.token })).body.disk_usage_bytes as number;
      await t.deps.db
        .updateTable('repos')
        .set({ max_disk_bytes: before + 20_000 })
        .where('uuid', '=', repo.uuid)
        .execute();
      const { randomBytes } = await import('node:crypto');
      await commitFiles(g, work, [{ 'big.bin': randomBytes(200_000).toString('base64') }]);
      const refused = await g.run(['-C', work, 'push', g.url(repo.git, alice.token), 'main'], { ok: false });
      assert.notEqual(refused.code, 0, refused.stderr);
      const usage = (await t.req('GET', repo.api, { token: alice.token })).body.disk_usage_bytes as number;
      assert.ok(usage <= before + 100, `${usage} vs ${before}`);
      const ls = await g.run(['ls-remote', g.url(repo.git, alice.token), 'main']);
      assert.equal(ls.stdout.slice(0, 40), (await g.run(['-C', work, 'rev-parse', 'HEAD~1'])).stdout.trim());
    });
  });
}
