import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { commitFiles, type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';
import { recoverMergeClaims } from '../src/pulls/merge.ts';

for (const dialect of DIALECTS) {
  describe(`real git merges (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    let n = 0;

    /** A public repo of alice: main (base, then one more commit), feature branched from base with two commits. */
    const setup = async (
      featureFiles: Array<Record<string, string>> = [{ 'f1.txt': 'f1\n' }, { 'f2.txt': 'f2\n' }],
      mainFiles: Array<Record<string, string>> = [{ 'm.txt': 'm\n' }],
    ) => {
      const slug = `mg${++n}`;
      const res = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: slug, slug, visibility: 'public' },
      });
      assert.equal(res.status, 201, res.text);
      const api = `/api/v1/users/${alice.username}/repos/${slug}`;
      const url = g.url(`/git/users/${alice.username}/${slug}.git`, alice.token);
      const work = await makeWorkTree(g, `mw${n}`, [{ 'a.txt': '1\n2\n3\n', 'b.txt': 'b\n' }]);
      const base = await sha(work, 'HEAD');
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feature']);
      await commitFiles(g, work, featureFiles, 'feature');
      await g.run(['-C', work, 'checkout', '-q', 'main']);
      if (mainFiles.length > 0) await commitFiles(g, work, mainFiles, 'main');
      await g.run(['-C', work, 'push', '-q', url, 'main', 'feature']);
      return { api, url, work, base, uuid: res.body.uuid as string };
    };
    const sha = async (dir: string, rev: string) => (await g.run(['-C', dir, 'rev-parse', rev])).stdout.trim();
    const remoteSha = async (url: string, branch: string) => {
      const ls = await g.run(['ls-remote', url, `refs/heads/${branch}`]);
      return ls.stdout.slice(0, 40) || null;
    };
    const fetchAll = async (work: string, url: string) =>
      g.run(['-C', work, 'fetch', '-q', url, '+refs/heads/*:refs/remotes/o/*']);
    const openPull = async (api: string, token: string, source = 'feature', target = 'main') => {
      const res = await t.req('POST', `${api}/pulls`, {
        token,
        body: { title: 'Add features', body: 'Details here.', source_branch: source, target_branch: target },
      });
      assert.equal(res.status, 201, res.text);
      return res.body as { number: number; uuid: string };
    };
    const merge = (api: string, number: number, strategy: string, token = alice.token) =>
      t.req('POST', `${api}/pulls/${number}/merge`, { token, body: { merge_strategy: strategy } });

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user(`amerge${dialect}`);
      bob = await t.user(`bmerge${dialect}`);
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    it('merge: a merge commit with parents (target, source), the titled message, the merged tree', async () => {
      const r = await setup();
      const pull = await openPull(r.api, bob.token);
      const mainBefore = await sha(r.work, 'main');
      const featureTip = await sha(r.work, 'feature');
      const res = await merge(r.api, pull.number, 'merge');
      assert.equal(res.status, 200, res.text);
      const merged = res.body.merge_commit_sha as string;
      assert.match(merged, /^[0-9a-f]{40}$/);
      assert.equal(res.body.pull.merge_commit_sha, merged);
      assert.equal(res.body.pull.base_sha, merged);
      assert.equal(res.body.pull.head_sha, featureTip);
      assert.equal(await remoteSha(r.url, 'main'), merged);
      await fetchAll(r.work, r.url);
      assert.equal(
        (await g.run(['-C', r.work, 'log', '-1', '--format=%P', merged])).stdout.trim(),
        `${mainBefore} ${featureTip}`,
      );
      assert.equal(
        (await g.run(['-C', r.work, 'log', '-1', '--format=%B', merged])).stdout.trim(),
        `Merge pull request #${pull.number} from feature\n\nAdd features`,
      );
      const files = (await g.run(['-C', r.work, 'ls-tree', '-r', '--name-only', merged])).stdout.split('\n').filter(Boolean);
      assert.deepEqual(files, ['a.txt', 'b.txt', 'f1.txt', 'f2.txt', 'm.txt']);
    });

    it('squash: one commit on the target tip, authored by the pull author, message title and body', async () => {
      const r = await setup();
      const pull = await openPull(r.api, bob.token);
      const mainBefore = await sha(r.work, 'main');
      const res = await merge(r.api, pull.number, 'squash');
      assert.equal(res.status, 200, res.text);
      const merged = res.body.merge_commit_sha as string;
      await fetchAll(r.work, r.url);
      const info = (await g.run(['-C', r.work, 'log', '-1', '--format=%P|%an|%ae|%B', merged])).stdout.trim();
      assert.equal(info, `${mainBefore}|${bob.username}|${bob.username}@example.com|Add features\n\nDetails here.`);
      const files = (await g.run(['-C', r.work, 'ls-tree', '-r', '--name-only', merged])).stdout.split('\n').filter(Boolean);
      assert.deepEqual(files, ['a.txt', 'b.txt', 'f1.txt', 'f2.txt', 'm.txt']);
    });

    it('rebase: each source commit replayed on the target, authors kept; merge_commit_sha is the last', async () => {
      const r = await setup();
      const pull = await openPull(r.api, bob.token);
      const mainBefore = await sha(r.work, 'main');
      const res = await merge(r.api, pull.number, 'rebase');
      assert.equal(res.status, 200, res.text);
      const merged = res.body.merge_commit_sha as string;
      assert.equal(await remoteSha(r.url, 'main'), merged);
      await fetchAll(r.work, r.url);
      const log = (await g.run(['-C', r.work, 'log', '--format=%P|%an|%s', `${mainBefore}..${merged}`])).stdout
        .trim()
        .split('\n');
      assert.equal(log.length, 2);
      assert.match(log[0]!, /\|Tester\|feature 2$/);
      assert.match(log[1]!, new RegExp(`^${mainBefore}\\|Tester\\|feature 1$`));
      const files = (await g.run(['-C', r.work, 'ls-tree', '-r', '--name-only', merged])).stdout.split('\n').filter(Boolean);
      assert.deepEqual(files, ['a.txt', 'b.txt', 'f1.txt', 'f2.txt', 'm.txt']);
    });

    it('fast_forward: 409 not_fast_forward when the target moved on, nothing moves; else the target takes the source tip', async () => {
      const r = await setup();
      const pull = await openPull(r.api, bob.token);
      const mainBefore = await sha(r.work, 'main');
      const refused = await merge(r.api, pull.number, 'fast_forward');
      assert.equal(refused.status, 409, refused.text);
      assert.equal(refused.body.error, 'not_fast_forward');
      assert.equal(await remoteSha(r.url, 'main'), mainBefore);
      const p = await t.req('GET', `${r.api}/pulls/${pull.number}`, { token: alice.token });
      assert.equal(p.body.status, 'open');
      assert.equal(p.body.merge_commit_sha, null);

      const r2 = await setup(undefined, []);
      const pull2 = await openPull(r2.api, bob.token);
      const ok = await merge(r2.api, pull2.number, 'fast_forward');
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.merge_commit_sha, await sha(r2.work, 'feature'));
      assert.equal(await remoteSha(r2.url, 'main'), ok.body.merge_commit_sha);
    });

    it('conflicts: 409 merge_conflict with every conflicting path sorted, nothing moves, the pull stays open', async () => {
      const r = await setup(
        [{ 'b.txt': 'feature b\n', 'a.txt': '1\nfeature\n3\n', 'z.txt': 'fz\n' }],
        [{ 'b.txt': 'main b\n', 'a.txt': '1\nmain\n3\n', 'z.txt': 'mz\n' }],
      );
      const pull = await openPull(r.api, bob.token);
      const mainBefore = await sha(r.work, 'main');
      for (const strategy of ['merge', 'squash', 'rebase']) {
        const res = await merge(r.api, pull.number, strategy);
        assert.equal(res.status, 409, res.text);
        assert.deepEqual(res.body, {
          error: 'merge_conflict',
          detail: res.body.detail,
          conflict_paths: ['a.txt', 'b.txt', 'z.txt'],
        });
        assert.equal(await remoteSha(r.url, 'main'), mainBefore);
        const p = await t.req('GET', `${r.api}/pulls/${pull.number}`, { token: alice.token });
        assert.equal(p.body.status, 'open');
        assert.equal(p.body.merged_at, null);
      }
    });

    it('a missing target branch is created at the source tip; a missing source is 409 source_branch_missing', async () => {
      const r = await setup();
      const opened = await t.req('POST', `${r.api}/pulls`, {
        token: bob.token,
        body: { title: 'x', body: '', source_branch: 'feature', target_branch: 'brand-new' },
      });
      assert.equal(opened.body.head_sha, await sha(r.work, 'feature'));
      assert.equal(opened.body.base_sha, null);
      const pull = opened.body;
      const res = await merge(r.api, pull.number, 'merge');
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.merge_commit_sha, await sha(r.work, 'feature'));
      assert.equal(await remoteSha(r.url, 'brand-new'), res.body.merge_commit_sha);
      // opened before the first push: allowed, but there is nothing to merge yet
      const pull2 = await openPull(r.api, bob.token, 'nothing-here', 'main');
      const before = await t.req('GET', `${r.api}/pulls/${pull2.number}`);
      const mainBefore = await remoteSha(r.url, 'main');
      for (const strategy of ['merge', 'squash', 'rebase', 'fast_forward']) {
        const res2 = await merge(r.api, pull2.number, strategy);
        assert.equal(res2.status, 409, res2.text);
        assert.ok(isErrorBody(res2.body, 'source_branch_missing'), res2.text);
      }
      assert.deepEqual((await t.req('GET', `${r.api}/pulls/${pull2.number}`)).body, before.body, 'nothing changed');
      assert.equal(await remoteSha(r.url, 'main'), mainBefore);
      // pushed now: it merges
      await g.run(['-C', r.work, 'push', '-q', r.url, 'feature:nothing-here']);
      const res3 = await merge(r.api, pull2.number, 'merge');
      assert.equal(res3.status, 200, res3.text);
    });

    it('a source with no commit the target lacks is 409 nothing_to_merge under every strategy, and nothing changes', async () => {
      const r = await setup();
      // `behind` is an ancestor of main; `same` is main itself
      await g.run(['-C', r.work, 'push', '-q', r.url, `${r.base}:refs/heads/behind`, 'main:refs/heads/same']);
      for (const source of ['behind', 'same']) {
        const pull = await openPull(r.api, bob.token, source, 'main');
        const before = await t.req('GET', `${r.api}/pulls/${pull.number}`);
        const mainBefore = await remoteSha(r.url, 'main');
        for (const strategy of ['merge', 'squash', 'rebase', 'fast_forward']) {
          const res = await merge(r.api, pull.number, strategy);
          assert.equal(res.status, 409, `${source} ${strategy}: ${res.text}`);
          assert.ok(isErrorBody(res.body, 'nothing_to_merge'), res.text);
        }
        assert.deepEqual((await t.req('GET', `${r.api}/pulls/${pull.number}`)).body, before.body, 'nothing changed');
        assert.equal(await remoteSha(r.url, 'main'), mainBefore);
        const ev = await t.req('GET', `/api/v1/events?scope=pull:${pull.uuid}`, { token: alice.token });
        assert.deepEqual(
          ev.body.results.map((e: { kind: string }) => e.kind),
          ['pull-opened'],
        );
      }
    });

    it('a source that shares no commit with the target is 409 unrelated_histories under every strategy, and nothing changes', async () => {
      const r = await setup();
      // an orphan branch: its own root commit, no history in common with main
      await g.run(['-C', r.work, 'checkout', '-q', '--orphan', 'lonely']);
      await g.run(['-C', r.work, 'rm', '-rq', '--cached', '.']);
      await commitFiles(g, r.work, [{ 'other.txt': 'other\n' }], 'lonely');
      await g.run(['-C', r.work, 'push', '-q', r.url, 'lonely']);
      await g.run(['-C', r.work, 'checkout', '-qf', 'main']);
      const pull = await openPull(r.api, bob.token, 'lonely', 'main');
      const before = await t.req('GET', `${r.api}/pulls/${pull.number}`);
      const mainBefore = await remoteSha(r.url, 'main');
      for (const strategy of ['merge', 'squash', 'rebase', 'fast_forward']) {
        const res = await merge(r.api, pull.number, strategy);
        assert.equal(res.status, 409, `${strategy}: ${res.text}`);
        assert.ok(isErrorBody(res.body, 'unrelated_histories'), res.text);
      }
      assert.deepEqual((await t.req('GET', `${r.api}/pulls/${pull.number}`)).body, before.body, 'nothing changed');
      assert.equal(await remoteSha(r.url, 'main'), mainBefore);
    });

    it('a merge racing a push to the target, and two merges into one target, never lose a commit', async () => {
      const r = await setup();
      await g.run(['-C', r.work, 'checkout', '-q', '-b', 'feature2', r.base]);
      await commitFiles(g, r.work, [{ 'g.txt': 'g\n' }], 'feature2');
      await g.run(['-C', r.work, 'push', '-q', r.url, 'feature2']);
      await g.run(['-C', r.work, 'checkout', '-q', 'main']);
      await commitFiles(g, r.work, [{ 'pushed.txt': 'p\n' }], 'pushed');
      const pushedSha = await sha(r.work, 'main');
      const p1 = await openPull(r.api, bob.token, 'feature');
      const p2 = await openPull(r.api, bob.token, 'feature2');
      const [m1, m2, push] = await Promise.all([
        merge(r.api, p1.number, 'merge'),
        merge(r.api, p2.number, 'squash'),
        g.run(['-C', r.work, 'push', r.url, 'main'], { ok: false }),
      ]);
      const tip = (await remoteSha(r.url, 'main'))!;
      await fetchAll(r.work, r.url);
      const contains = async (s: string) =>
        (await g.run(['-C', r.work, 'merge-base', '--is-ancestor', s, tip], { ok: false })).code === 0;
      for (const m of [m1, m2]) {
        if (m.status === 200) assert.ok(await contains(m.body.merge_commit_sha), 'a merged commit is on main');
        else assert.equal(m.body.error, 'target_moved', m.text);
      }
      if (push.code === 0) assert.ok(await contains(pushedSha), 'the pushed commit is on main');
    });

    it('a merge claim left by a crash is recovered: finished when its tip landed, released when it did not', async () => {
      const r = await setup(undefined, []);
      const pull = await openPull(r.api, bob.token);
      const tip = await sha(r.work, 'feature');
      const old = new Date(Date.now() - 3_600_000).toISOString();
      const claim = {
        status: 'merged',
        merged_at: old,
        closed_at: old,
        updated_at: old,
        merged_by_uuid: alice.uuid,
        merge_strategy: 'fast_forward',
        merge_pending: 1,
        merge_claimed_at: old,
      };
      await t.deps.db
        .updateTable('pulls')
        .set({ ...claim, merge_claim_sha: tip })
        .where('uuid', '=', pull.uuid)
        .execute();
      const store = t.deps.git as unknown as { pathOf(uuid: string): string };
      await g.run(['--git-dir', store.pathOf(r.uuid), 'update-ref', 'refs/heads/main', tip]);
      const pull2 = await openPull(r.api, bob.token, 'feature', 'other');
      await t.deps.db
        .updateTable('pulls')
        .set({ ...claim, merge_claim_sha: null })
        .where('uuid', '=', pull2.uuid)
        .execute();

      assert.equal(await recoverMergeClaims(t.deps), 2);
      const done = (await t.req('GET', `${r.api}/pulls/${pull.number}`, { token: alice.token })).body;
      assert.equal(done.status, 'merged');
      assert.equal(done.merge_commit_sha, tip);
      const ev = await t.req('GET', `/api/v1/events?scope=pull:${pull.uuid}`, { token: alice.token });
      assert.deepEqual(
        ev.body.results.map((e: { kind: string }) => e.kind),
        ['pull-opened', 'pull-merged'],
      );
      const released = (await t.req('GET', `${r.api}/pulls/${pull2.number}`, { token: alice.token })).body;
      assert.equal(released.status, 'open');
      assert.equal(released.merged_at, null);
      assert.equal(await remoteSha(r.url, 'other'), null);
      const again = await merge(r.api, pull2.number, 'merge');
      assert.equal(again.status, 200, again.text);
    });
  });
}
