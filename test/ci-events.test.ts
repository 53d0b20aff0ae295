import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type EventJson, eventResults, type Person } from './common.ts';
import { commitFiles, type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { Receiver, waitUntil } from './webhooks-helpers.ts';

const ZERO = '0'.repeat(40);

/**
 * README "Events a CI can build from": every ref move is a `branch-pushed` with `before`, `after`,
 * `forced` and the repo; every move of a pull's head a `pull-updated` (`synchronized`); pull and
 * review events carry `head_sha`, `base_sha` and `target_branch`; `GET /repos/{uuid}`; a
 * protection that requires checks without approvals.
 */
for (const dialect of DIALECTS) {
  describe(`events a CI can build from (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let rx: Receiver;
    let alice: Person; // owns the repos
    let bob: Person; // an outsider
    let n = 0;

    const ok = <T extends { status: number; text: string }>(res: T, status: number, what = ''): T => {
      assert.equal(res.status, status, `${what} ${res.text}`);
      return res;
    };
    const sha = async (dir: string, rev: string) => (await g.run(['-C', dir, 'rev-parse', rev])).stdout.trim();
    const setup = async () => {
      const slug = `ci${++n}`;
      const created = ok(
        await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
          token: alice.token,
          body: { name: slug, slug, visibility: 'private' },
        }),
        201,
      );
      const url = g.url(`/git/users/${alice.username}/${slug}.git`, alice.token);
      const work = await makeWorkTree(g, `w${n}`, [{ 'README.md': 'hello\n' }]);
      await g.run(['-C', work, 'push', '-q', url, 'main']);
      return {
        uuid: created.body.uuid as string,
        api: `/api/v1/users/${alice.username}/repos/${slug}`,
        url,
        work,
        full_name: `${alice.username}/${slug}`,
      };
    };
    const events = async (repoUuid: string, kind: string): Promise<EventJson[]> =>
      eventResults(t, `repo:${repoUuid}`, alice.token, kind); // oldest first
    const branchCommit = async (work: string, branch: string, file: string) => {
      await g.run(['-C', work, 'checkout', '-q', '-B', branch]);
      await commitFiles(g, work, [{ [file]: `${file}\n` }]);
      return sha(work, 'HEAD');
    };

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      rx = await new Receiver().start();
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
      ok(await t.req('PUT', '/api/v1/site-settings', { body: { webhook_allowed_hosts: ['127.0.0.1'] } }), 200);
    });
    after(async () => {
      await t.close();
      await rx.close();
      g.cleanup();
    });

    it('pushes: branch-pushed with before, after, forced and the repo; a force push is forced', async () => {
      const r = await setup();
      const first = await sha(r.work, 'main');
      const second = await branchCommit(r.work, 'main', 'b.txt');
      await g.run(['-C', r.work, 'push', '-q', r.url, 'main']);
      await g.run(['-C', r.work, 'reset', '-q', '--hard', first]);
      const third = await branchCommit(r.work, 'main', 'c.txt');
      await g.run(['-C', r.work, 'push', '-q', '--force', r.url, 'main']);
      const pushed = await events(r.uuid, 'branch-pushed');
      assert.deepEqual(
        pushed.map((e) => [e.payload.before, e.payload.after, e.payload.forced]),
        [
          [ZERO, first, false],
          [first, second, false],
          [second, third, true],
        ],
      );
      for (const e of pushed) {
        assert.deepEqual(e.payload.repo, { uuid: r.uuid, full_name: r.full_name });
        assert.equal(e.payload.ref, 'refs/heads/main');
      }
    });

    it('API branch creation and deletion, and a merge, are branch-pushed; pull events carry head_sha, base_sha, target_branch', async () => {
      const r = await setup();
      const base = await sha(r.work, 'main');
      ok(await t.req('POST', `${r.api}/branches`, { token: alice.token, body: { name: 'topic' } }), 201);
      const head = await branchCommit(r.work, 'topic', 't.txt');
      await g.run(['-C', r.work, 'push', '-q', r.url, 'topic']);
      const opened = ok(
        await t.req('POST', `${r.api}/pulls`, {
          token: alice.token,
          body: { title: 'Topic', body: '', source_branch: 'topic', target_branch: 'main' },
        }),
        201,
      ).body;
      const [openedEvent] = await events(r.uuid, 'pull-opened');
      assert.equal(openedEvent!.payload.head_sha, head);
      assert.equal(openedEvent!.payload.base_sha, base);
      assert.equal(openedEvent!.payload.target_branch, 'main');
      // a push to the same-repo pull's branch: pull-updated, synchronized
      const head2 = await branchCommit(r.work, 'topic', 't2.txt');
      await g.run(['-C', r.work, 'push', '-q', r.url, 'topic']);
      const updated = (await events(r.uuid, 'pull-updated')).filter((e) => e.payload.action === 'synchronized');
      assert.equal(updated.length, 1);
      assert.equal(updated[0]!.payload.before, head);
      assert.equal(updated[0]!.payload.head_sha, head2);
      assert.equal(updated[0]!.payload.number, opened.number);
      // a review carries the pull's tips and its target branch
      ok(
        await t.req('POST', `${r.api}/pulls/${opened.number}/reviews`, {
          token: alice.token,
          body: { status: 'commented', body: 'ok' },
        }),
        201,
      );
      const [review] = await events(r.uuid, 'review-submitted');
      assert.equal(review!.payload.head_sha, head2);
      assert.equal(review!.payload.base_sha, base);
      assert.equal(review!.payload.target_branch, 'main');
      // the merge moves main: branch-pushed from the old tip; pull-merged names what it landed
      const merged = ok(
        await t.req('POST', `${r.api}/pulls/${opened.number}/merge`, { token: alice.token, body: { merge_strategy: 'merge' } }),
        200,
      ).body;
      const pushed = await events(r.uuid, 'branch-pushed');
      const onMain = pushed.filter((e) => e.payload.ref === 'refs/heads/main');
      const last = onMain[onMain.length - 1]!;
      assert.deepEqual([last.payload.before, last.payload.after, last.payload.forced], [base, merged.merge_commit_sha, false]);
      assert.deepEqual(last.payload.repo, { uuid: r.uuid, full_name: r.full_name });
      assert.equal(last.actor!.username, alice.username);
      const [mergedEvent] = await events(r.uuid, 'pull-merged');
      assert.equal(mergedEvent!.payload.head_sha, head2);
      assert.equal(mergedEvent!.payload.base_sha, base);
      assert.equal(mergedEvent!.payload.target_branch, 'main');
      // the API's branch creation and deletion
      const created = pushed.find((e) => e.payload.ref === 'refs/heads/topic')!;
      assert.deepEqual([created.payload.before, created.payload.after, created.payload.forced], [ZERO, base, false]);
      ok(await t.req('DELETE', `${r.api}/branches/topic`, { token: alice.token }), 204);
      const deleted = (await events(r.uuid, 'branch-pushed')).pop()!;
      assert.deepEqual([deleted.payload.ref, deleted.payload.before, deleted.payload.after], ['refs/heads/topic', head2, ZERO]);
      assert.deepEqual(deleted.payload.repo, { uuid: r.uuid, full_name: r.full_name });
    });

    it('a merge into a branch that is another pull’s head: that pull gets pull-updated', async () => {
      const r = await setup();
      await branchCommit(r.work, 'dev', 'd.txt');
      await g.run(['-C', r.work, 'push', '-q', r.url, 'dev']);
      await branchCommit(r.work, 'feature', 'f.txt');
      await g.run(['-C', r.work, 'push', '-q', r.url, 'feature']);
      const devHead = await sha(r.work, 'dev');
      const release = ok(
        await t.req('POST', `${r.api}/pulls`, {
          token: alice.token,
          body: { title: 'Release', body: '', source_branch: 'dev', target_branch: 'main' },
        }),
        201,
      ).body;
      const feature = ok(
        await t.req('POST', `${r.api}/pulls`, {
          token: alice.token,
          body: { title: 'Feature', body: '', source_branch: 'feature', target_branch: 'dev' },
        }),
        201,
      ).body;
      const merged = ok(
        await t.req('POST', `${r.api}/pulls/${feature.number}/merge`, { token: alice.token, body: { merge_strategy: 'merge' } }),
        200,
      ).body;
      const updated = (await events(r.uuid, 'pull-updated')).filter((e) => e.payload.number === release.number);
      assert.equal(updated.length, 1);
      assert.deepEqual(
        [updated[0]!.payload.action, updated[0]!.payload.before, updated[0]!.payload.head_sha],
        ['synchronized', devHead, merged.merge_commit_sha],
      );
    });

    it('branch_filter applies to review events (their target branch)', async () => {
      const r = await setup();
      const hook = ok(
        await t.req('POST', `${r.api}/hooks`, {
          token: alice.token,
          body: { url: rx.url(), events: ['review-submitted'], branch_filter: 'release/*' },
        }),
        201,
      ).body;
      ok(await t.req('POST', `${r.api}/branches`, { token: alice.token, body: { name: 'release/1' } }), 201);
      await branchCommit(r.work, 'x', 'x.txt');
      await g.run(['-C', r.work, 'push', '-q', r.url, 'x']);
      const open = async (target: string) =>
        ok(
          await t.req('POST', `${r.api}/pulls`, {
            token: alice.token,
            body: { title: target, body: '', source_branch: 'x', target_branch: target },
          }),
          201,
        ).body;
      const intoMain = await open('main');
      const intoRelease = await open('release/1');
      for (const p of [intoMain, intoRelease]) {
        ok(
          await t.req('POST', `${r.api}/pulls/${p.number}/reviews`, {
            token: alice.token,
            body: { status: 'commented', body: 'x' },
          }),
          201,
        );
      }
      await waitUntil(() => rx.forHook(hook.uuid).length >= 1, 20_000, 'the delivery');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const got = rx.forHook(hook.uuid);
      assert.equal(got.length, 1);
      assert.equal(got[0]!.json.event.payload.target_branch, 'release/1');
    });

    it('GET /repos/{uuid}: the repo to its readers, 404 to others and for an unknown uuid', async () => {
      const r = await setup();
      const res = ok(await t.req('GET', `/api/v1/repos/${r.uuid}`, { token: alice.token }), 200);
      assert.equal(res.body.uuid, r.uuid);
      assert.equal(res.body.full_name, r.full_name);
      assert.deepEqual(res.body, (await t.req('GET', r.api, { token: alice.token })).body);
      assert.equal((await t.req('GET', `/api/v1/repos/${r.uuid}`, { token: bob.token })).status, 404);
      assert.equal(
        (await t.req('GET', `/api/v1/repos/00000000-0000-4000-8000-000000000000`, { token: alice.token })).status,
        404,
      );
      assert.equal((await t.req('GET', `/api/v1/repos/nope`, { token: alice.token })).status, 404);
    });

    it('a protection may require checks without approvals (required_approvals: 0)', async () => {
      const r = await setup();
      const prot = ok(
        await t.req('POST', `${r.api}/protections`, {
          token: alice.token,
          body: { branch: 'main', required_approvals: 0, required_status_contexts: ['ci'] },
        }),
        201,
      ).body;
      assert.equal(prot.required_approvals, 0);
      const head = await branchCommit(r.work, 'fix', 'fix.txt');
      await g.run(['-C', r.work, 'push', '-q', r.url, 'fix']);
      const pull = ok(
        await t.req('POST', `${r.api}/pulls`, {
          token: alice.token,
          body: { title: 'Fix', body: '', source_branch: 'fix', target_branch: 'main' },
        }),
        201,
      ).body;
      const early = await t.req('POST', `${r.api}/pulls/${pull.number}/merge`, { token: alice.token, body: {} });
      assert.equal(early.status, 409);
      assert.equal(early.body.error ?? early.body.code, 'checks_unsatisfied');
      ok(
        await t.req('POST', `${r.api}/statuses/${head}`, { token: alice.token, body: { state: 'success', context: 'ci' } }),
        201,
      );
      ok(
        await t.req('POST', `${r.api}/pulls/${pull.number}/merge`, { token: alice.token, body: {} }),
        200,
        'merged without an approval',
      );
      assert.equal(
        (await t.req('PUT', `${r.api}/protections/${prot.uuid}`, { token: alice.token, body: { required_approvals: -1 } }))
          .status,
        400,
      );
    });
  });
}
