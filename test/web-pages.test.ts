import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

/** The pages through HTTP (README "Web interface"): access as in the API, bad input refused, forms and their CSRF tokens. */
for (const dialect of DIALECTS) {
  describe(`web pages over HTTP (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string };
    let ann: Browser;
    let olga: Browser;
    const repo = '/teams/core/api';
    const api = '/api/v1/teams/core/repos/api';

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('ann');
      await t.user('olga');
      const ok = (res: { status: number; text: string }) => assert.equal(res.status, 201, res.text);
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Core', slug: 'core' } }));
      ok(await t.req('POST', '/api/v1/teams/core/repos', { token: alice.token, body: { name: 'API', slug: 'api' } }));
      ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'First' } }));
      for (let i = 1; i <= 31; i++) {
        ok(
          await t.req('POST', `${api}/pulls`, {
            token: alice.token,
            body: { title: `Pull ${i}`, body: '', source_branch: `b${i}`, target_branch: 'main' },
          }),
        );
      }
      ann = await signIn(t, 'ann');
      olga = await signIn(t, 'olga');
    });
    after(() => t.close());

    it('shows the repo, its pulls (paginated) and threads to a member', async () => {
      const home = await pageReq(t, 'GET', repo, { cookie: ann.cookie });
      assert.equal(home.status, 200);
      assert.match(home.text, /<a href="\/teams\/core\/api">api<\/a>/);
      assert.match(home.text, /sse-connect="\/api\/v1\/tail-events\?scope=repo%3A[0-9a-f-]+&html=true&last_event_id=\d+"/);
      const pulls = await pageReq(t, 'GET', `${repo}/pulls`, { cookie: ann.cookie });
      assert.equal(pulls.status, 200);
      assert.equal((pulls.text.match(/<li><a href="\/teams\/core\/api\/pulls\/\d+">/g) ?? []).length, 30);
      assert.match(pulls.text, /href="\/teams\/core\/api\/pulls\?status=open&amp;page=2" rel="next"/);
      const second = await pageReq(t, 'GET', `${repo}/pulls?status=open&page=2`, { cookie: ann.cookie });
      assert.match(second.text, /#31 Pull 31/);
      assert.match(second.text, /rel="prev"/);
      const threads = await pageReq(t, 'GET', `${repo}/threads/1`, { cookie: ann.cookie });
      assert.equal(threads.status, 200);
      assert.match(threads.text, /#1 First/);
    });

    it('answers 404 to an outsider, as the API does, and sends the signed-out to sign in', async () => {
      for (const path of [
        repo,
        `${repo}/pulls`,
        `${repo}/pulls/1`,
        `${repo}/threads`,
        `${repo}/threads/1`,
        '/teams/core',
        '/users/nobody',
      ]) {
        const res = await pageReq(t, 'GET', path, { cookie: olga.cookie });
        assert.equal(res.status, 404, path);
        assert.match(res.text, /<h1>Not found<\/h1>/);
        assert.doesNotMatch(res.text, /not_found/);
        // signed out: public repos are browsable, so a private one is not found, with a way to sign in
        const anon = await pageReq(t, 'GET', path);
        assert.equal(anon.status, path === '/teams/core' || path === '/users/nobody' ? 303 : 404, path);
        if (anon.status === 404)
          assert.ok(anon.text.includes(`href="/login?next=${encodeURIComponent(path).replace(/&/g, '&amp;')}"`));
        else assert.equal(anon.headers.location, `/login?next=${encodeURIComponent(path)}`);
      }
      // an outsider's post is refused the same way, and changes nothing
      const post = await pageReq(t, 'POST', `${repo}/threads/1/replies`, {
        cookie: olga.cookie,
        form: { _csrf: olga.csrf, body: 'hi' },
      });
      assert.equal(post.status, 404);
    });

    it('refuses bad input with a clear 4xx page', async () => {
      const cases: Array<[string, string, number, RegExp, Record<string, string>?]> = [
        ['GET', `${repo}/pulls/0`, 400, /That did not work/],
        ['GET', `${repo}/pulls/abc`, 400, /That did not work/],
        ['GET', `${repo}/pulls/999`, 404, /Not found/],
        ['GET', `${repo}/pulls?status=weird`, 400, /That did not work/],
        ['GET', `${repo}/pulls?page=0`, 400, /That did not work/],
        ['GET', `${repo}/threads/1/replies/9/edit`, 404, /Not found/],
        ['POST', `${repo}/threads/1/replies`, 400, /That did not work/, { _csrf: ann.csrf, body: '   ' }],
        ['POST', `${repo}/threads/1/replies`, 400, /That did not work/, { _csrf: ann.csrf, body: 'x', extra: '1' }],
        ['POST', `${repo}/pulls/1/reviews`, 400, /That did not work/, { _csrf: ann.csrf, status: 'love' }],
        [
          'POST',
          `${repo}/pulls/1/reviews`,
          403,
          /The author of a pull may only comment on it/,
          { _csrf: ann.csrf, status: 'approved' },
        ],
        ['POST', `${repo}/pulls/1/merge`, 400, /That did not work/, { _csrf: ann.csrf, merge_strategy: 'octopus' }],
        ['POST', `${repo}/threads/new`, 400, /must not be blank/, { _csrf: ann.csrf, title: ' ' }],
      ];
      for (const [method, url, status, body, form] of cases) {
        const res = await pageReq(t, method, url, { cookie: ann.cookie, ...(form ? { form } : {}) });
        assert.equal(res.status, status, `${method} ${url} ${res.text.slice(0, 500)}`);
        assert.match(res.text, body, url);
        // in words: no error code, schema path or operation id shown as such
        assert.doesNotMatch(res.text, /invalid_request|not_found|cannot_approve_own_pull|body\.|params\./, url);
        assert.match(String(res.headers['content-type']), /^text\/html/);
      }
      const replies = await t.req('GET', `${api}/threads/1/replies`, { token: alice.token });
      assert.equal(replies.body.results.length, 0, 'nothing was written');
      const reviews = await t.req('GET', `${api}/pulls/1/reviews`, { token: alice.token });
      assert.equal(reviews.body.results.length, 0);
    });

    it('writes through forms with the CSRF token, and refuses them without it', async () => {
      const forged = await pageReq(t, 'POST', `${repo}/threads/1/replies`, { cookie: ann.cookie, form: { body: 'forged' } });
      assert.equal(forged.status, 403);
      assert.match(forged.text, /CSRF/);
      const other = await pageReq(t, 'POST', `${repo}/threads/1/replies`, {
        cookie: ann.cookie,
        form: { _csrf: olga.csrf, body: 'x' },
      });
      assert.equal(other.status, 403);
      const upload = await pageReq(t, 'POST', `${repo}/threads/1/attachments`, {
        cookie: ann.cookie,
        headers: { 'content-type': 'multipart/form-data; boundary=X', 'x-csrf-token': 'nope' },
      });
      assert.equal(upload.status, 403);
      assert.equal((await t.req('GET', `${api}/uploads`, { token: alice.token })).body.results.length, 0);

      const ok = await pageReq(t, 'POST', `${repo}/threads/1/replies`, {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, body: 'Hello **there**' },
      });
      assert.equal(ok.status, 303);
      assert.equal(ok.headers.location, `${repo}/threads/1#reply-1`);
      const viaHeader = await pageReq(t, 'POST', `${repo}/threads/1/replies/1/edit`, {
        cookie: ann.cookie,
        form: { body: 'Hello again' },
        headers: { 'x-csrf-token': ann.csrf },
      });
      assert.equal(viaHeader.status, 303);
      const history = await pageReq(t, 'GET', `${repo}/threads/1/replies/1/history`, { cookie: ann.cookie });
      assert.equal(history.status, 200);
      assert.match(history.text, /Version 1/);
      assert.match(history.text, /Hello <strong>there<\/strong>/);
      assert.match(history.text, /Version 2/);
      const multipart = [
        '--X',
        'Content-Disposition: form-data; name="_csrf"',
        '',
        ann.csrf,
        '--X',
        'Content-Disposition: form-data; name="file"; filename="a.txt"',
        'Content-Type: text/plain',
        '',
        'abc',
        '--X--',
        '',
      ].join('\r\n');
      const attached = await t.app.inject({
        method: 'POST',
        url: `${repo}/threads/1/attachments`,
        headers: { cookie: ann.cookie, 'content-type': 'multipart/form-data; boundary=X' },
        payload: multipart,
      });
      assert.equal(attached.statusCode, 303, attached.body);
      const list = await t.req('GET', `${api}/threads/1/attachments`, { token: alice.token });
      assert.equal(list.body.results[0].upload.filename, 'a.txt');
    });

    it('escapes what people write', async () => {
      const res = await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: '<script>alert(1)</script>' } });
      assert.equal(res.status, 201);
      const list = await pageReq(t, 'GET', `${repo}/threads`, { cookie: ann.cookie });
      assert.doesNotMatch(list.text, /<script>alert/);
      assert.match(list.text, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    });
  });
}
