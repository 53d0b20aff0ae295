/**
 * Real crashes of real server processes (SIGKILL), then a restart on the same store
 * (README "Storage lifetimes and crash recovery"):
 * - a merge killed after its branch moved is finished at start-up (sha, one pull-merged event);
 * - a merge killed before its branch moved is released at start-up (open, no event, branch unmoved);
 * - while a merge runs, the pull never reads as merged without a sha;
 * - a push killed after receive-pack moved its ref is recorded at start-up: one branch-pushed
 *   event per moved ref and its disk usage, exactly once;
 * - `disk_usage_bytes` stays equal to the object store's size through pushes and merges.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { dirSize } from '../src/git/bare-store.ts';
import { DIALECTS, freshStore } from './helpers.ts';
import {
  eventually,
  SERVER_ADMIN_TOKEN,
  type ServerProcess,
  type StoreHandle,
  startServer,
  stopServer,
  waitForStderr,
} from './server-process.ts';

const home = mkdtempSync(join(tmpdir(), 'weft-crash-git-'));
writeFileSync(
  join(home, '.gitconfig'),
  '[user]\n\tname = Tester\n\temail = tester@example.com\n[init]\n\tdefaultBranch = main\n',
);

function git(args: string[], cwd = home): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'git',
      args,
      {
        cwd,
        env: { PATH: process.env.PATH, HOME: home, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' },
        timeout: 120_000,
        maxBuffer: 1 << 26,
      },
      (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

async function ok(args: string[], cwd?: string): Promise<string> {
  const r = await git(args, cwd);
  assert.equal(r.code, 0, `git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout.trim();
}

async function api(server: ServerProcess, method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${SERVER_ADMIN_TOKEN}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

for (const dialect of DIALECTS) {
  describe(`merges and pushes survive SIGKILL of a real server process (${dialect})`, () => {
    let store: StoreHandle;
    let server: ServerProcess | undefined;
    before(async () => {
      store = await freshStore(dialect);
    });
    after(async () => {
      await stopServer(server, 'SIGKILL');
      await store.drop();
      rmSync(join(home, dialect), { recursive: true, force: true });
    });

    it('finishes or releases killed merges and records killed pushes at start-up, once', { timeout: 600_000 }, async () => {
      // 1. A server that holds merges after the branch moved.
      server = await startServer(store, { WEFT_TEST_MERGE_HOLD: 'after-move' });
      const created = await api(server, 'POST', '/api/v1/users/admin/repos', {
        name: 'crash',
        slug: 'crash',
        visibility: 'private',
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const repoUuid: string = created.body.uuid;
      const repoApi = '/api/v1/users/admin/repos/crash';
      const remote = () => `${server!.base.replace('http://', `http://x:${SERVER_ADMIN_TOKEN}@`)}/git/users/admin/crash.git`;
      const work = join(home, dialect, 'work');
      await ok(['init', '-q', '-b', 'main', work]);
      writeFileSync(join(work, 'base.txt'), 'base\n');
      await ok(['-C', work, 'add', '-A']);
      await ok(['-C', work, 'commit', '-q', '-m', 'base']);
      for (const branch of ['f1', 'f2']) {
        await ok(['-C', work, 'checkout', '-q', '-b', branch, 'main']);
        writeFileSync(join(work, `${branch}.txt`), `${branch}\n`);
        await ok(['-C', work, 'add', '-A']);
        await ok(['-C', work, 'commit', '-q', '-m', branch]);
      }
      await ok(['-C', work, 'push', '-q', remote(), 'main', 'f1', 'f2']);
      const objects = join(store.dataDir, 'git', `${repoUuid}.git`, 'objects');
      const usage = async () => (await api(server!, 'GET', repoApi)).body.disk_usage_bytes as number;
      assert.equal(await usage(), await dirSize(objects));
      for (const branch of ['f1', 'f2']) {
        const p = await api(server, 'POST', `${repoApi}/pulls`, {
          title: branch,
          body: '',
          source_branch: branch,
          target_branch: 'main',
        });
        assert.equal(p.status, 201, JSON.stringify(p.body));
      }
      const mainBefore = await ok(['-C', work, 'rev-parse', 'main']);

      void api(server, 'POST', `${repoApi}/pulls/1/merge`, { merge_strategy: 'merge' }).catch(() => undefined);
      await waitForStderr(server, /holding a merge \(after-move\)/);
      const during = await api(server, 'GET', `${repoApi}/pulls/1`);
      assert.equal(during.body.status, 'open', 'a merge still running is not shown as merged');
      assert.equal(during.body.merge_commit_sha, null);
      const movedTo = during.body.base_sha as string;
      assert.notEqual(movedTo, mainBefore, 'the branch moved before the kill');
      await stopServer(server, 'SIGKILL');

      // 2. Restart (holding merges before the branch moves): pull 1 is finished at once.
      server = await startServer(store, { WEFT_TEST_MERGE_HOLD: 'before-move' });
      const pull1 = await eventually('pull 1 finished', async () => {
        const p = await api(server!, 'GET', `${repoApi}/pulls/1`);
        return p.body.status === 'merged' ? p.body : undefined;
      });
      assert.equal(pull1.merge_commit_sha, movedTo);
      const merged = async () =>
        (await api(server!, 'GET', `/api/v1/events?scope=repo:${repoUuid}&kind=pull-merged&per_page=100`)).body.results;
      assert.equal((await merged()).length, 1);
      assert.equal(await usage(), await dirSize(objects), 'the merge objects are counted');

      void api(server, 'POST', `${repoApi}/pulls/2/merge`, { merge_strategy: 'squash' }).catch(() => undefined);
      await waitForStderr(server, /holding a merge \(before-move\)/);
      await stopServer(server, 'SIGKILL');

      // 3. Restart (holding pushes before they are recorded): pull 2 is open again, nothing moved.
      server = await startServer(store, { WEFT_TEST_PUSH_HOLD_MS: '600000' });
      const pull2 = await eventually('pull 2 released', async () => {
        const p = await api(server!, 'GET', `${repoApi}/pulls/2`);
        const row = await api(server!, 'GET', `${repoApi}/pulls/2`);
        return p.body.status === 'open' && row.body.merged_at === null ? p.body : undefined;
      });
      assert.equal(pull2.merge_commit_sha, null);
      assert.equal(pull2.base_sha, movedTo, 'the target did not move');
      assert.equal((await merged()).length, 1);
      assert.equal(await usage(), await dirSize(objects));

      await ok(['-C', work, 'checkout', '-q', '-b', 'f3', 'main']);
      writeFileSync(join(work, 'f3.bin'), Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 7919) % 251)));
      await ok(['-C', work, 'add', '-A']);
      await ok(['-C', work, 'commit', '-q', '-m', 'f3']);
      const f3 = await ok(['-C', work, 'rev-parse', 'f3']);
      const usageBefore = await usage();
      const pushing = git(['-C', work, 'push', '-q', remote(), 'f3']);
      await waitForStderr(server, /holding a push before recording it/);
      await stopServer(server, 'SIGKILL');
      await pushing;

      // 4. Restart: the push is recorded once, with its usage; then everything works as usual.
      server = await startServer(store, {});
      const pushedF3 = async () =>
        (await api(server!, 'GET', `/api/v1/events?scope=repo:${repoUuid}&kind=branch-pushed&per_page=100`)).body.results.filter(
          (e: { payload: { ref: string } }) => e.payload.ref === 'refs/heads/f3',
        );
      const events = await eventually('the killed push recorded', async () => {
        const found = await pushedF3();
        return found.length > 0 ? found : undefined;
      });
      assert.equal(events.length, 1);
      assert.equal(events[0].payload.after, f3);
      assert.equal(events[0].payload.before, '0'.repeat(40));
      assert.equal(events[0].payload.pusher.username, 'admin');
      assert.ok((await usage()) > usageBefore);
      assert.equal(await usage(), await dirSize(objects));
      assert.deepEqual(
        readdirSync(join(store.dataDir, 'git-pushes')).filter((n) => n.endsWith('.push')),
        [],
        'no marker left',
      );

      const merge2 = await api(server, 'POST', `${repoApi}/pulls/2/merge`, { merge_strategy: 'squash' });
      assert.equal(merge2.status, 200, JSON.stringify(merge2.body));
      assert.equal(merge2.body.pull.status, 'merged');
      assert.match(merge2.body.merge_commit_sha, /^[0-9a-f]{40}$/);
      assert.equal((await merged()).length, 2);
      writeFileSync(join(work, 'f3b.txt'), 'more\n');
      await ok(['-C', work, 'add', '-A']);
      await ok(['-C', work, 'commit', '-q', '-m', 'f3b']);
      await ok(['-C', work, 'push', '-q', remote(), 'f3']);
      assert.equal((await pushedF3()).length, 2, 'the next push adds its own event; the recovered one is not repeated');
      assert.equal(await usage(), await dirSize(objects));
      assert.equal((await git(['--git-dir', join(store.dataDir, 'git', `${repoUuid}.git`), 'fsck', '--full'])).code, 0);
      await stopServer(server, 'SIGTERM');
      assert.equal(server.child.exitCode, 0);
    });
  });
}
