import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildCodeRepo, type CodeRepo } from './code-fixtures.ts';
import { type GitClient, gitClient } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

/**
 * Bounded cost (README "Reading code"): past the output cap a diff answers with truncation
 * flags, a streamed archive past the stream cap ends (never hangs), and a git command past its
 * timeout is 503 git_timeout.
 */
for (const dialect of DIALECTS) {
  describe(`reading code within caps (${dialect})`, () => {
    let t: Awaited<ReturnType<typeof startApp>>;
    let slow: TestApp;
    let g: GitClient;
    let alice: { token: string; uuid: string; username: string };
    let api: string;
    let repo: CodeRepo;

    before(async () => {
      t = await startApp(dialect, { config: { gitMaxOutputBytes: 64 * 1024, gitMaxStreamBytes: 16 * 1024, gitMaxProcesses: 1 } });
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
      const created = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: 'capped', slug: 'capped' },
      });
      assert.equal(created.status, 201, created.text);
      api = `/api/v1/users/${alice.username}/repos/capped`;
      repo = await buildCodeRepo(g, 'work', g.url(`/git/users/${alice.username}/capped.git`, alice.token));
      // the same database and data directory, served by an app whose git commands time out at once
      slow = await startApp(dialect, { store: t.store, config: { gitTimeoutMs: 1 } });
    });
    after(async () => {
      await slow.close();
      await t.close();
      g.cleanup();
    });

    it('a diff past the output cap answers its files with patch_truncated, and the list stays whole', async () => {
      const res = await t.req('GET', `${api}/commits/${repo.c.c2}`, { token: alice.token });
      assert.equal(res.status, 200, res.text);
      const names = res.body.files.map((f: { path: string }) => f.path);
      assert.ok(names.includes('wide/f39.txt'));
      assert.equal(res.body.files_truncated, false);
      const big = res.body.files.find((f: { path: string }) => f.path === 'big.txt');
      assert.equal(big.patch, null);
      assert.equal(big.patch_truncated, true);
      // the files whose patches came before the cap keep them
      assert.ok(res.body.files.some((f: { patch: string | null }) => typeof f.patch === 'string'));
    });

    it('a streamed archive past the stream cap ends instead of hanging', async () => {
      const res = await fetch(new URL(`${api}/archive/main.tar.gz`, g.base), {
        headers: { authorization: `Bearer ${alice.token}` },
      });
      assert.equal(res.status, 200);
      const body = await res.arrayBuffer().then(
        (b) => b.byteLength,
        () => -1,
      );
      assert.ok(body <= 16 * 1024, `got ${body} bytes`);
    });

    it('a git command past its timeout is 503 git_timeout', async () => {
      const res = await slow.req('GET', `${api}/compare/v0...main`, { token: alice.token });
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.error, 'git_timeout');
    });
  });
}
