import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, freshStore } from './helpers.ts';
import {
  SERVER_ADMIN_TOKEN,
  type ServerProcess,
  type StoreHandle,
  eventually,
  startServer,
  stopServer,
  git,
} from './server-process.ts';

/**
 * docs/ci.md "Auto-merge" with two real server processes (dist/main.js) on one PostgreSQL
 * database: the triggers (statuses from an outside CI and an approval) reach both instances at
 * once, both instances' job workers attempt the merge, and the pull merges exactly once: one
 * merge commit on the target branch and one `pull-merged` event.
 */

async function api(base: string, method: string, path: string, body?: unknown, token = SERVER_ADMIN_TOKEN) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are inspected freely
  return {
    status: res.status,
    body: (text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : {}) as any,
    text,
  };
}

for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`auto-merge across two server processes (${dialect})`, () => {
    let store: StoreHandle;
    let servers: ServerProcess[] = [];
    let dir: string;
    const repo = '/users/admin/repos/app';

    before(async () => {
      store = await freshStore(dialect);
      servers = await Promise.all([0, 1].map(() => startServer(store)));
      dir = mkdtempSync(join(tmpdir(), 'weft-am-instances-'));
    });
    after(async () => {
      await Promise.all(servers.map((s) => stopServer(s, 'SIGTERM')));
      rmSync(dir, { recursive: true, force: true });
      await store?.drop();
    });

    it('both instances see the triggers; the pull merges once (one merge commit, one pull-merged)', async () => {
      const [a, b] = [servers[0]!.base, servers[1]!.base];
      assert.equal((await api(a, 'POST', '/users/admin/repos', { name: 'app', slug: 'app' })).status, 201);
      const work = join(dir, 'work');
      git(['init', '-q', '-b', 'main', work], dir);
      writeFileSync(join(work, 'README.md'), 'hello\n');
      git(['add', '.'], work);
      git(['commit', '-q', '-m', 'first'], work);
      const url = new URL(`/git${repo.replace('/repos/', '/')}.git`, a);
      url.username = 'x';
      url.password = SERVER_ADMIN_TOKEN;
      git(['push', '-q', url.toString(), 'HEAD:main'], work);
      const base = git(['rev-parse', 'HEAD'], work).trim();
      git(['checkout', '-q', '-b', 'feat'], work);
      writeFileSync(join(work, 'feat.txt'), 'feature\n');
      git(['add', '.'], work);
      git(['commit', '-q', '-m', 'feature'], work);
      git(['push', '-q', url.toString(), 'HEAD:feat'], work);
      const head = git(['rev-parse', 'HEAD'], work).trim();

      const prot = await api(a, 'POST', `${repo}/protections`, {
        branch: 'main',
        required_approvals: 0,
        required_status_contexts: ['ext/a', 'ext/b'],
      });
      assert.equal(prot.status, 201, prot.text);
      const pull = await api(a, 'POST', `${repo}/pulls`, {
        title: 'Feat',
        body: '',
        source_branch: 'feat',
        target_branch: 'main',
      });
      assert.equal(pull.status, 201, pull.text);
      const on = await api(b, 'PUT', `${repo}/pulls/${pull.body.number}/auto-merge`, { merge_strategy: 'merge' });
      assert.equal(on.status, 200, on.text);
      assert.equal(on.body.status, 'open');
      const pending = await api(a, 'POST', `${repo}/statuses/${head}`, { state: 'success', context: 'ext/a' });
      assert.equal(pending.status, 201, pending.text);
      await new Promise((r) => setTimeout(r, 500));
      assert.equal((await api(b, 'GET', `${repo}/pulls/${pull.body.number}`)).body.status, 'open', 'one check of two');
      // the last check reported to both instances at once, several times (an outside CI retrying)
      const posts = await Promise.all(
        [a, b, a, b, a, b].map((s) => api(s, 'POST', `${repo}/statuses/${head}`, { state: 'success', context: 'ext/b' })),
      );
      for (const p of posts) assert.equal(p.status, 201, p.text);
      const merged = await eventually('the auto-merge', async () => {
        const p = await api(a, 'GET', `${repo}/pulls/${pull.body.number}`);
        return p.body.status === 'merged' ? p.body : undefined;
      });
      assert.equal(merged.merged_by_username, 'admin');
      assert.equal(merged.auto_merge, null);
      // settle: no second merge may follow
      await new Promise((r) => setTimeout(r, 1500));
      const events = await api(b, 'GET', `/api/v1/events?scope=pull:${pull.body.uuid}&kind=pull-merged`.replace('/api/v1', ''));
      assert.equal(events.status, 200, events.text);
      assert.equal(events.body.results.length, 1, 'one pull-merged event');
      git(['fetch', '-q', url.toString(), 'main:refs/remotes/check/main'], work);
      const landed = git(['rev-list', `${base}..refs/remotes/check/main`], work)
        .trim()
        .split('\n');
      assert.equal(landed.length, 2, 'the feature commit and one merge commit');
      const merges = git(['rev-list', '--merges', `${base}..refs/remotes/check/main`], work)
        .trim()
        .split('\n');
      assert.deepEqual(merges, [merged.merge_commit_sha]);
    });
  });
}
