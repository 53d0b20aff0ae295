import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildWorld, openPull, type World } from './pulls-fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Browser, pageReq, signIn } from './web-helpers.ts';

/** The tracker's pages over HTTP (docs/tracker.md "Pages"): Issues tab, new-issue form, side bar, labels, milestones. */
for (const dialect of DIALECTS) {
  describe(`tracker pages (${dialect})`, () => {
    let t: TestApp;
    let w: World;
    let api: string;
    let page: string;
    let mnt: Browser;
    let mem: Browser;
    let rdr: Browser;
    before(async () => {
      t = await startApp(dialect);
      w = await buildWorld(t);
      api = w.teamPublic.base;
      page = `/teams/${w.team.slug}/r-public`;
      [mnt, mem, rdr] = await Promise.all([
        signIn(t, w.maintainer.username),
        signIn(t, w.member.username),
        signIn(t, w.reader.username),
      ]);
      for (const [name, color] of [
        ['bug', 'd73a4a'],
        ['docs', '0075ca'],
      ]) {
        const res = await t.req('POST', `${api}/labels`, { token: w.maintainer.token, body: { name, color } });
        assert.equal(res.status, 201, res.text);
      }
      assert.equal((await t.req('POST', `${api}/milestones`, { token: w.member.token, body: { title: 'v1' } })).status, 201);
    });
    after(async () => t.close());

    /** the page with its white space runs as one space (the templates wrap attributes) */
    const flat = (res: { status: number; text: string; headers: Record<string, unknown> }) => ({
      ...res,
      text: res.text.replace(/\s+/g, ' ').replace(/> </g, '><'),
    });
    const post = async (b: Browser, url: string, form: Record<string, string>) =>
      flat(await pageReq(t, 'POST', url, { cookie: b.cookie, form: { _csrf: b.csrf, ...form } }));
    const get = async (b: Browser, url: string) => flat(await pageReq(t, 'GET', url, { cookie: b.cookie }));

    it('creates an issue from the form with labels, assignees and a milestone; a refused form keeps what was typed', async () => {
      const form = await get(mem, `${page}/threads/new`);
      assert.equal(form.status, 200);
      assert.match(form.text, /name="labels" value="bug"/);
      assert.match(form.text, /<option value="1" ?>v1<\/option>/);
      const refused = await post(mem, `${page}/threads/new`, { title: 'Crash on save', body: 'Boom', assignees: 'nobody-here' });
      assert.equal(refused.status, 400, refused.text.slice(0, 300));
      assert.match(refused.text, /id="f-assignees-error"/);
      assert.match(refused.text, /value="Crash on save"/);
      assert.match(refused.text, /aria-invalid="true"/);
      const body = new URLSearchParams({ _csrf: mem.csrf, title: 'Crash on save', body: 'Boom @' + w.reader.username });
      body.append('labels', 'bug');
      body.append('labels', 'docs');
      body.set('assignees', w.member.username);
      body.set('milestone', '1');
      const made = await t.app.inject({
        method: 'POST',
        url: `${page}/threads/new`,
        headers: { cookie: mem.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        payload: body.toString(),
      });
      assert.equal(made.statusCode, 303, made.body);
      assert.equal(made.headers.location, `${page}/threads/1`);
      const th = (await t.req('GET', `${api}/threads/1`, { token: w.member.token })).body;
      assert.deepEqual(
        th.labels.map((l: { name: string }) => l.name),
        ['bug', 'docs'],
      );
      assert.deepEqual(
        th.assignees.map((a: { username: string }) => a.username),
        [w.member.username],
      );
      assert.equal(th.milestone.title, 'v1');
      // a reader's form has no tracking fields, and the service would refuse them anyway
      const readerForm = await get(rdr, `${page}/threads/new`);
      assert.doesNotMatch(readerForm.text, /name="labels"/);
    });

    it('lists issues with counts, filters (chips, query box), sorting and paging', async () => {
      for (let i = 0; i < 31; i++) {
        await t.req('POST', `${api}/threads`, { token: w.member.token, body: { title: `Chore ${i}` } });
      }
      await t.req('PATCH', `${api}/threads/2`, { token: w.member.token, body: { state: 'closed' } });
      const list = await get(mem, `${page}/threads`);
      assert.equal(list.status, 200);
      assert.match(list.text, /> ?31 Open ?</);
      assert.match(list.text, /> ?1 Closed ?</);
      assert.match(list.text, /rel="next"/);
      const byLabel = await get(mem, `${page}/threads?labels=bug`);
      assert.match(byLabel.text, /> ?1 Open ?</);
      assert.match(byLabel.text, /#1 Crash on save/);
      assert.doesNotMatch(byLabel.text, /Chore/);
      const box = await get(mem, `${page}/threads?box=${encodeURIComponent(`is:closed Chore`)}`);
      assert.match(box.text, /#2 Chore 0/);
      assert.doesNotMatch(box.text, /#3 Chore 1/);
      const boxed = await get(
        mem,
        `${page}/threads?box=${encodeURIComponent(`label:docs milestone:1 assignee:${w.member.username} author:${w.member.username}`)}`,
      );
      assert.match(boxed.text, /#1 Crash on save/);
      assert.match(boxed.text, /> ?1 Open ?</);
      const mentioned = await get(mem, `${page}/threads?mentioned=${w.reader.username}`);
      assert.match(mentioned.text, /#1 Crash on save/);
      assert.doesNotMatch(mentioned.text, /Chore/);
      const asc = await get(mem, `${page}/threads?sort=created&direction=asc`);
      assert.ok(asc.text.indexOf('#1 Crash on save') < asc.text.indexOf('#3 Chore 1'));
      // paging by keyset: the Next link carries `after`, and the next page follows the last thread shown
      const nextHref = /<a href="([^"]*after=[^"]*)" rel="next">/.exec(asc.text)?.[1];
      assert.ok(nextHref, 'a Next link with after=');
      const second = await get(mem, nextHref!.replace(/&amp;/g, '&'));
      assert.match(second.text, /#32 Chore 30/);
      assert.doesNotMatch(second.text, /#1 Crash on save/);
      assert.match(second.text, /First page/);
      const unknown = await get(mem, `${page}/threads?labels=nope`);
      assert.equal(unknown.status, 400);
      assert.match(unknown.text, /id="issue-box-error"/);
      assert.match(unknown.text, /value="is:open label:nope"/);
    });

    it('the API list pages by keyset: next carries after, every thread once, in order, with each sort', async () => {
      for (const sort of ['created', 'updated', 'replies']) {
        for (const direction of ['desc', 'asc']) {
          const seen: number[] = [];
          let url: string | null = `${api}/threads?state=all&per_page=7&sort=${sort}&direction=${direction}`;
          while (url) {
            const res = await t.req('GET', url, { token: w.member.token });
            assert.equal(res.status, 200, res.text);
            seen.push(...res.body.results.map((r: { number: number }) => r.number));
            url = res.body.next;
            if (url) assert.match(url, /after=/);
          }
          const all = await t.req('GET', `${api}/threads?state=all&per_page=100&sort=${sort}&direction=${direction}`, {
            token: w.member.token,
          });
          assert.deepEqual(
            seen,
            all.body.results.map((r: { number: number }) => r.number),
            `${sort} ${direction}`,
          );
        }
      }
      assert.equal((await t.req('GET', `${api}/threads?after=bogus`, { token: w.member.token })).status, 400);
    });

    it('sort=replies follows the stored reply count: a reply counts, a removed one no longer does', async () => {
      const first = async () =>
        (await t.req('GET', `${api}/threads?state=all&sort=replies&per_page=1`, { token: w.member.token })).body.results[0];
      const before = await first();
      const target = (await t.req('POST', `${api}/threads`, { token: w.member.token, body: { title: 'Chatty', body: '' } })).body;
      const replies = [];
      for (let i = 0; i <= before.reply_count; i++) {
        const r = await t.req('POST', `${api}/threads/${target.number}/replies`, {
          token: w.member.token,
          body: { body: `r${i}` },
        });
        assert.equal(r.status, 201, r.text);
        replies.push(r.body);
      }
      const top = await first();
      assert.equal(top.number, target.number);
      assert.equal(top.reply_count, before.reply_count + 1);
      const removed = await t.req('DELETE', `${api}/threads/${target.number}/replies/${replies[0].number}`, {
        token: w.member.token,
      });
      assert.equal(removed.status, 204, removed.text);
      const after = (await t.req('GET', `${api}/threads/${target.number}`, { token: w.member.token })).body;
      assert.equal(after.reply_count, before.reply_count);
    });

    it('the side bar: forms for write access only; labels, assignees, milestone, close with a reason, lock; the timeline shows them', async () => {
      const forMember = await get(mem, `${page}/threads/1`);
      for (const action of ['labels', 'assignees', 'milestone', 'state', 'lock']) {
        assert.match(forMember.text, new RegExp(`action="${page}/threads/1/${action}"`), action);
      }
      const forReader = await get(rdr, `${page}/threads/1`);
      assert.doesNotMatch(forReader.text, /action="[^"]*\/threads\/1\/(labels|assignees|milestone|state|lock)"/);
      assert.equal((await post(rdr, `${page}/threads/1/state`, { state: 'closed' })).status, 403);

      assert.equal((await post(mem, `${page}/threads/1/labels`, { labels: 'docs' })).status, 303);
      const bad = await post(mem, `${page}/threads/1/assignees`, { assignees: 'ghost-user' });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /id="side-assignees-error"/);
      assert.match(bad.text, /value="ghost-user"/);
      assert.equal((await post(mem, `${page}/threads/1/assignees`, { assignees: '' })).status, 303);
      assert.equal((await post(mem, `${page}/threads/1/milestone`, { milestone: '' })).status, 303);
      assert.equal((await post(mem, `${page}/threads/1/state`, { state: 'closed', state_reason: 'not_planned' })).status, 303);
      assert.equal((await post(mem, `${page}/threads/1/lock`, { locked: 'true' })).status, 303);
      const th = (await t.req('GET', `${api}/threads/1`, { token: w.member.token })).body;
      assert.equal(th.state, 'closed');
      assert.equal(th.state_reason, 'not_planned');
      assert.equal(th.locked, true);
      assert.deepEqual(
        th.labels.map((l: { name: string }) => l.name),
        ['docs'],
      );
      assert.deepEqual(th.assignees, []);
      assert.equal(th.milestone, null);
      const shown = await get(mem, `${page}/threads/1`);
      assert.match(shown.text, /removed the label/);
      assert.match(shown.text, /unassigned/);
      assert.match(shown.text, /removed this from the milestone v1/);
      assert.match(shown.text, /closed this as not planned/);
      assert.match(shown.text, /locked the conversation/);
      assert.match(shown.text, /Reopen issue/);
      assert.match(shown.text, /Unlock conversation/);
      // the reader sees no reply form on a locked thread
      assert.doesNotMatch((await get(rdr, `${page}/threads/1`)).text, /id="reply-body"/);
      // the author of a thread may close their own (state form only, no triage forms)
      const own = await t.req('POST', `${api}/threads`, { token: w.reader.token, body: { title: 'Mine' } });
      const mine = await get(rdr, `${page}/threads/${own.body.number}`);
      assert.match(mine.text, new RegExp(`action="${page}/threads/${own.body.number}/state"`));
      assert.doesNotMatch(mine.text, new RegExp(`action="${page}/threads/${own.body.number}/labels"`));
      assert.equal(
        (await post(rdr, `${page}/threads/${own.body.number}/state`, { state: 'closed', state_reason: 'duplicate' })).status,
        303,
      );
    });

    it('the pull page: requested reviewers and the draft switch for the author and write access, without JavaScript', async () => {
      const pull = await openPull(t, api, { token: w.member.token });
      const url = `${page}/pulls/${pull.number}`;
      const shown = await get(mem, url);
      assert.equal(shown.status, 200);
      assert.match(shown.text, /id="pull-side"/);
      assert.match(shown.text, /action="[^"]*\/pulls\/\d+\/requested-reviewers"/);
      assert.match(shown.text, /Convert to draft/);
      // a reader who is not the author sees the state, no form; the route refuses them as the API does
      const readerView = await get(rdr, url);
      assert.match(readerView.text, /id="pull-side"/);
      assert.doesNotMatch(readerView.text, /Convert to draft/);
      assert.doesNotMatch(readerView.text, /name="usernames"/);
      assert.equal((await post(rdr, `${url}/draft`, { draft: 'true' })).status, 403);
      // a refused request re-renders the page with the error beside the field and what was typed
      const refused = await post(mem, `${url}/requested-reviewers`, { usernames: w.member.username });
      assert.equal(refused.status, 400, refused.text.slice(0, 300));
      assert.match(refused.text, /id="side-reviewers-error"/);
      assert.match(refused.text, new RegExp(`value="${w.member.username}"`));
      const requested = await post(mem, `${url}/requested-reviewers`, {
        usernames: `@${w.reader.username}, ${w.maintainer.username}`,
      });
      assert.equal(requested.status, 303, requested.text.slice(0, 300));
      let json = (await t.req('GET', `${api}/pulls/${pull.number}`, { token: w.member.token })).body;
      assert.deepEqual(
        json.requested_reviewers.map((u: { username: string }) => u.username).sort(),
        [w.reader.username, w.maintainer.username].sort(),
      );
      const withdrawn = await post(mem, `${url}/requested-reviewers/remove`, { username: w.reader.username });
      assert.equal(withdrawn.status, 303);
      assert.equal((await post(mem, `${url}/draft`, { draft: 'true' })).status, 303);
      json = (await t.req('GET', `${api}/pulls/${pull.number}`, { token: w.member.token })).body;
      assert.equal(json.draft, true);
      assert.deepEqual(
        json.requested_reviewers.map((u: { username: string }) => u.username),
        [w.maintainer.username],
      );
      const drafted = await get(mem, url);
      assert.match(drafted.text, /Ready for review/);
      assert.match(drafted.text, /Withdraw request to/);
      assert.equal((await post(mem, `${url}/draft`, { draft: 'false' })).status, 303);
      json = (await t.req('GET', `${api}/pulls/${pull.number}`, { token: w.member.token })).body;
      assert.equal(json.draft, false);
    });

    it('labels page: list, create, edit, delete for maintainers; errors beside the field', async () => {
      const list = await get(mnt, `${page}/labels`);
      assert.equal(list.status, 200);
      assert.match(list.text, /fill="#d73a4a"/);
      assert.match(list.text, /contrast \d+\.\d:1/);
      assert.doesNotMatch((await get(mem, `${page}/labels`)).text, /Create label/);
      const bad = await post(mnt, `${page}/labels`, { name: 'ui', color: 'zzz', description: 'pages' });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /id="f-color-error"/);
      assert.match(bad.text, /value="pages"/);
      assert.equal((await post(mnt, `${page}/labels`, { name: 'ui', color: '#A2EEEF', description: 'pages' })).status, 303);
      const taken = await post(mnt, `${page}/labels`, { name: 'UI', color: 'a2eeef' });
      assert.equal(taken.status, 409);
      assert.equal((await post(mem, `${page}/labels`, { name: 'x', color: 'a2eeef' })).status, 403);
      assert.equal((await get(mnt, `${page}/labels/ui/edit`)).status, 200);
      assert.equal(
        (await post(mnt, `${page}/labels/ui/edit`, { name: 'frontend', color: '112233', description: '' })).status,
        303,
      );
      const label = (await t.req('GET', `${api}/labels/frontend`, { token: w.member.token })).body;
      assert.equal(label.color, '112233');
      assert.equal((await post(mnt, `${page}/labels/frontend/delete`, {})).status, 303);
      assert.equal((await t.req('GET', `${api}/labels/frontend`, { token: w.member.token })).status, 404);
    });

    it('milestones pages: list with progress, create, one milestone with its issues, close, delete', async () => {
      const bad = await post(mem, `${page}/milestones`, { title: 'v2', due_on: 'soon' });
      assert.equal(bad.status, 400);
      assert.match(bad.text, /id="f-due_on-error"/);
      const made = await post(mem, `${page}/milestones`, { title: 'v2', due_on: '2030-01-31', description: 'Next' });
      assert.equal(made.status, 303);
      assert.equal(made.headers.location, `${page}/milestones/2`);
      await t.req('PATCH', `${api}/threads/3`, { token: w.member.token, body: { milestone: 2 } });
      await t.req('PATCH', `${api}/threads/4`, { token: w.member.token, body: { milestone: 2, state: 'closed' } });
      const list = await get(rdr, `${page}/milestones`);
      assert.match(list.text, /50% complete/);
      assert.doesNotMatch(list.text, /Create milestone/);
      const one = await get(mem, `${page}/milestones/2`);
      assert.match(one.text, /#3 Chore 1/);
      assert.match(one.text, /#4 Chore 2/);
      assert.match(one.text, /Due 2030-01-31/);
      assert.equal((await post(mem, `${page}/milestones/2/state`, { state: 'closed' })).status, 303);
      assert.match((await get(mem, `${page}/milestones?state=closed`)).text, /v2/);
      assert.equal((await post(rdr, `${page}/milestones/2/delete`, {})).status, 403);
      assert.equal((await post(mem, `${page}/milestones/2/delete`, {})).status, 303);
      assert.equal((await get(mem, `${page}/milestones/2`)).status, 404);
    });
  });
}
