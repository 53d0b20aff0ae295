import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertRefused, eventResults } from './common.ts';
import { buildWorld, type World } from './pulls-fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';

/** The issue tracker (README "Issue tracker"): state, lock, labels, milestones, assignees, timeline. */
for (const dialect of DIALECTS) {
  describe(`tracker: state, lock, labels, milestones, assignees (${dialect})`, () => {
    let t: TestApp;
    let w: World;
    before(async () => {
      t = await startApp(dialect);
      w = await buildWorld(t);
    });
    after(async () => t.close());

    const pub = () => w.teamPublic.base;
    const open = async (token: string, title = 'A bug', extra: Record<string, unknown> = {}) => {
      const res = await t.req('POST', `${pub()}/threads`, { token, body: { title, body: 'It breaks', ...extra } });
      assert.equal(res.status, 201, res.text);
      return res.body;
    };
    const patch = (n: number, token: string, body: Record<string, unknown>) =>
      t.req('PATCH', `${pub()}/threads/${n}`, { token, body });
    const label = async (name: string, color = 'ff0000') => {
      const res = await t.req('POST', `${pub()}/labels`, { token: w.maintainer.token, body: { name, color } });
      assert.equal(res.status, 201, res.text);
      return res.body;
    };

    it('a new thread is open, unlocked, unlabelled; the author closes and reopens it with a reason; events and timeline follow', async () => {
      const th = await open(w.outsider.token);
      assert.equal(th.state, 'open');
      assert.equal(th.state_reason, null);
      assert.equal(th.closed_at, null);
      assert.equal(th.closed_by, null);
      assert.deepEqual(th.labels, []);
      assert.deepEqual(th.assignees, []);
      assert.equal(th.milestone, null);
      assert.equal(th.locked, false);

      const closed = await patch(th.number, w.outsider.token, { state: 'closed', state_reason: 'not_planned' });
      assert.equal(closed.status, 200, closed.text);
      assert.equal(closed.body.state, 'closed');
      assert.equal(closed.body.state_reason, 'not_planned');
      assert.ok(closed.body.closed_at);
      assert.deepEqual(closed.body.closed_by, { username: w.outsider.username, pull_number: null, commit_sha: null });

      const reopened = await patch(th.number, w.outsider.token, { state: 'open' });
      assert.equal(reopened.status, 200, reopened.text);
      assert.equal(reopened.body.state, 'open');
      assert.equal(reopened.body.state_reason, null);
      assert.equal(reopened.body.closed_by, null);

      const byDefault = await patch(th.number, w.member.token, { state: 'closed' });
      assert.equal(byDefault.body.state_reason, 'completed');
      assert.deepEqual(byDefault.body.closed_by.username, w.member.username);

      const kinds = (await eventResults(t, `thread:${th.uuid}`)).map((e) => e.kind);
      assert.deepEqual(kinds, ['thread-created', 'thread-closed', 'thread-reopened', 'thread-closed']);
      const inRepo = await eventResults(t, `repo:${w.teamPublic.uuid}`, undefined, 'thread-closed');
      assert.ok(inRepo.some((e) => e.payload.thread_uuid === th.uuid && e.payload.state_reason === 'not_planned'));

      const tl = await t.req('GET', `${pub()}/threads/${th.number}/timeline`, { token: w.outsider.token });
      assert.equal(tl.status, 200, tl.text);
      assert.deepEqual(
        tl.body.results.map((e: { kind: string }) => e.kind),
        ['closed', 'reopened', 'closed'],
      );
      assert.equal(tl.body.results[0].state_reason, 'not_planned');
      assert.equal(tl.body.results[0].actor.username, w.outsider.username);
    });

    it('state permissions: others need write access; bad state input is 400 and changes nothing', async () => {
      const th = await open(w.member.token);
      const url = `${pub()}/threads/${th.number}`;
      await assertRefused(t, 403, 'forbidden', 'PATCH', url, { token: w.outsider.token, body: { state: 'closed' } });
      await assertRefused(t, 403, 'forbidden', 'PATCH', url, { token: w.reader.token, body: { state: 'closed' } });
      await assertRefused(t, 400, 'invalid_request', 'PATCH', url, {
        token: w.member.token,
        body: { state_reason: 'duplicate' },
      });
      await assertRefused(t, 400, 'invalid_request', 'PATCH', url, { token: w.member.token, body: { state: 'shut' } });
      await assertRefused(t, 400, 'invalid_request', 'PATCH', url, {
        token: w.member.token,
        body: { state: 'closed', state_reason: 'wontfix' },
      });
      const ok = await patch(th.number, w.maintainer.token, { state: 'closed', state_reason: 'duplicate' });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.state_reason, 'duplicate');
      // a private repo's thread is 404 to an outsider
      const priv = await t.req('POST', `${w.teamPrivate.base}/threads`, { token: w.member.token, body: { title: 'Secret' } });
      await assertRefused(t, 404, 'not_found', 'PATCH', `${w.teamPrivate.base}/threads/${priv.body.number}`, {
        token: w.outsider.token,
        body: { state: 'closed' },
      });
    });

    it('lock: write access locks; a locked thread refuses replies from others with 403 thread_locked', async () => {
      const th = await open(w.outsider.token);
      await assertRefused(t, 403, 'forbidden', 'PATCH', `${pub()}/threads/${th.number}`, {
        token: w.outsider.token,
        body: { locked: true },
      });
      const locked = await patch(th.number, w.member.token, { locked: true });
      assert.equal(locked.status, 200, locked.text);
      assert.equal(locked.body.locked, true);
      await assertRefused(t, 403, 'thread_locked', 'POST', `${pub()}/threads/${th.number}/replies`, {
        token: w.outsider.token,
        body: { body: 'let me in' },
      });
      await assertRefused(t, 403, 'thread_locked', 'POST', `${pub()}/threads/${th.number}/replies`, {
        token: w.reader.token,
        body: { body: 'me too' },
      });
      const byWriter = await t.req('POST', `${pub()}/threads/${th.number}/replies`, {
        token: w.member.token,
        body: { body: 'noted' },
      });
      assert.equal(byWriter.status, 201, byWriter.text);
      const unlocked = await patch(th.number, w.maintainer.token, { locked: false });
      assert.equal(unlocked.body.locked, false);
      const again = await t.req('POST', `${pub()}/threads/${th.number}/replies`, {
        token: w.outsider.token,
        body: { body: 'thanks' },
      });
      assert.equal(again.status, 201, again.text);
      const kinds = (await eventResults(t, `thread:${th.uuid}`)).map((e) => e.kind);
      assert.deepEqual(kinds, ['thread-created', 'thread-locked', 'reply-created', 'thread-unlocked', 'reply-created']);
      const tl = await t.req('GET', `${pub()}/threads/${th.number}/timeline`, { token: w.outsider.token });
      assert.deepEqual(
        tl.body.results.map((e: { kind: string }) => e.kind),
        ['locked', 'reply', 'unlocked', 'reply'],
      );
    });

    it('labels: create, list, get, rename (kept on threads), delete (off every thread); validation and permissions', async () => {
      const bug = await label('bug');
      assert.deepEqual(Object.keys(bug).sort(), ['color', 'created_at', 'description', 'name', 'scope', 'uuid']);
      assert.equal(bug.scope, 'repo');
      await assertRefused(t, 409, 'conflict', 'POST', `${pub()}/labels`, {
        token: w.maintainer.token,
        body: { name: 'BUG', color: '00ff00' },
      });
      for (const body of [
        { name: 'a,b', color: '000000' },
        { name: 'x', color: '#00000' },
        { name: 'x', color: 'zzzzzz' },
        { name: '', color: '000000' },
        { name: 'x'.repeat(51), color: '000000' },
        { name: 'x', color: '000000', description: 'd'.repeat(201) },
        { name: 'x', color: '000000', extra: 1 },
      ]) {
        await assertRefused(t, 400, 'invalid_request', 'POST', `${pub()}/labels`, { token: w.maintainer.token, body });
      }
      await assertRefused(t, 403, 'forbidden', 'POST', `${pub()}/labels`, {
        token: w.member.token,
        body: { name: 'x', color: '000000' },
      });
      await assertRefused(t, 404, 'not_found', 'POST', `${w.teamPrivate.base}/labels`, {
        token: w.outsider.token,
        body: { name: 'x', color: '000000' },
      });
      const th = await open(w.member.token, 'Labelled', { labels: ['Bug'] });
      assert.deepEqual(
        th.labels.map((l: { name: string }) => l.name),
        ['bug'],
      );
      const renamed = await t.req('PATCH', `${pub()}/labels/bug`, {
        token: w.maintainer.token,
        body: { name: 'defect', color: 'ABCDEF' },
      });
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal(renamed.body.color, 'abcdef');
      const got = await t.req('GET', `${pub()}/threads/${th.number}`, { token: w.outsider.token });
      assert.deepEqual(got.body.labels, [{ uuid: bug.uuid, name: 'defect', color: 'abcdef' }]);
      assert.equal((await t.req('GET', `${pub()}/labels/DEFECT`, { token: w.outsider.token })).body.uuid, bug.uuid);
      const list = await t.req('GET', `${pub()}/labels`, { token: w.outsider.token });
      assert.ok(list.body.results.some((l: { name: string }) => l.name === 'defect'));
      const del = await t.req('DELETE', `${pub()}/labels/defect`, { token: w.maintainer.token });
      assert.equal(del.status, 204);
      assert.deepEqual((await t.req('GET', `${pub()}/threads/${th.number}`, { token: w.outsider.token })).body.labels, []);
      const kinds = (await eventResults(t, `repo:${w.teamPublic.uuid}`)).map((e) => e.kind);
      for (const k of ['label-created', 'label-updated', 'label-deleted', 'thread-labeled']) assert.ok(kinds.includes(k), k);
    });

    it('team labels: usable in every repo of the team; a clash with a repo label is 409 both ways; team owners write', async () => {
      const teamBase = `/api/v1/teams/${w.team.slug}/labels`;
      await assertRefused(t, 403, 'forbidden', 'POST', teamBase, {
        token: w.maintainer.token,
        body: { name: 'team-x', color: '111111' },
      });
      await assertRefused(t, 404, 'not_found', 'POST', teamBase, {
        token: w.outsider.token,
        body: { name: 'team-x', color: '111111' },
      });
      const created = await t.req('POST', teamBase, {
        token: w.owner.token,
        body: { name: 'priority', color: '111111', description: 'soon' },
      });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.scope, 'team');
      await assertRefused(t, 409, 'conflict', 'POST', `${w.teamPrivate.base}/labels`, {
        token: w.maintainer.token,
        body: { name: 'Priority', color: '000000' },
      });
      await label('repo-only');
      await assertRefused(t, 409, 'conflict', 'POST', teamBase, {
        token: w.owner.token,
        body: { name: 'REPO-ONLY', color: '000000' },
      });
      // usable on a thread of either team repo
      const th = await open(w.member.token, 'Team label', { labels: ['priority', 'repo-only'] });
      assert.deepEqual(
        th.labels.map((l: { name: string }) => l.name),
        ['priority', 'repo-only'],
      );
      const repoList = await t.req('GET', `${w.teamPrivate.base}/labels`, { token: w.reader.token });
      assert.ok(repoList.body.results.some((l: { name: string; scope: string }) => l.name === 'priority' && l.scope === 'team'));
      // a team label is not changed through a repo path
      await assertRefused(t, 403, 'forbidden', 'DELETE', `${pub()}/labels/priority`, { token: w.maintainer.token });
      const teamEvents = (await eventResults(t, `team:${w.team.uuid}`, undefined, 'label-created')).map(
        (e) => e.payload.team_uuid,
      );
      assert.ok(teamEvents.includes(w.team.uuid));
    });

    it('labels and assignees on threads: PATCH replaces, POST/DELETE add and remove; unknown names and non-writers are 400; limits', async () => {
      await label('l-one');
      await label('l-two');
      const th = await open(w.outsider.token, 'Triage me');
      const url = `${pub()}/threads/${th.number}`;
      await assertRefused(t, 403, 'forbidden', 'POST', `${url}/labels`, { token: w.outsider.token, body: { names: ['l-one'] } });
      await assertRefused(t, 400, 'invalid_request', 'POST', `${url}/labels`, {
        token: w.member.token,
        body: { names: ['nope'] },
      });
      const res400 = await t.req('PATCH', url, { token: w.member.token, body: { labels: ['l-one', 'missing'] } });
      assert.equal(res400.status, 400);
      assert.match(res400.body.detail, /missing/);
      await assertRefused(t, 400, 'invalid_request', 'PATCH', url, {
        token: w.member.token,
        body: { assignees: [w.reader.username] },
      });
      await assertRefused(t, 400, 'invalid_request', 'PATCH', url, {
        token: w.member.token,
        body: { assignees: [w.outsider.username] },
      });
      await assertRefused(t, 400, 'invalid_request', 'PATCH', url, {
        token: w.member.token,
        body: { assignees: Array.from({ length: 11 }, (_, i) => `u${i}`) },
      });
      await assertRefused(t, 400, 'invalid_request', 'PATCH', url, {
        token: w.member.token,
        body: { labels: Array.from({ length: 51 }, (_, i) => `l${i}`) },
      });
      const set = await t.req('PATCH', url, {
        token: w.member.token,
        body: { labels: ['l-two', 'l-one'], assignees: [w.member.username, w.maintainer.username] },
      });
      assert.equal(set.status, 200, set.text);
      assert.deepEqual(
        set.body.labels.map((l: { name: string }) => l.name),
        ['l-one', 'l-two'],
      );
      assert.deepEqual(
        set.body.assignees.map((a: { username: string }) => a.username),
        [w.member.username, w.maintainer.username].sort(),
      );
      const replaced = await t.req('PATCH', url, { token: w.member.token, body: { labels: ['l-two'], assignees: [] } });
      assert.deepEqual(
        replaced.body.labels.map((l: { name: string }) => l.name),
        ['l-two'],
      );
      assert.deepEqual(replaced.body.assignees, []);
      const added = await t.req('POST', `${url}/labels`, { token: w.member.token, body: { names: ['l-one'] } });
      assert.equal(added.status, 200, added.text);
      assert.equal(added.body.labels.length, 2);
      const removed = await t.req('DELETE', `${url}/labels/L-TWO`, { token: w.member.token });
      assert.equal(removed.status, 200, removed.text);
      assert.deepEqual(
        removed.body.labels.map((l: { name: string }) => l.name),
        ['l-one'],
      );
      await assertRefused(t, 404, 'not_found', 'DELETE', `${url}/labels/never-was`, { token: w.member.token });
      const assigned = await t.req('POST', `${url}/assignees`, {
        token: w.member.token,
        body: { usernames: [w.owner.username] },
      });
      assert.equal(assigned.status, 200, assigned.text);
      assert.deepEqual(
        assigned.body.assignees.map((a: { username: string }) => a.username),
        [w.owner.username],
      );
      const unassigned = await t.req('DELETE', `${url}/assignees`, {
        token: w.member.token,
        body: { usernames: [w.owner.username] },
      });
      assert.deepEqual(unassigned.body.assignees, []);
      const kinds = (await eventResults(t, `thread:${th.uuid}`)).map((e) => e.kind);
      assert.deepEqual(kinds, [
        'thread-created',
        'thread-labeled',
        'thread-labeled',
        'thread-assigned',
        'thread-assigned',
        'thread-unlabeled',
        'thread-unassigned',
        'thread-unassigned',
        'thread-labeled',
        'thread-unlabeled',
        'thread-assigned',
        'thread-unassigned',
      ]);
      const tl = await t.req('GET', `${pub()}/threads/${th.number}/timeline?per_page=100`, { token: w.outsider.token });
      assert.equal(tl.body.results[0].kind, 'labeled');
      assert.equal(tl.body.results[0].label.name, 'l-one');
      assert.equal(tl.body.results[2].kind, 'assigned');
      assert.ok(tl.body.results[2].assignee.username);
    });

    it('concurrent additions of different labels and assignees all land', async () => {
      const names = ['race-a', 'race-b', 'race-c', 'race-d'];
      for (const n of names) await label(n);
      const th = await open(w.member.token, 'Race');
      const url = `${pub()}/threads/${th.number}`;
      const results = await Promise.all([
        ...names.map((n) => t.req('POST', `${url}/labels`, { token: w.member.token, body: { names: [n] } })),
        t.req('POST', `${url}/assignees`, { token: w.member.token, body: { usernames: [w.member.username] } }),
        t.req('POST', `${url}/assignees`, { token: w.maintainer.token, body: { usernames: [w.owner.username] } }),
      ]);
      for (const r of results) assert.equal(r.status, 200, r.text);
      const got = await t.req('GET', url, { token: w.member.token });
      assert.deepEqual(
        got.body.labels.map((l: { name: string }) => l.name),
        names,
      );
      assert.equal(got.body.assignees.length, 2);
      assert.equal((await eventResults(t, `thread:${th.uuid}`, undefined, 'thread-labeled')).length, 4);
    });

    it('milestones: numbered, unique titles, live counts, close, delete clears threads; permissions', async () => {
      const base = `${pub()}/milestones`;
      await assertRefused(t, 403, 'forbidden', 'POST', base, { token: w.reader.token, body: { title: 'v1' } });
      for (const body of [
        {},
        { title: '' },
        { title: 'x'.repeat(257) },
        { title: 'ok', due_on: 'soon' },
        { title: 'ok', extra: 1 },
      ]) {
        await assertRefused(t, 400, 'invalid_request', 'POST', base, { token: w.member.token, body });
      }
      const v1 = await t.req('POST', base, {
        token: w.member.token,
        body: { title: 'v1', due_on: '2027-01-31', description: 'first' },
      });
      assert.equal(v1.status, 201, v1.text);
      assert.deepEqual(Object.keys(v1.body).sort(), [
        'closed_at',
        'closed_pulls',
        'closed_threads',
        'created_at',
        'description',
        'due_on',
        'number',
        'open_pulls',
        'open_threads',
        'state',
        'title',
        'uuid',
      ]);
      const v2 = await t.req('POST', base, { token: w.member.token, body: { title: 'v2' } });
      assert.equal(v2.body.number, v1.body.number + 1);
      await assertRefused(t, 409, 'conflict', 'POST', base, { token: w.member.token, body: { title: 'V1' } });
      const a = await open(w.member.token, 'In v1', { milestone: v1.body.number });
      assert.deepEqual(a.milestone, { number: v1.body.number, title: 'v1', state: 'open' });
      const b = await open(w.member.token, 'Also v1');
      await assertRefused(t, 400, 'invalid_request', 'PATCH', `${pub()}/threads/${b.number}`, {
        token: w.member.token,
        body: { milestone: 999 },
      });
      await patch(b.number, w.member.token, { milestone: v1.body.number, state: 'closed' });
      const counted = await t.req('GET', `${base}/${v1.body.number}`, { token: w.outsider.token });
      assert.equal(counted.body.open_threads, 1);
      assert.equal(counted.body.closed_threads, 1);
      const moved = await patch(a.number, w.member.token, { milestone: v2.body.number });
      assert.equal(moved.body.milestone.title, 'v2');
      const tl = await t.req('GET', `${pub()}/threads/${a.number}/timeline`, { token: w.outsider.token });
      assert.deepEqual(
        tl.body.results.map((e: { kind: string }) => e.kind),
        ['milestoned', 'demilestoned', 'milestoned'],
      );
      const closed = await t.req('PATCH', `${base}/${v1.body.number}`, { token: w.member.token, body: { state: 'closed' } });
      assert.equal(closed.body.state, 'closed');
      assert.ok(closed.body.closed_at);
      const openList = await t.req('GET', base, { token: w.outsider.token });
      assert.deepEqual(
        openList.body.results.map((m: { title: string }) => m.title),
        ['v2'],
      );
      const all = await t.req('GET', `${base}?state=all&sort=title`, { token: w.outsider.token });
      assert.deepEqual(
        all.body.results.map((m: { title: string }) => m.title),
        ['v1', 'v2'],
      );
      await assertRefused(t, 400, 'invalid_request', 'GET', `${base}?state=maybe`, { token: w.outsider.token });
      assert.equal((await t.req('DELETE', `${base}/${v2.body.number}`, { token: w.member.token })).status, 204);
      assert.equal((await t.req('GET', `${pub()}/threads/${a.number}`, { token: w.member.token })).body.milestone, null);
      const kinds = (await eventResults(t, `repo:${w.teamPublic.uuid}`)).map((e) => e.kind);
      for (const k of ['milestone-created', 'milestone-closed', 'milestone-deleted']) assert.ok(kinds.includes(k), k);
    });

    it('the new kinds are subscribable by webhooks', async () => {
      const res = await t.req('POST', `${pub()}/hooks`, {
        token: w.owner.token,
        body: {
          url: 'https://example.com/hook',
          events: ['thread-closed', 'thread-labeled', 'label-created', 'milestone-closed'],
        },
      });
      assert.equal(res.status, 201, res.text);
    });
  });
}
