import assert from 'node:assert/strict';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { seedTeam } from './fixtures.ts';
import { buildCodeRepo, type CodeRepo } from './code-fixtures.ts';
import { type GitClient, gitClient } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

/** Reading code through the API (README "Reading code"): commits, compare, contents, tags, one branch. */
for (const dialect of DIALECTS) {
  describe(`reading code (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    let api: string;
    let teamApi: string;
    let repo: CodeRepo;

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
      const created = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: 'code', slug: 'code', visibility: 'private' },
      });
      assert.equal(created.status, 201, created.text);
      api = `/api/v1/users/${alice.username}/repos/code`;
      repo = await buildCodeRepo(g, 'work', g.url(`/git/users/${alice.username}/code.git`, alice.token));
      const team = await seedTeam(t, `team${dialect}`, [{ uuid: alice.uuid, role: 'owner' }]);
      const teamRepo = await t.req('POST', `/api/v1/teams/${team.slug}/repos`, {
        token: alice.token,
        body: { name: 'tcode', slug: 'tcode', visibility: 'private' },
      });
      assert.equal(teamRepo.status, 201, teamRepo.text);
      teamApi = `/api/v1/teams/${team.slug}/repos/tcode`;
      const pushed = await g.run([
        '-C',
        repo.work,
        'push',
        '-q',
        g.url(`/git/teams/${team.slug}/tcode.git`, alice.token),
        'main',
        '--tags',
      ]);
      assert.equal(pushed.code, 0);
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    const get = (path: string, token = alice.token) => t.req('GET', path, { token });

    it('commits: newest first, paged, from a ref, by path, within since/until', async () => {
      const { c } = repo;
      const page = await get(`${api}/commits`);
      assert.equal(page.status, 200, page.text);
      assert.deepEqual(
        page.body.results.map((x: { sha: string }) => x.sha),
        [c.c3, c.c2, c.c1],
      );
      const second = page.body.results[1];
      assert.deepEqual(second, {
        sha: c.c2,
        message: 'second\n\nwith a body',
        author: { name: 'Tester', email: 'tester@example.com', date: '2024-02-01T10:00:00.000Z' },
        committer: { name: 'Tester', email: 'tester@example.com', date: '2024-02-01T10:00:00.000Z' },
        parents: [c.c1],
      });
      const paged = await get(`${api}/commits?per_page=2&page=2`);
      assert.deepEqual(
        paged.body.results.map((x: { sha: string }) => x.sha),
        [c.c1],
      );
      assert.ok(paged.body.previous);
      const first = await get(`${api}/commits?per_page=2`);
      assert.ok(first.body.next?.includes('page=2'));
      const feature = await get(`${api}/commits?ref=feature/x&per_page=1`);
      assert.equal(feature.body.results[0].sha, c.c4);
      const byPath = await get(`${api}/commits?path=src/a.ts`);
      assert.deepEqual(
        byPath.body.results.map((x: { sha: string }) => x.sha),
        [c.c2, c.c1],
      );
      const window = await get(`${api}/commits?since=2024-02-01T10:00:00Z&until=2024-03-01T10:00:00Z`);
      assert.deepEqual(
        window.body.results.map((x: { sha: string }) => x.sha),
        [c.c3, c.c2],
      );
      const bySha = await get(`${api}/commits?ref=${c.c2}`);
      assert.equal(bySha.headers['cache-control'], 'private, max-age=31536000, immutable');
      assert.equal((await get(`${api}/commits?ref=nope`)).status, 404);
      assert.equal((await get(`${api}/commits?ref=-x`)).status, 400);
      assert.equal((await get(`${api}/commits?path=a/../b`)).status, 400);
      assert.equal((await get(`${api}/commits?since=yesterday`)).status, 400);
      // the team form answers the same history
      const team = await get(`${teamApi}/commits`);
      assert.equal(team.status, 200);
      assert.equal(team.body.results[0].sha, c.c3);
    });

    it('an empty repo has no commits; its contents are 404', async () => {
      const created = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: 'empty', slug: 'empty' },
      });
      assert.equal(created.status, 201);
      const empty = `/api/v1/users/${alice.username}/repos/empty`;
      const page = await get(`${empty}/commits`);
      assert.equal(page.status, 200);
      assert.deepEqual(page.body.results, []);
      assert.equal((await get(`${empty}/contents`)).status, 404);
      assert.equal((await get(`${empty}/tags`)).body.results.length, 0);
    });

    it('one commit: files, stats and patches against its first parent; a root commit against the empty tree', async () => {
      const { c } = repo;
      const res = await get(`${api}/commits/${c.c2}`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.headers['cache-control'], 'private, max-age=31536000, immutable');
      assert.equal(res.body.sha, c.c2);
      assert.equal(res.body.files_truncated, false);
      const byPath = Object.fromEntries(res.body.files.map((f: { path: string }) => [f.path, f]));
      assert.deepEqual(byPath['src/a.ts'], {
        path: 'src/a.ts',
        previous_path: null,
        status: 'modified',
        additions: 2,
        deletions: 1,
        binary: false,
        patch: '@@ -1 +1,2 @@\n-export const a = 1;\n+export const a = 2;\n+export const b = 3;',
      });
      assert.equal(byPath['img.png'].binary, true);
      assert.equal(byPath['img.png'].patch, null);
      assert.equal(byPath['big.txt'].patch, null);
      assert.equal(byPath['big.txt'].patch_truncated, true);
      assert.equal(byPath['big.txt'].additions, repo.bigText.split('\n').length - 1);
      const paths = res.body.files.map((f: { path: string }) => f.path);
      assert.deepEqual(
        paths,
        [...paths].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))),
      );
      const adds = res.body.files.reduce((n: number, f: { additions: number }) => n + f.additions, 0);
      assert.deepEqual(res.body.stats, { additions: adds, deletions: 1, total: adds + 1 });

      const rename = await get(`${api}/commits/main`);
      assert.equal(rename.body.sha, c.c3);
      assert.equal(rename.headers['cache-control'], 'private, no-cache');
      assert.deepEqual(
        rename.body.files.map((f: { path: string; previous_path: string; status: string }) => [
          f.path,
          f.previous_path,
          f.status,
        ]),
        [['docs/manual.md', 'docs/guide.md', 'renamed']],
      );
      const root = await get(`${api}/commits/v0`);
      assert.equal(root.body.sha, c.c1);
      assert.deepEqual(root.body.parents, []);
      assert.deepEqual(
        root.body.files.map((f: { path: string; status: string }) => [f.path, f.status]),
        [
          ['README.md', 'added'],
          ['docs/guide.md', 'added'],
          ['src/a.ts', 'added'],
        ],
      );
      // abbreviated shas, refs with a slash, the team form
      assert.equal((await get(`${api}/commits/${c.c2.slice(0, 7)}`)).body.sha, c.c2);
      assert.equal((await get(`${api}/commits/feature/x`)).body.sha, c.c4);
      assert.equal((await get(`${api}/commits/feature%2Fx`)).body.sha, c.c4);
      assert.equal((await get(`${teamApi}/commits/${c.c1}`)).body.sha, c.c1);
      assert.equal((await get(`${api}/commits/${c.c2.slice(0, 6)}`)).status, 404);
      assert.equal((await get(`${api}/commits/nope`)).status, 404);
      for (const bad of ['--output=x', '-p', 'a..b', 'x%00y', 'x%0Ay', 'HEAD~1', 'main:README.md']) {
        const r = await get(`${api}/commits/${bad}`);
        assert.equal(r.status, 400, `${bad}: ${r.text}`);
        assert.equal(r.body.error, 'invalid_request');
      }
    });

    it('compare: status, ahead/behind, merge base, commits oldest first, files from the merge base', async () => {
      const { c } = repo;
      const ahead = await get(`${api}/compare/main...feature/x`);
      assert.equal(ahead.status, 200, ahead.text);
      assert.equal(ahead.body.status, 'ahead');
      assert.equal(ahead.body.ahead_by, 1);
      assert.equal(ahead.body.behind_by, 0);
      assert.equal(ahead.body.merge_base_sha, c.c3);
      assert.equal(ahead.body.base_sha, c.c3);
      assert.equal(ahead.body.head_sha, c.c4);
      assert.deepEqual(
        ahead.body.commits.map((x: { sha: string }) => x.sha),
        [c.c4],
      );
      assert.equal(ahead.body.commits_truncated, false);
      assert.deepEqual(
        ahead.body.files.map((f: { path: string; patch: string }) => [f.path, f.patch]),
        [['feature.txt', '@@ -0,0 +1 @@\n+feature']],
      );
      const behind = await get(`${api}/compare/feature/x...main`);
      assert.equal(behind.body.status, 'behind');
      assert.equal(behind.body.behind_by, 1);
      assert.deepEqual(behind.body.files, []);
      const diverged = await get(`${api}/compare/main...side`);
      assert.equal(diverged.body.status, 'diverged');
      assert.equal(diverged.body.ahead_by, 1);
      assert.equal(diverged.body.behind_by, 2);
      assert.equal(diverged.body.merge_base_sha, c.c1);
      assert.deepEqual(
        diverged.body.files.map((f: { path: string }) => f.path),
        ['side.txt'],
      );
      const same = await get(`${api}/compare/${c.c3}...main`);
      assert.equal(same.body.status, 'identical');
      assert.equal(same.headers['cache-control'], 'private, no-cache');
      const shas = await get(`${api}/compare/${c.c1}...${c.c2}`);
      assert.equal(shas.headers['cache-control'], 'private, max-age=31536000, immutable');
      assert.equal((await get(`${teamApi}/compare/v0...main`)).body.ahead_by, 2);
      assert.equal((await get(`${api}/compare/main..side`)).status, 400);
      assert.equal((await get(`${api}/compare/main...--upload-pack=x`)).status, 400);
      assert.equal((await get(`${api}/compare/main...nope`)).status, 404);
    });

    it('contents: a file, a directory in byte order, a symlink, a submodule, the root, a large file', async () => {
      const { c } = repo;
      const file = await get(`${api}/contents/src/a.ts`);
      assert.equal(file.status, 200, file.text);
      assert.equal(file.body.type, 'file');
      assert.equal(file.body.name, 'a.ts');
      assert.equal(file.body.path, 'src/a.ts');
      assert.equal(file.body.encoding, 'base64');
      assert.equal(Buffer.from(file.body.content, 'base64').toString(), 'export const a = 2;\nexport const b = 3;\n');
      assert.equal(file.body.size, 40);
      assert.equal(file.body.truncated, false);
      assert.match(String(file.headers.etag), /^"[A-Za-z0-9_-]{27}"$/);
      const fileAgain = await t.req('GET', `${api}/contents/src/a.ts`, {
        token: alice.token,
        headers: { 'if-none-match': String(file.headers.etag) },
      });
      assert.equal(fileAgain.status, 304);
      const old = await get(`${api}/contents/src/a.ts?ref=v0`);
      assert.equal(Buffer.from(old.body.content, 'base64').toString(), 'export const a = 1;\n');
      assert.equal(
        (await get(`${api}/contents/src/a.ts?ref=${c.c1}`)).headers['cache-control'],
        'private, max-age=31536000, immutable',
      );

      const root = await get(`${api}/contents`);
      assert.equal(root.status, 200);
      assert.equal(root.body.type, 'dir');
      assert.equal(root.body.name, '');
      assert.equal(root.body.path, '');
      const names = root.body.entries.map((e: { name: string }) => e.name);
      assert.deepEqual(names, [
        'README.md',
        'a..b',
        'big.txt',
        'dir with space',
        'docs',
        'img.png',
        'link',
        'src',
        'sub',
        'wide',
      ]);
      const byName = Object.fromEntries(root.body.entries.map((e: { name: string }) => [e.name, e]));
      assert.deepEqual(
        { ...byName.link, sha: undefined },
        { type: 'symlink', name: 'link', path: 'link', sha: undefined, size: null, mode: '120000' },
      );
      assert.equal(byName.sub.type, 'submodule');
      assert.equal(byName.sub.sha, c.c1);
      assert.equal(byName.docs.type, 'dir');
      assert.equal(byName.docs.size, null);
      assert.equal(byName['README.md'].size, 8);
      assert.equal(byName['README.md'].mode, '100644');

      const wide = await get(`${api}/contents/wide/`);
      assert.equal(wide.body.entries.length, 40);
      assert.equal(wide.body.entries[0].path, 'wide/f00.txt');
      // a directory's body is serialized once and sent with a strong ETag; If-None-Match → 304
      const etag = String(wide.headers.etag);
      assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/);
      assert.match(String(wide.headers['content-type']), /^application\/json/);
      assert.equal(wide.headers['cache-control'], 'private, no-cache');
      const again = await get(`${api}/contents/wide`);
      assert.equal(again.headers.etag, etag);
      assert.equal(again.text, wide.text);
      const unchanged = await t.req('GET', `${api}/contents/wide`, { token: alice.token, headers: { 'if-none-match': etag } });
      assert.equal(unchanged.status, 304);
      assert.equal(unchanged.headers.etag, etag);
      assert.equal(unchanged.text, '');
      // compressed once per encoding, each with its own tag
      for (const [accept, encoding, unzip] of [
        ['gzip, deflate, br', 'br', brotliDecompressSync],
        ['gzip;q=1, br;q=0.5', 'gzip', gunzipSync],
      ] as const) {
        for (let i = 0; i < 2; i++) {
          const res = await t.app.inject({
            method: 'GET',
            url: `${api}/contents/wide`,
            headers: { authorization: `Bearer ${alice.token}`, 'accept-encoding': accept },
          });
          assert.equal(res.headers['content-encoding'], encoding);
          assert.equal(res.headers.etag, `${etag.slice(0, -1)}-${encoding}"`);
          assert.match(String(res.headers.vary), /Accept-Encoding/);
          assert.equal(unzip(res.rawPayload).toString(), wide.text);
        }
      }
      // the same tree by sha (immutable) and through the team's repo: the same body; outsiders 404
      const bySha = await get(`${api}/contents/wide?ref=${c.c3}`);
      assert.equal(bySha.headers['cache-control'], 'private, max-age=31536000, immutable');
      assert.equal(bySha.headers.etag, etag);
      assert.equal((await get(`${teamApi}/contents/wide`)).headers.etag, etag);
      assert.notEqual(root.headers.etag, etag);
      assert.equal((await get(`${api}/contents/nope`, bob.token)).status, 404);
      assert.equal((await get(`${api}/contents/wide`, bob.token)).status, 404);
      const spaced = await get(`${api}/contents/dir%20with%20space/x.txt`);
      assert.equal(spaced.status, 200);
      assert.equal(Buffer.from(spaced.body.content, 'base64').toString(), 'spaced\n');
      assert.equal((await get(`${api}/contents/a..b`)).status, 200);
      const link = await get(`${api}/contents/link`);
      assert.deepEqual({ type: link.body.type, target: link.body.target }, { type: 'symlink', target: 'README.md' });
      const sub = await get(`${api}/contents/sub`);
      assert.deepEqual({ type: sub.body.type, sha: sub.body.sha }, { type: 'submodule', sha: c.c1 });
      const big = await get(`${api}/contents/big.txt`);
      assert.equal(big.body.content, null);
      assert.equal(big.body.truncated, true);
      assert.equal(big.body.size, Buffer.byteLength(repo.bigText));
      assert.equal((await get(`${teamApi}/contents/README.md`)).status, 200);

      assert.equal((await get(`${api}/contents/nope.txt`)).status, 404);
      assert.equal((await get(`${api}/contents/README.md/x`)).status, 404);
      assert.equal((await get(`${api}/contents/README.md?ref=nope`)).status, 404);
      for (const bad of ['src%2F..%2FREADME.md', '..%2FREADME.md', '.%2FREADME.md', 'a%00b', 'src//a.ts', '-rf']) {
        assert.equal((await get(`${api}/contents/${bad}`)).status, 400, bad);
      }
      assert.equal((await get(`${api}/contents?ref=--output=/tmp/x`)).status, 400);
    });

    it('tags: sorted by name, annotated with message and tagger, lightweight with nulls', async () => {
      const { c } = repo;
      const res = await get(`${api}/tags`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.body.results.map((x: { name: string; commit_sha: string; message: string | null }) => [
          x.name,
          x.commit_sha,
          x.message,
        ]),
        [
          ['rel/2', c.c3, 'release two'],
          ['v0', c.c1, null],
          ['v1', c.c2, 'version one'],
        ],
      );
      assert.deepEqual(res.body.results[2].tagger, {
        name: 'Tester',
        email: 'tester@example.com',
        date: '2024-02-02T00:00:00.000Z',
      });
      assert.equal(res.body.results[1].tagger, null);
      const paged = await get(`${api}/tags?per_page=1&page=2`);
      assert.deepEqual(
        paged.body.results.map((x: { name: string }) => x.name),
        ['v0'],
      );
    });

    it('one branch: tip and protection; a name with a slash; 404 and 400', async () => {
      const { c } = repo;
      const prot = await t.req('POST', `${api}/protections`, { token: alice.token, body: { branch: 'feature/*' } });
      assert.equal(prot.status, 201, prot.text);
      const res = await get(`${api}/branches/feature/x`);
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { name: 'feature/x', commit_sha: c.c4, protected: true });
      assert.deepEqual((await get(`${teamApi}/branches/main`)).body, { name: 'main', commit_sha: c.c3, protected: false });
      assert.equal((await get(`${api}/branches/nope`)).status, 404);
      assert.equal((await get(`${api}/branches/v1`)).status, 404); // a tag is not a branch
      assert.equal((await get(`${api}/branches/-x`)).status, 400);
      assert.equal((await get(`${api}/branches/a..b`)).status, 400);
    });

    it('the team form serves raw files and archives too', async () => {
      const raw = await get(`${teamApi}/raw/main/README.md`);
      assert.equal(raw.status, 200);
      assert.equal(raw.text, '# Hello\n');
      assert.equal(raw.headers['content-security-policy'], 'sandbox');
      const zip = await get(`${teamApi}/archive/v1.zip`);
      assert.equal(zip.status, 200);
      assert.equal(zip.headers['content-disposition'], `attachment; filename="tcode-${repo.c.c2.slice(0, 7)}.zip"`);
    });

    it('a private repo is 404 to outsiders on every route, in both forms', async () => {
      const { c } = repo;
      for (const base of [api, teamApi]) {
        for (const path of [
          '/commits',
          `/commits/${c.c1}`,
          '/compare/v0...main',
          '/contents',
          '/contents/README.md',
          '/raw/main/README.md',
          '/archive/main.zip',
          '/archive/main.tar.gz',
          '/branches/main',
          '/tags',
        ]) {
          const res = await get(`${base}${path}`, bob.token);
          assert.equal(res.status, 404, `${base}${path}: ${res.text}`);
          assert.equal(res.body.error, 'not_found');
          assert.equal((await t.req('GET', `${base}${path}`, { token: null })).status, 401);
        }
        const created = await t.req('POST', `${base}/branches`, { token: bob.token, body: { name: 'nope' } });
        assert.equal(created.status, 404);
        assert.equal((await t.req('DELETE', `${base}/branches/side`, { token: bob.token })).status, 404);
      }
    });
  });
}
