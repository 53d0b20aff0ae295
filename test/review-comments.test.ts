import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { assertRefused, eventResults, type Person } from './common.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';

/**
 * Code review on lines (README "Code review"), through HTTP with the real git client: pending
 * reviews and their comments on both sides and on ranges, submission, replies, edits, deletion,
 * resolution, `position_outdated` after a force push, a suggestion applied as one commit (checked
 * with git), `suggestion_outdated` and `conversations_unresolved`.
 */

const lines = (n: number, change: Record<number, string> = {}, insertAfter: Record<number, string[]> = {}) => {
  const out: string[] = [];
  for (let i = 1; i <= n; i++) {
    out.push(change[i] ?? `line ${i}`);
    out.push(...(insertAfter[i] ?? []));
  }
  return `${out.join('\n')}\n`;
};

for (const dialect of DIALECTS) {
  describe(`review comments (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person; // owns the repo and authors the pull
    let bob: Person; // a reader who reviews
    let carol: Person; // a reader who does nothing else
    let api: string;
    let url: (token: string) => string;
    let work: string;
    let pull: { number: number; uuid: string; head_sha: string };

    const ok = <T extends { status: number; text: string }>(res: T, status: number, what = ''): T => {
      assert.equal(res.status, status, `${what} ${res.text}`);
      return res;
    };
    const P = () => `${api}/pulls/${pull.number}`;
    const comments = async (token = bob.token) =>
      ok(await t.req('GET', `${P()}/comments?per_page=100`, { token }), 200).body.results;

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
      carol = await t.user(`carol${dialect}`);
      ok(
        await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
          token: alice.token,
          body: { name: 'rv', slug: 'rv', visibility: 'public' },
        }),
        201,
      );
      api = `/api/v1/users/${alice.username}/repos/rv`;
      url = (token) => g.url(`/git/users/${alice.username}/rv.git`, token);
      work = await makeWorkTree(g, 'rv', [{ 'app.txt': lines(80), 's.txt': 'a\nb\nc\n' }]);
      await g.run(['-C', work, 'push', '-q', url(alice.token), 'main']);
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feature']);
      writeFileSync(join(work, 'app.txt'), lines(80, { 5: 'LINE 5', 40: 'LINE 40', 60: 'LINE 60' }));
      writeFileSync(join(work, 's.txt'), 'a\nB\nc\n');
      await g.run(['-C', work, 'commit', '-q', '-am', 'feature']);
      await g.run(['-C', work, 'push', '-q', url(alice.token), 'feature']);
      pull = ok(
        await t.req('POST', `${api}/pulls`, {
          token: alice.token,
          body: { title: 'Feature', body: '', source_branch: 'feature', target_branch: 'main' },
        }),
        201,
      ).body;
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    let review: { uuid: string };
    let onRight: { uuid: string };
    let onLeft: { uuid: string };
    let range: { uuid: string };

    it('a pending review collects comments on both sides and ranges, visible to its author only', async () => {
      const res = ok(
        await t.req('POST', `${P()}/reviews`, {
          token: bob.token,
          body: {
            body: 'A few things',
            comments: [
              { path: 'app.txt', line: 5, body: 'Why upper case?' },
              { path: 'app.txt', line: 40, side: 'LEFT', body: 'The old line was fine' },
            ],
          },
        }),
        201,
      );
      review = res.body;
      assert.equal(res.body.status, 'pending');
      assert.equal(res.body.commit_sha, null);
      // a second pending review of the same author adds to the first
      const again = ok(
        await t.req('POST', `${P()}/reviews`, {
          token: bob.token,
          body: { comments: [{ path: 'app.txt', start_line: 57, line: 60, body: 'This block' }] },
        }),
        201,
      );
      assert.equal(again.body.uuid, review.uuid);
      const mine = await comments(bob.token);
      assert.equal(mine.length, 3);
      [onRight, onLeft, range] = mine;
      assert.deepEqual(
        mine.map((c: any) => [c.path, c.line, c.side, c.start_line, c.start_side, c.pending, c.commit_sha, c.original_line]),
        [
          ['app.txt', 5, 'RIGHT', null, null, true, pull.head_sha, 5],
          ['app.txt', 40, 'LEFT', null, null, true, pull.head_sha, 40],
          ['app.txt', 60, 'RIGHT', 57, 'RIGHT', true, pull.head_sha, 60],
        ],
      );
      assert.equal(mine[0].review_uuid, review.uuid);
      assert.equal(mine[0].author.username, bob.username);
      // others see neither the review nor its comments
      assert.deepEqual(await comments(alice.token), []);
      assert.deepEqual(ok(await t.req('GET', `${P()}/reviews`, { token: alice.token }), 200).body.results, []);
      ok(await t.req('GET', `${P()}/reviews/${review.uuid}`, { token: alice.token }), 404);
      ok(await t.req('GET', `${P()}/reviews/${review.uuid}`, { token: bob.token }), 200);
      await assertRefused(t, 404, 'not_found', 'POST', `${P()}/reviews/${review.uuid}/submit`, {
        token: alice.token,
        body: { status: 'commented' },
      });
      await assertRefused(t, 400, 'invalid_request', 'POST', `${P()}/comments/${onRight.uuid}/replies`, {
        token: bob.token,
        body: { body: 'too early' },
      });
    });

    it('refuses anchors outside the diff, naming them', async () => {
      const bad = async (comment: Record<string, unknown>, words: RegExp) => {
        const res = await assertRefused(t, 400, 'invalid_request', 'POST', `${P()}/reviews`, {
          token: carol.token,
          body: { status: 'commented', comments: [comment] },
        });
        assert.match(res.body.detail, words);
      };
      await bad({ path: 'app.txt', line: 20, body: 'x' }, /comments\[0\]\.line: line 20 \(RIGHT\)/);
      await bad({ path: 'nope.txt', line: 1, body: 'x' }, /comments\[0\]\.path/);
      await bad({ path: 'app.txt', line: 5, side: 'LEFT', start_line: 40, body: 'x' }, /start_line/);
      await bad({ path: 'app.txt', start_line: 8, line: 6, body: 'x' }, /start_line/);
      await bad({ path: 'app.txt', line: 5, start_side: 'LEFT', body: 'x' }, /start_side/);
      const many = Array.from({ length: 101 }, () => ({ path: 'app.txt', line: 5, body: 'x' }));
      ok(await t.req('POST', `${P()}/reviews`, { token: carol.token, body: { status: 'commented', comments: many } }), 400);
      // a range across sides: the removed line 40 to the context line after it
      const across = ok(
        await t.req('POST', `${P()}/reviews`, {
          token: carol.token,
          body: { comments: [{ path: 'app.txt', start_line: 40, start_side: 'LEFT', line: 41, body: 'across' }] },
        }),
        201,
      );
      const mine = (await comments(carol.token)).filter((c: any) => c.review_uuid === across.body.uuid);
      assert.deepEqual([mine[0].start_line, mine[0].start_side, mine[0].line, mine[0].side], [40, 'LEFT', 41, 'RIGHT']);
      ok(await t.req('DELETE', `${P()}/reviews/${across.body.uuid}`, { token: carol.token }), 204);
      assert.deepEqual(await comments(carol.token), []);
    });

    it('submit shows the review and its comments, with events', async () => {
      const res = ok(
        await t.req('POST', `${P()}/reviews/${review.uuid}/submit`, { token: bob.token, body: { status: 'changes_requested' } }),
        200,
      );
      assert.equal(res.body.status, 'changes_requested');
      assert.equal(res.body.body, 'A few things');
      assert.equal(res.body.commit_sha, pull.head_sha);
      await assertRefused(t, 409, 'review_submitted', 'POST', `${P()}/reviews/${review.uuid}/submit`, {
        token: bob.token,
        body: { status: 'approved' },
      });
      const seen = await comments(alice.token);
      assert.equal(seen.length, 3);
      assert.ok(seen.every((c: any) => !c.pending));
      const created = await eventResults(t, `pull:${pull.uuid}`, alice.token, 'review-comment-created');
      assert.equal(created.length, 3);
      assert.deepEqual(created.map((e) => e.payload.comment_uuid).sort(), [onRight.uuid, onLeft.uuid, range.uuid].sort());
    });

    let reply: { uuid: string };
    it('replies join the conversation; edits and deletion by who may', async () => {
      reply = ok(
        await t.req('POST', `${P()}/comments/${onRight.uuid}/replies`, { token: alice.token, body: { body: 'House style' } }),
        201,
      ).body;
      assert.equal((reply as any).in_reply_to, onRight.uuid);
      assert.equal((reply as any).line, 5);
      assert.equal((reply as any).review_uuid, null);
      const second = ok(
        await t.req('POST', `${P()}/comments/${reply.uuid}/replies`, { token: bob.token, body: { body: 'Fine' } }),
        201,
      ).body;
      assert.equal(second.in_reply_to, onRight.uuid, 'a reply to a reply joins the same conversation');
      ok(
        await t.req('POST', `${P()}/comments/00000000-0000-4000-8000-000000000000/replies`, {
          token: bob.token,
          body: { body: 'x' },
        }),
        404,
      );

      await assertRefused(t, 403, 'forbidden', 'PATCH', `${P()}/comments/${onRight.uuid}`, {
        token: alice.token,
        body: { body: 'mine now' },
      });
      const edited = ok(
        await t.req('PATCH', `${P()}/comments/${onRight.uuid}`, { token: bob.token, body: { body: 'Why upper case here?' } }),
        200,
      );
      assert.equal(edited.body.body, 'Why upper case here?');
      assert.equal((await eventResults(t, `pull:${pull.uuid}`, alice.token, 'review-comment-edited')).length, 1);

      await assertRefused(t, 403, 'forbidden', 'DELETE', `${P()}/comments/${second.uuid}`, { token: carol.token });
      ok(await t.req('DELETE', `${P()}/comments/${second.uuid}`, { token: bob.token }), 204);
      ok(await t.req('DELETE', `${P()}/comments/${second.uuid}`, { token: bob.token }), 404);
      const deleted = await eventResults(t, `pull:${pull.uuid}`, alice.token, 'review-comment-deleted');
      assert.deepEqual(
        deleted.map((e) => e.payload.comment_uuid),
        [second.uuid],
      );
    });

    it('conversations resolve and unresolve; a merge can wait for them', async () => {
      await assertRefused(t, 403, 'forbidden', 'PUT', `${P()}/comments/${onRight.uuid}/resolution`, { token: carol.token });
      // the pull's author may, naming any comment of the conversation
      const done = ok(await t.req('PUT', `${P()}/comments/${reply.uuid}/resolution`, { token: alice.token }), 200);
      assert.equal(done.body.uuid, onRight.uuid);
      assert.equal(done.body.resolved, true);
      assert.deepEqual(done.body.resolved_by, { uuid: alice.uuid, username: alice.username });
      ok(await t.req('PUT', `${P()}/comments/${onRight.uuid}/resolution`, { token: alice.token }), 200);
      assert.equal(
        (await eventResults(t, `pull:${pull.uuid}`, alice.token, 'conversation-resolved')).length,
        1,
        'no event when nothing changes',
      );
      // the comment's author may too
      const undone = ok(await t.req('DELETE', `${P()}/comments/${onRight.uuid}/resolution`, { token: bob.token }), 200);
      assert.equal(undone.body.resolved, false);
      assert.equal(undone.body.resolved_by, null);
      assert.equal((await eventResults(t, `pull:${pull.uuid}`, alice.token, 'conversation-unresolved')).length, 1);

      const protection = ok(
        await t.req('POST', `${api}/protections`, {
          token: alice.token,
          body: { branch: 'main', required_approvals: 0, require_conversation_resolution: true },
        }),
        201,
      );
      assert.equal(protection.body.require_conversation_resolution, true);
      const status = ok(await t.req('GET', `${P()}/protection`, { token: bob.token }), 200);
      assert.equal(status.body.require_conversation_resolution, true);
      const refused = await t.req('POST', `${P()}/merge`, { token: alice.token, body: {} });
      assert.equal(refused.status, 409, refused.text);
      assert.equal(refused.body.error, 'conversations_unresolved');
      assert.match(refused.body.detail, /^3 review conversation/);
      assert.equal((await t.req('GET', P(), { token: alice.token })).body.status, 'open');
    });

    let suggestion: { uuid: string };
    it('a suggestion is applied as one commit on the source branch', async () => {
      const made = ok(
        await t.req('POST', `${P()}/reviews`, {
          token: bob.token,
          body: { status: 'commented', comments: [{ path: 's.txt', line: 2, body: 'Better:\n```suggestion\nbee\n```\n' }] },
        }),
        201,
      );
      suggestion = (await comments()).find((c: any) => c.review_uuid === made.body.uuid);
      await assertRefused(t, 403, 'forbidden', 'POST', `${P()}/suggestions/apply`, {
        token: bob.token,
        body: { comment_uuids: [suggestion.uuid] },
      });
      await assertRefused(t, 400, 'invalid_request', 'POST', `${P()}/suggestions/apply`, {
        token: alice.token,
        body: { comment_uuids: [onRight.uuid] },
      });
      const before = (await g.run(['ls-remote', url(alice.token), 'refs/heads/feature'])).stdout.slice(0, 40);
      const applied = ok(
        await t.req('POST', `${P()}/suggestions/apply`, { token: alice.token, body: { comment_uuids: [suggestion.uuid] } }),
        200,
      );
      assert.equal(applied.body.branch, 'feature');
      const sha = applied.body.commit_sha;
      assert.equal((await g.run(['ls-remote', url(alice.token), 'refs/heads/feature'])).stdout.slice(0, 40), sha);
      await g.run(['-C', work, 'fetch', '-q', url(alice.token), 'feature']);
      assert.equal((await g.run(['-C', work, 'rev-parse', `${sha}^`])).stdout.trim(), before, 'one commit on the old head');
      assert.equal((await g.run(['-C', work, 'rev-list', '--count', `${before}..${sha}`])).stdout.trim(), '1');
      assert.equal((await g.run(['-C', work, 'show', `${sha}:s.txt`])).stdout, 'a\nbee\nc\n');
      assert.equal(
        (await g.run(['-C', work, 'show', `${sha}:app.txt`])).stdout,
        lines(80, { 5: 'LINE 5', 40: 'LINE 40', 60: 'LINE 60' }),
      );
      const changed = (await g.run(['-C', work, 'diff', '--name-only', before, sha])).stdout.trim();
      assert.equal(changed, 's.txt');
      const log = (await g.run(['-C', work, 'log', '-1', '--format=%an%n%B', sha])).stdout;
      assert.match(log, /^alice/);
      assert.match(log, /Apply suggestion from code review/);
      assert.match(log, new RegExp(`Co-authored-by: ${bob.username}`));
      assert.equal((await t.req('GET', P(), { token: alice.token })).body.head_sha, sha);
      const pushed = await eventResults(t, `repo:${(await t.req('GET', api)).body.uuid}`, alice.token, 'branch-pushed');
      assert.ok(pushed.some((e) => e.payload.after === sha && e.payload.before === before));
      // its lines changed: applying it again is refused
      await assertRefused(t, 409, 'suggestion_outdated', 'POST', `${P()}/suggestions/apply`, {
        token: alice.token,
        body: { comment_uuids: [suggestion.uuid] },
      });
      const now = (await comments()).find((c: any) => c.uuid === suggestion.uuid);
      assert.equal(now.position_outdated, true);
    });

    it('after a force push, a comment whose hunk changed is outdated; others move with their hunk', async () => {
      await g.run(['-C', work, 'checkout', '-q', '-B', 'feature', 'FETCH_HEAD']);
      writeFileSync(
        join(work, 'app.txt'),
        lines(80, { 5: 'LINE FIVE', 40: 'LINE 40', 60: 'LINE 60' }, { 20: ['new a', 'new b'] }),
      );
      await g.run(['-C', work, 'commit', '-q', '--amend', '-am', 'feature, again']);
      await g.run(['-C', work, 'push', '-q', '--force', url(alice.token), 'feature']);
      const byUuid = new Map<string, any>((await comments()).map((c: any) => [c.uuid, c]));
      const right = byUuid.get(onRight.uuid);
      assert.equal(right.position_outdated, true);
      assert.equal(right.commit_sha, pull.head_sha, 'it keeps its commit');
      assert.equal(right.original_line, 5);
      assert.equal(right.line, 5);
      const left = byUuid.get(onLeft.uuid);
      assert.deepEqual([left.position_outdated, left.line, left.original_line], [false, 40, 40]);
      const moved = byUuid.get(range.uuid);
      assert.deepEqual([moved.position_outdated, moved.start_line, moved.line, moved.original_line], [false, 59, 62, 60]);
      assert.equal(byUuid.get(reply.uuid).position_outdated, true, 'a reply follows its conversation');
    });

    it('resolved, the pull merges; the merged pull keeps its diff and its comments', async () => {
      for (const c of await comments(alice.token)) {
        if (c.in_reply_to === null) ok(await t.req('PUT', `${P()}/comments/${c.uuid}/resolution`, { token: alice.token }), 200);
      }
      ok(await t.req('POST', `${P()}/merge`, { token: alice.token, body: {} }), 200, 'merge');
      const files = ok(await t.req('GET', `${P()}/files`, { token: carol.token }), 200).body.results;
      assert.deepEqual(
        files.map((f: any) => f.path),
        ['app.txt', 's.txt'],
      );
      const diff = await t.req('GET', P(), { token: carol.token, headers: { accept: 'text/x-diff' } });
      assert.match(diff.text, /\+LINE FIVE/);
      assert.equal((await comments(carol.token)).length, 5);
      // a conversation can still be answered and deleted after the merge (by its author: the first takes its replies)
      ok(await t.req('POST', `${P()}/comments/${onLeft.uuid}/replies`, { token: carol.token, body: { body: 'late' } }), 201);
      ok(await t.req('DELETE', `${P()}/comments/${onLeft.uuid}`, { token: alice.token }), 204);
      assert.equal((await comments(carol.token)).length, 4);
      await assertRefused(t, 409, 'pull_merged', 'POST', `${P()}/suggestions/apply`, {
        token: alice.token,
        body: { comment_uuids: [suggestion.uuid] },
      });
    });
  });
}
