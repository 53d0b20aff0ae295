/**
 * Public repos browsable signed out (README "Web interface"): an anonymous visitor reads a public
 * repo's home, tree, file, raw bytes, commits, a commit, branches, tags, releases, threads and
 * pulls pages (200, the signed-out header, no action form, no live stream it could not open), and
 * gets 404 on a private repo's same pages, as a signed-in non-member does. Writes still need a
 * session.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { pageReq, signIn } from './web-helpers.ts';

for (const dialect of DIALECTS) {
  describe(`public repos signed out (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    const shas: Record<string, string> = {};
    const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);
    const pagesOf = (repo: string) => [
      repo,
      `${repo}/tree/main/src`,
      `${repo}/blob/main/src/app.ts`,
      `${repo}/commits/main`,
      `${repo}/commit/${shas[repo.split('/').pop()!]}`,
      `${repo}/branches`,
      `${repo}/tags`,
      `${repo}/releases`,
      `${repo}/threads`,
      `${repo}/threads/1`,
      `${repo}/pulls`,
      `${repo}/pulls/1`,
      `${repo}/pulls/1?tab=files`,
      `${repo}/pulls/1?tab=commits`,
    ];

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      const alice = await t.user('alice');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Open', slug: 'open' } }));
      for (const [slug, visibility] of [
        ['site', 'public'],
        ['secret', 'private'],
      ] as const) {
        const api = `/api/v1/teams/open/repos/${slug}`;
        ok(await t.req('POST', '/api/v1/teams/open/repos', { token: alice.token, body: { name: slug, slug, visibility } }));
        const dir = await makeWorkTree(g, `work-${slug}`, [
          { 'README.md': `# ${slug}\n`, 'src/app.ts': 'export const x = 1;\n', 'docs/logo.png': 'PNG bytes' },
        ]);
        const url = g.url(`/git/teams/open/${slug}.git`, alice.token);
        await g.run(['-C', dir, 'push', '-q', url, 'main']);
        await g.run(['-C', dir, 'checkout', '-q', '-b', 'feature']);
        await g.run(['-C', dir, 'commit', '-q', '--allow-empty', '-m', 'feature']);
        await g.run(['-C', dir, 'push', '-q', url, 'feature']);
        shas[slug] = (await g.run(['-C', dir, 'rev-parse', 'main'])).stdout.trim();
        ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'Plan', body: 'What next?' } }));
        ok(await t.req('POST', `${api}/threads/1/replies`, { token: alice.token, body: { body: 'A reply' } }));
        ok(
          await t.req('POST', `${api}/pulls`, {
            token: alice.token,
            body: { title: 'Feature', body: 'Adds it', source_branch: 'feature', target_branch: 'main' },
          }),
        );
      }
    });
    after(async () => {
      g?.cleanup();
      await t?.close();
    });

    it("shows a public repo's pages to a signed-out visitor, without actions", async () => {
      for (const url of pagesOf('/teams/open/site')) {
        const res = await pageReq(t, 'GET', url);
        assert.equal(res.status, 200, `${url}: ${res.text.slice(0, 300)}`);
        assert.match(String(res.headers['content-type']), /text\/html/);
        assert.match(res.text, /href="\/login"/, `${url}: the signed-out header`);
        const no = (re: RegExp, what: string) => assert.ok(!re.test(res.text), `${url}: ${what}: ${re.exec(res.text)?.[0]}`);
        no(/<form[^>]*method="post"[^>]*>/i, 'no action form');
        no(/sse-connect=/, 'no live stream (it needs a session)');
        no(/>Settings</, 'no Settings tab');
        no(/href="[^"]*\/(pulls|threads)\/new[^"]*"/, 'no New pull or New issue link');
        no(/href="[^"]*\/(edit|fork)"/, 'no Edit or Fork link');
      }
      const file = await pageReq(t, 'GET', '/teams/open/site/blob/main/src/app.ts');
      assert.match(file.text, /export/);
      const raw = await pageReq(t, 'GET', '/teams/open/site/raw/main/src/app.ts');
      assert.equal(raw.status, 200);
      assert.equal(raw.text, 'export const x = 1;\n');
      // counts read as words: one file, one byte, several bytes
      const commit = await pageReq(t, 'GET', `/teams/open/site/commit/${shas.site}`);
      assert.match(commit.text, /3 files changed/);
      const tree = await pageReq(t, 'GET', '/teams/open/site/tree/main/src');
      assert.match(tree.text, /20 bytes/);
      // an image file is shown as an image, from the raw route, which serves it as one
      const image = await pageReq(t, 'GET', '/teams/open/site/blob/main/docs/logo.png');
      assert.equal(image.status, 200);
      assert.match(image.text, /<img class="file-image" src="\/teams\/open\/site\/raw\/main\/docs\/logo\.png" alt="logo\.png"/);
      const bytes = await pageReq(t, 'GET', '/teams/open/site/raw/main/docs/logo.png');
      assert.equal(bytes.headers['content-type'], 'image/png');
      const thread = await pageReq(t, 'GET', '/teams/open/site/threads/1');
      assert.match(thread.text, /A reply/);
    });

    it("answers 404 on a private repo's pages, as to a signed-in non-member", async () => {
      const outsider = await signIn(t, (await t.user('olga')).username);
      for (const url of [...pagesOf('/teams/open/secret'), '/teams/open/secret/raw/main/src/app.ts']) {
        const anon = await pageReq(t, 'GET', url);
        assert.equal(anon.status, 404, `${url} signed out`);
        assert.doesNotMatch(anon.text, /What next\?|export const/, `${url}: nothing of the repo`);
        const member = await pageReq(t, 'GET', url, { cookie: outsider.cookie });
        assert.equal(member.status, 404, `${url} for a non-member`);
      }
    });

    it('still sends a signed-out visitor to sign in for pages that act, and refuses their writes', async () => {
      for (const url of ['/teams/open/site/pulls/new', '/teams/open/site/threads/new', '/teams/open/site/settings']) {
        const res = await pageReq(t, 'GET', url);
        assert.equal(res.status, 303, url);
        assert.match(String(res.headers.location), /^\/login\?next=/);
      }
      const reply = await pageReq(t, 'POST', '/teams/open/site/threads/1/replies', { form: { body: 'anonymous' } });
      assert.ok(reply.status === 401 || reply.status === 403, `a signed-out reply is refused (${reply.status})`);
      const replies = await t.req('GET', '/api/v1/teams/open/repos/site/threads/1/replies');
      assert.ok(!JSON.stringify(replies.body).includes('anonymous'));
    });
  });
}
