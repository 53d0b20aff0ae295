/**
 * Auto-merge (docs/ci.md "Auto-merge"): PUT/DELETE {repo}/pulls/{n}/auto-merge, the pull's
 * `auto_merge`, the merge made by the server as the user who turned it on when a status (posted by
 * an outside CI through the statuses API) or an approval satisfies the protection, and auto-merge
 * turned off with its reason on close, conflict, lost access and refusal.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { eventResults, waitUntil } from './common.ts';
import { seedRepo, seedTeam } from './fixtures.ts';
import { seedCommit } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { buildWorld, openPull, type RepoHandle, setRepoFlags, type World } from './pulls-fixtures.ts';

for (const dialect of DIALECTS) {
  describe(`auto-merge (${dialect})`, () => {
    let t: TestApp;
    let w: World;
    let n = 0;
    const freshRepo = async (protection?: Record<string, unknown>): Promise<RepoHandle> => {
      const r = await seedRepo(t, { kind: 'team', uuid: w.team.uuid }, `am${++n}`);
      await seedCommit(t, r.uuid, 'main');
      const repo = { uuid: r.uuid, base: `/api/v1/teams/${w.team.slug}/repos/${r.slug}` };
      if (protection) {
        const res = await t.req('POST', `${repo.base}/protections`, {
          token: w.maintainer.token,
          body: { branch: 'main', ...protection },
        });
        assert.equal(res.status, 201, res.text);
      }
      return repo;
    };
    const pullOf = async (repo: RepoHandle, number: number) => {
      const res = await t.req('GET', `${repo.base}/pulls/${number}`);
      assert.equal(res.status, 200, res.text);
      return res.body;
    };
    const enable = (repo: RepoHandle, number: number, token: string, body: unknown = { merge_strategy: 'squash' }) =>
      t.req('PUT', `${repo.base}/pulls/${number}/auto-merge`, { token, body });
    const kinds = async (pullUuid: string) =>
      (await eventResults(t, `pull:${pullUuid}`))
        .map((e) => e.kind)
        .filter((k) => k.startsWith('auto-merge') || k === 'pull-merged');
    const disabled = async (pullUuid: string) =>
      (await eventResults(t, `pull:${pullUuid}`, undefined, 'auto-merge-disabled')).map((e) => e.payload);

    before(async () => {
      t = await startApp(dialect);
      w = await buildWorld(t);
    });
    after(() => t.close());

    it('turns on (auto_merge shown, event), again is a no-op, off (null, event with reason turned_off)', async () => {
      const repo = await freshRepo({ required_approvals: 1 });
      const pull = await openPull(t, repo.base, { token: w.member.token });
      assert.equal(pull.auto_merge, null);
      assert.equal((await pullOf(repo, pull.number)).auto_merge, null);
      const on = await enable(repo, pull.number, w.member.token);
      assert.equal(on.status, 200, on.text);
      assert.equal(on.body.status, 'open', 'waits for its approval');
      assert.deepEqual(Object.keys(on.body.auto_merge).sort(), ['enabled_at', 'enabled_by', 'merge_strategy']);
      assert.deepEqual(on.body.auto_merge.enabled_by, { uuid: w.member.uuid, username: w.member.username });
      assert.equal(on.body.auto_merge.merge_strategy, 'squash');
      const list = await t.req('GET', `${repo.base}/pulls`);
      assert.deepEqual(list.body.results[0].auto_merge, on.body.auto_merge);
      assert.equal((await enable(repo, pull.number, w.member.token)).status, 200);
      assert.deepEqual(await kinds(pull.uuid), ['auto-merge-enabled'], 'the same again emits nothing');
      const off = await t.req('DELETE', `${repo.base}/pulls/${pull.number}/auto-merge`, { token: w.maintainer.token });
      assert.equal(off.status, 204, off.text);
      assert.equal((await pullOf(repo, pull.number)).auto_merge, null);
      assert.equal(
        (await t.req('DELETE', `${repo.base}/pulls/${pull.number}/auto-merge`, { token: w.member.token })).status,
        204,
      );
      const [payload] = await disabled(pull.uuid);
      assert.equal(payload!.reason, 'turned_off');
      assert.equal(payload!.code, null);
      assert.equal((payload!.enabled_by as { username: string }).username, w.member.username);
      assert.deepEqual(await kinds(pull.uuid), ['auto-merge-enabled', 'auto-merge-disabled']);
    });

    it('merges as the user who turned it on when an outside CI posts the required status (statuses API)', async () => {
      const repo = await freshRepo({ required_approvals: 0, required_status_contexts: ['outside/ci'] });
      const pull = await openPull(t, repo.base, { token: w.reader.token });
      const on = await enable(repo, pull.number, w.member.token);
      assert.equal(on.status, 200, on.text);
      assert.equal(on.body.status, 'open');
      const head = on.body.head_sha;
      const pending = await t.req('POST', `${repo.base}/statuses/${head}`, {
        token: w.maintainer.token,
        body: { state: 'pending', context: 'outside/ci' },
      });
      assert.equal(pending.status, 201, pending.text);
      const other = await t.req('POST', `${repo.base}/statuses/${head}`, {
        token: w.maintainer.token,
        body: { state: 'success', context: 'something/else' },
      });
      assert.equal(other.status, 201);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await pullOf(repo, pull.number)).status, 'open', 'not before its required check');
      const ok = await t.req('POST', `${repo.base}/statuses/${head}`, {
        token: w.maintainer.token,
        body: { state: 'success', context: 'outside/ci' },
      });
      assert.equal(ok.status, 201, ok.text);
      assert.equal(ok.body.state, 'success', 'the poster gets its status back, not a merge');
      await waitUntil(async () => (await pullOf(repo, pull.number)).status === 'merged', 20_000, 'the auto-merge');
      const merged = await pullOf(repo, pull.number);
      assert.equal(merged.merged_by_username, w.member.username);
      assert.equal(merged.merge_strategy, 'squash');
      assert.equal(merged.auto_merge, null);
      assert.deepEqual(await kinds(pull.uuid), ['auto-merge-enabled', 'pull-merged']);
    });

    it('merges on the approval it waited for', async () => {
      const repo = await freshRepo({ required_approvals: 1 });
      const pull = await openPull(t, repo.base, { token: w.member.token });
      assert.equal((await enable(repo, pull.number, w.member.token, {})).status, 200);
      const commented = await t.req('POST', `${repo.base}/pulls/${pull.number}/reviews`, {
        token: w.maintainer.token,
        body: { status: 'commented', body: 'hm' },
      });
      assert.equal(commented.status, 201);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await pullOf(repo, pull.number)).status, 'open');
      const approved = await t.req('POST', `${repo.base}/pulls/${pull.number}/reviews`, {
        token: w.maintainer.token,
        body: { status: 'approved' },
      });
      assert.equal(approved.status, 201, approved.text);
      await waitUntil(async () => (await pullOf(repo, pull.number)).status === 'merged', 20_000, 'the auto-merge');
      const merged = await pullOf(repo, pull.number);
      assert.equal(merged.merge_strategy, 'merge', 'the default strategy');
      assert.equal(merged.merged_by_username, w.member.username);
    });

    it('merges when a protection change satisfies it, and at once when already mergeable', async () => {
      const repo = await freshRepo({ required_approvals: 2 });
      const pull = await openPull(t, repo.base, { token: w.member.token });
      assert.equal((await enable(repo, pull.number, w.owner.token)).status, 200);
      const prot = (await t.req('GET', `${repo.base}/protections`)).body.results[0];
      const eased = await t.req('PUT', `${repo.base}/protections/${prot.uuid}`, {
        token: w.maintainer.token,
        body: { required_approvals: 0 },
      });
      assert.equal(eased.status, 200, eased.text);
      await waitUntil(async () => (await pullOf(repo, pull.number)).status === 'merged', 20_000, 'the auto-merge');
      const ready = await openPull(t, repo.base, { token: w.member.token });
      const now = await enable(repo, ready.number, w.member.token);
      assert.equal(now.status, 200, now.text);
      assert.equal(now.body.status, 'merged', 'a mergeable pull merges at once');
      assert.equal(now.body.auto_merge, null);
      assert.deepEqual(await kinds(ready.uuid), ['auto-merge-enabled', 'pull-merged']);
    });

    it('closing the pull turns it off with reason closed', async () => {
      const repo = await freshRepo({ required_approvals: 1 });
      const pull = await openPull(t, repo.base, { token: w.member.token });
      assert.equal((await enable(repo, pull.number, w.member.token)).status, 200);
      const closed = await t.req('PUT', `${repo.base}/pulls/${pull.number}`, {
        token: w.member.token,
        body: { status: 'closed' },
      });
      assert.equal(closed.status, 200, closed.text);
      assert.equal(closed.body.auto_merge, null);
      const [payload] = await disabled(pull.uuid);
      assert.equal(payload!.reason, 'closed');
      const ev = (await eventResults(t, `pull:${pull.uuid}`, undefined, 'auto-merge-disabled'))[0]!;
      assert.equal(ev.actor?.username, w.member.username);
      // reopened: still off
      await t.req('PUT', `${repo.base}/pulls/${pull.number}`, { token: w.member.token, body: { status: 'open' } });
      assert.equal((await pullOf(repo, pull.number)).auto_merge, null);
    });

    it('a conflict turns it off with reason conflict; the pull stays open', async () => {
      const repo = await freshRepo({ required_approvals: 0, required_status_contexts: ['ci'] });
      const pull = await openPull(t, repo.base, { token: w.member.token });
      await seedCommit(t, repo.uuid, pull.source_branch, { path: 'same.txt', content: 'one\n' });
      await seedCommit(t, repo.uuid, 'main', { path: 'same.txt', content: 'two\n' });
      const on = await enable(repo, pull.number, w.member.token);
      assert.equal(on.status, 200);
      const st = await t.req('POST', `${repo.base}/statuses/${on.body.head_sha}`, {
        token: w.member.token,
        body: { state: 'success', context: 'ci' },
      });
      assert.equal(st.status, 201);
      await waitUntil(async () => (await disabled(pull.uuid)).length === 1, 20_000, 'auto-merge turned off');
      const [payload] = await disabled(pull.uuid);
      assert.equal(payload!.reason, 'conflict');
      const now = await pullOf(repo, pull.number);
      assert.equal(now.status, 'open');
      assert.equal(now.auto_merge, null);
    });

    it('the user losing write access turns it off with reason access_lost', async () => {
      const extra = await t.user(`amx${dialect}`);
      const team = await seedTeam(t, `amt${dialect}`, [
        { uuid: extra.uuid, role: 'member' },
        { uuid: w.member.uuid, role: 'member' },
      ]);
      const r = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'lost');
      await seedCommit(t, r.uuid, 'main');
      const repo = { uuid: r.uuid, base: `/api/v1/teams/${team.slug}/repos/${r.slug}` };
      const prot = await t.req('POST', `${repo.base}/protections`, {
        body: { branch: 'main', required_approvals: 0, required_status_contexts: ['ci'] },
      });
      assert.equal(prot.status, 201, prot.text);
      const pull = await openPull(t, repo.base, { token: w.member.token });
      const on = await enable(repo, pull.number, extra.token);
      assert.equal(on.status, 200, on.text);
      await t.deps.db
        .updateTable('team_members')
        .set({ role: 'reader' })
        .where('team_uuid', '=', team.uuid)
        .where('user_uuid', '=', extra.uuid)
        .execute();
      const st = await t.req('POST', `${repo.base}/statuses/${on.body.head_sha}`, {
        token: w.member.token,
        body: { state: 'success', context: 'ci' },
      });
      assert.equal(st.status, 201);
      await waitUntil(async () => (await disabled(pull.uuid)).length === 1, 20_000, 'auto-merge turned off');
      assert.equal((await disabled(pull.uuid))[0]!.reason, 'access_lost');
      assert.equal((await pullOf(repo, pull.number)).status, 'open', 'not merged as a reader');
    });

    it('a refused merge turns it off with merge_refused and the code', async () => {
      const repo = await freshRepo({ required_approvals: 0, required_status_contexts: ['ci'] });
      const pull = await openPull(t, repo.base, { token: w.member.token });
      await seedCommit(t, repo.uuid, 'main', { path: 'elsewhere.txt' });
      const on = await enable(repo, pull.number, w.member.token, { merge_strategy: 'fast_forward' });
      assert.equal(on.status, 200);
      await t.req('POST', `${repo.base}/statuses/${on.body.head_sha}`, {
        token: w.member.token,
        body: { state: 'success', context: 'ci' },
      });
      await waitUntil(async () => (await disabled(pull.uuid)).length === 1, 20_000, 'auto-merge turned off');
      const [payload] = await disabled(pull.uuid);
      assert.equal(payload!.reason, 'merge_refused');
      assert.equal(payload!.code, 'not_fast_forward');
    });

    it('validation: merged, closed and draft pulls are 409; a bad strategy 400; reader 403; outsider 404; archived 403 after 404', async () => {
      const repo = await freshRepo({ required_approvals: 1 });
      const pull = await openPull(t, repo.base, { token: w.member.token });
      const bad = await enable(repo, pull.number, w.member.token, { merge_strategy: 'octopus' });
      assert.equal(bad.status, 400, bad.text);
      assert.equal((await enable(repo, pull.number, w.member.token, { merge_strategy: 'merge', extra: 1 })).status, 400);
      const reader = await enable(repo, pull.number, w.reader.token);
      assert.equal(reader.status, 403, reader.text);
      assert.equal(
        (await t.req('DELETE', `${repo.base}/pulls/${pull.number}/auto-merge`, { token: w.reader.token })).status,
        403,
      );
      assert.equal((await enable(repo, pull.number, w.outsider.token)).status, 404);
      assert.equal(
        (await t.req('DELETE', `${repo.base}/pulls/${pull.number}/auto-merge`, { token: w.outsider.token })).status,
        404,
      );
      assert.equal((await enable(repo, 999, w.member.token)).status, 404);
      assert.equal((await pullOf(repo, pull.number)).auto_merge, null, 'nothing changed');

      const draft = await t.req('PUT', `${repo.base}/pulls/${pull.number}`, { token: w.member.token, body: { draft: true } });
      assert.equal(draft.status, 200, draft.text);
      const d = await enable(repo, pull.number, w.member.token);
      assert.equal(d.status, 409);
      assert.equal(d.body.error, 'pull_is_draft');
      await t.req('PUT', `${repo.base}/pulls/${pull.number}`, { token: w.member.token, body: { draft: false } });
      await t.req('PUT', `${repo.base}/pulls/${pull.number}`, { token: w.member.token, body: { status: 'closed' } });
      const c = await enable(repo, pull.number, w.member.token);
      assert.equal(c.status, 409);
      assert.equal(c.body.error, 'pull_closed');
      const open = await openPull(t, repo.base, { token: w.member.token });
      await t.req('POST', `${repo.base}/pulls/${open.number}/reviews`, {
        token: w.maintainer.token,
        body: { status: 'approved' },
      });
      assert.equal((await t.req('POST', `${repo.base}/pulls/${open.number}/merge`, { token: w.member.token })).status, 200);
      const m = await enable(repo, open.number, w.member.token);
      assert.equal(m.status, 409);
      assert.equal(m.body.error, 'pull_merged');

      const third = await openPull(t, repo.base, { token: w.member.token });
      await setRepoFlags(t, repo.uuid, { is_archived: 1 });
      try {
        assert.equal((await enable(repo, 999, w.member.token)).status, 404, 'a missing pull is 404 before repo_archived');
        const arch = await enable(repo, third.number, w.member.token);
        assert.equal(arch.status, 403);
        assert.equal(arch.body.error, 'repo_archived');
        const del = await t.req('DELETE', `${repo.base}/pulls/${third.number}/auto-merge`, { token: w.member.token });
        assert.equal(del.status, 403);
        assert.equal(del.body.error, 'repo_archived');
      } finally {
        await setRepoFlags(t, repo.uuid, { is_archived: 0 });
      }
    });
  });
}
