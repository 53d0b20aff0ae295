import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gitHttpLimiter } from '../src/git/limits.ts';
import { type SshServer, startSshServer } from '../src/ssh/server.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { gitSshCommand, keyDir } from './ssh-fixtures.ts';
import { waitUntil } from './webhooks-helpers.ts';

/**
 * README "Bounded git processes": past the per-client (HTTP) or per-user (SSH) cap, git waits for
 * a slot (GIT_WAIT_MS) instead of being refused, so a CI's 20 parallel checkouts from one host
 * all succeed; past the wait it is still a 503.
 */
for (const dialect of DIALECTS) {
  describe(`git waits for a slot (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let ssh: SshServer;
    let keys: ReturnType<typeof keyDir>;
    let alice: { token: string; uuid: string; username: string };
    let head: string;
    const slug = 'matrix';

    before(async () => {
      t = await startApp(dialect, {
        config: { gitHttpMaxProcesses: 6, gitHttpMaxProcessesPerClient: 3, sshMaxSessionsPerUser: 3, gitWaitMs: 60_000 },
      });
      g = await gitClient(t);
      ssh = await startSshServer(t.deps, { port: 0, host: '127.0.0.1' });
      keys = keyDir();
      alice = await t.user(`alice${dialect}`);
      const res = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: slug, slug, visibility: 'private' },
      });
      assert.equal(res.status, 201, res.text);
      const work = await makeWorkTree(g, 'w', [{ 'a.txt': 'a\n' }, { 'b.txt': 'b\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url(`/git/users/${alice.username}/${slug}.git`, alice.token), 'main']);
      head = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
    });
    after(async () => {
      await ssh.close();
      await t.close();
      g.cleanup();
      keys.cleanup();
    });

    it('20 parallel clones over HTTP from one address (cap 3 per client) all succeed', { timeout: 180_000 }, async () => {
      const url = g.url(`/git/users/${alice.username}/${slug}.git`, alice.token);
      let most = 0;
      const watch = setInterval(() => (most = Math.max(most, gitHttpLimiter(t.deps).waiting)), 5);
      try {
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => g.run(['clone', '-q', url, g.tmp(`h${i}`)], { ok: false })),
        );
        for (const r of results) assert.equal(r.code, 0, r.stderr);
        for (let i = 0; i < 20; i++) assert.equal((await g.run(['-C', g.tmp(`h${i}`), 'rev-parse', 'HEAD'])).stdout.trim(), head);
      } finally {
        clearInterval(watch);
      }
      assert.ok(most > 0, 'some clones waited for a slot');
      await waitUntil(() => gitHttpLimiter(t.deps).running === 0, 30_000, 'every slot given back');
    });

    it('20 parallel clones over SSH with one key (cap 3 per user) all succeed', { timeout: 180_000 }, async () => {
      const key = keys.make(`k${dialect}`, 'ed25519');
      const added = await t.req('POST', '/api/v1/user/keys', { token: alice.token, body: { title: 'ci', key: key.pub } });
      assert.equal(added.status, 201, added.text);
      const url = `ssh://git@127.0.0.1:${ssh.port}/users/${alice.username}/${slug}.git`;
      const env = { env: { GIT_SSH_COMMAND: gitSshCommand(key.path, ssh.port) } };
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => g.run(['clone', '-q', url, g.tmp(`s${i}`)], { ...env, ok: false })),
      );
      for (const r of results) assert.equal(r.code, 0, r.stderr);
      for (let i = 0; i < 20; i++) assert.equal((await g.run(['-C', g.tmp(`s${i}`), 'rev-parse', 'HEAD'])).stdout.trim(), head);
    });

    it('a waiter whose client goes away leaves the line with a 503; another client is not held up', async () => {
      const limiter = gitHttpLimiter(t.deps);
      const held = [limiter.tryAcquire('127.0.0.1'), limiter.tryAcquire('127.0.0.1'), limiter.tryAcquire('127.0.0.1')];
      try {
        // a waiter whose client gives up (the abort signal) leaves the line with the 503
        const gone = new AbortController();
        const waiting = limiter.acquire('127.0.0.1', gone.signal);
        await waitUntil(() => limiter.waiting === 1, 5_000, 'the request to wait');
        gone.abort();
        await assert.rejects(waiting, (err: { status?: number; statusCode?: number }) => (err.status ?? err.statusCode) === 503);
        assert.equal(limiter.waiting, 0);
        // another client is not held up by this one's cap
        limiter.tryAcquire('10.0.0.9')();
      } finally {
        for (const release of held) release();
      }
    });
  });
}
