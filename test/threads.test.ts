import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildWorld, eventsOf, setRepoFlags, type World } from './pulls-fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';

const THREAD_KEYS = [
  'assignees',
  'author_username',
  'author_uuid',
  'body',
  'body_html',
  'closed_at',
  'closed_by',
  'created_at',
  'labels',
  'locked',
  'milestone',
  'number',
  'removed_at',
  'reply_count',
  'repo_uuid',
  'state',
  'state_reason',
  'title',
  'updated_at',
  'uuid',
];
const REPLY_KEYS = [
  'author_username',
  'author_uuid',
  'body',
  'body_html',
  'created_at',
  'kind',
  'links',
  'number',
  'removed_at',
  'status',
  'thread_number',
  'thread_uuid',
  'updated_at',
  'uuid',
  'version',
];

for (const dialect of DIALECTS) {
  describe(`threads and replies (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(dialect);
    });
    after(async () => t.close());

    for (const form of ['team', 'user'] as const) {
      describe(`${form} form`, () => {
        let w: World;
        before(async () => {
          w = await buildWorld(t);
        });
        const base = () => (form === 'team' ? w.teamPrivate.base : w.userPrivate.base);
        const repoUuid = () => (form === 'team' ? w.teamPrivate.uuid : w.userPrivate.uuid);
        /** can write in this form's private repo */
        const writer = () => (form === 'team' ? w.member : w.solo);
        /** reads only (team reader); the user form has no reader, staff stand in for maintain level */
        const maint = () => (form === 'team' ? w.maintainer : w.staff);

        const newThread = async (token = writer().token, title = 'A topic') => {
          const res = await t.req('POST', `${base()}/threads`, {
            token,
            body: { title, body: 'Hello **there** @' + w.owner.username },
          });
          assert.equal(res.status, 201, res.text);
          return res.body;
        };
        const newReply = async (n: number, body: Record<string, unknown> = { body: 'first' }, token = writer().token) => {
          const res = await t.req('POST', `${base()}/threads/${n}/replies`, { token, body });
          assert.equal(res.status, 201, res.text);
          return res.body;
        };

        it('creates, lists, gets and numbers threads; body_html is sanitised Markdown with @mentions linked', async () => {
          const res = await t.req('POST', `${base()}/threads`, {
            token: writer().token,
            body: { title: '  Spaced  ', body: `Hi @${w.owner.username} <script>alert(1)</script> [x](javascript:alert(1))` },
          });
          assert.equal(res.status, 201, res.text);
          const th = res.body;
          assert.deepEqual(Object.keys(th).sort(), THREAD_KEYS);
          assert.equal(th.title, 'Spaced');
          assert.equal(th.repo_uuid, repoUuid());
          assert.equal(th.author_username, writer().username);
          assert.equal(th.reply_count, 0);
          assert.equal(th.removed_at, null);
          assert.match(th.body_html, new RegExp(`<a href="/users/${w.owner.username}"[^>]*>@${w.owner.username}</a>`));
          assert.doesNotMatch(th.body_html, /<script|href="javascript:/);
          const second = await newThread();
          assert.equal(second.number, th.number + 1);
          const got = await t.req('GET', `${base()}/threads/${th.number}`, { token: writer().token });
          assert.deepEqual(got.body, th);
          const list = await t.req('GET', `${base()}/threads?per_page=1&direction=asc`, { token: writer().token });
          assert.equal(list.status, 200);
          assert.equal(list.body.results.length, 1);
          assert.equal(list.body.results[0].number, 1);
          assert.ok(list.body.next);
          const ev = await eventsOf(t, `thread:${th.uuid}`);
          assert.deepEqual(
            ev.body.results.map((e: { kind: string }) => e.kind),
            ['thread-created'],
          );
          assert.ok(ev.body.results[0].scopes.includes(`repo:${repoUuid()}`));
        });

        it('refuses bad thread input with 400 and stores nothing', async () => {
          const before = (await t.req('GET', `${base()}/threads?per_page=100`)).body.results.length;
          for (const body of [
            {},
            { title: '' },
            { title: '   ' },
            { title: 'x'.repeat(257) },
            { title: 5 },
            { title: 'ok', body: 'x'.repeat(65_537) },
            { title: 'ok', extra: 1 },
          ]) {
            const res = await t.req('POST', `${base()}/threads`, { token: writer().token, body });
            assert.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
            assert.ok(isErrorBody(res.body, 'invalid_request'));
          }
          assert.equal((await t.req('GET', `${base()}/threads?per_page=100`)).body.results.length, before);
          assert.equal((await t.req('GET', `${base()}/threads/abc`)).status, 400);
          assert.equal((await t.req('GET', `${base()}/threads/0`)).status, 400);
          assert.equal((await t.req('GET', `${base()}/threads/99999`)).status, 404);
        });

        it('edits a thread: author or maintain level; omitted fields stay', async () => {
          const th = await newThread();
          const res = await t.req('PATCH', `${base()}/threads/${th.number}`, { token: writer().token, body: { title: 'New' } });
          assert.equal(res.status, 200, res.text);
          assert.equal(res.body.title, 'New');
          assert.equal(res.body.body, th.body);
          assert.ok(res.body.updated_at >= th.updated_at);
          const byMaint = await t.req('PATCH', `${base()}/threads/${th.number}`, { token: maint().token, body: { body: 'mod' } });
          assert.equal(byMaint.status, 200);
          if (form === 'team') {
            const other = await t.req('PATCH', `${base()}/threads/${th.number}`, { token: w.reader.token, body: { title: 'x' } });
            assert.equal(other.status, 403);
          }
          assert.equal(
            (await t.req('PATCH', `${base()}/threads/${th.number}`, { token: w.outsider.token, body: { title: 'x' } })).status,
            404,
          );
          assert.equal(
            (await t.req('PATCH', `${base()}/threads/${th.number}`, { token: writer().token, body: { nope: 1 } })).status,
            400,
          );
          const ev = await eventsOf(t, `thread:${th.uuid}`);
          assert.deepEqual(
            ev.body.results.map((e: { kind: string }) => e.kind),
            ['thread-created', 'thread-updated', 'thread-updated'],
          );
        });

        it('concurrent edits of one reply each become a version (serialised on the reply row)', async () => {
          const th = await newThread();
          await newReply(th.number, { body: 'v1' });
          const url = `${base()}/threads/${th.number}/replies/1`;
          const edits = await Promise.all(
            Array.from({ length: 20 }, (_, i) => t.req('PATCH', url, { token: writer().token, body: { body: `edit ${i}` } })),
          );
          assert.deepEqual(
            edits.map((r) => r.status),
            Array(20).fill(200),
            edits.map((r) => r.text).join('\n'),
          );
          assert.deepEqual(
            edits.map((r) => r.body.version).sort((a: number, b: number) => a - b),
            Array.from({ length: 20 }, (_, i) => i + 2),
          );
          const versions = await t.req('GET', `${url}/versions?per_page=100`, { token: writer().token });
          assert.equal(versions.status, 200);
          assert.equal(versions.body.results.length, 21);
          const bodies = versions.body.results
            .slice(1)
            .map((v: { body: string }) => v.body)
            .sort();
          assert.deepEqual(bodies, Array.from({ length: 20 }, (_, i) => `edit ${i}`).sort());
        });

        it('replies: create, get, list; PATCH keeps omitted fields, replaces links, records full versions', async () => {
          const th = await newThread();
          const r = await newReply(th.number, {
            body: 'first *draft*',
            kind: 'question',
            links: [
              { kind: 'url', target: 'https://example.com' },
              { kind: 'pull', target: '1' },
            ],
          });
          assert.deepEqual(Object.keys(r).sort(), REPLY_KEYS);
          assert.equal(r.number, 1);
          assert.equal(r.version, 1);
          assert.equal(r.status, 'open');
          assert.equal(r.kind, 'question');
          assert.equal(r.body_html, '<p>first <em>draft</em></p>\n');
          const edited = await t.req('PATCH', `${base()}/threads/${th.number}/replies/1`, {
            token: writer().token,
            body: { status: 'resolved', links: [{ kind: 'commit', target: 'abc123' }] },
          });
          assert.equal(edited.status, 200, edited.text);
          assert.equal(edited.body.version, 2);
          assert.equal(edited.body.body, 'first *draft*');
          assert.equal(edited.body.kind, 'question');
          assert.equal(edited.body.status, 'resolved');
          assert.deepEqual(edited.body.links, [{ kind: 'commit', target: 'abc123' }]);
          assert.equal(edited.body.created_at, r.created_at);
          assert.ok(edited.body.updated_at >= r.created_at);
          const again = await t.req('PATCH', `${base()}/threads/${th.number}/replies/1`, {
            token: maint().token,
            body: { body: 'final' },
          });
          assert.equal(again.body.version, 3);
          assert.deepEqual(again.body.links, [{ kind: 'commit', target: 'abc123' }]);
          // a PATCH that changes nothing stores no version
          const same = await t.req('PATCH', `${base()}/threads/${th.number}/replies/1`, {
            token: writer().token,
            body: { body: 'final' },
          });
          assert.equal(same.body.version, 3);
          const versions = await t.req('GET', `${base()}/threads/${th.number}/replies/1/versions`, { token: writer().token });
          assert.equal(versions.status, 200);
          assert.deepEqual(
            versions.body.results.map((v: { version: number; body: string; status: string; links: unknown[] }) => [
              v.version,
              v.body,
              v.status,
              v.links.length,
            ]),
            [
              [1, 'first *draft*', 'open', 2],
              [2, 'first *draft*', 'resolved', 1],
              [3, 'final', 'resolved', 1],
            ],
          );
          assert.equal(versions.body.results[2].editor_username, maint().username);
          assert.equal(versions.body.results[1].created_at, edited.body.updated_at);
          const got = await t.req('GET', `${base()}/threads/${th.number}/replies/1`, { token: writer().token });
          assert.deepEqual(got.body, again.body);
          const list = await t.req('GET', `${base()}/threads/${th.number}/replies`, { token: writer().token });
          assert.deepEqual(list.body.results, [again.body]);
          const thread = await t.req('GET', `${base()}/threads/${th.number}`, { token: writer().token });
          assert.equal(thread.body.reply_count, 1);
          const ev = await eventsOf(t, `reply:${r.uuid}`);
          assert.deepEqual(
            ev.body.results.map((e: { kind: string }) => e.kind),
            ['reply-created', 'reply-edited', 'reply-edited'],
          );
          for (const e of ev.body.results) {
            for (const s of [`repo:${repoUuid()}`, `thread:${th.uuid}`, `reply:${r.uuid}`]) assert.ok(e.scopes.includes(s), s);
          }
        });

        it('refuses bad reply input with 400', async () => {
          const th = await newThread();
          const link = (target: string) => ({ kind: 'url', target });
          for (const body of [
            {},
            { body: '' },
            { body: '  ' },
            { body: 'x', kind: 'rant' },
            { body: 'x', status: 'closed' },
            { body: 'x', links: Array.from({ length: 51 }, () => link('a')) },
            { body: 'x', links: [link('a'.repeat(2001))] },
            { body: 'x', links: [link('')] },
            { body: 'x', links: [{ kind: 'url', target: 'a', extra: 1 }] },
            { body: 'x', links: [{ kind: 'nope', target: 'a' }] },
            { body: 'x', unknown: true },
            { body: 7 },
          ]) {
            const res = await t.req('POST', `${base()}/threads/${th.number}/replies`, { token: writer().token, body });
            assert.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
          }
          const ok = await newReply(th.number, { body: 'x', links: Array.from({ length: 50 }, () => link('a'.repeat(2000))) });
          assert.equal(ok.links.length, 50);
          for (const body of [{ body: '' }, { kind: 'x' }, { links: 'x' }, { other: 1 }]) {
            const res = await t.req('PATCH', `${base()}/threads/${th.number}/replies/${ok.number}`, {
              token: writer().token,
              body,
            });
            assert.equal(res.status, 400, JSON.stringify(body));
          }
          assert.equal((await t.req('GET', `${base()}/threads/${th.number}/replies/0`)).status, 400);
          assert.equal((await t.req('GET', `${base()}/threads/${th.number}/replies/999`)).status, 404);
        });

        it('only the author or maintain level edits or removes a reply', async () => {
          const th = await newThread();
          const r = await newReply(th.number, { body: 'mine' }, maint().token);
          // the user form's only non-staff writer is the repo owner (maintain level and more)
          const other = w.member;
          if (form === 'team') {
            const res = await t.req('PATCH', `${base()}/threads/${th.number}/replies/${r.number}`, {
              token: other.token,
              body: { body: 'x' },
            });
            assert.equal(res.status, 403);
            assert.ok(isErrorBody(res.body, 'forbidden'));
            assert.equal(
              (await t.req('DELETE', `${base()}/threads/${th.number}/replies/${r.number}`, { token: other.token })).status,
              403,
            );
          }
          const outsider = await t.req('PATCH', `${base()}/threads/${th.number}/replies/${r.number}`, {
            token: w.outsider.token,
            body: { body: 'x' },
          });
          assert.equal(outsider.status, 404);
        });

        it('soft removal: removed threads and replies stay readable, leave lists and refuse replies, edits and attachments', async () => {
          const th = await newThread();
          const r = await newReply(th.number);
          await newReply(th.number, { body: 'second' });
          assert.equal(
            (await t.req('DELETE', `${base()}/threads/${th.number}/replies/${r.number}`, { token: writer().token })).status,
            204,
          );
          assert.equal(
            (await t.req('DELETE', `${base()}/threads/${th.number}/replies/${r.number}`, { token: writer().token })).status,
            204,
          );
          const gone = await t.req('GET', `${base()}/threads/${th.number}/replies/${r.number}`, { token: writer().token });
          assert.equal(gone.status, 200);
          assert.ok(gone.body.removed_at);
          const edit = await t.req('PATCH', `${base()}/threads/${th.number}/replies/${r.number}`, {
            token: writer().token,
            body: { body: 'x' },
          });
          assert.equal(edit.status, 409);
          assert.ok(isErrorBody(edit.body, 'target_read_only'));
          const list = await t.req('GET', `${base()}/threads/${th.number}/replies`, { token: writer().token });
          assert.deepEqual(
            list.body.results.map((x: { body: string }) => x.body),
            ['second'],
          );
          assert.equal((await t.req('GET', `${base()}/threads/${th.number}`)).body.reply_count, 1);
          const evr = await eventsOf(t, `reply:${r.uuid}`);
          assert.deepEqual(
            evr.body.results.map((e: { kind: string }) => e.kind),
            ['reply-created', 'reply-removed'],
          );

          assert.equal((await t.req('DELETE', `${base()}/threads/${th.number}`, { token: writer().token })).status, 204);
          assert.equal((await t.req('DELETE', `${base()}/threads/${th.number}`, { token: writer().token })).status, 204);
          const thread = await t.req('GET', `${base()}/threads/${th.number}`, { token: writer().token });
          assert.equal(thread.status, 200);
          assert.ok(thread.body.removed_at);
          const threads = await t.req('GET', `${base()}/threads?per_page=100`, { token: writer().token });
          assert.ok(!threads.body.results.some((x: { uuid: string }) => x.uuid === th.uuid));
          for (const [method, path, body] of [
            ['POST', `${base()}/threads/${th.number}/replies`, { body: 'late' }],
            ['PATCH', `${base()}/threads/${th.number}`, { title: 'late' }],
            ['PATCH', `${base()}/threads/${th.number}/replies/2`, { body: 'late' }],
          ] as const) {
            const res = await t.req(method, path, { token: writer().token, body });
            assert.equal(res.status, 409, `${method} ${path}`);
            assert.ok(isErrorBody(res.body, 'target_read_only'));
          }
          const ev = await eventsOf(t, `thread:${th.uuid}`);
          assert.equal(ev.body.results.filter((e: { kind: string }) => e.kind === 'thread-removed').length, 1);
        });

        it('participants: the author and repliers in order of first participation', async () => {
          const th = await newThread(maint().token);
          await newReply(th.number, { body: 'a' }, writer().token);
          await newReply(th.number, { body: 'b' }, writer().token);
          await newReply(th.number, { body: 'c' }, maint().token);
          const res = await t.req('GET', `${base()}/threads/${th.number}/participants`, { token: writer().token });
          assert.equal(res.status, 200, res.text);
          const rows = res.body.results;
          if (maint().uuid === writer().uuid) {
            assert.equal(rows.length, 1);
          } else {
            assert.deepEqual(
              rows.map((p: { username: string; reply_count: number }) => [p.username, p.reply_count]),
              [
                [maint().username, 1],
                [writer().username, 2],
              ],
            );
            assert.equal(rows[0].first_participated_at, th.created_at);
            assert.deepEqual(Object.keys(rows[0]).sort(), ['first_participated_at', 'reply_count', 'user_uuid', 'username']);
          }
        });

        it('access: outsiders get 404, an archived repo refuses writes with 403 repo_archived', async () => {
          const th = await newThread();
          for (const [method, path, body] of [
            ['GET', `${base()}/threads`, undefined],
            ['POST', `${base()}/threads`, { title: 'x' }],
            ['GET', `${base()}/threads/${th.number}`, undefined],
            ['GET', `${base()}/threads/${th.number}/participants`, undefined],
            ['GET', `${base()}/threads/${th.number}/replies`, undefined],
            ['POST', `${base()}/threads/${th.number}/replies`, { body: 'x' }],
            ['DELETE', `${base()}/threads/${th.number}`, undefined],
          ] as const) {
            const res = await t.req(method, path, { token: w.outsider.token, body });
            assert.equal(res.status, 404, `${method} ${path}`);
          }
          assert.equal((await t.req('GET', `${base()}/threads`, { token: null })).status, 401);
          const scope = await eventsOf(t, `thread:${th.uuid}`, w.outsider.token);
          assert.equal(scope.status, 404);
          if (form === 'team') {
            // a reader may open threads and reply (read access)
            const byReader = await t.req('POST', `${base()}/threads/${th.number}/replies`, {
              token: w.reader.token,
              body: { body: 'hi' },
            });
            assert.equal(byReader.status, 201);
            assert.equal((await eventsOf(t, `thread:${th.uuid}`, w.reader.token)).status, 200);
          }
          await setRepoFlags(t, repoUuid(), { is_archived: 1 });
          try {
            const res = await t.req('POST', `${base()}/threads`, { token: writer().token, body: { title: 'x' } });
            assert.equal(res.status, 403);
            assert.ok(isErrorBody(res.body, 'repo_archived'));
            const rep = await t.req('POST', `${base()}/threads/${th.number}/replies`, {
              token: writer().token,
              body: { body: 'x' },
            });
            assert.ok(isErrorBody(rep.body, 'repo_archived'));
            assert.equal((await t.req('GET', `${base()}/threads/${th.number}`, { token: writer().token })).status, 200);
          } finally {
            await setRepoFlags(t, repoUuid(), { is_archived: 0 });
          }
        });
      });
    }

    it('public repos: any authenticated user may read and open threads', async () => {
      const w = await buildWorld(t);
      const res = await t.req('POST', `${w.teamPublic.base}/threads`, { token: w.outsider.token, body: { title: 'Bug' } });
      assert.equal(res.status, 201);
      const list = await t.req('GET', `${w.teamPublic.base}/threads`, { token: w.outsider.token });
      assert.equal(list.body.results.length, 1);
    });
  });
}
