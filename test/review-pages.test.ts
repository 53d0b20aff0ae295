/**
 * Code review on the pull page, the parts past the API (README "Code review"): refused review
 * actions shown again beside their form, the edit and delete forms of comments as the API allows
 * them, references linked in the pull's description and comments, and a suggestion on a pull from
 * a fork applied on the fork's branch (checked with git).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { assertRefused } from './common.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

type Person = { token: string; uuid: string; username: string };
const lines = (n: number, change: Record<number, string> = {}) =>
  `${Array.from({ length: n }, (_, i) => change[i + 1] ?? `line ${i + 1}`).join('\n')}\n`;
/** A page's markup with its whitespace runs made one space, none between tags. */
const norm = (text: string) => text.replace(/\s+/g, ' ').replace(/ >/g, '>').replace(/> </g, '><');

for (const dialect of DIALECTS) {
  describe(`code review on the pull page (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person; // owns the repo and authors pull 1
    let bob: Person; // reviews; forks the repo and opens pull 2 from his fork
    let carol: Person; // a reader
    let ann: Browser;
    let bobPage: Browser;
    let carolPage: Browser;
    let work: string;
    const repo = '/users/alice/up';
    const api = '/api/v1/users/alice/repos/up';
    const ok = <T extends { status: number; text: string }>(res: T, status = 201): T => {
      assert.equal(res.status, status, res.text);
      return res;
    };
    const comments = async (number: number) =>
      ok(await t.req('GET', `${api}/pulls/${number}/comments?per_page=100`, { token: alice.token }), 200).body.results as Array<{
        uuid: string;
        body: string;
        path: string;
        line: number;
        in_reply_to: string | null;
      }>;

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
      ok(
        await t.req('POST', '/api/v1/users/alice/repos', {
          token: alice.token,
          body: { name: 'up', slug: 'up', visibility: 'public' },
        }),
      );
      work = await makeWorkTree(g, 'up', [{ 'app.txt': lines(80), 's.txt': 'a\nb\nc\n' }]);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/up.git', alice.token), 'main']);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feature']);
      writeFileSync(join(work, 'app.txt'), lines(80, { 5: 'LINE 5', 40: 'LINE 40' }));
      writeFileSync(join(work, 's.txt'), 'a\nB\nc\n');
      await g.run(['-C', work, 'commit', '-q', '-am', 'feature']);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/up.git', alice.token), 'feature']);
      ok(await t.req('POST', `${api}/threads`, { token: alice.token, body: { title: 'Upper case lines', body: '' } }));
      ok(
        await t.req('POST', `${api}/pulls`, {
          token: alice.token,
          body: { title: 'Feature', body: 'Fixes #1.', source_branch: 'feature', target_branch: 'main' },
        }),
      );
      // bob's fork, a branch in it, a pull from it
      const fork = ok(await t.req('POST', `${api}/forks`, { token: bob.token })).body;
      await g.run(['-C', work, 'checkout', '-q', '-b', 'fix', 'main']);
      writeFileSync(join(work, 's.txt'), 'a\nbb\nc\n');
      await g.run(['-C', work, 'commit', '-q', '-am', 'fix']);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/bob/up.git', bob.token), 'fix']);
      const forkUuid = (fork.repo?.uuid ?? fork.uuid) as string;
      ok(
        await t.req('POST', `${api}/pulls`, {
          token: bob.token,
          body: { title: 'Fix', body: '', source_branch: 'fix', target_branch: 'main', source_repo: forkUuid },
        }),
      );
      ann = await signIn(t, 'alice');
      bobPage = await signIn(t, 'bob');
      carolPage = await signIn(t, 'carol');
    });
    after(async () => {
      g?.cleanup();
      await t?.close();
    });

    it('a refused comment shows its form again with the error and what was typed', async () => {
      // line 30 of app.txt is not in the diff (its hunks are around lines 5 and 40)
      const res = await pageReq(t, 'POST', `${repo}/pulls/1/comments`, {
        cookie: bobPage.cookie,
        form: {
          _csrf: bobPage.csrf,
          tab: 'files',
          path: 'app.txt',
          line: '30',
          side: 'RIGHT',
          body: 'Typed words',
          mode: 'single',
        },
      });
      assert.equal(res.status, 400, res.text);
      const page = norm(res.text);
      assert.match(
        page,
        /<p class="error" role="alert" id="new-comment-error">[^<]*line 30 \(RIGHT\) of &quot;app\.txt&quot; is not in the pull/,
      );
      assert.match(
        page,
        /<textarea id="nc-body" name="body" required aria-describedby="new-comment-error"> ?Typed words<\/textarea>/,
      );
      assert.match(page, /<h2 id="files-h">Files changed \(2\)<\/h2>/, 'the Files tab, not a dead end');
      assert.equal((await comments(1)).length, 0);
    });

    it('comments are edited by their author and deleted by their author or maintain level, from forms', async () => {
      let res = await pageReq(t, 'POST', `${repo}/pulls/1/comments`, {
        cookie: bobPage.cookie,
        form: {
          _csrf: bobPage.csrf,
          tab: 'files',
          path: 'app.txt',
          line: '5',
          side: 'RIGHT',
          body: 'Why? See #1',
          mode: 'single',
        },
      });
      assert.equal(res.status, 303, res.text);
      assert.match(String(res.headers.location), /\/users\/alice\/up\/pulls\/1\?tab=files#review-/);
      const first = (await comments(1))[0]!;
      ok(await t.req('POST', `${api}/pulls/1/comments/${first.uuid}/replies`, { token: carol.token, body: { body: 'Agreed' } }));
      const reply = (await comments(1)).find((c) => c.in_reply_to === first.uuid)!;
      const edit = (uuid: string) => new RegExp(`action="${repo}/pulls/1/comments/${uuid}/edit"`);
      const del = (uuid: string) => new RegExp(`action="${repo}/pulls/1/comments/${uuid}/delete"`);
      const asBob = (await pageReq(t, 'GET', `${repo}/pulls/1?tab=files`, { cookie: bobPage.cookie })).text;
      assert.match(asBob, edit(first.uuid));
      assert.match(asBob, del(first.uuid));
      assert.doesNotMatch(asBob, edit(reply.uuid));
      assert.doesNotMatch(asBob, del(reply.uuid));
      assert.match(
        norm(asBob),
        new RegExp(
          `hx-post="${repo}/pulls/1/comments/${first.uuid}/edit" hx-target="#t-${first.uuid}" hx-select="#t-${first.uuid}"`,
        ),
      );
      // the owner (maintain level and more) deletes others' comments, edits none of them
      const asAlice = (await pageReq(t, 'GET', `${repo}/pulls/1`, { cookie: ann.cookie })).text;
      assert.match(asAlice, del(reply.uuid));
      assert.doesNotMatch(asAlice, edit(reply.uuid));
      // a refused edit (carol posts to bob's comment): the conversation with the error, the tab it came from
      res = await pageReq(t, 'POST', `${repo}/pulls/1/comments/${first.uuid}/edit`, {
        cookie: carolPage.cookie,
        form: { _csrf: carolPage.csrf, tab: 'conversation', body: 'Rewritten' },
      });
      assert.equal(res.status, 403);
      assert.match(
        norm(res.text),
        new RegExp(
          `<div class="thread" id="t-${first.uuid}"><p class="error" role="alert" id="error-${first.uuid}">Only the author of a comment can edit it\\.`,
        ),
      );
      assert.match(norm(res.text), /<h2 id="conv-h">Conversations on the code \(1\)<\/h2>/);
      // bob edits his comment
      res = await pageReq(t, 'POST', `${repo}/pulls/1/comments/${first.uuid}/edit`, {
        cookie: bobPage.cookie,
        form: { _csrf: bobPage.csrf, tab: 'files', body: 'Why upper case? See #1' },
      });
      assert.equal(res.status, 303, res.text);
      assert.equal(res.headers.location, `${repo}/pulls/1?tab=files#c-${first.uuid}`);
      assert.equal((await comments(1))[0]!.body, 'Why upper case? See #1');
      const page = norm((await pageReq(t, 'GET', `${repo}/pulls/1?tab=files`, { cookie: carolPage.cookie })).text);
      assert.match(page, /\(edited\)/);
      // alice deletes carol's reply
      res = await pageReq(t, 'POST', `${repo}/pulls/1/comments/${reply.uuid}/delete`, {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, tab: 'conversation' },
      });
      assert.equal(res.status, 303, res.text);
      assert.deepEqual(
        (await comments(1)).map((c) => c.uuid),
        [first.uuid],
      );
    });

    it("links #N in the pull's description and its comments for the reader", async () => {
      const link = /<a href="\/users\/alice\/up\/threads\/1" class="ref" title="Upper case lines">#1<\/a>/;
      const conversation = norm((await pageReq(t, 'GET', `${repo}/pulls/1`, { cookie: carolPage.cookie })).text);
      const description = /<section class="box markdown" aria-label="Description">(.*?)<\/section>/.exec(conversation)?.[1] ?? '';
      assert.match(description, link);
      const thread = /<h2 id="conv-h">(.*?)<\/section>/.exec(conversation)?.[1] ?? '';
      assert.match(thread, link);
      const files = norm((await pageReq(t, 'GET', `${repo}/pulls/1?tab=files`, { cookie: carolPage.cookie })).text);
      assert.match(files, link);
    });

    it('an outdated suggestion is refused beside its Apply button', async () => {
      let res = await pageReq(t, 'POST', `${repo}/pulls/1/comments`, {
        cookie: bobPage.cookie,
        form: {
          _csrf: bobPage.csrf,
          tab: 'files',
          path: 's.txt',
          line: '2',
          side: 'RIGHT',
          body: '```suggestion\nbee\n```',
          mode: 'single',
        },
      });
      assert.equal(res.status, 303, res.text);
      const suggestion = (await comments(1)).find((c) => c.path === 's.txt')!;
      assert.match((await pageReq(t, 'GET', `${repo}/pulls/1?tab=files`, { cookie: ann.cookie })).text, /Apply suggestion/);
      // the line changes under it
      await g.run(['-C', work, 'checkout', '-q', 'feature']);
      writeFileSync(join(work, 's.txt'), 'a\nBe\nc\n');
      await g.run(['-C', work, 'commit', '-q', '-am', 'again']);
      await g.run(['-C', work, 'push', '-q', g.url('/git/users/alice/up.git', alice.token), 'feature']);
      res = await pageReq(t, 'POST', `${repo}/pulls/1/suggestions/apply`, {
        cookie: ann.cookie,
        form: { _csrf: ann.csrf, tab: 'files', comment_uuid: suggestion.uuid },
      });
      assert.equal(res.status, 409, res.text);
      assert.match(
        norm(res.text),
        new RegExp(
          `<div class="thread" id="t-${suggestion.uuid}"><p class="error" role="alert" id="error-${suggestion.uuid}">The lines a suggestion replaces changed`,
        ),
      );
      assert.match(norm(res.text), /<h2 id="files-h">Files changed/);
    });

    it("a suggestion on a pull from a fork is applied on the fork's branch by who may write to it", async () => {
      ok(
        await t.req('POST', `${api}/pulls/2/reviews`, {
          token: carol.token,
          body: { status: 'commented', comments: [{ path: 's.txt', line: 2, body: 'Shorter:\n```suggestion\nb\n```\n' }] },
        }),
      );
      const suggestion = (await comments(2))[0]!;
      // alice owns the target repo but may not write to bob's fork: no button, and 403 from the API
      assert.doesNotMatch(
        (await pageReq(t, 'GET', `${repo}/pulls/2?tab=files`, { cookie: ann.cookie })).text,
        /Apply suggestion/,
      );
      await assertRefused(t, 403, 'forbidden', 'POST', `${api}/pulls/2/suggestions/apply`, {
        token: alice.token,
        body: { comment_uuids: [suggestion.uuid] },
      });
      // bob, who owns the fork (and only reads the target), applies it from the page
      const forkUrl = g.url('/git/users/bob/up.git', bob.token);
      const before = (await g.run(['ls-remote', forkUrl, 'refs/heads/fix'])).stdout.slice(0, 40);
      assert.match((await pageReq(t, 'GET', `${repo}/pulls/2?tab=files`, { cookie: bobPage.cookie })).text, /Apply suggestion/);
      const res = await pageReq(t, 'POST', `${repo}/pulls/2/suggestions/apply`, {
        cookie: bobPage.cookie,
        form: { _csrf: bobPage.csrf, tab: 'files', comment_uuid: suggestion.uuid },
      });
      assert.equal(res.status, 303, res.text);
      const after = (await g.run(['ls-remote', forkUrl, 'refs/heads/fix'])).stdout.slice(0, 40);
      assert.notEqual(after, before);
      await g.run(['-C', work, 'fetch', '-q', forkUrl, 'fix']);
      assert.equal((await g.run(['-C', work, 'rev-parse', `${after}^`])).stdout.trim(), before, 'one commit on the old head');
      assert.equal((await g.run(['-C', work, 'show', `${after}:s.txt`])).stdout, 'a\nb\nc\n');
      assert.match(
        (await g.run(['-C', work, 'log', '-1', '--format=%an%n%B', after])).stdout,
        /^bob\n[\s\S]*Co-authored-by: carol/,
      );
      // the pull follows its branch; the target repo's branches did not move
      assert.equal(ok(await t.req('GET', `${api}/pulls/2`, { token: bob.token }), 200).body.head_sha, after);
      assert.equal((await g.run(['ls-remote', g.url('/git/users/alice/up.git', alice.token), 'refs/heads/fix'])).stdout, '');
    });
  });
}
