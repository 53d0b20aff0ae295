import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
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

    it('forks share objects through alternates, clone, and keep working once the source is deleted', async () => {
      const repo = await newRepo('public');
      const work = await makeWorkTree(g, `w${n}`, [{ 'x.txt': 'x\n' }, { 'y.txt': 'y\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url(repo.git, alice.token), 'main', 'main:dev']);
      const fork = await t.req('POST', `${repo.api}/forks`, { token: bob.token });
      assert.equal(fork.status, 201, fork.text);
      const forkGit = `/git/users/${bob.username}/${repo.slug}.git`;
      const store = t.deps.git as unknown as { pathOf(uuid: string): string };
      const forkDir = store.pathOf(fork.body.repo.uuid);
      assert.ok(existsSync(join(forkDir, 'objects', 'info', 'alternates')));
      const sourceUsage = (await t.req('GET', repo.api, { token: alice.token })).body.disk_usage_bytes;
      assert.ok(fork.body.repo.disk_usage_bytes < sourceUsage, 'the fork borrows the objects');
      const head = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      const c1 = g.tmp(`fork${n}`);
      await g.run(['clone', '-q', g.url(forkGit, bob.token), c1]);
      assert.equal((await g.run(['-C', c1, 'rev-parse', 'HEAD'])).stdout.trim(), head);
      assert.match((await g.run(['ls-remote', g.url(forkGit, bob.token)])).stdout, /refs\/heads\/dev/);
      await commitFiles(g, c1, [{ 'z.txt': 'z\n' }]);
      await g.run(['-C', c1, 'push', '-q', 'origin', 'main']);

      assert.equal((await t.req('DELETE', repo.api, { token: alice.token })).status, 204);
      assert.ok(!existsSync(join(forkDir, 'objects', 'info', 'alternates')), 'the fork has its own objects now');
      await g.run(['--git-dir', forkDir, 'fsck', '--no-progress']);
      const c2 = g.tmp(`fork${n}b`);
      await g.run(['clone', '-q', g.url(forkGit, bob.token), c2]);
      assert.equal((await g.run(['-C', c2, 'show', 'HEAD:x.txt'])).stdout, 'x\n');
      const after = (await t.req('GET', `/api/v1/users/${bob.username}/repos/${repo.slug}`, { token: bob.token })).body;
      assert.ok(after.disk_usage_bytes > fork.body.repo.disk_usage_bytes);
    });

    it('branches (with protected flags, paged), pull commits and files', async () => {
      const repo = await newRepo('public');
      const work = await makeWorkTree(g, `w${n}`, [
        { 'a.txt': '1\n2\n', 'old.txt': 'same content here\nline two\nline three\n', 'gone.txt': 'g\n' },
      ]);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'topic']);
      await g.run(['-C', work, 'mv', 'old.txt', 'new.txt']);
      await g.run(['-C', work, 'rm', '-q', 'gone.txt']);
      await commitFiles(g, work, [{ 'a.txt': '1\nchanged\n3\n', 'added.txt': 'new\n' }], 'topic');
      await commitFiles(g, work, [{ 'more.txt': 'm\n' }], 'second');
      await g.run(['-C', work, 'push', '-q', g.url(repo.git, alice.token), 'main', 'topic']);
      assert.equal((await t.req('POST', `${repo.api}/protections`, { token: alice.token, body: { branch: 'ma*' } })).status, 201);
      const branches = await t.req('GET', `${repo.api}/branches`, { token: bob.token });
      assert.equal(branches.status, 200, branches.text);
      const tip = async (rev: string) => (await g.run(['-C', work, 'rev-parse', rev])).stdout.trim();
      assert.deepEqual(branches.body.results, [
        { name: 'main', commit_sha: await tip('main'), protected: true },
        { name: 'topic', commit_sha: await tip('topic'), protected: false },
      ]);
      const paged = await t.req('GET', `${repo.api}/branches?per_page=1&page=2`, { token: bob.token });
      assert.deepEqual(
        paged.body.results.map((b: { name: string }) => b.name),
        ['topic'],
      );
      const priv = await newRepo('private');
      assert.equal((await t.req('GET', `${priv.api}/branches`, { token: bob.token })).status, 404);

      const pull = await t.req('POST', `${repo.api}/pulls`, {
        token: bob.token,
        body: { title: 'T', body: '', source_branch: 'topic', target_branch: 'main' },
      });
      assert.equal(pull.status, 201, pull.text);
      const commits = await t.req('GET', `${repo.api}/pulls/${pull.body.number}/commits`, { token: bob.token });
      assert.equal(commits.status, 200, commits.text);
      assert.deepEqual(
        commits.body.results.map((c: { message: string }) => c.message),
        ['topic 1', 'second 1'],
      );
      assert.deepEqual(Object.keys(commits.body.results[0]).sort(), [
        'author_email',
        'author_name',
        'authored_at',
        'message',
        'sha',
      ]);
      assert.equal(commits.body.results[0].author_email, 'tester@example.com');
      assert.equal(commits.body.results[1].sha, await tip('topic'));
      const files = await t.req('GET', `${repo.api}/pulls/${pull.body.number}/files`, { token: bob.token });
      assert.equal(files.status, 200, files.text);
      assert.deepEqual(
        files.body.results.map(({ path, status, additions, deletions }: Record<string, unknown>) => ({
          path,
          status,
          additions,
          deletions,
        })),
        [
          { path: 'a.txt', status: 'modified', additions: 2, deletions: 1 },
          { path: 'added.txt', status: 'added', additions: 1, deletions: 0 },
          { path: 'gone.txt', status: 'deleted', additions: 0, deletions: 1 },
          { path: 'more.txt', status: 'added', additions: 1, deletions: 0 },
          { path: 'new.txt', status: 'renamed', additions: 0, deletions: 0 },
        ],
      );
      // patches (README "Reading code"): hunks only; a pure rename has none
      assert.equal(files.body.results[4].patch, null);
      assert.equal(typeof files.body.results[0].patch, 'string');
      assert.match(files.body.results[0].patch, /^@@ /);
      const none = await t.req('POST', `${repo.api}/pulls`, {
        token: bob.token,
        body: { title: 'T', body: '', source_branch: 'nope', target_branch: 'main' },
      });
      assert.deepEqual(
        (await t.req('GET', `${repo.api}/pulls/${none.body.number}/commits`, { token: bob.token })).body.results,
        [],
      );
      assert.equal((await t.req('GET', `${repo.api}/pulls/0/files`, { token: bob.token })).status, 400);
      assert.equal((await t.req('GET', `${repo.api}/pulls/999/files`, { token: bob.token })).status, 404);
    });

    it('bad input: garbage pkt-lines and packs, gzip bodies, v2 commands, dot-dot paths; no 5xx, the repo stays consistent', async () => {
      const repo = await newRepo('public');
      const work = await makeWorkTree(g, `w${n}`, [{ 'x.txt': 'x\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url(repo.git, alice.token), 'main']);
      const head = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      const auth = { authorization: `Basic ${Buffer.from(`x:${alice.token}`).toString('base64')}` };
      const post = (service: string, body: Buffer, headers: Record<string, string> = {}) =>
        fetch(new URL(`${repo.git}/${service}`, g.base), {
          method: 'POST',
          headers: { ...auth, 'content-type': `application/x-${service}-request`, ...headers },
          body: new Uint8Array(body),
        });
      const zero = '0'.repeat(40);
      const hostile = [
        Buffer.from('zzzz not a pkt-line at all'),
        Buffer.from(`00a0${zero} ${head} refs/heads/evil\0report-status\n0000PACK\x00\x00\x00\x02garbage`),
        Buffer.from(`0067${zero} ${head} refs/heads/a..b\0report-status0000`),
      ];
      for (const body of hostile) {
        for (const service of ['git-receive-pack', 'git-upload-pack']) {
          const res = await post(service, body);
          assert.ok(res.status < 500, `${service}: ${res.status}`);
          await res.arrayBuffer();
        }
      }
      const store = t.deps.git as unknown as { pathOf(uuid: string): string };
      await g.run(['--git-dir', store.pathOf(repo.uuid), 'fsck', '--no-progress']);
      const ls = await g.run(['ls-remote', g.url(repo.git, null)]);
      assert.deepEqual(
        ls.stdout
          .trim()
          .split('\n')
          .map((l) => l.split('\t')[1]),
        ['HEAD', 'refs/heads/main'],
      );

      // protocol v2 ls-refs, gzip-compressed
      const { gzipSync } = await import('node:zlib');
      const cmd = Buffer.from('0014command=ls-refs\n00010000');
      const v2 = await post('git-upload-pack', gzipSync(cmd), { 'content-encoding': 'gzip', 'git-protocol': 'version=2' });
      assert.equal(v2.status, 200);
      assert.match(await v2.text(), new RegExp(`${head} refs/heads/main`));

      const { request } = await import('node:http');
      const status = await new Promise<number>((resolve, reject) => {
        const u = new URL(g.base);
        const r = request(
          { host: u.hostname, port: u.port, path: '/git/teams/../x.git/info/refs?service=git-upload-pack', headers: auth },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        r.on('error', reject);
        r.end();
      });
      assert.ok(status >= 400 && status < 500, String(status));
    });

    it('HEAD follows default_branch', async () => {
      const repo = await newRepo();
      const work = await makeWorkTree(g, `w${n}`, [{ 'x.txt': 'x\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url(repo.git, alice.token), 'main', 'main:trunk']);
      const put = await t.req('PUT', repo.api, { token: alice.token, body: { default_branch: 'trunk' } });
      assert.equal(put.status, 200, put.text);
      const ls = await g.run(['ls-remote', '--symref', g.url(repo.git, alice.token), 'HEAD']);
      assert.match(ls.stdout, /^ref: refs\/heads\/trunk\tHEAD/);
    });

    it('a push of more than 1,000 refs is refused as a whole', async () => {
      const repo = await newRepo();
      const work = await makeWorkTree(g, `w${n}`, [{ 'x.txt': 'x\n' }]);
      const head = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      const input = Array.from({ length: 1001 }, (_, i) => `create refs/heads/b${i} ${head}\n`).join('');
      const { writeFileSync } = await import('node:fs');
      writeFileSync(join(work, 'refs.txt'), input);
      const { execFileSync } = await import('node:child_process');
      execFileSync('git', ['-C', work, 'update-ref', '--stdin'], {
        input,
        env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1' },
      });
      const push = await g.run(['-C', work, 'push', g.url(repo.git, alice.token), 'refs/heads/*:refs/heads/*'], { ok: false });
      assert.notEqual(push.code, 0);
      assert.match(push.stderr, /at most 1000 refs/);
      const ls = await g.run(['ls-remote', g.url(repo.git, alice.token)]);
      assert.equal(ls.stdout, '');
    });
  });
}
