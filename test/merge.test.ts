import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seedRepo } from './fixtures.ts';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';
import { buildWorld, eventsOf, openPull, PULL_KEYS, type RepoHandle, seedProtection, type World } from './pulls-fixtures.ts';

const UNPROTECTED = {
  protected: false,
  branch_pattern: null,
  required_approvals: 0,
  approvers: [],
  approved_by: [],
  required_status_contexts: [],
  status_checks: [],
  require_conversation_resolution: false,
  satisfied: true,
};

for (const dialect of DIALECTS) {
  describe(`merge and protection (${dialect})`, () => {
    let t: TestApp;
    let w: World;
    let n = 0;
    /** a fresh team repo, so protections seeded by one test do not leak into another */
    const freshRepo = async (): Promise<RepoHandle> => {
      const r = await seedRepo(t, { kind: 'team', uuid: w.team.uuid }, `m${++n}`);
      return { uuid: r.uuid, base: `/api/v1/teams/${w.team.slug}/repos/${r.slug}` };
    };
    const review = async (repo: RepoHandle, number: number, token: string, status: string) => {
      const res = await t.req('POST', `${repo.base}/pulls/${number}/reviews`, { token, body: { status } });
      assert.equal(res.status, 201, res.text);
      return res.body;
    };
    const protectionOf = async (repo: RepoHandle, number: number, token?: string) => {
      const res = await t.req('GET', `${repo.base}/pulls/${number}/protection`, { token });
      assert.equal(res.status, 200, res.text);
      return res.body;
    };

    before(async () => {
      t = await startApp(dialect);
      w = await buildWorld(t);
    });
    after(() => t.close());

    describe('merge', () => {
      it('merges with the default strategy: 200 merge response, pull-merged event', async () => {
        const repo = await freshRepo();
        const pull = await openPull(t, repo.base, { token: w.reader.token });
        const res = await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { token: w.member.token, body: {} });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(Object.keys(res.body).sort(), [
          'merge_commit_sha',
          'merge_strategy',
          'merged_at',
          'merged_by_username',
          'pull',
        ]);
        assert.equal(res.body.merge_strategy, 'merge');
        assert.match(res.body.merge_commit_sha, /^[0-9a-f]{40}$/, 'the merge landed a commit');
        assert.equal(res.body.merged_by_username, w.member.username);
        const p = res.body.pull;
        assert.deepEqual(Object.keys(p).sort(), PULL_KEYS);
        assert.equal(p.status, 'merged');
        assert.equal(p.merged_at, res.body.merged_at);
        assert.equal(p.closed_at, res.body.merged_at);
        assert.equal(p.updated_at, res.body.merged_at);
        assert.equal(p.merged_by_username, w.member.username);
        assert.equal(p.merge_strategy, 'merge');
        assert.equal(p.merge_commit_sha, res.body.merge_commit_sha);
        assert.deepEqual((await t.req('GET', `${repo.base}/pulls/${pull.number}`)).body, p);

        const ev = await eventsOf(t, `pull:${pull.uuid}`, w.reader.token);
        assert.equal(ev.status, 200);
        assert.deepEqual(
          ev.body.results.map((e: { kind: string }) => e.kind),
          ['pull-opened', 'pull-merged'],
        );
        const merged = ev.body.results[1];
        assert.deepEqual(merged.scopes.sort(), [`pull:${pull.uuid}`, `repo:${repo.uuid}`].sort());
        assert.equal(merged.actor.username, w.member.username);
        assert.equal(merged.payload.merge_strategy, 'merge');
        assert.equal(merged.payload.merged_by_username, w.member.username);
        assert.equal((await eventsOf(t, `pull:${pull.uuid}`, w.outsider.token)).status, 404);
      });

      it('takes each strategy, and no body at all', async () => {
        const repo = await freshRepo();
        for (const strategy of ['merge', 'squash', 'rebase', 'fast_forward']) {
          const pull = await openPull(t, repo.base);
          const res = await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { body: { merge_strategy: strategy } });
          assert.equal(res.status, 200, res.text);
          assert.equal(res.body.merge_strategy, strategy);
          assert.equal(res.body.pull.merge_strategy, strategy);
        }
        const pull = await openPull(t, repo.base);
        const bare = await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`);
        assert.equal(bare.status, 200, bare.text);
        assert.equal(bare.body.merge_strategy, 'merge');
      });

      it('rejects bad bodies with 400 and leaves the pull open', async () => {
        const repo = await freshRepo();
        const pull = await openPull(t, repo.base);
        const url = `${repo.base}/pulls/${pull.number}`;
        for (const body of [
          { merge_strategy: 'octopus' },
          { merge_strategy: 'MERGE' },
          { merge_strategy: null },
          { merge_strategy: 1 },
          { force: true },
          [],
        ]) {
          const res = await t.req('POST', `${url}/merge`, { body });
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        assert.deepEqual((await t.req('GET', url)).body, pull);
        assert.equal((await t.req('POST', `${repo.base}/pulls/abc/merge`, { body: {} })).status, 400);
        const missing = await t.req('POST', `${repo.base}/pulls/999/merge`, { body: {} });
        assert.equal(missing.status, 404);
        assert.ok(isErrorBody(missing.body, 'not_found'));
      });

      it('refuses a closed pull (409 pull_closed) and a merged one (409 pull_merged)', async () => {
        const repo = await freshRepo();
        const pull = await openPull(t, repo.base);
        const url = `${repo.base}/pulls/${pull.number}`;
        const closed = (await t.req('PUT', url, { body: { status: 'closed' } })).body;
        const res = await t.req('POST', `${url}/merge`, { body: {} });
        assert.equal(res.status, 409);
        assert.ok(isErrorBody(res.body, 'pull_closed'));
        assert.deepEqual((await t.req('GET', url)).body, closed);
        await t.req('PUT', url, { body: { status: 'open' } });
        const merged = await t.req('POST', `${url}/merge`, { body: { merge_strategy: 'squash' } });
        assert.equal(merged.status, 200);
        const again = await t.req('POST', `${url}/merge`, { body: {} });
        assert.equal(again.status, 409);
        assert.ok(isErrorBody(again.body, 'pull_merged'));
        assert.deepEqual((await t.req('GET', url)).body, merged.body.pull);
        const ev = await eventsOf(t, `pull:${pull.uuid}`);
        assert.equal(ev.body.results.filter((e: { kind: string }) => e.kind === 'pull-merged').length, 1);
      });

      it('needs write access: a reader gets 403, an outsider of a private repo 404', async () => {
        const repo = await freshRepo();
        const pull = await openPull(t, repo.base, { token: w.reader.token });
        const url = `${repo.base}/pulls/${pull.number}`;
        const reader = await t.req('POST', `${url}/merge`, { token: w.reader.token, body: {} });
        assert.equal(reader.status, 403);
        assert.ok(isErrorBody(reader.body, 'forbidden'));
        const outsider = await t.req('POST', `${url}/merge`, { token: w.outsider.token, body: {} });
        assert.equal(outsider.status, 404);
        const anonymous = await t.req('POST', `${url}/merge`, { token: null, body: {} });
        assert.equal(anonymous.status, 401);
        assert.ok(isErrorBody(anonymous.body, 'unauthorized'));
        assert.deepEqual((await t.req('GET', url)).body, pull);
      });

      it('refuses an unsatisfied protection (409 protection_unsatisfied) until enough approvals', async () => {
        const repo = await freshRepo();
        await seedProtection(t, repo.uuid, 'main', { required: 2 });
        const pull = await openPull(t, repo.base, { token: w.reader.token });
        const url = `${repo.base}/pulls/${pull.number}`;
        const refuse = async () => {
          const res = await t.req('POST', `${url}/merge`, { token: w.member.token, body: {} });
          assert.equal(res.status, 409, res.text);
          assert.ok(isErrorBody(res.body, 'protection_unsatisfied'));
          assert.deepEqual((await t.req('GET', url)).body, pull);
        };
        await refuse();
        await review(repo, pull.number, w.member.token, 'approved');
        await refuse();
        await review(repo, pull.number, w.maintainer.token, 'approved');
        const ok = await t.req('POST', `${url}/merge`, { token: w.member.token, body: {} });
        assert.equal(ok.status, 200, ok.text);
        const ev = await eventsOf(t, `pull:${pull.uuid}`);
        assert.equal(ev.body.results.filter((e: { kind: string }) => e.kind === 'pull-merged').length, 1);
      });

      it('checks closed before protection', async () => {
        const repo = await freshRepo();
        await seedProtection(t, repo.uuid, 'main');
        const pull = await openPull(t, repo.base);
        await t.req('PUT', `${repo.base}/pulls/${pull.number}`, { body: { status: 'closed' } });
        const res = await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { body: {} });
        assert.equal(res.body.error, 'pull_closed');
      });

      it('merges in the user owner form too', async () => {
        const pull = await openPull(t, w.userPrivate.base);
        const res = await t.req('POST', `${w.userPrivate.base}/pulls/${pull.number}/merge`, { token: w.solo.token, body: {} });
        assert.equal(res.status, 200);
        assert.equal(res.body.merged_by_username, w.solo.username);
      });

      it('two simultaneous merges of one pull: exactly one 200 and one 409 pull_merged', async () => {
        const repo = await freshRepo();
        for (let round = 0; round < 5; round++) {
          const pull = await openPull(t, repo.base);
          const url = `${repo.base}/pulls/${pull.number}/merge`;
          const results = await Promise.all([
            t.req('POST', url, { token: w.member.token, body: { merge_strategy: 'squash' } }),
            t.req('POST', url, { token: w.maintainer.token, body: {} }),
          ]);
          const statuses = results.map((r) => r.status).sort();
          assert.deepEqual(statuses, [200, 409], results.map((r) => r.text).join(' | '));
          const loser = results.find((r) => r.status === 409)!;
          assert.ok(isErrorBody(loser.body, 'pull_merged'));
          const winner = results.find((r) => r.status === 200)!;
          const now = (await t.req('GET', `${repo.base}/pulls/${pull.number}`)).body;
          assert.deepEqual(now, winner.body.pull);
          const ev = await eventsOf(t, `pull:${pull.uuid}`);
          assert.equal(ev.body.results.filter((e: { kind: string }) => e.kind === 'pull-merged').length, 1);
        }
      });

      it('a merge racing a close: both outcomes are consistent', async () => {
        const repo = await freshRepo();
        for (let round = 0; round < 5; round++) {
          const pull = await openPull(t, repo.base);
          const url = `${repo.base}/pulls/${pull.number}`;
          const [merge, close] = await Promise.all([
            t.req('POST', `${url}/merge`, { body: {} }),
            t.req('PUT', url, { body: { status: 'closed' } }),
          ]);
          const now = (await t.req('GET', url)).body;
          if (merge.status === 200) {
            assert.equal(close.status, 409);
            assert.equal(close.body.error, 'pull_merged');
            assert.equal(now.status, 'merged');
          } else {
            assert.equal(merge.status, 409);
            assert.equal(merge.body.error, 'pull_closed');
            assert.equal(close.status, 200);
            assert.equal(now.status, 'closed');
          }
        }
      });
    });

    describe('protection status', () => {
      it('answers the unprotected shape when nothing matches', async () => {
        const repo = await freshRepo();
        await seedProtection(t, repo.uuid, 'release/*');
        await seedProtection(t, repo.uuid, 'mainline');
        const pull = await openPull(t, repo.base, { target: 'main' });
        assert.deepEqual(await protectionOf(repo, pull.number, w.reader.token), UNPROTECTED);
      });

      it('matches exact names before globs, and the most specific glob', async () => {
        const repo = await freshRepo();
        const old = '2020-01-01T00:00:00.000Z';
        const newer = '2021-01-01T00:00:00.000Z';
        await seedProtection(t, repo.uuid, '**', { required: 1, createdAt: old });
        await seedProtection(t, repo.uuid, 'release/*', { required: 2, createdAt: newer });
        await seedProtection(t, repo.uuid, 'release/1.*', { required: 3, createdAt: newer });
        await seedProtection(t, repo.uuid, 'release/1.0', { required: 4, createdAt: newer });
        await seedProtection(t, repo.uuid, 'hot?ix/*', { required: 5, createdAt: newer });
        await seedProtection(t, repo.uuid, 'team/**', { required: 6, createdAt: newer });
        // equal literal length: the earliest created wins
        await seedProtection(t, repo.uuid, 'x/*/b', { required: 7, createdAt: newer });
        await seedProtection(t, repo.uuid, 'x/a/*', { required: 8, createdAt: old });
        const cases: Array<[string, string, number]> = [
          ['release/1.0', 'release/1.0', 4],
          ['release/1.1', 'release/1.*', 3],
          ['release/2.0', 'release/*', 2],
          ['release/2.0/extra', '**', 1], // * does not cross /
          ['hotfix/a', 'hot?ix/*', 5],
          ['hot/ix/a', '**', 1], // ? does not match /
          ['team/a/b/c', 'team/**', 6],
          ['x/a/b', 'x/a/*', 8],
          ['main', '**', 1],
        ];
        for (const [target, pattern, required] of cases) {
          const pull = await openPull(t, repo.base, { target });
          const status = await protectionOf(repo, pull.number);
          assert.equal(status.protected, true, target);
          assert.equal(status.branch_pattern, pattern, target);
          assert.equal(status.required_approvals, required, target);
          assert.equal(status.satisfied, false, target);
        }
      });

      it('counts write-level approvals (not readers, not the author) when there is no approver list', async () => {
        const repo = await freshRepo();
        await seedProtection(t, repo.uuid, 'main', { required: 2 });
        const pull = await openPull(t, repo.base, { token: w.member.token });
        let s = await protectionOf(repo, pull.number);
        assert.deepEqual(s, {
          protected: true,
          branch_pattern: 'main',
          required_approvals: 2,
          approvers: [],
          approved_by: [],
          required_status_contexts: [],
          status_checks: [],
          require_conversation_resolution: false,
          satisfied: false,
        });
        await review(repo, pull.number, w.reader.token, 'approved'); // read level: does not count
        await review(repo, pull.number, w.member.token, 'commented'); // the author may comment only
        await review(repo, pull.number, w.maintainer.token, 'approved');
        s = await protectionOf(repo, pull.number);
        assert.deepEqual(s.approved_by, [w.maintainer.username]);
        assert.equal(s.satisfied, false);
        await review(repo, pull.number, w.staff.token, 'approved'); // staff count
        s = await protectionOf(repo, pull.number);
        assert.deepEqual(s.approved_by, [w.maintainer.username, w.staff.username]);
        assert.equal(s.satisfied, true);
      });

      it("counts only each user's latest non-removed review", async () => {
        const repo = await freshRepo();
        await seedProtection(t, repo.uuid, 'main', { required: 1 });
        const pull = await openPull(t, repo.base);
        const approved = await review(repo, pull.number, w.owner.token, 'approved');
        assert.deepEqual((await protectionOf(repo, pull.number)).approved_by, [w.owner.username]);
        const changes = await review(repo, pull.number, w.owner.token, 'changes_requested');
        assert.deepEqual((await protectionOf(repo, pull.number)).approved_by, []);
        // removing the later review brings the earlier approval back
        assert.equal(
          (await t.req('DELETE', `${repo.base}/pulls/${pull.number}/reviews/${changes.uuid}`, { token: w.owner.token })).status,
          204,
        );
        assert.deepEqual((await protectionOf(repo, pull.number)).approved_by, [w.owner.username]);
        // a comment after an approval replaces it too
        await review(repo, pull.number, w.owner.token, 'commented');
        assert.equal((await protectionOf(repo, pull.number)).satisfied, false);
        await review(repo, pull.number, w.owner.token, 'approved');
        assert.equal((await protectionOf(repo, pull.number)).satisfied, true);
        // a removed approval stops counting
        const list = (await t.req('GET', `${repo.base}/pulls/${pull.number}/reviews`)).body.results;
        const latest = list[list.length - 1];
        await t.req('DELETE', `${repo.base}/pulls/${pull.number}/reviews/${latest.uuid}`, { token: w.owner.token });
        assert.deepEqual((await protectionOf(repo, pull.number)).approved_by, []);
        assert.ok(approved.uuid);
        const merge = await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { body: {} });
        assert.equal(merge.body.error, 'protection_unsatisfied');
      });

      it('counts only listed approvers when the protection has an approver list', async () => {
        const repo = await freshRepo();
        await seedProtection(t, repo.uuid, 'main', { required: 1, approvers: [w.reader.uuid, w.maintainer.uuid] });
        const pull = await openPull(t, repo.base);
        await review(repo, pull.number, w.owner.token, 'approved'); // write level but not listed
        await review(repo, pull.number, w.staff.token, 'approved'); // staff but not listed
        let s = await protectionOf(repo, pull.number);
        assert.deepEqual([...s.approvers].sort(), [w.reader.username, w.maintainer.username].sort());
        assert.deepEqual(s.approved_by, []);
        assert.equal(s.satisfied, false);
        const refused = await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { body: {} });
        assert.equal(refused.status, 409);
        assert.equal(refused.body.error, 'protection_unsatisfied');
        await review(repo, pull.number, w.reader.token, 'approved'); // listed, even at read level
        s = await protectionOf(repo, pull.number);
        assert.deepEqual(s.approved_by, [w.reader.username]);
        assert.equal(s.satisfied, true);
        assert.equal((await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { body: {} })).status, 200);
      });

      it('is readable at read level, 404 for outsiders, in both owner forms', async () => {
        await seedProtection(t, w.userPrivate.uuid, 'main', { required: 1 });
        const pull = await openPull(t, w.userPrivate.base);
        const url = `${w.userPrivate.base}/pulls/${pull.number}/protection`;
        const res = await t.req('GET', url, { token: w.solo.token });
        assert.equal(res.status, 200);
        assert.equal(res.body.branch_pattern, 'main');
        assert.equal((await t.req('GET', url, { token: w.outsider.token })).status, 404);
        assert.equal((await t.req('GET', url, { token: null })).status, 401);
        await review({ uuid: w.userPrivate.uuid, base: w.userPrivate.base }, pull.number, w.solo.token, 'approved');
        assert.deepEqual((await t.req('GET', url)).body.approved_by, [w.solo.username]);
      });
    });
  });
}
