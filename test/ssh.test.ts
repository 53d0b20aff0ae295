import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type SshServer, startSshServer } from '../src/ssh/server.ts';
import { seedTeam } from './fixtures.ts';
import { type GitClient, gitClient, makeWorkTree, commitFiles } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { type KeyPair, gitSshCommand, keyDir, runSsh } from './ssh-fixtures.ts';

type User = { token: string; uuid: string; username: string };

/** README "Git over SSH": the system ssh client and git against the in-process SSH server. */
for (const dialect of DIALECTS) {
  describe(`git over SSH (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let ssh: SshServer;
    let keys: ReturnType<typeof keyDir>;
    let alice: User;
    let bob: User;
    let aliceKey: KeyPair;
    let bobKey: KeyPair;
    let team: { uuid: string; slug: string };
    let n = 0;

    const addKey = async (user: User, key: KeyPair) => {
      const res = await t.req('POST', '/api/v1/user/keys', { token: user.token, body: { title: 'k', key: key.pub } });
      assert.equal(res.status, 201, res.text);
      return res.body.uuid as string;
    };
    const sshGit = (key: KeyPair) => ({ env: { GIT_SSH_COMMAND: gitSshCommand(key.path, ssh.port) } });
    const sshUrl = (path: string) => `ssh://git@127.0.0.1:${ssh.port}${path}`;
    const newRepo = async (owner: 'user' | 'team', visibility: 'public' | 'private' = 'private') => {
      const slug = `s${++n}`;
      const base = owner === 'team' ? `/api/v1/teams/${team.slug}/repos` : `/api/v1/users/${alice.username}/repos`;
      const res = await t.req('POST', base, { token: alice.token, body: { name: slug, slug, visibility } });
      assert.equal(res.status, 201, res.text);
      return {
        slug,
        uuid: res.body.uuid as string,
        api: `${base}/${slug}`,
        path: owner === 'team' ? `/teams/${team.slug}/${slug}.git` : `/users/${alice.username}/${slug}.git`,
        ssh_url: res.body.ssh_url as string,
      };
    };

    before(async () => {
      t = await startApp(dialect, { config: { sshMaxSessionsPerUser: 2, gitWaitMs: 500 } });
      g = await gitClient(t);
      ssh = await startSshServer(t.deps, { port: 0, host: '127.0.0.1' });
      keys = keyDir();
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
      team = await seedTeam(t, `crew${dialect}`, [{ uuid: alice.uuid, role: 'owner' }]);
      aliceKey = keys.make('alice', 'ed25519');
      bobKey = keys.make('bob', 'ecdsa');
      await addKey(alice, aliceKey);
      await addKey(bob, bobKey);
    });
    after(async () => {
      await ssh.close();
      await t.close();
      g.cleanup();
      keys.cleanup();
    });

    it('push, clone and fetch over SSH with keys made by ssh-keygen; ssh_url names the repo; last_used_at is set', async () => {
      const repo = await newRepo('team');
      assert.equal(repo.ssh_url, `ssh://git@127.0.0.1:${t.deps.config.sshPublicPort}/teams/${team.slug}/${repo.slug}.git`);
      const work = await makeWorkTree(g, `w${n}`, [{ 'a.txt': 'one\n' }]);
      await g.run(['-C', work, 'push', '-q', sshUrl(repo.path), 'main'], sshGit(aliceKey));
      const head = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      const events = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}`, { token: alice.token });
      const pushed = events.body.results.filter((e: { kind: string }) => e.kind === 'branch-pushed');
      assert.equal(pushed.length, 1);
      assert.deepEqual(pushed[0].payload.pusher, { uuid: alice.uuid, username: alice.username });
      assert.equal(pushed[0].payload.after, head);
      const usage = await t.req('GET', repo.api, { token: alice.token });
      assert.ok(usage.body.disk_usage_bytes > 0);

      for (const proto of ['0', '2']) {
        const dest = g.tmp(`c${n}-${proto}`);
        await g.run(
          ['-c', `protocol.version=${proto}`, 'clone', '-q', sshUrl(repo.path.replace(/\.git$/, '')), dest],
          sshGit(aliceKey),
        );
        assert.equal((await g.run(['-C', dest, 'rev-parse', 'HEAD'])).stdout.trim(), head);
      }
      await commitFiles(g, work, [{ 'b.txt': 'two\n' }]);
      await g.run(['-C', work, 'push', '-q', sshUrl(repo.path), 'main'], sshGit(aliceKey));
      const dest = g.tmp(`c${n}-0`);
      await g.run(['-C', dest, 'fetch', '-q', 'origin'], sshGit(aliceKey));
      assert.equal((await g.run(['-C', dest, 'show', 'origin/main:b.txt'])).stdout, 'two\n');
      const key = (await t.req('GET', '/api/v1/user/keys', { token: alice.token })).body.results[0];
      assert.ok(key.last_used_at);
    });

    it("an outsider's key gets no private repo (read or write); a reader cannot push; public repos clone", async () => {
      const priv = await newRepo('user', 'private');
      const pub = await newRepo('user', 'public');
      const work = await makeWorkTree(g, `w${n}`, [{ 'x.txt': 'x\n' }]);
      for (const r of [priv, pub]) await g.run(['-C', work, 'push', '-q', sshUrl(r.path), 'main'], sshGit(aliceKey));
      const clone = await g.run(['clone', '-q', sshUrl(priv.path), g.tmp(`o${n}`)], { ...sshGit(bobKey), ok: false });
      assert.notEqual(clone.code, 0);
      assert.match(clone.stderr, /weft: Repo not found\./);
      const push = await g.run(['-C', work, 'push', sshUrl(priv.path), 'main:other'], { ...sshGit(bobKey), ok: false });
      assert.notEqual(push.code, 0);
      assert.match(push.stderr, /weft: Repo not found\./);
      await g.run(['clone', '-q', sshUrl(pub.path), g.tmp(`p${n}`)], sshGit(bobKey));
      const pubPush = await g.run(['-C', work, 'push', sshUrl(pub.path), 'main:other'], { ...sshGit(bobKey), ok: false });
      assert.notEqual(pubPush.code, 0);
      assert.match(pubPush.stderr, /weft: Pushing needs write access to the repo\./);
      const branches = await t.req('GET', `${pub.api}/branches`, { token: alice.token });
      assert.deepEqual(
        branches.body.results.map((b: { name: string }) => b.name),
        ['main'],
      );
      // a key nobody registered does not get in at all
      const stranger = keys.make('stranger', 'ed25519');
      const denied = await runSsh(stranger.path, ssh.port, ['git-upload-pack', `'${pub.path}'`]);
      assert.equal(denied.code, 255);
      assert.match(denied.stderr, /Permission denied/);
    });

    it('a push to a protected branch is refused over SSH with the same message as over HTTP, keeping nothing', async () => {
      const repo = await newRepo('user');
      const work = await makeWorkTree(g, `w${n}`, [{ 'a.txt': 'one\n' }]);
      await g.run(['-C', work, 'push', '-q', sshUrl(repo.path), 'main'], sshGit(aliceKey));
      const prot = await t.req('POST', `${repo.api}/protections`, {
        token: alice.token,
        body: { branch: 'main', required_approvals: 1 },
      });
      assert.equal(prot.status, 201, prot.text);
      await commitFiles(g, work, [{ 'a.txt': 'changed\n' }]);
      const overSsh = await g.run(['-C', work, 'push', sshUrl(repo.path), 'main'], { ...sshGit(aliceKey), ok: false });
      const overHttp = await g.run(['-C', work, 'push', g.url(`/git${repo.path}`, alice.token), 'main'], { ok: false });
      assert.notEqual(overSsh.code, 0);
      assert.notEqual(overHttp.code, 0);
      // (git pads sideband lines with spaces over SSH)
      const message = (s: string) =>
        s
          .split('\n')
          .map((l) => l.trimEnd())
          .filter((l) => l.startsWith('remote: weft:'));
      assert.deepEqual(message(overSsh.stderr), [
        'remote: weft: main: the branch is protected; changes reach it only by merging a pull request',
      ]);
      assert.deepEqual(message(overSsh.stderr), message(overHttp.stderr));
      const branches = await t.req('GET', `${repo.api}/branches`, { token: alice.token });
      const tip = (await g.run(['-C', work, 'rev-parse', 'HEAD~1'])).stdout.trim();
      assert.equal(branches.body.results[0].commit_sha, tip);
    });

    it('anything but git-upload-pack / git-receive-pack is refused with a message', async () => {
      const repo = await newRepo('user', 'public');
      for (const command of [
        [],
        ['ls', '-la'],
        ['git-upload-archive', `'${repo.path}'`],
        ['git-upload-pack', "'/etc/passwd'"],
        ['sh', '-c', 'id'],
      ]) {
        const res = await runSsh(aliceKey.path, ssh.port, command);
        assert.equal(res.code, 1, `${command.join(' ')}: ${res.stderr}`);
        assert.match(res.stderr, /weft: only git-upload-pack and git-receive-pack are served/);
      }
      const missing = await runSsh(aliceKey.path, ssh.port, ['git-upload-pack', `'/users/${alice.username}/nope.git'`]);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /weft: Repo not found\./);
    });

    it('a deleted key, or a deactivated user, stops working at once', async () => {
      const repo = await newRepo('user', 'public');
      const carol = await t.user(`carol${dialect}`);
      const carolKey = keys.make(`carol${n}`, 'rsa', 3072);
      const keyUuid = await addKey(carol, carolKey);
      const work = await makeWorkTree(g, `w${n}`, [{ 'a.txt': 'one\n' }]);
      await g.run(['-C', work, 'push', '-q', sshUrl(repo.path), 'main'], sshGit(aliceKey));
      await g.run(['clone', '-q', sshUrl(repo.path), g.tmp(`k${n}`)], sshGit(carolKey));
      assert.equal((await t.req('DELETE', `/api/v1/user/keys/${keyUuid}`, { token: carol.token })).status, 204);
      const after = await g.run(['clone', '-q', sshUrl(repo.path), g.tmp(`k${n}b`)], { ...sshGit(carolKey), ok: false });
      assert.notEqual(after.code, 0);
      assert.match(after.stderr, /Permission denied/);
      // deactivated: the key is registered still, and refused
      await addKey(carol, carolKey);
      assert.equal((await t.req('PUT', `/api/v1/users/${carol.username}`, { body: { is_active: false } })).status, 200);
      const inactive = await g.run(['clone', '-q', sshUrl(repo.path), g.tmp(`k${n}c`)], { ...sshGit(carolKey), ok: false });
      assert.notEqual(inactive.code, 0);
    });

    it('at most SSH_MAX_SESSIONS_PER_USER git commands of one user at a time; more wait GIT_WAIT_MS, then get a message', async () => {
      const repo = await newRepo('user', 'public');
      const work = await makeWorkTree(g, `w${n}`, [{ 'a.txt': 'one\n' }]);
      await g.run(['-C', work, 'push', '-q', sshUrl(repo.path), 'main'], sshGit(aliceKey));
      // two sessions held open: upload-pack waits for the client's wants on stdin, which stays open
      const { spawn } = await import('node:child_process');
      const { sshOptions } = await import('./ssh-fixtures.ts');
      const held = [0, 1].map(() =>
        spawn('ssh', [...sshOptions(aliceKey.path, ssh.port), 'git@127.0.0.1', 'git-upload-pack', `'${repo.path}'`], {
          stdio: ['pipe', 'pipe', 'pipe'],
        }),
      );
      try {
        // each has authenticated once git has advertised its refs
        await Promise.all(held.map((c) => new Promise((resolve) => c.stdout!.once('data', resolve))));
        const third = await runSsh(aliceKey.path, ssh.port, ['git-upload-pack', `'${repo.path}'`]);
        assert.equal(third.code, 1);
        assert.match(third.stderr, /too many concurrent SSH sessions for this user \(at most 2\)/);
        // another user is not held back
        await g.run(['clone', '-q', sshUrl(repo.path), g.tmp(`m${n}`)], sshGit(bobKey));
      } finally {
        for (const c of held) c.kill();
        await Promise.all(
          held.map((c) => new Promise((resolve) => (c.exitCode !== null ? resolve(null) : c.once('exit', resolve)))),
        );
      }
      // the slots free when the sessions end (the server sees the close shortly after)
      for (let i = 0; ; i++) {
        const res = await runSsh(aliceKey.path, ssh.port, ['git-upload-pack', `'/users/${alice.username}/nope.git'`]);
        if (!/too many/.test(res.stderr)) {
          assert.match(res.stderr, /weft: Repo not found\./);
          break;
        }
        assert.ok(i < 50, 'the sessions were not released');
        await new Promise((r) => setTimeout(r, 100));
      }
    });
  });
}
