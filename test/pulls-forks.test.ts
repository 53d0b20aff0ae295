import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { eventsInScope } from './common.ts';
import { commitFiles, type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';

/**
 * Pulls from forks (README "Pulls from forks"), with the real git client against a listening
 * server: a contributor without write access forks, pushes to the fork and proposes the change
 * upstream; the upstream's maintainer merges it with each strategy.
 */
for (const dialect of DIALECTS) {
  describe(`pulls from forks (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person; // owns the upstream repos
    let bob: Person; // contributes through forks: read access upstream only
    let carol: Person; // reads the public upstream, nothing else
    let n = 0;

    interface Repo {
      uuid: string;
      api: string;
      url: (token: string | null) => string;
      full_name: string;
    }
    const repoOf = (owner: string, slug: string, uuid: string): Repo => ({
      uuid,
      api: `/api/v1/users/${owner}/repos/${slug}`,
      url: (token) => g.url(`/git/users/${owner}/${slug}.git`, token),
      full_name: `${owner}/${slug}`,
    });
    const ok = <T extends { status: number; text: string }>(res: T, status: number, what = ''): T => {
      assert.equal(res.status, status, `${what} ${res.text}`);
      return res;
    };
    const sha = async (dir: string, rev: string) => (await g.run(['-C', dir, 'rev-parse', rev])).stdout.trim();
    const remoteSha = async (url: string, ref: string) => (await g.run(['ls-remote', url, ref])).stdout.slice(0, 40) || null;

    /** alice's public upstream with one commit on main, and bob's fork of it with a work tree on the fork. */
    const setup = async (opts: { forkPrivate?: boolean } = {}) => {
      const slug = `proj${++n}`;
      const created = ok(
        await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
          token: alice.token,
          body: { name: slug, slug, visibility: 'public' },
        }),
        201,
      );
      const up = repoOf(alice.username, slug, created.body.uuid);
      const work = await makeWorkTree(g, `w${n}`, [{ 'README.md': 'hello\n' }]);
      await g.run(['-C', work, 'push', '-q', up.url(alice.token), 'main']);
      const fork = ok(await t.req('POST', `${up.api}/forks`, { token: bob.token }), 201, 'fork').body;
      const fk = repoOf(bob.username, slug, fork.repo.uuid);
      if (opts.forkPrivate) ok(await t.req('PUT', fk.api, { token: bob.token, body: { visibility: 'private' } }), 200);
      return { up, fk, work };
    };
    /** bob's branch on the fork: upstream's main plus one commit adding `file` */
    const pushFix = async (s: { up: Repo; fk: Repo; work: string }, branch: string, file: string) => {
      await g.run(['-C', s.work, 'fetch', '-q', s.up.url(bob.token), 'main']);
      await g.run(['-C', s.work, 'checkout', '-q', '-B', branch, 'FETCH_HEAD']);
      await commitFiles(g, s.work, [{ [file]: `${file}\n` }], branch);
      await g.run(['-C', s.work, 'push', '-q', s.fk.url(bob.token), `${branch}:refs/heads/${branch}`]);
      return sha(s.work, branch);
    };
    const openFrom = (up: Repo, source: Repo, branch: string, token = bob.token, target = 'main') =>
      t.req('POST', `${up.api}/pulls`, {
        token,
        body: { title: `Fix ${branch}`, body: 'Please', source_branch: branch, target_branch: target, source_repo: source.uuid },
      });
    const merge = (up: Repo, number: number, strategy: string) =>
      t.req('POST', `${up.api}/pulls/${number}/merge`, { token: alice.token, body: { merge_strategy: strategy } });

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
      carol = await t.user(`carol${dialect}`);
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    it('fork → push → pull from the fork → approve → each of the four strategies lands the fork’s commits', async () => {
      const s = await setup();
      ok(await t.req('POST', `${s.up.api}/protections`, { token: alice.token, body: { branch: 'main' } }), 201);
      for (const strategy of ['merge', 'squash', 'rebase', 'fast_forward']) {
        const branch = `fix-${strategy}`;
        const tip = await pushFix(s, branch, `${strategy}.txt`);
        const opened = ok(await openFrom(s.up, s.fk, branch), 201, 'open').body;
        assert.deepEqual(opened.source_repo, { uuid: s.fk.uuid, full_name: s.fk.full_name });
        assert.equal(opened.source_branch, branch);
        assert.equal(opened.head_sha, tip);
        const mainBefore = await remoteSha(s.up.url(alice.token), 'refs/heads/main');
        assert.equal(opened.base_sha, mainBefore);

        const commits = ok(await t.req('GET', `${s.up.api}/pulls/${opened.number}/commits`, { token: carol.token }), 200);
        assert.deepEqual(
          commits.body.results.map((c: { sha: string }) => c.sha),
          [tip],
        );
        // the fork's head is a commit of the upstream (its kept head): CI may report on it there
        ok(
          await t.req('POST', `${s.up.api}/statuses/${tip}`, { token: alice.token, body: { state: 'success', context: 'ci' } }),
          201,
          'status on the fork head',
        );
        const files = ok(await t.req('GET', `${s.up.api}/pulls/${opened.number}/files`, { token: carol.token }), 200);
        assert.deepEqual(
          files.body.results.map((f: { path: string; status: string }) => [f.path, f.status]),
          [[`${strategy}.txt`, 'added']],
        );

        // protection applies as for a pull inside the repo: bob cannot merge, alice needs an approval
        assert.equal((await merge(s.up, opened.number, strategy)).body.error, 'protection_unsatisfied');
        const byBob = await t.req('POST', `${s.up.api}/pulls/${opened.number}/merge`, { token: bob.token, body: {} });
        assert.equal(byBob.status, 403, byBob.text);
        // a reader's approval does not count; alice's (write access) does
        ok(
          await t.req('POST', `${s.up.api}/pulls/${opened.number}/reviews`, { token: carol.token, body: { status: 'approved' } }),
          201,
        );
        assert.equal((await merge(s.up, opened.number, strategy)).body.error, 'protection_unsatisfied');
        ok(
          await t.req('POST', `${s.up.api}/pulls/${opened.number}/reviews`, { token: alice.token, body: { status: 'approved' } }),
          201,
        );
        const protection = ok(await t.req('GET', `${s.up.api}/pulls/${opened.number}/protection`, { token: bob.token }), 200);
        assert.equal(protection.body.satisfied, true);

        const res = ok(await merge(s.up, opened.number, strategy), 200, strategy);
        const landed = res.body.merge_commit_sha as string;
        assert.equal(await remoteSha(s.up.url(alice.token), 'refs/heads/main'), landed);
        assert.equal(res.body.pull.status, 'merged');
        assert.deepEqual(res.body.pull.source_repo, { uuid: s.fk.uuid, full_name: s.fk.full_name });
        // the fork's change is on upstream main
        await g.run(['-C', s.work, 'fetch', '-q', s.up.url(alice.token), 'main']);
        const tree = (await g.run(['-C', s.work, 'ls-tree', '-r', '--name-only', 'FETCH_HEAD'])).stdout;
        assert.ok(tree.split('\n').includes(`${strategy}.txt`), tree);
        const parents = (await g.run(['-C', s.work, 'log', '-1', '--format=%P', landed])).stdout.trim().split(' ');
        if (strategy === 'merge') assert.deepEqual(parents, [mainBefore, tip]);
        if (strategy === 'fast_forward') assert.equal(landed, tip);
        if (strategy === 'squash' || strategy === 'rebase') assert.deepEqual(parents, [mainBefore]);
        if (strategy === 'merge') {
          const message = (await g.run(['-C', s.work, 'log', '-1', '--format=%B', landed])).stdout;
          assert.ok(!message.includes(bob.username), 'the merge message names the branch, not the fork');
        }
      }
      // pull-opened carries both repos; pull-merged too
      const ev = await eventsInScope(t, `repo:${s.up.uuid}`, alice.token, 'pull-opened');
      const opened = ev.body.results.at(-1);
      assert.deepEqual(opened.payload.source_repo, { uuid: s.fk.uuid, full_name: s.fk.full_name });
      assert.ok(opened.scopes.includes(`repo:${s.fk.uuid}`), JSON.stringify(opened.scopes));
      assert.ok(opened.scopes.includes(`repo:${s.up.uuid}`));
    });

    it('refs/pull/N/head: fetchable, follows pushes to the fork (pull-updated), not a branch, not pushable', async () => {
      const s = await setup();
      const tip1 = await pushFix(s, 'topic', 'topic.txt');
      const pull = ok(await openFrom(s.up, s.fk, 'topic'), 201).body;
      const clone = g.tmp(`clone${n}`);
      await g.run(['clone', '-q', s.up.url(carol.token), clone]);
      await g.run(['-C', clone, 'fetch', '-q', 'origin', `pull/${pull.number}/head`]);
      assert.equal(await sha(clone, 'FETCH_HEAD'), tip1);

      // a new push to the fork's branch: the kept head follows, and the target scope hears of it
      await commitFiles(g, s.work, [{ 'more.txt': 'more\n' }], 'more');
      await g.run(['-C', s.work, 'push', '-q', s.fk.url(bob.token), 'topic']);
      const tip2 = await sha(s.work, 'topic');
      await g.run(['-C', clone, 'fetch', '-q', 'origin', `pull/${pull.number}/head`]);
      assert.equal(await sha(clone, 'FETCH_HEAD'), tip2);
      const got = ok(await t.req('GET', `${s.up.api}/pulls/${pull.number}`, { token: carol.token }), 200);
      assert.equal(got.body.head_sha, tip2);
      const updated = (await eventsInScope(t, `repo:${s.up.uuid}`, carol.token, 'pull-updated')).body.results;
      assert.equal(updated.length, 1, JSON.stringify(updated));
      assert.equal(updated[0].payload.action, 'synchronized');
      assert.equal(updated[0].payload.head_sha, tip2);
      assert.equal(updated[0].payload.before, tip1);
      assert.equal(updated[0].payload.number, pull.number);
      assert.deepEqual(updated[0].payload.source_repo, { uuid: s.fk.uuid, full_name: s.fk.full_name });
      assert.equal(updated[0].actor.username, bob.username);

      // not a branch
      const branches = ok(await t.req('GET', `${s.up.api}/branches`, { token: carol.token }), 200);
      assert.deepEqual(
        branches.body.results.map((b: { name: string }) => b.name),
        ['main'],
      );
      // not pushable, even by the owner: the reason is printed
      const push = await g.run(['-C', s.work, 'push', s.up.url(alice.token), `+${tip1}:refs/pull/${pull.number}/head`], {
        ok: false,
      });
      assert.notEqual(push.code, 0);
      assert.match(push.stderr, /only branches \(refs\/heads\/\) and tags \(refs\/tags\/\) can be pushed/);
      assert.equal(await remoteSha(s.up.url(alice.token), `refs/pull/${pull.number}/head`), tip2);
    });

    it('the fork deleted, or only its branch: the pull stays open and merges from its kept head', async () => {
      // the branch deleted
      const s = await setup();
      const tip = await pushFix(s, 'gone-branch', 'gb.txt');
      const p1 = ok(await openFrom(s.up, s.fk, 'gone-branch'), 201).body;
      await g.run(['-C', s.work, 'push', '-q', s.fk.url(bob.token), ':refs/heads/gone-branch']);
      const after1 = ok(await t.req('GET', `${s.up.api}/pulls/${p1.number}`, { token: alice.token }), 200).body;
      assert.equal(after1.status, 'open');
      assert.equal(after1.head_sha, tip, 'the kept head');
      const m1 = ok(await merge(s.up, p1.number, 'merge'), 200, 'merge after branch deletion');
      await g.run(['-C', s.work, 'fetch', '-q', s.up.url(alice.token), 'main']);
      assert.deepEqual(
        (await g.run(['-C', s.work, 'log', '-1', '--format=%P', m1.body.merge_commit_sha])).stdout.trim().split(' ')[1],
        tip,
      );

      // the whole fork deleted
      const s2 = await setup();
      const tip2 = await pushFix(s2, 'gone-fork', 'gf.txt');
      const p2 = ok(await openFrom(s2.up, s2.fk, 'gone-fork'), 201).body;
      ok(await t.req('DELETE', s2.fk.api, { token: bob.token }), 204, 'delete fork');
      const after2 = ok(await t.req('GET', `${s2.up.api}/pulls/${p2.number}`, { token: alice.token }), 200).body;
      assert.equal(after2.status, 'open');
      assert.equal(after2.head_sha, tip2);
      assert.deepEqual(after2.source_repo, { uuid: null, full_name: null }, 'the deleted fork is named to nobody');
      const commits = ok(await t.req('GET', `${s2.up.api}/pulls/${p2.number}/commits`, { token: alice.token }), 200);
      assert.deepEqual(
        commits.body.results.map((c: { sha: string }) => c.sha),
        [tip2],
      );
      const m2 = ok(await merge(s2.up, p2.number, 'squash'), 200, 'merge after fork deletion');
      await g.run(['-C', s2.work, 'fetch', '-q', s2.up.url(alice.token), 'main']);
      assert.equal(await sha(s2.work, 'FETCH_HEAD'), m2.body.merge_commit_sha);
      assert.ok((await g.run(['-C', s2.work, 'ls-tree', '--name-only', 'FETCH_HEAD'])).stdout.includes('gf.txt'));
    });

    it("a private fork's name never reaches a reader of the target who cannot read it", async () => {
      const s = await setup({ forkPrivate: true });
      const tip = await pushFix(s, 'secret', 'secret.txt');
      const pull = ok(await openFrom(s.up, s.fk, 'secret'), 201).body;
      assert.deepEqual(pull.source_repo, { uuid: s.fk.uuid, full_name: s.fk.full_name }, 'bob reads his fork');
      await commitFiles(g, s.work, [{ 'secret2.txt': 'x\n' }], 'again');
      await g.run(['-C', s.work, 'push', '-q', s.fk.url(bob.token), 'secret']);
      for (const reader of [carol, alice]) {
        const seen = [
          await t.req('GET', `${s.up.api}/pulls/${pull.number}`, { token: reader.token }),
          await t.req('GET', `${s.up.api}/pulls`, { token: reader.token }),
          await eventsInScope(t, `repo:${s.up.uuid}`, reader.token),
          await eventsInScope(t, `pull:${pull.uuid}`, reader.token),
          await t.req('GET', `/api/v1/users/${reader.username}/activity`, { token: reader.token }),
        ];
        for (const res of seen) {
          assert.equal(res.status, 200, res.text);
          assert.ok(!res.text.includes(s.fk.uuid), `the fork's uuid leaked: ${res.text}`);
          assert.ok(!res.text.includes(s.fk.full_name), `the fork's name leaked: ${res.text}`);
        }
        const got = seen[0]!.body;
        assert.deepEqual(got.source_repo, { uuid: null, full_name: null });
        assert.notEqual(got.head_sha, tip, 'head_sha follows the fork');
        const events = seen[2]!.body.results.filter((e: { kind: string }) => e.kind.startsWith('pull-'));
        assert.deepEqual(
          events.map((e: { kind: string }) => e.kind),
          ['pull-opened', 'pull-updated'],
        );
        for (const e of events) assert.deepEqual(e.payload.source_repo, { uuid: null, full_name: null });
      }
      // staff see it
      const staff = ok(await t.req('GET', `${s.up.api}/pulls/${pull.number}`), 200).body;
      assert.deepEqual(staff.source_repo, { uuid: s.fk.uuid, full_name: s.fk.full_name });
      // and the merge still works for alice, who cannot read the fork: write access to the target is all it needs
      ok(await merge(s.up, pull.number, 'rebase'), 200);
    });

    it('source_repo: unrelated 400, unreadable or unknown 404, malformed 400; an upstream branch into a fork', async () => {
      const s = await setup();
      const other = ok(
        await t.req('POST', `/api/v1/users/${bob.username}/repos`, {
          token: bob.token,
          body: { name: `other${n}`, slug: `other${n}`, visibility: 'public' },
        }),
        201,
      ).body;
      const hidden = ok(
        await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
          token: alice.token,
          body: { name: `hidden${n}`, slug: `hidden${n}`, visibility: 'private' },
        }),
        201,
      ).body;
      const count = async () => (await t.req('GET', `${s.up.api}/pulls`, { token: alice.token })).body.results.length;
      const before = await count();
      const open = (source_repo: string, token = bob.token) =>
        t.req('POST', `${s.up.api}/pulls`, {
          token,
          body: { title: 'x', body: '', source_branch: 'main', target_branch: 'main', source_repo },
        });
      const unrelated = await open(other.uuid);
      assert.equal(unrelated.status, 400, unrelated.text);
      assert.ok(isErrorBody(unrelated.body, 'invalid_request'));
      const unreadable = await open(hidden.uuid);
      assert.equal(unreadable.status, 404, unreadable.text);
      assert.ok(isErrorBody(unreadable.body, 'not_found'));
      assert.equal((await open('00000000-0000-4000-8000-000000000000')).status, 404);
      const malformed = await open('not-a-uuid');
      assert.equal(malformed.status, 400, malformed.text);
      assert.ok(isErrorBody(malformed.body, 'invalid_request'));
      // this repo named explicitly: same source and target branch is 400 as without it
      assert.equal((await open(s.up.uuid)).status, 400);
      assert.equal(await count(), before, 'nothing was opened');

      // the other way: an upstream branch proposed into the fork. Its objects are shared through
      // alternates already, so keeping its head copies nothing into the fork.
      await g.run(['-C', s.work, 'checkout', '-q', '-b', 'upstream-work']);
      await commitFiles(g, s.work, [{ 'up.txt': 'up\n' }], 'up');
      await g.run(['-C', s.work, 'push', '-q', s.up.url(alice.token), 'upstream-work']);
      const usage = async () => (await t.req('GET', s.fk.api, { token: bob.token })).body.disk_usage_bytes as number;
      const usageBefore = await usage();
      const into = ok(
        await t.req('POST', `${s.fk.api}/pulls`, {
          token: alice.token,
          body: {
            title: 'from upstream',
            body: '',
            source_branch: 'upstream-work',
            target_branch: 'main',
            source_repo: s.up.uuid,
          },
        }),
        201,
      ).body;
      assert.equal(await remoteSha(s.fk.url(bob.token), `refs/pull/${into.number}/head`), await sha(s.work, 'upstream-work'));
      assert.equal(await usage(), usageBefore, 'no object was copied');
      // and a fork's main into the upstream's main is the common case
      const mainToMain = ok(await openFrom(s.up, s.fk, 'main'), 201).body;
      assert.equal(
        (await merge(s.up, mainToMain.number, 'merge')).body.error,
        'nothing_to_merge',
        'the fork main has nothing upstream lacks',
      );
    });

    it('errors a person can act on: a reader’s refused push prints the reason; an enum lists its values', async () => {
      const s = await setup();
      const push = await g.run(['-C', s.work, 'push', s.up.url(carol.token), 'main:refs/heads/carol'], { ok: false });
      assert.notEqual(push.code, 0);
      assert.match(push.stderr, /remote: Pushing needs write access to the repo\./, push.stderr);
      const pull = ok(await openFrom(s.up, s.fk, 'main', bob.token), 201).body;
      const res = await t.req('POST', `${s.up.api}/pulls/${pull.number}/merge`, {
        token: alice.token,
        body: { merge_strategy: 'octopus' },
      });
      assert.equal(res.status, 400);
      assert.ok(isErrorBody(res.body, 'invalid_request'));
      assert.equal(res.body.detail, 'body.merge_strategy must be one of "merge", "squash", "rebase", "fast_forward".');
    });

    it('compare {base}...{owner}:{slug}:{branch}: a fork’s head against the upstream; unreadable 404, unrelated 400', async () => {
      const s = await setup();
      const tip = await pushFix(s, 'cmp', 'cmp.txt');
      const base = await sha(s.work, 'main');
      const res = ok(
        await t.req('GET', `${s.up.api}/compare/main...${bob.username}:${s.fk.full_name.split('/')[1]}:cmp`, {
          token: carol.token,
        }),
        200,
      );
      assert.equal(res.body.head_sha, tip);
      assert.equal(res.body.base_sha, base);
      assert.equal(res.body.merge_base_sha, base);
      assert.equal(res.body.status, 'ahead');
      assert.equal(res.body.ahead_by, 1);
      assert.deepEqual(
        res.body.files.map((f: { path: string }) => f.path),
        ['cmp.txt'],
      );
      // the other way round too: from the fork, the upstream's main as head
      const back = ok(
        await t.req('GET', `${s.fk.api}/compare/cmp...${alice.username}:${s.up.full_name.split('/')[1]}:main`, {
          token: bob.token,
        }),
        200,
      );
      assert.equal(back.body.status, 'behind');
      // a missing branch of the fork is 404; a malformed form 400
      assert.equal(
        (
          await t.req('GET', `${s.up.api}/compare/main...${bob.username}:${s.fk.full_name.split('/')[1]}:nope`, {
            token: carol.token,
          })
        ).status,
        404,
      );
      assert.equal((await t.req('GET', `${s.up.api}/compare/main...${bob.username}:cmp`, { token: carol.token })).status, 400);
      // a private fork is 404 to a reader of the upstream
      ok(await t.req('PUT', s.fk.api, { token: bob.token, body: { visibility: 'private' } }), 200);
      const hidden = await t.req('GET', `${s.up.api}/compare/main...${bob.username}:${s.fk.full_name.split('/')[1]}:cmp`, {
        token: carol.token,
      });
      assert.equal(hidden.status, 404);
      // a readable repo outside the network is 400
      const other = ok(
        await t.req('POST', `/api/v1/users/${carol.username}/repos`, {
          token: carol.token,
          body: { name: `other${n}`, slug: `other${n}`, visibility: 'public' },
        }),
        201,
      );
      await g.run(['-C', s.work, 'push', '-q', g.url(`/git/users/${carol.username}/other${n}.git`, carol.token), 'main']);
      const unrelated = await t.req('GET', `${s.up.api}/compare/main...${carol.username}:${other.body.slug}:main`, {
        token: carol.token,
      });
      assert.equal(unrelated.status, 400, unrelated.text);
    });
  });
}
