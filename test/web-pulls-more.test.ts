import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { commitFiles, type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

type Person = { token: string; uuid: string; username: string };
/** A page's markup with its whitespace runs made one space, none between tags. */
const norm = (text: string) => text.replace(/\s+/g, ' ').replace(/ >/g, '>').replace(/> </g, '><');

/**
 * The pull page's status checks, a pull opened from a fork in the pages, a file attached to a
 * pull from its page, the raw file and per-path history links of the file view, and a reply's
 * history paged by after_version (README "Web interface").
 */
for (const dialect of DIALECTS) {
  describe(`web pages: checks, forks, attachments, raw, history (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person; // owns the upstream
    let bob: Person; // a member of its team; forks it
    let ann: Browser;
    let bobPage: Browser;
    let olga: Browser; // an outsider
    let headSha = '';
    const repo = '/teams/core/proj';
    const api = '/api/v1/teams/core/repos/proj';
    const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      bob = await t.user('bob');
      await t.user('olga');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Core', slug: 'core' } }));
      ok(await t.req('POST', '/api/v1/teams/core/members', { token: alice.token, body: { username: 'bob', role: 'member' } }));
      ok(
        await t.req('POST', '/api/v1/teams/core/repos', {
          token: alice.token,
          body: { name: 'proj', slug: 'proj', visibility: 'private' },
        }),
      );
      const work = await makeWorkTree(g, 'work', [{ 'README.md': '# Proj\n', 'src/app.ts': 'export const x = 1;\n' }]);
      const url = g.url('/git/teams/core/proj.git', alice.token);
      await commitFiles(g, work, [{ 'src/app.ts': 'export const x = 2;\n' }], 'second');
      await g.run(['-C', work, 'push', '-q', url, 'main']);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feature']);
      await commitFiles(g, work, [{ 'src/feature.ts': 'export const f = true;\n' }], 'feature');
      await g.run(['-C', work, 'push', '-q', url, 'feature']);
      headSha = (await g.run(['-C', work, 'rev-parse', 'feature'])).stdout.trim();
      // bob forks the private repo and pushes a branch to his fork
      const fork = await t.req('POST', `${api}/forks`, { token: bob.token });
      ok(fork);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'fix', 'main']);
      await commitFiles(g, work, [{ 'src/fix.ts': 'export const fixed = 1;\n' }], 'fix');
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/bob/proj.git', bob.token), 'fix']);
      ok(
        await t.req('POST', `${api}/protections`, {
          token: alice.token,
          body: { branch: 'main', required_approvals: 1, required_status_contexts: ['ci/build', 'ci/lint'] },
        }),
      );
      ok(
        await t.req('POST', `${api}/pulls`, {
          token: alice.token,
          body: { title: 'Feature', body: '', source_branch: 'feature', target_branch: 'main' },
        }),
      );
      ann = await signIn(t, 'alice');
      bobPage = await signIn(t, 'bob');
      olga = await signIn(t, 'olga');
    });
    after(async () => {
      g?.cleanup();
      await t?.close();
    });

    it("shows the head's status checks and which required ones are not passed", async () => {
      let page = await pageReq(t, 'GET', `${repo}/pulls/1`, { cookie: ann.cookie });
      assert.equal(page.status, 200);
      assert.match(norm(page.text), /No status checks are reported for the head commit/);
      assert.match(
        norm(page.text),
        /Required checks not passed: <code>ci\/build<\/code><span class="badge missing">missing<\/span>, <code>ci\/lint<\/code>/,
      );
      const post = (body: Record<string, string>) => t.req('POST', `${api}/statuses/${headSha}`, { token: alice.token, body });
      ok(
        await post({
          state: 'success',
          context: 'ci/build',
          description: 'Built <fast>',
          target_url: 'https://ci.example.com/b/1',
        }),
      );
      ok(await post({ state: 'failure', context: 'ci/lint', description: 'Two warnings' }));
      ok(await post({ state: 'pending', context: 'docs' }));
      page = await pageReq(t, 'GET', `${repo}/pulls/1`, { cookie: ann.cookie });
      assert.match(norm(page.text), /<span class="badge failure" id="checks-state">failure<\/span>/);
      assert.match(
        norm(page.text),
        /<span class="badge success">success<\/span><strong>ci\/build<\/strong><span class="muted">Built &lt;fast&gt;<\/span><a href="https:\/\/ci.example.com\/b\/1" rel="nofollow noopener noreferrer">Details<\/a><span class="badge">required<\/span>/,
      );
      assert.match(norm(page.text), /<strong>docs<\/strong>/);
      assert.match(
        norm(page.text),
        /Required checks not passed: <code>ci\/lint<\/code><span class="badge failure">failure<\/span><\/p>/,
      );
      assert.match(norm(page.text), /not satisfied/);
      ok(await t.req('POST', `${api}/pulls/1/reviews`, { token: bob.token, body: { status: 'approved', body: '' } }));
      // the approvals are enough, the checks are not: the merge is refused as the API refuses it
      const merge = await pageReq(t, 'POST', `${repo}/pulls/1/merge`, {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, merge_strategy: 'merge' },
      });
      // the pull page again, the refusal in words beside the merge form
      assert.equal(merge.status, 409);
      assert.match(merge.text, /#1 Feature/);
      assert.match(merge.text, /<p class="error" role="alert" id="merge-error">/);
      assert.doesNotMatch(merge.text, /checks_unsatisfied/);
      ok(await post({ state: 'success', context: 'ci/lint' }));
      page = await pageReq(t, 'GET', `${repo}/pulls/1`, { cookie: ann.cookie });
      assert.match(norm(page.text), /All 2 required checks passed\./);
      assert.match(norm(page.text), /<span class="badge pending" id="checks-state">pending<\/span>/);
    });

    it('opens a pull from a fork: the head repo chosen among the readable forks, then its branch', async () => {
      // the fork's pulls list offers a pull into the repo it was forked from
      const forkPulls = await pageReq(t, 'GET', '/users/bob/proj/pulls', { cookie: bobPage.cookie });
      assert.match(
        norm(forkPulls.text),
        /<a href="\/teams\/core\/proj\/pulls\/new\?source_repo=[0-9a-f-]{36}" class="badge">New pull into core\/proj<\/a>/,
      );
      let form = await pageReq(t, 'GET', `${repo}/pulls/new`, { cookie: bobPage.cookie });
      assert.equal(form.status, 200);
      const forkUuid = /<option value="([0-9a-f-]{36})" >bob\/proj \(your fork\)<\/option>/.exec(form.text)?.[1];
      assert.ok(forkUuid, form.text);
      assert.match(norm(form.text), /core\/proj \(this repo\)/);
      form = await pageReq(t, 'GET', `${repo}/pulls/new?source_repo=${forkUuid}`, { cookie: bobPage.cookie });
      assert.match(norm(form.text), /<input type="hidden" name="source_repo" value="[0-9a-f-]{36}" \/>/);
      assert.match(norm(form.text), /From branch of bob\/proj/);
      assert.match(norm(form.text), /<option value="fix">fix<\/option>/);
      // an outsider's fork list holds nothing of it: the page is 404
      assert.equal((await pageReq(t, 'GET', `${repo}/pulls/new`, { cookie: olga.cookie })).status, 404);
      const made = await pageReq(t, 'POST', `${repo}/pulls/new`, {
        cookie: bobPage.cookie,
        form: {
          _csrf: bobPage.csrf,
          title: 'Fix it',
          body: 'From my fork',
          source_branch: 'fix',
          target_branch: 'main',
          source_repo: forkUuid!,
        },
      });
      assert.equal(made.status, 303, made.text);
      assert.equal(made.headers.location, `${repo}/pulls/2`);
      const pull = await t.req('GET', `${api}/pulls/2`, { token: bob.token });
      assert.equal(pull.body.source_repo.uuid, forkUuid);
      assert.equal(pull.body.source_repo.full_name, 'bob/proj');
      let page = await pageReq(t, 'GET', `${repo}/pulls/2?tab=files`, { cookie: bobPage.cookie });
      assert.match(norm(page.text), /<code>bob\/proj:fix<\/code>/);
      assert.match(norm(page.text), /src\/fix\.ts/);
      // alice cannot read bob's private fork: its name is not shown to her (as the API redacts it), its changes are
      page = await pageReq(t, 'GET', `${repo}/pulls/2?tab=files`, { cookie: ann.cookie });
      assert.match(norm(page.text), /<code>\(a repo you cannot read\):fix<\/code>/);
      assert.doesNotMatch(page.text, /bob\/proj/);
      assert.match(norm(page.text), /src\/fix\.ts/);
      // an unrelated repo is refused as the API refuses it
      const bad = await pageReq(t, 'POST', `${repo}/pulls/new`, {
        cookie: bobPage.cookie,
        form: {
          _csrf: bobPage.csrf,
          title: 'x',
          body: '',
          source_branch: 'fix',
          target_branch: 'main',
          source_repo: '00000000-0000-4000-8000-000000000000',
        },
      });
      assert.equal(bad.status, 404);
    });

    it("attaches a file to a pull from its page (CSRF in the form's first field)", async () => {
      const boundary = '----weft' + 'x'.repeat(10);
      const send = (csrf: string) =>
        t.app.inject({
          method: 'POST',
          url: `${repo}/pulls/1/attachments`,
          headers: { cookie: ann.cookie, 'content-type': `multipart/form-data; boundary=${boundary}` },
          payload:
            `--${boundary}\r\nContent-Disposition: form-data; name="_csrf"\r\n\r\n${csrf}\r\n` +
            `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="log.txt"\r\nContent-Type: text/plain\r\n\r\n` +
            `build log\n\r\n--${boundary}--\r\n`,
        });
      assert.equal((await send('forged')).statusCode, 403);
      const res = await send(ann.csrf);
      assert.equal(res.statusCode, 303, res.body);
      assert.equal(res.headers.location, `${repo}/pulls/1`);
      const list = await t.req('GET', `${api}/pulls/1/attachments`, { token: alice.token });
      assert.equal(list.body.results.length, 1);
      assert.equal(list.body.results[0].upload.filename, 'log.txt');
      const page = await pageReq(t, 'GET', `${repo}/pulls/1`, { cookie: ann.cookie });
      assert.match(norm(page.text), /<li>log\.txt <span class="muted">10 bytes, by alice<\/span><\/li>/);
      assert.match(norm(page.text), /action="\/teams\/core\/proj\/pulls\/1\/attachments" enctype="multipart\/form-data"/);
    });

    it("links the file view to the file's raw bytes and to the commits touching it", async () => {
      const blob = await pageReq(t, 'GET', `${repo}/blob/main/src/app.ts`, { cookie: ann.cookie });
      assert.equal(blob.status, 200);
      assert.match(norm(blob.text), /<a href="\/teams\/core\/proj\/raw\/main\/src\/app\.ts">Raw<\/a>/);
      assert.match(norm(blob.text), /<a href="\/teams\/core\/proj\/commits\/main\?path=src%2Fapp\.ts">History<\/a>/);
      const raw = await pageReq(t, 'GET', `${repo}/raw/main/src/app.ts`, { cookie: ann.cookie });
      assert.equal(raw.status, 200);
      assert.equal(raw.text, 'export const x = 2;\n');
      assert.equal(raw.headers['x-content-type-options'], 'nosniff');
      assert.match(String(raw.headers['content-security-policy']), /sandbox/);
      assert.match(String(raw.headers['content-type']), /^text\/plain/);
      assert.ok(raw.headers.etag);
      // the same bytes as the API's raw route
      const apiRaw = await t.req('GET', `${api}/raw/main/src/app.ts`, { token: alice.token });
      assert.equal(apiRaw.text, raw.text);
      assert.equal((await pageReq(t, 'GET', `${repo}/raw/main/src/app.ts`, { cookie: olga.cookie })).status, 404);
      // signed out, a private repo is not found (public repos are browsable signed out)
      assert.equal((await pageReq(t, 'GET', `${repo}/raw/main/src/app.ts`)).status, 404);
      const history = await pageReq(t, 'GET', `${repo}/commits/main?path=src%2Fapp.ts`, { cookie: ann.cookie });
      assert.equal(history.status, 200);
      assert.match(norm(history.text), /touching <code>src\/app\.ts<\/code>/);
      assert.equal((history.text.match(/<a href="\/teams\/core\/proj\/commit\/[0-9a-f]{40}">/g) ?? []).length, 2);
      const readme = await pageReq(t, 'GET', `${repo}/commits/main?path=README.md`, { cookie: ann.cookie });
      assert.equal((readme.text.match(/<a href="\/teams\/core\/proj\/commit\/[0-9a-f]{40}">/g) ?? []).length, 1);
    });

    it("pages a reply's history through all its versions, each page cut as the API cuts it", async () => {
      ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'Notes' } }));
      ok(await t.req('POST', `${api}/threads/1/replies`, { token: alice.token, body: { body: 'v1' } }));
      // 24 versions of about 60,000 characters each: the API's pages hold 1 MiB, about 8 of them
      const big = (n: number) => `v${n} ` + 'word '.repeat(12_000);
      for (let v = 2; v <= 24; v++) {
        ok(await t.req('PATCH', `${api}/threads/1/replies/1`, { token: alice.token, body: { body: big(v) } }), 200);
      }
      const history = `${repo}/threads/1/replies/1/history`;
      const seen: number[] = [];
      const starts: Array<string | null> = [];
      let url: string | null = history;
      while (url) {
        const page = await pageReq(t, 'GET', url, { cookie: ann.cookie });
        assert.equal(page.status, 200, page.text);
        const versions = [...page.text.matchAll(/<strong>Version (\d+)<\/strong>/g)].map((m) => Number(m[1]));
        assert.ok(versions.length > 0 && versions.length < 20, `a page cut by size: ${versions.length}`);
        seen.push(...versions);
        starts.push(url);
        const next: string | undefined = /<a href="([^"]+)" rel="next">Newer versions<\/a>/.exec(page.text)?.[1];
        url = next ? next.replace(/&amp;/g, '&') : null;
        assert.ok(starts.length < 10);
      }
      assert.deepEqual(
        seen,
        Array.from({ length: 24 }, (_, i) => i + 1),
      );
      assert.ok(starts.length >= 3, `${starts.length} pages`);
      // the API's pages are the same
      const apiPage = await t.req('GET', `${api}/threads/1/replies/1/versions?per_page=20`, { token: alice.token });
      const firstPage = await pageReq(t, 'GET', history, { cookie: ann.cookie });
      assert.equal([...firstPage.text.matchAll(/<strong>Version (\d+)<\/strong>/g)].length, apiPage.body.results.length);
      assert.doesNotMatch(firstPage.text, /rel="prev"/);
      // back from the last page through "older" reaches the first page again, every version on the way
      let back: string | null = starts.at(-1)!;
      const seenBack: number[] = [];
      let hops = 0;
      while (back) {
        const page = await pageReq(t, 'GET', back, { cookie: ann.cookie });
        seenBack.unshift(...[...page.text.matchAll(/<strong>Version (\d+)<\/strong>/g)].map((m) => Number(m[1])));
        const prev: string | undefined = /<a href="([^"]+)" rel="prev">Older versions<\/a>/.exec(page.text)?.[1];
        back = prev ? prev.replace(/&amp;/g, '&') : null;
        assert.ok(++hops < 10);
      }
      for (let v = 1; v <= 24; v++) assert.ok(seenBack.includes(v), `version ${v} reached going back`);
      assert.equal((await pageReq(t, 'GET', `${history}?after_version=24`, { cookie: ann.cookie })).status, 200);
      assert.equal((await pageReq(t, 'GET', `${history}?after_version=0`, { cookie: ann.cookie })).status, 400);
    });

    it('shows only the actions the viewer may take: no Merge or Settings for a reader, Comment only for the author, nothing on a merged pull', async () => {
      await t.user('carol');
      ok(await t.req('POST', '/api/v1/teams/core/members', { token: alice.token, body: { username: 'carol', role: 'reader' } }));
      const carol = await signIn(t, 'carol');
      const asReader = await pageReq(t, 'GET', `${repo}/pulls/1`, { cookie: carol.cookie });
      assert.equal(asReader.status, 200);
      assert.doesNotMatch(asReader.text, /action="\/teams\/core\/proj\/pulls\/1\/merge"/);
      assert.doesNotMatch(asReader.text, /href="\/teams\/core\/proj\/settings"/);
      assert.match(asReader.text, /value="approved"/, 'a reader may review');
      const asAuthor = await pageReq(t, 'GET', `${repo}/pulls/1`, { cookie: ann.cookie });
      assert.match(asAuthor.text, /action="\/teams\/core\/proj\/pulls\/1\/merge"/);
      assert.match(asAuthor.text, /href="\/teams\/core\/proj\/settings"/);
      assert.doesNotMatch(asAuthor.text, /value="approved"|value="changes_requested"/);
      // the author's own approval, forged: refused beside the review form, the typed text kept
      const own = await pageReq(t, 'POST', `${repo}/pulls/1/reviews`, {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, status: 'approved', body: 'LGTM me' },
      });
      assert.equal(own.status, 403);
      assert.match(own.text, /id="review-error">The author of a pull may only comment on it/);
      assert.match(own.text, />LGTM me<\/textarea>/);
      const merged = await t.req('POST', `${api}/pulls/1/merge`, { token: alice.token, body: { merge_strategy: 'merge' } });
      assert.equal(merged.status, 200, merged.text);
      const after = await pageReq(t, 'GET', `${repo}/pulls/1`, { cookie: ann.cookie });
      assert.doesNotMatch(after.text, /pulls\/1\/(merge|reviews|attachments)"/);
    });
  });
}
