import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { eventsInScope } from './common.ts';
import { commitFiles, type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';

/**
 * Commit statuses and required checks (README "Commit statuses and required checks"), on real
 * pushed commits: the CI reports, the combined state, and the merge gate of a protection.
 */
for (const dialect of DIALECTS) {
  describe(`commit statuses and required checks (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let owner: Person;
    let ci: Person; // a member with write access: the CI's account
    let reader: Person;
    let team: string;
    let n = 0;

    const ok = <T extends { status: number; text: string }>(res: T, status: number, what = ''): T => {
      assert.equal(res.status, status, `${what} ${res.text}`);
      return res;
    };
    const sha = async (dir: string, rev: string) => (await g.run(['-C', dir, 'rev-parse', rev])).stdout.trim();

    /** A private team repo: main with one commit, `feature` with one more. */
    const setup = async () => {
      const slug = `st${++n}`;
      const created = ok(
        await t.req('POST', `/api/v1/teams/${team}/repos`, { token: owner.token, body: { name: slug, slug } }),
        201,
      );
      const api = `/api/v1/teams/${team}/repos/${slug}`;
      const url = g.url(`/git/teams/${team}/${slug}.git`, owner.token);
      const work = await makeWorkTree(g, `w${n}`, [{ 'a.txt': 'a\n' }]);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feature']);
      await commitFiles(g, work, [{ 'f.txt': 'f\n' }], 'feature');
      await g.run(['-C', work, 'push', '-q', url, 'main', 'feature']);
      return {
        api,
        url,
        work,
        uuid: created.body.uuid as string,
        head: await sha(work, 'feature'),
        base: await sha(work, 'main'),
      };
    };
    const post = (api: string, commit: string, body: Record<string, unknown>, token = ci.token) =>
      t.req('POST', `${api}/statuses/${commit}`, { token, body });

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      owner = await t.user(`sowner${dialect}`);
      ci = await t.user(`sci${dialect}`);
      reader = await t.user(`sreader${dialect}`);
      team = `st-${dialect}`;
      ok(await t.req('POST', '/api/v1/teams', { token: owner.token, body: { name: team, slug: team } }), 201);
      ok(
        await t.req('POST', `/api/v1/teams/${team}/members`, {
          token: owner.token,
          body: { username: ci.username, role: 'member' },
        }),
        201,
      );
      ok(
        await t.req('POST', `/api/v1/teams/${team}/members`, {
          token: owner.token,
          body: { username: reader.username, role: 'reader' },
        }),
        201,
      );
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    it('creates, lists newest first, and combines: none → pending, failure/error → failure, all success → success, latest wins', async () => {
      const r = await setup();
      const combined = async (ref: string) =>
        ok(await t.req('GET', `${r.api}/commits/${ref}/status`, { token: reader.token }), 200).body;
      assert.deepEqual(await combined('feature'), { sha: r.head, state: 'pending', total_count: 0, statuses: [] });

      const created = ok(
        await post(r.api, r.head, {
          state: 'pending',
          context: 'ci/build',
          description: 'queued',
          target_url: 'https://ci.example/1',
        }),
        201,
      ).body;
      assert.deepEqual(Object.keys(created).sort(), [
        'context',
        'created_at',
        'creator',
        'description',
        'sha',
        'state',
        'target_url',
        'uuid',
      ]);
      assert.equal(created.sha, r.head);
      assert.deepEqual(created.creator, { uuid: ci.uuid, username: ci.username });
      assert.equal((await combined('feature')).state, 'pending');

      ok(await post(r.api, r.head, { state: 'success', context: 'ci/build' }), 201);
      ok(await post(r.api, r.head.toUpperCase(), { state: 'success' }), 201, 'default context, upper-case sha');
      const green = await combined('feature');
      assert.equal(green.state, 'success');
      assert.equal(green.total_count, 2);
      assert.deepEqual(
        green.statuses.map((s: { context: string; state: string }) => [s.context, s.state]),
        [
          ['ci/build', 'success'],
          ['default', 'success'],
        ],
      );
      ok(await post(r.api, r.head, { state: 'error', context: 'lint' }), 201);
      assert.equal((await combined('feature')).state, 'failure', 'an error is a failure');
      ok(await post(r.api, r.head, { state: 'success', context: 'lint' }), 201);
      assert.equal((await combined(r.head)).state, 'success', 'the latest status of a context wins');
      ok(await post(r.api, r.head, { state: 'failure', context: 'ci/build' }), 201);
      assert.equal((await combined(r.head.slice(0, 10))).state, 'failure', 'an abbreviated sha resolves');

      const list = ok(await t.req('GET', `${r.api}/commits/feature/statuses?per_page=2`, { token: reader.token }), 200);
      assert.deepEqual(
        list.body.results.map((s: { context: string; state: string }) => [s.context, s.state]),
        [
          ['ci/build', 'failure'],
          ['lint', 'success'],
        ],
      );
      assert.match(list.body.next, /page=2/);
      const all = ok(await t.req('GET', `${r.api}/commits/feature/statuses?per_page=100`, { token: reader.token }), 200);
      assert.equal(all.body.results.length, 6);
      // the user owner form does not exist for a team repo; main has no statuses
      assert.deepEqual((await combined('main')).statuses, []);

      const ev = (await eventsInScope(t, `repo:${r.uuid}`, reader.token, 'status-created')).body.results;
      assert.equal(ev.length, 6);
      assert.deepEqual(ev[0].payload.branches, ['feature']);
      assert.equal(ev[0].payload.status.uuid, created.uuid);
      assert.equal(ev[0].payload.repo_uuid, r.uuid);
    });

    it('refuses: a reader 403, an outsider 404, a malformed sha or body 400, an unknown commit or ref 404; nothing is stored', async () => {
      const r = await setup();
      const outsider = await t.user(`sout${dialect}${n}`);
      const byReader = await post(r.api, r.head, { state: 'success' }, reader.token);
      assert.equal(byReader.status, 403, byReader.text);
      assert.ok(isErrorBody(byReader.body, 'forbidden'));
      assert.equal((await post(r.api, r.head, { state: 'success' }, outsider.token)).status, 404);
      for (const [commit, body] of [
        ['abc123', { state: 'success' }],
        [`${r.head.slice(0, 39)}g`, { state: 'success' }],
        [r.head, { state: 'green' }],
        [r.head, { state: 'success', context: '' }],
        [r.head, { state: 'success', context: 'x'.repeat(256) }],
        [r.head, { state: 'success', description: 'x'.repeat(1001) }],
        [r.head, { state: 'success', target_url: 'ftp://ci.example/' }],
        [r.head, { state: 'success', extra: 1 }],
      ] as const) {
        const res = await post(r.api, commit, body);
        assert.equal(res.status, 400, `${commit} ${JSON.stringify(body)}: ${res.text}`);
        assert.ok(isErrorBody(res.body, 'invalid_request'));
      }
      const unknown = await post(r.api, 'f'.repeat(40), { state: 'success' });
      assert.equal(unknown.status, 404, unknown.text);
      assert.ok(isErrorBody(unknown.body, 'not_found'));
      assert.equal((await t.req('GET', `${r.api}/commits/nope/status`, { token: reader.token })).status, 404);
      assert.equal((await t.req('GET', `${r.api}/commits/feature/statuses`, { token: outsider.token })).status, 404);
      const list = ok(await t.req('GET', `${r.api}/commits/feature/statuses`, { token: owner.token }), 200);
      assert.deepEqual(list.body.results, []);
    });

    it('required checks gate the merge under every strategy; a new push invalidates an earlier green', async () => {
      for (const strategy of ['merge', 'squash', 'rebase', 'fast_forward']) {
        const r = await setup();
        const prot = ok(
          await t.req('POST', `${r.api}/protections`, {
            token: owner.token,
            body: { branch: 'main', required_status_contexts: ['lint', 'ci/build', 'lint'] },
          }),
          201,
        ).body;
        assert.deepEqual(prot.required_status_contexts, ['ci/build', 'lint']);
        const pull = ok(
          await t.req('POST', `${r.api}/pulls`, {
            token: ci.token,
            body: { title: 'Feature', body: '', source_branch: 'feature', target_branch: 'main' },
          }),
          201,
        ).body;
        const protection = async () =>
          ok(await t.req('GET', `${r.api}/pulls/${pull.number}/protection`, { token: reader.token }), 200).body;
        const merge = () =>
          t.req('POST', `${r.api}/pulls/${pull.number}/merge`, { token: owner.token, body: { merge_strategy: strategy } });

        // short of both: approvals are checked first
        assert.equal((await merge()).body.error, 'protection_unsatisfied');
        ok(
          await t.req('POST', `${r.api}/pulls/${pull.number}/reviews`, { token: owner.token, body: { status: 'approved' } }),
          201,
        );
        let p = await protection();
        assert.deepEqual(p.required_status_contexts, ['ci/build', 'lint']);
        assert.deepEqual(p.status_checks, [
          { context: 'ci/build', state: 'missing' },
          { context: 'lint', state: 'missing' },
        ]);
        assert.equal(p.satisfied, false);
        const refused = await merge();
        assert.equal(refused.status, 409, refused.text);
        assert.ok(isErrorBody(refused.body, 'checks_unsatisfied'));
        assert.match(refused.body.detail, /ci\/build \(missing\), lint \(missing\)/);

        ok(await post(r.api, r.head, { state: 'success', context: 'ci/build' }), 201);
        ok(await post(r.api, r.head, { state: 'pending', context: 'lint' }), 201);
        const pending = await merge();
        assert.equal(pending.body.error, 'checks_unsatisfied');
        assert.match(pending.body.detail, /lint \(pending\)/);
        assert.doesNotMatch(pending.body.detail, /ci\/build/);
        ok(await post(r.api, r.head, { state: 'success', context: 'lint' }), 201);
        assert.equal((await protection()).satisfied, true);

        // a new push moves head_sha: the earlier results no longer count
        await g.run(['-C', r.work, 'checkout', '-q', 'feature']);
        await commitFiles(g, r.work, [{ [`more-${strategy}.txt`]: 'x\n' }], 'more');
        await g.run(['-C', r.work, 'push', '-q', r.url, 'feature']);
        const newHead = await sha(r.work, 'feature');
        p = await protection();
        assert.deepEqual(p.status_checks, [
          { context: 'ci/build', state: 'missing' },
          { context: 'lint', state: 'missing' },
        ]);
        assert.equal((await merge()).body.error, 'checks_unsatisfied');
        ok(await post(r.api, newHead, { state: 'success', context: 'ci/build' }), 201);
        ok(await post(r.api, newHead, { state: 'success', context: 'lint' }), 201);
        ok(await post(r.api, newHead, { state: 'failure', context: 'optional' }), 201, 'not required: does not block');
        const merged = ok(await merge(), 200, strategy);
        assert.equal(merged.body.pull.status, 'merged');
        assert.equal((await g.run(['ls-remote', r.url, 'refs/heads/main'])).stdout.slice(0, 40), merged.body.merge_commit_sha);

        // update replaces the list; an empty list requires nothing
        const upd = ok(
          await t.req('PUT', `${r.api}/protections/${prot.uuid}`, { token: owner.token, body: { required_status_contexts: [] } }),
          200,
        );
        assert.deepEqual(upd.body.required_status_contexts, []);
        const read = ok(await t.req('GET', `${r.api}/protections/${prot.uuid}`, { token: reader.token }), 200);
        assert.deepEqual(read.body.required_status_contexts, []);
      }
    });
  });
}
