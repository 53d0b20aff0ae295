import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type GitClient, commitFiles, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';
import { openPull } from './pulls-fixtures.ts';
import { type Kysely, sql } from 'kysely';
import { up as upTitles } from '../src/db/migrations/710_search_titles.ts';
import { CODE_SEARCH_LIMITS } from '../src/search/code.ts';
import { THREAD_SEARCH_LIMITS } from '../src/search/threads.ts';
import { waitUntil } from './webhooks-helpers.ts';

/**
 * docs/search.md: code search (trigram candidates verified against the text, ranges, regex,
 * query_too_broad, qualifiers, case, forks, binary and large files skipped, re-index on push and
 * force push, a deleted repo leaves no rows), access inside the query (private repos in neither
 * results nor counts), and thread, pull, commit and repo search with snippets.
 */
type User = { token: string; uuid: string; username: string };
type Hit = {
  repo: { full_name: string };
  path: string;
  language: string | null;
  matches: { line_number: number; line: string; ranges: [number, number][] }[];
  match_count: number;
};

for (const dialect of DIALECTS) {
  describe(`search (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: User;
    let bob: User;
    let carol: User;
    let work: string;
    let pubUuid: string;
    const pubUrl = () => g.url(`/git/users/${alice.username}/pub.git`, alice.token);

    const search = async (kind: string, q: string, token: string, extra = '') =>
      t.req('GET', `/api/v1/search/${kind}?q=${encodeURIComponent(q)}${extra}`, { token });
    const paths = (res: { body: { results: Hit[] } }) => res.body.results.map((h) => `${h.repo.full_name}:${h.path}`);
    const indexed = async (owner: string, slug: string, sha: string | null = null) =>
      waitUntil(
        async () => {
          const s = await t.req('GET', `/api/v1/users/${owner}/repos/${slug}/search-index`, { token: t.adminToken });
          return s.body.state === 'ready' && (sha === null || s.body.commit_sha === sha);
        },
        30_000,
        `the index of ${owner}/${slug}`,
      );
    const head = async (dir: string) => (await g.run(['-C', dir, 'rev-parse', 'HEAD'])).stdout.trim();
    const newRepo = async (u: User, slug: string, visibility = 'public') => {
      const res = await t.req('POST', `/api/v1/users/${u.username}/repos`, {
        token: u.token,
        body: { name: slug, slug, visibility },
      });
      assert.equal(res.status, 201, res.text);
      return res.body.uuid as string;
    };

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
      carol = await t.user(`carol${dialect}`);
      pubUuid = await newRepo(alice, 'pub');
      work = await makeWorkTree(g, 'pub', [
        {
          'src/a.ts': 'needle at start\nconst x = needle;\nends with needle\n',
          'crlf.txt': 'first line\r\nhas NeedLe here\r\n',
          'multi.txt': 'caf\u00e9 \u65e5\u672c needle \ud83d\ude00needle\n',
          'slow.txt': `needle${'x'.repeat(32)}\n`,
          'big.txt': `${'needle\n'.repeat(160_000)}`,
          'README.md': 'A haystack.\n',
        },
      ]);
      writeFileSync(join(work, 'bin.dat'), Buffer.concat([Buffer.from('needle'), Buffer.from([0, 1, 2, 0])]));
      await g.run(['-C', work, 'add', '-A']);
      await g.run(['-C', work, 'commit', '-q', '-m', 'Add the binary haystack']);
      await g.run(['-C', work, 'push', '-q', pubUrl(), 'main']);
      await indexed(alice.username, 'pub', await head(work));
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    it('finds a literal with line numbers and ranges (line start and end, multi-byte, CRLF); binary and >1 MiB files are skipped', async () => {
      const res = await search('code', 'needle', alice.token);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['x-total-count'], '4');
      const pre = `${alice.username}/pub`;
      assert.deepEqual(paths(res), [`${pre}:crlf.txt`, `${pre}:multi.txt`, `${pre}:slow.txt`, `${pre}:src/a.ts`]);
      const [crlf, multi, , a] = res.body.results as Hit[];
      assert.deepEqual(a!.matches, [
        { line_number: 1, line: 'needle at start', ranges: [[0, 6]] },
        { line_number: 2, line: 'const x = needle;', ranges: [[10, 16]] },
        { line_number: 3, line: 'ends with needle', ranges: [[10, 16]] },
      ]);
      assert.equal(a!.match_count, 3);
      assert.equal(a!.language, 'typescript');
      // CRLF: the line has no "\r", the range ends at the line's end
      assert.deepEqual(crlf!.matches, [{ line_number: 2, line: 'has NeedLe here', ranges: [[4, 10]] }]);
      // ranges count characters (code points): "café 日本 " is 8, the emoji one
      assert.deepEqual(multi!.matches[0]!.ranges, [
        [8, 14],
        [16, 22],
      ]);
      const state = await t.req('GET', `/api/v1/users/${alice.username}/repos/pub/search-index`, { token: alice.token });
      assert.equal(state.body.files, 5); // bin.dat and big.txt are not indexed
      assert.equal((await search('code', 'haystack', alice.token)).headers['x-total-count'], '1');
      // a case-insensitive literal beyond ASCII (SQLite's LIKE folds ASCII only: verified like a regex)
      const cafe = await search('code', 'CAFÉ \u65e5', alice.token);
      assert.equal(cafe.status, 200, cafe.text);
      assert.equal(cafe.headers['x-total-count'], '1');
      assert.deepEqual((cafe.body.results as Hit[])[0]!.matches[0]!.ranges, [[0, 6]]);
      // a regex's ranges count code points too, up to the line's end
      const rx = await search('code', '/needle \\S+$/', alice.token, '&case=sensitive');
      assert.deepEqual(
        (rx.body.results as Hit[]).map((h) => [h.path, h.matches[0]!.ranges]),
        [['multi.txt', [[8, 22]]]],
      );
    });

    it('case=sensitive, qualifiers (path, lang, repo) and regexes', async () => {
      let res = await search('code', 'NeedLe', alice.token, '&case=sensitive');
      assert.deepEqual(paths(res), [`${alice.username}/pub:crlf.txt`]);
      res = await search('code', 'needle path:src/', alice.token);
      assert.deepEqual(paths(res), [`${alice.username}/pub:src/a.ts`]);
      res = await search('code', 'needle path:*.txt lang:text', alice.token);
      assert.equal(res.body.results.length, 3);
      res = await search('code', `repo:${alice.username}/pub needle`, alice.token, '&path=src/a.ts');
      assert.equal(res.body.results.length, 1);
      res = await search('code', '/^needle/', alice.token);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        (res.body.results as Hit[]).map((h) => [h.path, h.matches.map((m) => m.line_number)]),
        [
          ['slow.txt', [1]],
          ['src/a.ts', [1]],
        ],
      );
      res = await search('code', '/(needle|haystack)\\.?$/', alice.token);
      assert.deepEqual(
        (res.body.results as Hit[]).map((h) => h.path),
        ['README.md', 'multi.txt', 'src/a.ts'],
      );
      assert.deepEqual((res.body.results as Hit[])[0]!.matches[0]!.ranges, [[2, 11]]);
    });

    it('query_too_broad: short literals, regexes without a literal run, runaway regexes; bad regexes are 400', async () => {
      for (const q of ['ne', '/a.b/', '/[a-z]+/', '/(ab|cd)e/', '/n.e.e.d/']) {
        const res = await search('code', q, alice.token);
        assert.equal(res.status, 400, q);
        assert.ok(isErrorBody(res.body, 'query_too_broad'), `${q}: ${res.text}`);
      }
      const slow = await search('code', '/needle(x+x+)+y/', alice.token);
      assert.equal(slow.status, 400);
      assert.ok(isErrorBody(slow.body, 'query_too_broad'), slow.text);
      const bad = await search('code', '/needle(/', alice.token);
      assert.equal(bad.status, 400);
      assert.ok(isErrorBody(bad.body, 'invalid_request'), bad.text);
    });

    it('private repos are in neither results nor counts for outsiders; paging is full', async () => {
      await newRepo(bob, 'secret', 'private');
      const dir = await makeWorkTree(g, 'secret', [{ 'needle.txt': 'needle needle\n' }]);
      await g.run(['-C', dir, 'push', '-q', g.url(`/git/users/${bob.username}/secret.git`, bob.token), 'main']);
      await indexed(bob.username, 'secret', await head(dir));
      const mine = await search('code', 'needle', bob.token);
      assert.equal(mine.headers['x-total-count'], '5');
      assert.ok(paths(mine).includes(`${bob.username}/secret:needle.txt`));
      for (const token of [alice.token, carol.token]) {
        const res = await search('code', 'needle', token, '&per_page=2');
        assert.equal(res.headers['x-total-count'], '4');
        assert.equal(res.body.results.length, 2);
        const page2 = await search('code', 'needle', token, '&per_page=2&page=2');
        assert.equal(page2.body.results.length, 2);
        assert.ok(![...paths(res), ...paths(page2)].some((p) => p.includes('secret')));
        const rx = await search('code', '/needle{2}|needle/', token);
        assert.equal(rx.headers['x-total-count'], '4');
      }
      // nor through a regex, a qualifier or the commit messages
      const outsider = await search('code', `/needle needle/ repo:${bob.username}/secret`, carol.token);
      assert.equal(outsider.headers['x-total-count'], '0');
      assert.equal((await search('code', 'needle path:needle.txt', carol.token)).headers['x-total-count'], '0');
      const seen = Number((await search('commits', 'change', carol.token)).headers['x-total-count']);
      assert.equal(Number((await search('commits', 'change', bob.token)).headers['x-total-count']), seen + 1);
      const named = await search('code', `needle repo:${bob.username}/secret`, alice.token);
      assert.equal(named.status, 200);
      assert.equal(named.body.results.length, 0);
      assert.equal(named.headers['x-total-count'], '0');
    });

    it('forks only with repo: or forks=true', async () => {
      const fork = await t.req('POST', `/api/v1/users/${alice.username}/repos/pub/forks`, { token: carol.token });
      assert.equal(fork.status, 201, fork.text);
      await indexed(carol.username, 'pub', await head(work));
      assert.equal((await search('code', 'needle', carol.token)).headers['x-total-count'], '4');
      assert.equal((await search('code', 'needle', carol.token, '&forks=true')).headers['x-total-count'], '8');
      const named = await search('code', `needle repo:${carol.username}/pub`, carol.token);
      assert.equal(named.headers['x-total-count'], '4');
      assert.ok(paths(named).every((p) => p.startsWith(`${carol.username}/pub:`)));
    });

    it('paging is by cursor: a push re-indexed between two pages neither repeats nor skips a result', async () => {
      await newRepo(alice, 'pager');
      const url = g.url(`/git/users/${alice.username}/pager.git`, alice.token);
      const files: Record<string, string> = {};
      for (let i = 0; i < 25; i++) files[`p${String(i).padStart(2, '0')}.txt`] = `pagerword ${i}\n`;
      const dir = await makeWorkTree(g, 'pager', [files]);
      await g.run(['-C', dir, 'push', '-q', url, 'main']);
      await indexed(alice.username, 'pager', await head(dir));
      const only = (res: { body: { results: Hit[] } }) => res.body.results.map((h) => h.path);
      for (const q of ['pagerword', '/pagerword \\d+$/']) {
        const first = await search('code', `${q} repo:${alice.username}/pager`, alice.token, '&per_page=10');
        assert.equal(first.status, 200, first.text);
        assert.deepEqual(only(first), Object.keys(files).slice(0, 10));
        assert.match(first.body.next, /[?&]after=/);
        assert.match(String(first.headers.link), /rel="next"/);
        // meanwhile a push adds files before the cursor and after it, changes one and deletes one
        await commitFiles(g, dir, [
          {
            'a0.txt': 'pagerword 100\n',
            'a1.txt': 'pagerword 101\n',
            'p12b.txt': 'pagerword 12\n',
            'p15.txt': 'changed\npagerword 15\n',
          },
        ]);
        await g.run(['-C', dir, 'rm', '-q', 'p20.txt']);
        await g.run(['-C', dir, 'commit', '-q', '-m', 'Move the pages']);
        await g.run(['-C', dir, 'push', '-q', url, 'main']);
        await indexed(alice.username, 'pager', await head(dir));
        const second = await t.req('GET', first.body.next, { token: alice.token });
        assert.equal(second.status, 200, second.text);
        assert.deepEqual(only(second), [
          'p10.txt',
          'p11.txt',
          'p12.txt',
          'p12b.txt',
          'p13.txt',
          'p14.txt',
          'p15.txt',
          'p16.txt',
          'p17.txt',
          'p18.txt',
        ]);
        assert.equal(second.headers['x-total-count'], '27');
        assert.match(second.body.previous, /page=1/);
        assert.doesNotMatch(second.body.previous, /after=/);
        const third = await t.req('GET', second.body.next, { token: alice.token });
        assert.deepEqual(only(third), ['p19.txt', 'p21.txt', 'p22.txt', 'p23.txt', 'p24.txt']);
        assert.equal(third.body.next, null);
        // back as it was for the next query
        await g.run(['-C', dir, 'reset', '-q', '--hard', 'HEAD~2']);
        await g.run(['-C', dir, 'push', '-q', '--force', url, 'main']);
        await indexed(alice.username, 'pager', await head(dir));
      }
      const bad = await search('code', 'pagerword', alice.token, '&after=bm90LWEtY3Vyc29y');
      assert.equal(bad.status, 400);
      assert.ok(isErrorBody(bad.body, 'invalid_request'), bad.text);
    });

    it('a push re-indexes the changed files; a force push that removes files removes them; commits are searchable', async () => {
      await commitFiles(g, work, [{ 'src/a.ts': 'no more\n', 'src/new.ts': 'a fresh needle\n' }], 'Replace the needle loader');
      await g.run(['-C', work, 'push', '-q', pubUrl(), 'main']);
      await indexed(alice.username, 'pub', await head(work));
      let res = await search('code', 'needle path:src/', alice.token);
      assert.deepEqual(paths(res), [`${alice.username}/pub:src/new.ts`]);
      const commits = await search('commits', 'needle loader', alice.token);
      assert.equal(commits.status, 200, commits.text);
      assert.equal(commits.body.results.length, 1);
      assert.match(commits.body.results[0].snippet, /<mark>needle<\/mark> <mark>loader<\/mark>/);
      assert.equal(
        (await search('commits', 'needle loader', carol.token, `&repo=${bob.username}/secret`)).body.results.length,
        0,
      );
      // force push: back to a history without src/new.ts and multi.txt
      await g.run(['-C', work, 'reset', '-q', '--hard', 'HEAD~2']);
      await g.run(['-C', work, 'rm', '-q', 'multi.txt']);
      await g.run(['-C', work, 'commit', '-q', '-m', 'Drop multi']);
      await g.run(['-C', work, 'push', '-q', '--force', pubUrl(), 'main']);
      await indexed(alice.username, 'pub', await head(work));
      res = await search('code', 'needle', alice.token);
      assert.deepEqual(paths(res), [
        `${alice.username}/pub:crlf.txt`,
        `${alice.username}/pub:slow.txt`,
        `${alice.username}/pub:src/a.ts`,
      ]);
      assert.equal((await search('commits', 'needle loader', alice.token)).body.results.length, 0);
    });

    it('a default-branch change re-indexes; a deleted repo leaves no rows; weft reindex rebuilds', async () => {
      await g.run(['-C', work, 'checkout', '-q', '-b', 'other']);
      await commitFiles(g, work, [{ 'other.txt': 'only on other: spindle\n' }]);
      await g.run(['-C', work, 'push', '-q', pubUrl(), 'other']);
      assert.equal((await search('code', 'spindle', alice.token)).body.results.length, 0);
      const put = await t.req('PUT', `/api/v1/users/${alice.username}/repos/pub`, {
        token: alice.token,
        body: { default_branch: 'other' },
      });
      assert.equal(put.status, 200, put.text);
      await indexed(alice.username, 'pub', await head(work));
      assert.equal((await search('code', 'spindle', alice.token)).body.results.length, 1);

      const { reindex } = await import('../src/search/service.ts');
      await t.deps.db.deleteFrom('search_code_files').where('repo_uuid', '=', pubUuid).execute();
      assert.equal(await reindex(t.deps, [pubUuid]), 1);
      assert.equal((await search('code', 'spindle', alice.token)).body.results.length, 1);
      // an indexer elsewhere holds the repo (its lease runs 1.5 s more): reindex waits, then rebuilds
      await t.deps.db
        .updateTable('search_index_state')
        .set({ state: 'indexing', lease_until: new Date(t.deps.clock.now().getTime() + 1500).toISOString() })
        .where('repo_uuid', '=', pubUuid)
        .execute();
      await t.deps.db.deleteFrom('search_code_files').where('repo_uuid', '=', pubUuid).execute();
      let returned = false;
      const rebuilding = reindex(t.deps, [pubUuid]).then((n) => ((returned = true), n));
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(returned, false, 'reindex waits for the indexer holding the repo');
      assert.equal(await rebuilding, 1);
      assert.equal((await search('code', 'spindle', alice.token)).body.results.length, 1);

      const del = await t.req('DELETE', `/api/v1/users/${alice.username}/repos/pub`, { token: alice.token });
      assert.equal(del.status, 204, del.text);
      for (const table of ['search_code_files', 'search_commits', 'search_index_state'] as const) {
        const n = await t.deps.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .where('repo_uuid', '=', pubUuid)
          .executeTakeFirstOrThrow();
        assert.equal(Number(n.n), 0, table);
      }
    });

    it('threads and pulls: words, phrases, qualifiers, snippets; replies and reviews count; private ones stay hidden', async () => {
      await newRepo(alice, 'tracker');
      await newRepo(bob, 'hidden', 'private');
      const base = `/api/v1/users/${alice.username}/repos/tracker`;
      const thread = async (b: string, title: string, body: string, token = alice.token) => {
        const res = await t.req('POST', `${b}/threads`, { token, body: { title, body } });
        assert.equal(res.status, 201, res.text);
        return res.body.number as number;
      };
      const n1 = await thread(base, 'Crash when parsing zebra files', 'The parser fails on striped input.');
      const n2 = await thread(base, 'Slow startup', 'It takes ages; maybe the zebra cache?');
      await thread(`/api/v1/users/${bob.username}/repos/hidden`, 'Secret zebra plan', 'zebra zebra', bob.token);
      const reply = await t.req('POST', `${base}/threads/${n2}/replies`, {
        token: carol.token,
        body: { body: 'Seen with okapi logs too.' },
      });
      assert.equal(reply.status, 201, reply.text);

      let res = await search('threads', 'zebra', alice.token);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['x-total-count'], '2');
      // the title hit first
      assert.deepEqual(
        res.body.results.map((r: { number: number }) => r.number),
        [n1, n2],
      );
      assert.equal(res.body.results[0].kind, 'thread');
      assert.match(res.body.results[1].snippet, /<mark>zebra<\/mark>/);
      res = await search('threads', 'okapi', alice.token);
      assert.deepEqual(
        res.body.results.map((r: { number: number }) => r.number),
        [n2],
      );
      assert.match(res.body.results[0].snippet, /<mark>okapi<\/mark>/);
      // words joined by `_` (PostgreSQL parses them with `_` read as a separator: migration 540)
      const n3 = await thread(base, 'Rename helper', 'The snake_case_name helper and ' + '_a'.repeat(20000));
      res = await search('threads', 'snake_case_name', alice.token);
      assert.deepEqual(
        res.body.results.map((r: { number: number }) => r.number),
        [n3],
      );
      assert.match(res.body.results[0].snippet, /snake_case_name|<mark>snake<\/mark>_<mark>case<\/mark>_<mark>name<\/mark>/);
      assert.doesNotMatch(res.body.results[0].snippet, /\uFF3F/);
      res = await search('threads', '"striped input"', alice.token);
      assert.equal(res.body.results.length, 1);
      res = await search('threads', '"input striped"', alice.token);
      assert.equal(res.body.results.length, 0);
      res = await search('threads', `zebra is:pull repo:${alice.username}/tracker`, alice.token);
      assert.equal(res.body.results.length, 0);
      res = await search('threads', `zebra author:${alice.username} is:open`, alice.token);
      assert.equal(res.body.results.length, 2);
      // closing follows in the write's own transaction
      const closed = await t.req('PATCH', `${base}/threads/${n1}`, { token: alice.token, body: { state: 'closed' } });
      assert.equal(closed.status, 200, closed.text);
      assert.equal((await search('threads', 'zebra is:closed', alice.token)).body.results.length, 1);
      // an edit is searchable at once
      await t.req('PATCH', `${base}/threads/${n2}`, { token: alice.token, body: { title: 'Slow giraffe startup' } });
      assert.equal((await search('threads', 'giraffe', alice.token)).body.results.length, 1);
      assert.equal((await search('threads', 'zebra', bob.token)).headers['x-total-count'], '3');
      assert.equal((await search('threads', 'zebra', carol.token)).headers['x-total-count'], '2');
      assert.ok(isErrorBody((await search('threads', 'zebra is:nonsense', alice.token)).body, 'invalid_request'));
    });

    it('a literal with regex and LIKE metacharacters matches itself only, on either way in (PostgreSQL checks it with ~*)', async () => {
      await newRepo(alice, 'meta');
      const url = g.url(`/git/users/${alice.username}/meta.git`, alice.token);
      const lit = 'x.y*(z)[w]\\v%u_t^$|?+{2}/s';
      const files: Record<string, string> = {
        'hit.txt': `before ${lit.toUpperCase()} after\n`,
        // the same characters where each metacharacter would match something else
        'miss.txt': 'xAyyy(z)[w]\\v%uQt^$|?+{2}/s xxy*zz w vv%u_t\n',
        'near.txt': 'x.y*(z)[w]\\v%uQt^$|?+{2}/s\n',
      };
      const dir = await makeWorkTree(g, 'meta', [files]);
      await g.run(['-C', dir, 'push', '-q', url, 'main']);
      await indexed(alice.username, 'meta', await head(dir));
      const saved = { ...CODE_SEARCH_LIMITS };
      try {
        for (const limits of [{}, { sparseCandidates: 0, rareProbe: 0, denseProbe: 1000 }]) {
          Object.assign(CODE_SEARCH_LIMITS, saved, limits);
          const res = await search('code', `${lit} repo:${alice.username}/meta`, alice.token);
          assert.equal(res.status, 200, res.text);
          assert.deepEqual([res.headers['x-total-count'], res.body.results.map((h: Hit) => h.path)], ['1', ['hit.txt']]);
          const cased = await search('code', `${lit} repo:${alice.username}/meta`, alice.token, '&case=sensitive');
          assert.equal(cased.headers['x-total-count'], '0');
        }
      } finally {
        Object.assign(CODE_SEARCH_LIMITS, saved);
      }
    });

    it('a literal in many files stops after its page: the count says "at least" (N+), paging by cursor and by page stays in order', async () => {
      await newRepo(alice, 'dense');
      const url = g.url(`/git/users/${alice.username}/dense.git`, alice.token);
      const files: Record<string, string> = {};
      for (let i = 0; i < 40; i++) files[`d${String(i).padStart(2, '0')}.txt`] = `one\ndensword ${i}\n`;
      for (let i = 0; i < 10; i++) files[`x${i}.txt`] = 'nothing here\n';
      files['z.txt'] = 'zzlonelyword\n';
      const dir = await makeWorkTree(g, 'dense', [files]);
      await g.run(['-C', dir, 'push', '-q', url, 'main']);
      await indexed(alice.username, 'dense', await head(dir));
      const only = (res: { body: { results: Hit[] } }) => res.body.results.map((h) => h.path);
      const all = Object.keys(files).filter((p) => p.startsWith('d'));
      const saved = { ...CODE_SEARCH_LIMITS };
      const walk = async (q: string) => {
        const seen: string[] = [];
        let res = await search('code', `${q} repo:${alice.username}/dense`, alice.token, '&per_page=10');
        const first = String(res.headers['x-total-count']);
        for (;;) {
          assert.equal(res.status, 200, res.text);
          seen.push(...only(res));
          if (!res.body.next) break;
          res = await t.req('GET', res.body.next, { token: alice.token });
        }
        assert.deepEqual(seen, all);
        return first;
      };
      try {
        // within the budget: exact, on either way in
        for (const q of ['densword', '/densword \\d+$/']) assert.equal(await walk(q), '40');
        // past it: the page, and a lower bound (the files in order: neither the SQLite count of
        // the trigram candidates nor the PostgreSQL probe of the trigram index calls them few)
        Object.assign(CODE_SEARCH_LIMITS, { examineBudget: 5, sparseCandidates: 0, rareProbe: 0, window: 4 });
        // SQLite: with each window's trigram candidates from FTS5, without (every file's text
        // checked) and either, as the walk measures: the same pages and the same counts
        const totals = new Map<string, string>();
        for (const windowTrigrams of ['always', 'never', 'auto'] as const) {
          Object.assign(CODE_SEARCH_LIMITS, { windowTrigrams });
          for (const q of ['densword', '/densword \\d+$/', 'densword path:d lang:text']) {
            const total = q.includes('path:')
              ? String((await search('code', `${q} repo:${alice.username}/dense`, alice.token)).headers['x-total-count'])
              : await walk(q);
            assert.equal(totals.get(q) ?? total, total, `${q} (${windowTrigrams})`);
            totals.set(q, total);
            if (q.includes('path:')) continue;
            assert.match(total, /^\d+\+$/);
            assert.ok(Number(total.slice(0, -1)) >= 11 && Number(total.slice(0, -1)) < 40, total);
            // by page (offset) too
            const second = await search('code', `${q} repo:${alice.username}/dense`, alice.token, '&per_page=10&page=2');
            assert.deepEqual(only(second), all.slice(10, 20));
          }
        }
        // a qualifier narrows the files before their text is read
        const narrowed = await search('code', `densword path:d1 lang:text repo:${alice.username}/dense`, alice.token);
        assert.deepEqual(only(narrowed), all.slice(10, 20));
        // PostgreSQL: no match in the first files in order, so the trigram index finds the rare one
        Object.assign(CODE_SEARCH_LIMITS, { denseProbe: 2 });
        const rare = await search('code', `zzlonelyword repo:${alice.username}/dense`, alice.token);
        assert.deepEqual(only(rare), ['z.txt']);
        assert.equal(rare.headers['x-total-count'], '1');
        // PostgreSQL: the probe of the trigram index finds a literal in few files first and takes
        // the page from them, with the same results and counts as the files in order (40 files:
        // just past the probe's limit, then just within it)
        for (const rareProbe of [39, 40]) {
          Object.assign(CODE_SEARCH_LIMITS, saved, { rareProbe });
          for (const q of ['densword', '/densword \\d+$/']) assert.equal(await walk(q), '40');
        }
        const second = await search('code', `densword repo:${alice.username}/dense`, alice.token, '&per_page=10&page=2');
        assert.deepEqual(only(second), all.slice(10, 20));
        const none = await search('code', `zzabsentword repo:${alice.username}/dense`, alice.token);
        assert.deepEqual([none.status, none.headers['x-total-count'], only(none)], [200, '0', []]);
        const cased = await search('code', `ZZLONELYWORD repo:${alice.username}/dense`, alice.token, '&case=sensitive');
        assert.equal(cased.headers['x-total-count'], '0');
        assert.deepEqual(only(await search('code', `ZZLONELYWORD repo:${alice.username}/dense`, alice.token)), ['z.txt']);
      } finally {
        Object.assign(CODE_SEARCH_LIMITS, saved);
      }
    });

    it('threads: a query matching more documents than are ranked ranks the newest and the title hits, and counts "at least"', async () => {
      await newRepo(alice, 'many');
      const base = `/api/v1/users/${alice.username}/repos/many`;
      const thread = async (title: string, body: string) => {
        const res = await t.req('POST', `${base}/threads`, { token: alice.token, body: { title, body } });
        assert.equal(res.status, 201, res.text);
        return res.body.number as number;
      };
      const titled = await thread('Quokka crash', 'It fails.');
      const bodies: number[] = [];
      for (let i = 0; i < 6; i++) bodies.push(await thread(`Report ${i}`, `a quokka sighting number ${i}`));
      const numbers = (res: { body: { results: { number: number }[] } }) => res.body.results.map((r) => r.number);
      const q = `quokka repo:${alice.username}/many`;
      let res = await search('threads', q, alice.token);
      assert.equal(res.headers['x-total-count'], '7');
      assert.equal(numbers(res)[0], titled);
      const saved = { ...THREAD_SEARCH_LIMITS };
      try {
        THREAD_SEARCH_LIMITS.rankedDocs = 3;
        // PostgreSQL: the newest 2 documents hold too few, so the GIN index and then the
        // backward read find them
        THREAD_SEARCH_LIMITS.recentDocs = 2;
        res = await search('threads', q, alice.token);
        assert.equal(res.status, 200, res.text);
        // the 3 newest body hits and the (old) title hit, the title first
        assert.equal(res.headers['x-total-count'], '4+');
        assert.equal(numbers(res)[0], titled);
        assert.deepEqual(new Set(numbers(res).slice(1)), new Set(bodies.slice(3)));
        const p2 = await search('threads', q, alice.token, '&per_page=3&page=2');
        assert.equal(numbers(p2).length, 1);
        assert.deepEqual((await search('threads', q, alice.token, '&per_page=3&page=3')).body.results, []);
        // access and qualifiers apply before the limit: another repo's newer hits do not crowd these out
        await newRepo(bob, 'crowd');
        for (let i = 0; i < 4; i++) {
          const r = await t.req('POST', `/api/v1/users/${bob.username}/repos/crowd/threads`, {
            token: bob.token,
            body: { title: `Crowd ${i}`, body: 'quokka again' },
          });
          assert.equal(r.status, 201, r.text);
        }
        assert.equal((await search('threads', q, alice.token)).headers['x-total-count'], '4+');
        // the titles' own index (migration 710) is filled from the documents that exist
        if (dialect === 'postgres') await sql`drop index search_docs_title_tsv`.execute(t.deps.db);
        else
          for (const drop of ['trigger search_docs_title_ai', 'trigger search_docs_title_ad', 'trigger search_docs_title_au'])
            await sql.raw(`drop ${drop}`).execute(t.deps.db);
        if (dialect === 'sqlite') await sql`drop table search_titles_fts`.execute(t.deps.db);
        await upTitles(t.deps.db as unknown as Kysely<unknown>, { dialect });
        res = await search('threads', q, alice.token);
        assert.equal(res.headers['x-total-count'], '4+');
        assert.equal(numbers(res)[0], titled);
        // and follows a title's edit in the write's own transaction
        const edit = async (title: string) => {
          const r = await t.req('PATCH', `${base}/threads/${titled}`, { token: alice.token, body: { title } });
          assert.equal(r.status, 200, r.text);
        };
        await edit('Koala crash');
        res = await search('threads', q, alice.token);
        assert.equal(res.headers['x-total-count'], '3+');
        assert.ok(!numbers(res).includes(titled));
        await edit('Koala crash, quokka too');
        assert.equal(numbers(await search('threads', q, alice.token))[0], titled);
        assert.deepEqual(numbers(await search('threads', `koala repo:${alice.username}/many`, alice.token)), [titled]);
      } finally {
        Object.assign(THREAD_SEARCH_LIMITS, saved);
      }
    });

    it('threads: items whose title holds the words come first; when they fill the page the others are only counted', async () => {
      await newRepo(alice, 'tiers');
      const thread = async (title: string, body: string) => {
        const res = await t.req('POST', `/api/v1/users/${alice.username}/repos/tiers/threads`, {
          token: alice.token,
          body: { title, body },
        });
        assert.equal(res.status, 201, res.text);
        return res.body.number as number;
      };
      // long bodies: by bm25 over the whole document the short body full of the word would rank first
      const first = await thread('Wombat one', 'filler '.repeat(300));
      const second = await thread('Wombat two', 'filler '.repeat(300));
      const body = await thread('Other', 'wombat '.repeat(12));
      const q = `wombat repo:${alice.username}/tiers`;
      const numbers = (res: { body: { results: { number: number }[] } }) => res.body.results.map((r) => r.number);
      const all = await search('threads', q, alice.token);
      assert.equal(all.headers['x-total-count'], '3');
      assert.deepEqual(new Set(numbers(all).slice(0, 2)), new Set([first, second]));
      assert.equal(numbers(all)[2], body);
      // a page the title matches fill: the same items, the same count
      for (const [page, want] of numbers(all).entries()) {
        const res = await search('threads', q, alice.token, `&per_page=1&page=${page + 1}`);
        assert.deepEqual([res.headers['x-total-count'], numbers(res)], ['3', [want]]);
      }
    });

    it('pulls and their reviews by their text, with snippets; a removed review no longer matches', async () => {
      await newRepo(alice, 'reviewed');
      const base = `/api/v1/users/${alice.username}/repos/reviewed`;
      const pull = await openPull(t, base, { token: alice.token, title: 'Teach the lemur parser' });
      const other = await openPull(t, base, { token: alice.token, title: 'Unrelated change' });
      let res = await search('threads', 'lemur', carol.token);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.body.results.map((r: { kind: string; number: number }) => [r.kind, r.number]),
        [['pull', pull.number]],
      );
      assert.match(res.body.results[0].title ?? res.body.results[0].snippet, /lemur/);
      assert.equal((await search('threads', 'lemur is:pull', carol.token)).body.results.length, 1);
      assert.equal((await search('threads', 'lemur is:open', carol.token)).body.results.length, 1);
      // a review's body counts for its pull
      const review = await t.req('POST', `${base}/pulls/${other.number}/reviews`, {
        token: bob.token,
        body: { status: 'commented', body: 'The narwhal cache needs a bound.' },
      });
      assert.equal(review.status, 201, review.text);
      res = await search('threads', 'narwhal', carol.token);
      assert.deepEqual(
        res.body.results.map((r: { kind: string; number: number }) => [r.kind, r.number]),
        [['pull', other.number]],
      );
      assert.match(res.body.results[0].snippet, /<mark>narwhal<\/mark>/);
      // removing the review removes its words, in the same transaction
      const removed = await t.req('DELETE', `${base}/pulls/${other.number}/reviews/${review.body.uuid}`, { token: bob.token });
      assert.equal(removed.status, 204, removed.text);
      assert.equal((await search('threads', 'narwhal', carol.token)).headers['x-total-count'], '0');
    });

    it('repos by name and description', async () => {
      const names = (res: { body: { results: { full_name: string }[] } }) => res.body.results.map((r) => r.full_name);
      const described = await t.req('POST', `/api/v1/users/${bob.username}/repos`, {
        token: bob.token,
        body: { name: 'zoo', slug: 'zoo', visibility: 'public', description: 'Feeding times for the aardvark enclosure' },
      });
      assert.equal(described.status, 201, described.text);
      const byDescription = await search('repos', 'aardvark enclosure', carol.token);
      assert.equal(byDescription.status, 200, byDescription.text);
      assert.deepEqual(names(byDescription), [`${bob.username}/zoo`]);
      assert.equal((await search('repos', 'aardvark giraffe', carol.token)).headers['x-total-count'], '0');
      const res = await search('repos', 'tracker', carol.token);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(names(res), [`${alice.username}/tracker`]);
      assert.equal((await search('repos', 'hidden', carol.token)).headers['x-total-count'], '0');
      assert.equal((await search('repos', 'hidden', bob.token)).headers['x-total-count'], '1');
    });
  });
}
