import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertRefused, eventResults } from './common.ts';
import { buildWorld, openPull, type World } from './pulls-fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';

/** The issue tracker on pulls (README "Issue tracker"): labels, assignees, milestone, drafts, review requests, timeline. */
for (const dialect of DIALECTS) {
  describe(`tracker: pulls (${dialect})`, () => {
    let t: TestApp;
    let w: World;
    before(async () => {
      t = await startApp(dialect);
      w = await buildWorld(t);
      for (const name of ['bug', 'ui']) {
        const res = await t.req('POST', `${w.teamPublic.base}/labels`, {
          token: w.maintainer.token,
          body: { name, color: '00aa00' },
        });
        assert.equal(res.status, 201, res.text);
      }
      await t.req('POST', `${w.teamPublic.base}/milestones`, { token: w.member.token, body: { title: 'v1' } });
    });
    after(async () => t.close());
    const pub = () => w.teamPublic.base;

    it('a pull carries labels, assignees, milestone, draft and requested reviewers; PUT sets them; events and timeline follow', async () => {
      const pull = await openPull(t, pub(), { token: w.member.token });
      assert.equal(pull.draft, false);
      assert.deepEqual(pull.labels, []);
      assert.deepEqual(pull.assignees, []);
      assert.equal(pull.milestone, null);
      assert.deepEqual(pull.requested_reviewers, []);
      const url = `${pub()}/pulls/${pull.number}`;
      await assertRefused(t, 403, 'forbidden', 'PUT', url, { token: w.reader.token, body: { labels: ['bug'] } });
      await assertRefused(t, 400, 'invalid_request', 'PUT', url, { token: w.member.token, body: { labels: ['nope'] } });
      await assertRefused(t, 400, 'invalid_request', 'PUT', url, {
        token: w.member.token,
        body: { assignees: [w.reader.username] },
      });
      const set = await t.req('PUT', url, {
        token: w.member.token,
        body: { labels: ['ui', 'bug'], assignees: [w.maintainer.username], milestone: 1, draft: true },
      });
      assert.equal(set.status, 200, set.text);
      assert.deepEqual(
        set.body.labels.map((l: { name: string }) => l.name),
        ['bug', 'ui'],
      );
      assert.deepEqual(
        set.body.assignees.map((a: { username: string }) => a.username),
        [w.maintainer.username],
      );
      assert.deepEqual(set.body.milestone, { number: 1, title: 'v1', state: 'open' });
      assert.equal(set.body.draft, true);
      const ms = await t.req('GET', `${pub()}/milestones/1`, { token: w.reader.token });
      assert.equal(ms.body.open_pulls, 1);

      const added = await t.req('POST', `${url}/labels`, { token: w.member.token, body: { names: ['bug'] } });
      assert.equal(added.status, 200, added.text);
      const removed = await t.req('DELETE', `${url}/labels/ui`, { token: w.member.token });
      assert.deepEqual(
        removed.body.labels.map((l: { name: string }) => l.name),
        ['bug'],
      );
      const unassigned = await t.req('DELETE', `${url}/assignees`, {
        token: w.member.token,
        body: { usernames: [w.maintainer.username] },
      });
      assert.deepEqual(unassigned.body.assignees, []);

      // a draft is not merged
      await assertRefused(t, 409, 'pull_is_draft', 'POST', `${url}/merge`, { token: w.maintainer.token, body: {} });
      const ready = await t.req('PUT', url, { token: w.member.token, body: { draft: false } });
      assert.equal(ready.body.draft, false);

      const kinds = (await eventResults(t, `pull:${pull.uuid}`)).map((e) => e.kind);
      assert.deepEqual(kinds, [
        'pull-opened',
        'pull-milestoned',
        'pull-labeled',
        'pull-labeled',
        'pull-assigned',
        'pull-converted-to-draft',
        'pull-unlabeled',
        'pull-unassigned',
        'pull-ready-for-review',
      ]);
      const tl = await t.req('GET', `${url}/timeline`, { token: w.outsider.token });
      assert.equal(tl.status, 200, tl.text);
      assert.deepEqual(
        tl.body.results.map((e: { kind: string }) => e.kind),
        ['milestoned', 'labeled', 'labeled', 'assigned', 'converted_to_draft', 'unlabeled', 'unassigned', 'ready_for_review'],
      );
      const merged = await t.req('POST', `${url}/merge`, { token: w.maintainer.token, body: {} });
      assert.equal(merged.status, 200, merged.text);
      const after = await t.req('GET', `${url}/timeline`, { token: w.outsider.token });
      assert.equal(after.body.results.at(-1).kind, 'merged');
    });

    it('opened as a draft; the author may mark it ready; others without write access may not', async () => {
      const res = await t.req('POST', `${pub()}/pulls`, {
        token: w.outsider.token,
        body: { title: 'WIP', body: '', source_branch: 'wip', target_branch: 'main', draft: true },
      });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.draft, true);
      const url = `${pub()}/pulls/${res.body.number}`;
      await assertRefused(t, 403, 'forbidden', 'PUT', url, { token: w.reader.token, body: { draft: false } });
      await assertRefused(t, 403, 'forbidden', 'PUT', url, { token: w.outsider.token, body: { labels: ['bug'] } });
      const ready = await t.req('PUT', url, { token: w.outsider.token, body: { draft: false } });
      assert.equal(ready.status, 200, ready.text);
      assert.equal(ready.body.draft, false);
    });

    it('review requests: the author or write access; readers only, never the author; a review ends the request', async () => {
      const pull = await openPull(t, pub(), { token: w.member.token });
      const url = `${pub()}/pulls/${pull.number}/requested-reviewers`;
      await assertRefused(t, 403, 'forbidden', 'POST', url, { token: w.reader.token, body: { usernames: [w.owner.username] } });
      await assertRefused(t, 400, 'invalid_request', 'POST', url, {
        token: w.member.token,
        body: { usernames: [w.member.username] },
      });
      await assertRefused(t, 400, 'invalid_request', 'POST', url, {
        token: w.member.token,
        body: { usernames: ['no-such-user'] },
      });
      const res = await t.req('POST', url, { token: w.member.token, body: { usernames: [w.reader.username, w.owner.username] } });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(
        res.body.requested_reviewers.map((u: { username: string }) => u.username),
        [w.owner.username, w.reader.username].sort(),
      );
      const listed = await t.req('GET', `${pub()}/pulls?review_requested=${w.reader.username}&state=all`, {
        token: w.reader.token,
      });
      assert.deepEqual(
        listed.body.results.map((p: { number: number }) => p.number),
        [pull.number],
      );
      const review = await t.req('POST', `${pub()}/pulls/${pull.number}/reviews`, {
        token: w.reader.token,
        body: { status: 'commented' },
      });
      assert.equal(review.status, 201, review.text);
      const got = await t.req('GET', `${pub()}/pulls/${pull.number}`, { token: w.reader.token });
      assert.deepEqual(
        got.body.requested_reviewers.map((u: { username: string }) => u.username),
        [w.owner.username],
      );
      const withdrawn = await t.req('DELETE', url, { token: w.maintainer.token, body: { usernames: [w.owner.username] } });
      assert.deepEqual(withdrawn.body.requested_reviewers, []);
      const tl = await t.req('GET', `${pub()}/pulls/${pull.number}/timeline`, { token: w.reader.token });
      assert.deepEqual(
        tl.body.results.map((e: { kind: string }) => e.kind),
        ['review_requested', 'review_requested', 'review', 'review_request_removed'],
      );
      const hook = await t.req('POST', `${pub()}/hooks`, {
        token: w.owner.token,
        body: { url: 'https://example.com/h', events: ['review-requested', 'pull-labeled', 'pull-ready-for-review'] },
      });
      assert.equal(hook.status, 201, hook.text);
    });

    it('concurrent additions of different labels to a pull all land', async () => {
      for (const n of ['p-a', 'p-b', 'p-c']) {
        await t.req('POST', `${pub()}/labels`, { token: w.maintainer.token, body: { name: n, color: '123456' } });
      }
      const pull = await openPull(t, pub(), { token: w.member.token });
      const url = `${pub()}/pulls/${pull.number}/labels`;
      const res = await Promise.all(
        ['p-a', 'p-b', 'p-c'].map((n) => t.req('POST', url, { token: w.member.token, body: { names: [n] } })),
      );
      for (const r of res) assert.equal(r.status, 200, r.text);
      const got = await t.req('GET', `${pub()}/pulls/${pull.number}`, { token: w.member.token });
      assert.deepEqual(
        got.body.labels.map((l: { name: string }) => l.name),
        ['p-a', 'p-b', 'p-c'],
      );
    });

    it('pull list filters: labels, draft, author, milestone, state; unknown values 400; without them the former list', async () => {
      const base = `${pub()}/pulls`;
      const drafts = await t.req('GET', `${base}?draft=true&state=all`, { token: w.reader.token });
      assert.equal(drafts.status, 200, drafts.text);
      assert.ok(drafts.body.results.every((p: { draft: boolean }) => p.draft));
      const bug = await t.req('GET', `${base}?labels=bug&state=all`, { token: w.reader.token });
      assert.ok(bug.body.results.length >= 1);
      assert.ok(bug.body.results.every((p: { labels: Array<{ name: string }> }) => p.labels.some((l) => l.name === 'bug')));
      const byAuthor = await t.req('GET', `${base}?author=${w.outsider.username}&state=all`, { token: w.reader.token });
      assert.ok(byAuthor.body.results.every((p: { author_username: string }) => p.author_username === w.outsider.username));
      const closed = await t.req('GET', `${base}?state=closed`, { token: w.reader.token });
      assert.ok(closed.body.results.every((p: { status: string }) => p.status !== 'open'));
      const ms = await t.req('GET', `${base}?milestone=1&state=all`, { token: w.reader.token });
      assert.equal(ms.body.results.length, 1);
      for (const q of [
        'draft=maybe',
        'state=shut',
        'labels=nope',
        'author=nobody-here',
        'milestone=x',
        'sort=size',
        'review_requested=ghost',
      ]) {
        await assertRefused(t, 400, 'invalid_request', 'GET', `${base}?${q}`, { token: w.reader.token });
      }
      const legacy = await t.req('GET', base, { token: w.reader.token });
      const numbers = legacy.body.results.map((p: { number: number }) => p.number);
      assert.deepEqual(
        numbers,
        [...numbers].sort((a: number, b: number) => a - b),
      );
    });
  });
}
