import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { type DecisionObserver, decisionObservers } from '../src/access/decisions.ts';
import { after, before, describe, it } from 'node:test';
import { fastPathOn, setFastPath } from '../src/db/fast-path.ts';
import { commitFiles, type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { statementsOf } from './common.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

type Person = { token: string; uuid: string; username: string };

/**
 * The read path's cost, counted in SQL statements (docs/architecture.md "The read path"): a route
 * that declares its repo (`config.repo`) has it resolved once, with the token lookup, so the hot
 * reads stay one statement each; the pull page stays within its budget.
 */
for (const dialect of DIALECTS) {
  describe(`the read path, in statements (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person;
    let ann: Browser;
    const configured = fastPathOn();
    const api = '/api/v1/teams/core/repos/proj';

    /** The statements `run` makes in its async context (test/common.ts `statementsOf`). */
    const statements = async (run: () => Promise<unknown>): Promise<number> => (await statementsOf(t.deps.database, run)).total;
    /** The access decisions `run` makes (src/access/decisions.ts), by kind, in its async context. */
    const decisions = async (run: () => Promise<unknown>): Promise<string[]> => {
      const mine = new AsyncLocalStorage<true>();
      const seen: string[] = [];
      const observe: DecisionObserver = (kind) => {
        if (mine.getStore()) seen.push(kind);
      };
      decisionObservers.add(observe);
      try {
        await mine.run(true, run);
      } finally {
        decisionObservers.delete(observe);
      }
      return seen;
    };
    const ok = (res: { status: number; text: string }, status = 200) => assert.equal(res.status, status, res.text);

    let threadNumber = 0;
    before(async () => {
      setFastPath(true);
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Core', slug: 'core' } }), 201);
      ok(
        await t.req('POST', '/api/v1/teams/core/repos', {
          token: alice.token,
          body: { name: 'proj', slug: 'proj', visibility: 'private' },
        }),
        201,
      );
      const work = await makeWorkTree(g, 'work', [{ 'README.md': '# Proj\n' }]);
      const url = g.url('/git/teams/core/proj.git', alice.token);
      await g.run(['-C', work, 'push', '-q', url, 'main']);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feature']);
      await commitFiles(g, work, [{ 'src/feature.ts': 'export const f = true;\n' }], 'feature');
      await g.run(['-C', work, 'push', '-q', url, 'feature']);
      for (const title of ['Feature', 'Other']) {
        ok(
          await t.req('POST', `${api}/pulls`, {
            token: alice.token,
            body: { title, body: '', source_branch: 'feature', target_branch: 'main' },
          }),
          201,
        );
      }
      const thread = await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'An issue', body: 'text' } });
      ok(thread, 201);
      threadNumber = thread.body.number;
      ok(await t.req('POST', `${api}/labels`, { token: alice.token, body: { name: 'bug', color: 'd73a4a' } }), 201);
      ok(await t.req('POST', `${api}/milestones`, { token: alice.token, body: { title: 'v1' } }), 201);
      ann = await signIn(t, 'alice');
      // the token's last_used_at is written at most once a minute: made here, not in a count below
      ok(await t.req('GET', '/api/v1/user', { token: alice.token }));
    });
    after(async () => {
      setFastPath(configured);
      g?.cleanup();
      await t?.close();
    });

    it('GET /user and GET {repo} are one statement each; GET {repo}/pulls/{n} two (its tracker fields in one more)', async () => {
      const get = (url: string) => async () => ok(await t.req('GET', url, { token: alice.token }));
      assert.equal(await statements(get('/api/v1/user')), 1);
      assert.equal(await statements(get(api)), 1);
      // the pull with its repo in the token's statement, then its labels, assignees, milestone and
      // review requests in one UNION ALL (src/tracker/pulls.ts decoratePulls)
      assert.equal(await statements(get(`${api}/pulls/1`)), 2);
      // a declared repo that is not there: still one statement, and the same 404
      let res: { status: number } = { status: 0 };
      const missing = await statements(async () => {
        res = await t.req('GET', '/api/v1/teams/core/repos/nope', { token: alice.token });
      });
      assert.equal(res.status, 404);
      assert.equal(missing, 1);
    });

    it('the code routes that declare their repo read it with the token: one statement before git', async () => {
      assert.equal(await statements(async () => ok(await t.req('GET', `${api}/tags`, { token: alice.token }))), 1);
      assert.equal(await statements(async () => ok(await t.req('GET', `${api}/commits`, { token: alice.token }))), 1);
    });

    it('with the fast path off, the repo is read by a statement of its own, once', async () => {
      setFastPath(false);
      try {
        assert.equal(await statements(async () => ok(await t.req('GET', api, { token: alice.token }))), 2);
      } finally {
        setFastPath(true);
      }
    });

    it('the blame view and the refs page read the repo in one statement, the rest from git', async () => {
      for (const path of ['/teams/core/proj/blame/main/README.md', '/teams/core/proj/refs']) {
        let page = { status: 0, text: '' };
        const n = await statements(async () => {
          page = await pageReq(t, 'GET', path, { cookie: ann.cookie });
        });
        assert.equal(page.status, 200, page.text);
        assert.ok(n <= 2, `${path} ran ${n} statements`);
      }
    });

    it('the pull page stays within 12 statements', async () => {
      let page = { status: 0, text: '' };
      const n = await statements(async () => {
        page = await pageReq(t, 'GET', '/teams/core/proj/pulls/1', { cookie: ann.cookie });
      });
      assert.equal(page.status, 200, page.text);
      assert.ok(n <= 12, `the pull page ran ${n} statements`);
    });

    it('the pull page, GET {repo} and GET {repo}/pulls/{n} decide access once', async () => {
      let page = { status: 0, text: '' };
      assert.deepEqual(
        await decisions(async () => {
          page = await pageReq(t, 'GET', '/teams/core/proj/pulls/1', { cookie: ann.cookie });
        }),
        ['repo'],
      );
      assert.equal(page.status, 200, page.text);
      assert.deepEqual(await decisions(async () => ok(await t.req('GET', api, { token: alice.token }))), ['repo']);
      // the repo's other pages too: resolved once (pageRepo), every part handed the context
      for (const path of [
        '/teams/core/proj',
        '/teams/core/proj/threads',
        '/teams/core/proj/pulls',
        '/teams/core/proj/branches',
        // the tracker's pages
        `/teams/core/proj/threads/${threadNumber}`,
        '/teams/core/proj/threads/new',
        '/teams/core/proj/labels',
        '/teams/core/proj/labels/bug/edit',
        '/teams/core/proj/milestones',
        '/teams/core/proj/milestones/1',
        // the code pages, with their branch and tag switcher, and the blame view
        '/teams/core/proj/tree/main',
        '/teams/core/proj/blob/main/README.md',
        '/teams/core/proj/blame/main/README.md',
        '/teams/core/proj/commits/main',
        '/teams/core/proj/refs',
      ]) {
        let res = { status: 0, text: '' };
        assert.deepEqual(
          await decisions(async () => {
            res = await pageReq(t, 'GET', path, { cookie: ann.cookie });
          }),
          ['repo'],
          path,
        );
        assert.equal(res.status, 200, `${path}: ${res.text}`);
      }
      assert.deepEqual(await decisions(async () => ok(await t.req('GET', `${api}/pulls/1`, { token: alice.token }))), ['repo']);
    });
  });
}
