import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

/**
 * docs/web.md "Markdown": the preview route every Markdown field's Preview button calls, and task
 * lists ticked on the thread page (the author and write access; a reader is refused and nothing
 * changes; two ticks at once both land).
 */
for (const dialect of DIALECTS) {
  describe(`Markdown on the pages: preview and task lists (${dialect})`, () => {
    let t: TestApp;
    let ann: Browser;
    let rita: Browser;
    let alice: { token: string };
    const page = '/teams/core/api/threads/1';
    const api = '/api/v1/teams/core/repos/api';
    const body = async () => (await t.req('GET', `${api}/threads/1`, { token: alice.token })).body.body as string;

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('ann');
      const reader = await t.user('rita');
      const ok = (res: { status: number; text: string }) => assert.ok(res.status < 300, res.text);
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Core', slug: 'core' } }));
      ok(
        await t.req('POST', '/api/v1/teams/core/repos', {
          token: alice.token,
          body: { name: 'API', slug: 'api', visibility: 'public' },
        }),
      );
      ok(
        await t.req('POST', `${api}/threads`, {
          token: alice.token,
          body: { title: 'Plan', body: '# Steps\n\n- [ ] one\n- [ ] two\n- [x] three\n\n```\n- [ ] not a task\n```\n' },
        }),
      );
      void reader;
      ann = await signIn(t, 'ann');
      rita = await signIn(t, 'rita');
    });
    after(() => t.close());

    it('the thread page shows the tasks, enabled for the author only; heading anchors', async () => {
      const mine = await pageReq(t, 'GET', page, { cookie: ann.cookie });
      assert.equal(mine.status, 200);
      assert.match(mine.text, /data-tasks="\/teams\/core\/api\/threads\/1\/tasks"/);
      assert.match(mine.text, /data-task="0" disabled \/> one/);
      assert.match(mine.text, /data-task="2" disabled checked \/> three/);
      assert.match(mine.text, /<h1 id="user-content-steps">/);
      const theirs = await pageReq(t, 'GET', page, { cookie: rita.cookie });
      assert.equal(theirs.status, 200);
      assert.doesNotMatch(theirs.text, /data-tasks=/);
    });

    it('ticking a task edits only its marker; a refusal changes nothing; bad input is 400', async () => {
      const tick = (
        who: Browser,
        form: Record<string, string>,
        headers: Record<string, string> = { 'x-requested-with': 'fetch' },
      ) => pageReq(t, 'POST', `${page}/tasks`, { cookie: who.cookie, form: { _csrf: who.csrf, ...form }, headers });
      let res = await tick(ann, { index: '1', checked: 'true' });
      assert.equal(res.status, 204, res.text);
      assert.equal(await body(), '# Steps\n\n- [ ] one\n- [x] two\n- [x] three\n\n```\n- [ ] not a task\n```\n');
      // without JavaScript: a plain form post, answered with the page
      res = await tick(ann, { index: '2', checked: 'false' }, {});
      assert.equal(res.status, 303);
      assert.equal(res.headers.location, page);
      assert.match(await body(), /- \[ \] three/);
      const before = await body();
      res = await tick(rita, { index: '0', checked: 'true' });
      assert.equal(res.status, 403, res.text);
      res = await tick(ann, { index: '3', checked: 'true' });
      assert.equal(res.status, 400, res.text);
      assert.match(res.text, /no such task/);
      res = await tick(ann, { index: 'x', checked: 'true' });
      assert.equal(res.status, 400);
      res = await tick(ann, { index: '0', checked: 'maybe' });
      assert.equal(res.status, 400);
      res = await pageReq(t, 'POST', `${page}/tasks`, { cookie: ann.cookie, form: { index: '0', checked: 'true' } });
      assert.equal(res.status, 403, 'no CSRF token');
      assert.equal(await body(), before);
    });

    it('two ticks at the same moment both land', async () => {
      const results = await Promise.all(
        ['0', '2'].map((index) =>
          pageReq(t, 'POST', `${page}/tasks`, {
            cookie: ann.cookie,
            form: { _csrf: ann.csrf, index, checked: 'true' },
            headers: { 'x-requested-with': 'fetch' },
          }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.status),
        [204, 204],
      );
      assert.match(await body(), /- \[x\] one\n- \[x\] two\n- \[x\] three/);
    });

    it('the preview renders what a post would; signed out or without a token it is refused', async () => {
      let res = await pageReq(t, 'POST', '/markdown/preview', {
        cookie: rita.cookie,
        form: { _csrf: rita.csrf, text: '**bold** :tada: <script>x</script>\n\n- [ ] task' },
      });
      assert.equal(res.status, 200, res.text);
      assert.match(res.text, /<div class="markdown"><p><strong>bold<\/strong> 🎉/);
      assert.doesNotMatch(res.text, /<script/);
      assert.match(res.text, /task-list-item-checkbox/);
      res = await pageReq(t, 'POST', '/markdown/preview', { cookie: rita.cookie, form: { _csrf: rita.csrf, text: '  ' } });
      assert.match(res.text, /Nothing to preview/);
      res = await pageReq(t, 'POST', '/markdown/preview', { cookie: rita.cookie, form: { text: 'x' } });
      assert.equal(res.status, 403);
      res = await pageReq(t, 'POST', '/markdown/preview', { form: { text: 'x' } });
      assert.ok(res.status === 401 || res.status === 403 || res.status === 303, String(res.status));
      res = await pageReq(t, 'POST', '/markdown/preview', {
        cookie: rita.cookie,
        form: { _csrf: rita.csrf, text: 'x'.repeat(70000) },
      });
      assert.equal(res.status, 400);
    });
  });
}
