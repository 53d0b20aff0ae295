/**
 * Reading code as people expect (docs/web.md "Reading code"), through the pages on both
 * databases: the blame view (binary and over-large files refused with a page), line links and the
 * permalink, the branch and tag switcher with many refs (filtered and paged), a ref's archive
 * through the page's address, a fork naming its source (not a private one to an outsider), a
 * pushed tag shown as a tag, and `/repos/{uuid}/…` leading to the repo's page.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { type GitClient, commitFiles, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

type Person = { token: string; uuid: string; username: string };

const APP = ['export const a = 1;', 'export const b = 2;', 'export const c = 3;', 'export const d = 4;', ''].join('\n');

for (const dialect of DIALECTS) {
  describe(`reading code in the pages (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person;
    let ann: Browser;
    let bea: Browser;
    let repoUuid = '';
    const sha = { first: '', second: '' };
    const page = '/teams/core/proj';
    const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);
    const get = (b: Browser | null, url: string) => pageReq(t, 'GET', url, b ? { cookie: b.cookie } : {});

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      await t.user('bea');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Core', slug: 'core' } }));
      const made = await t.req('POST', '/api/v1/teams/core/repos', {
        token: alice.token,
        body: { name: 'proj', slug: 'proj', visibility: 'private' },
      });
      ok(made);
      repoUuid = made.body.uuid;
      const work = await makeWorkTree(g, 'work', [
        { 'README.md': '# Proj\n', 'src/app.ts': APP, 'bin.dat': 'GIF\u0000\u0001binary', 'big.txt': 'x'.repeat(600 * 1024) },
      ]);
      sha.first = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      await commitFiles(g, work, [{ 'src/app.ts': APP.replace('c = 3', 'c = 30') }], 'Change c');
      sha.second = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
      // many refs: 30 branches and 25 tags beside main
      for (let i = 0; i < 30; i++) await g.run(['-C', work, 'branch', `b-${String(i).padStart(2, '0')}`]);
      for (let i = 0; i < 25; i++) await g.run(['-C', work, 'tag', `v0.${String(i).padStart(2, '0')}`]);
      const url = g.url('/git/teams/core/proj.git', alice.token);
      await g.run(['-C', work, 'push', '-q', url, 'refs/heads/*:refs/heads/*', '--tags']);
      // the newest event: one tag pushed
      await g.run(['-C', work, 'tag', 'v1.0']);
      await g.run(['-C', work, 'push', '-q', url, 'v1.0']);
      ann = await signIn(t, 'alice');
      bea = await signIn(t, 'bea');
    });
    after(async () => {
      g?.cleanup();
      await t?.close();
    });

    it('blames a file: its lines grouped by commit, each commit linked, every line an anchor', async () => {
      const res = await get(ann, `${page}/blame/main/src/app.ts`);
      assert.equal(res.status, 200, res.text);
      assert.match(res.text, new RegExp(`href="${page}/commit/${sha.first}"`));
      assert.match(res.text, new RegExp(`href="${page}/commit/${sha.second}"[^>]*>Change c 1</a>`));
      for (let n = 1; n <= 4; n++) assert.match(res.text, new RegExp(`<a id="L${n}" href="#L${n}" data-ln="${n}"`));
      assert.doesNotMatch(res.text, /id="L5"/);
      // three groups: lines 1-2 (first), 3 (second), 4 (first)
      assert.equal(res.text.match(/<td class="blame-commit">/g)?.length, 3);
      assert.match(res.text, /export const c = 30;/);
      assert.match(res.text, /4 lines, last changed by 2 commits\./);
      assert.match(res.text, new RegExp(`href="${page}/blame/${sha.second}/src/app.ts"[^>]*id="permalink"`));
      // by tag and by sha too
      assert.equal((await get(ann, `${page}/blame/v1.0/src/app.ts`)).status, 200);
      assert.equal((await get(ann, `${page}/blame/${sha.first}/src/app.ts`)).status, 200);
    });

    it('refuses a binary or over-large file with a page that says why; a directory leads to its tree', async () => {
      const binary = await get(ann, `${page}/blame/main/bin.dat`);
      assert.equal(binary.status, 422);
      assert.match(binary.text, /This is a binary file \(\d+ bytes\): it has no lines to blame\./);
      assert.match(binary.text, /<main/);
      const big = await get(ann, `${page}/blame/main/big.txt`);
      assert.equal(big.status, 422);
      assert.match(big.text, /blame is shown for files up to 512 KiB/);
      assert.match(big.text, new RegExp(`href="${page}/raw/main/big.txt"`));
      const dir = await get(ann, `${page}/blame/main/src`);
      assert.equal(dir.status, 303);
      assert.equal(dir.headers.location, `${page}/tree/main/src`);
      assert.equal((await get(ann, `${page}/blame/main/nope.ts`)).status, 404);
      assert.equal((await get(ann, `${page}/blame/nope/src/app.ts`)).status, 404);
      // a reader who may not read the repo: 404, as its other pages
      assert.equal((await get(bea, `${page}/blame/main/src/app.ts`)).status, 404);
      assert.equal((await get(null, `${page}/blame/main/src/app.ts`)).status, 404);
    });

    it('the file view: every line number a link, Blame, and a permalink pinned to the commit', async () => {
      const res = await get(ann, `${page}/blob/main/src/app.ts`);
      assert.equal(res.status, 200, res.text);
      assert.match(res.text, /<a id="L3" href="#L3" data-ln="3" tabindex="-1">3<\/a>/);
      assert.match(res.text, new RegExp(`href="${page}/blame/main/src/app.ts">Blame</a>`));
      assert.match(res.text, new RegExp(`href="${page}/blob/${sha.second}/src/app.ts" id="permalink"`));
      // the permalink's page is the same file
      assert.equal((await get(ann, `${page}/blob/${sha.second}/src/app.ts`)).status, 200);
    });

    it('a switcher of branches and tags on the tree, file, commits and blame pages, keeping the path', async () => {
      for (const [url, to, path] of [
        [`${page}/tree/main/src`, 'tree', '/src'],
        [`${page}/blob/main/src/app.ts`, 'blob', '/src/app.ts'],
        [`${page}/blame/main/src/app.ts`, 'blame', '/src/app.ts'],
        [page, 'tree', ''],
      ] as const) {
        const res = await get(ann, url);
        assert.equal(res.status, 200, url);
        assert.match(res.text, /<details class="switcher" id="ref-switcher">/, url);
        assert.match(res.text, /<summary>Branch: <strong>main<\/strong><\/summary>/, url);
        // 20 branches and 20 tags in the menu, then the page of every ref
        assert.equal(res.text.match(/<li data-ref="/g)?.length, 40, url);
        assert.match(res.text, new RegExp(`href="${page}/${to}/b-05${path}"`), url);
        assert.match(res.text, new RegExp(`href="${page}/${to}/v0.03${path}"`), url);
        assert.match(res.text, />All branches and tags</, url);
        // a pull from a branch (not from the default one)
        assert.match(res.text, new RegExp(`href="${page}/pulls/new\\?source=b-05">New pull</a>`), url);
        assert.doesNotMatch(res.text, /pulls\/new\?source=main"/, url);
        assert.match(res.text, new RegExp(`href="${page}/archive/main.zip"`), url);
      }
      const commits = await get(ann, `${page}/commits/v1.0?path=src`);
      assert.equal(commits.status, 200);
      assert.match(commits.text, /<summary>Tag: <strong>v1.0<\/strong><\/summary>/);
      assert.match(commits.text, new RegExp(`href="${page}/commits/b-05\\?path=src"`));
      const bySha = await get(ann, `${page}/tree/${sha.first}`);
      assert.match(bySha.text, new RegExp(`<summary>Commit: <strong>${sha.first.slice(0, 10)}</strong>`));
    });

    it('every branch and tag on a page of its own: filtered, paged, keeping where it leads', async () => {
      const first = await get(ann, `${page}/refs?to=blob&path=src/app.ts`);
      assert.equal(first.status, 200, first.text);
      // main, 30 branches, 26 tags
      assert.match(first.text, /57 refs, opening <code>src\/app.ts<\/code>\./);
      assert.equal(first.text.match(/<span class="badge">(branch|tag)<\/span>/g)?.length, 50);
      assert.match(first.text, new RegExp(`href="${page}/blob/b-00/src/app.ts"`));
      assert.match(first.text, /rel="next"/);
      const second = await get(ann, `${page}/refs?to=blob&path=src%2Fapp.ts&page=2`);
      assert.equal(second.text.match(/<span class="badge">(branch|tag)<\/span>/g)?.length, 7);
      assert.match(second.text, new RegExp(`href="${page}/blob/v1.0/src/app.ts"`));
      const filtered = await get(ann, `${page}/refs?q=V0.1&to=tree`);
      assert.match(filtered.text, /10 refs matching <code>V0.1<\/code>\./);
      assert.doesNotMatch(filtered.text, /b-05/);
      const none = await get(ann, `${page}/refs?q=zzz`);
      assert.match(none.text, /No branch or tag matches\./);
      assert.equal((await get(ann, `${page}/refs?to=raw`)).status, 400);
      assert.equal((await get(bea, `${page}/refs`)).status, 404);
    });

    it('downloads a ref’s archive through the page’s address, with read access', async () => {
      const zip = await t.app.inject({ method: 'GET', url: `${page}/archive/main.zip`, headers: { cookie: ann.cookie } });
      assert.equal(zip.statusCode, 200, zip.body);
      assert.equal(zip.headers['content-type'], 'application/zip');
      assert.equal(zip.rawPayload.subarray(0, 2).toString('latin1'), 'PK');
      assert.match(String(zip.headers['content-disposition']), new RegExp(`proj-${sha.second.slice(0, 7)}\\.zip`));
      const tgz = await t.app.inject({ method: 'GET', url: `${page}/archive/v0.01.tar.gz`, headers: { cookie: ann.cookie } });
      assert.equal(tgz.statusCode, 200);
      assert.ok(gunzipSync(tgz.rawPayload).includes(Buffer.from('export const c = 30;')));
      assert.equal((await get(ann, `${page}/archive/main.rar`)).status, 404);
      assert.equal((await get(bea, `${page}/archive/main.zip`)).status, 404);
      assert.equal((await get(null, `${page}/archive/main.zip`)).status, 404);
      // the repo page offers it for the default branch
      assert.match((await get(ann, page)).text, new RegExp(`href="${page}/archive/main.tar.gz" download>tar.gz</a>`));
    });

    it('a pushed tag reads as a tag, linked; /repos/{uuid}/… leads to the repo’s page for its readers only', async () => {
      const home = await get(ann, page);
      assert.match(
        home.text,
        new RegExp(
          `<span class="actor">alice</span> <span class="what">pushed tag <a href="/repos/${repoUuid}/tree/v1.0">v1.0</a> to <a href="/repos/${repoUuid}">core/proj</a></span>`,
        ),
      );
      const feed = home.text.slice(home.text.indexOf('id="repo-feed"'));
      assert.match(
        feed,
        new RegExp(`(created branch|pushed tag) <a href="/repos/${repoUuid}/(commits/b|tree/v0\\.)`),
        feed.slice(0, 3000),
      );
      assert.doesNotMatch(home.text, /<span class="kind">branch-pushed<\/span>/);
      const dash = await get(ann, '/');
      assert.match(dash.text, /pushed tag <a href="\/repos\/[0-9a-f-]+\/tree\/v1.0">v1.0<\/a>/);
      const go = await get(ann, `/repos/${repoUuid}/tree/v1.0`);
      assert.equal(go.status, 303);
      assert.equal(go.headers.location, `${page}/tree/v1.0`);
      assert.equal((await get(ann, `/repos/${repoUuid}`)).headers.location, page);
      assert.equal((await get(bea, `/repos/${repoUuid}/tree/v1.0`)).status, 404);
      assert.equal((await get(ann, '/repos/00000000-0000-4000-8000-000000000000')).status, 404);
    });

    it('a fork names its source, with a link; not to a reader who may not read the source', async () => {
      const fork = await t.req('POST', '/api/v1/teams/core/repos/proj/forks', { token: alice.token });
      ok(fork);
      ok(await t.req('PUT', '/api/v1/users/alice/repos/proj', { token: alice.token, body: { visibility: 'public' } }), 200);
      const mine = await get(ann, '/users/alice/proj');
      assert.equal(mine.status, 200, mine.text);
      assert.match(mine.text, new RegExp(`<p class="muted" id="fork-source">forked from <a href="${page}">core/proj</a></p>`));
      // a public fork of a private repo: the fork is readable, its source not named
      for (const b of [bea, null]) {
        const other = await get(b, '/users/alice/proj');
        assert.equal(other.status, 200);
        assert.doesNotMatch(other.text, /forked from|core\/proj/);
      }
      // a repo that is not a fork says nothing
      assert.doesNotMatch((await get(ann, page)).text, /id="fork-source"/);
    });
  });
}
