import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';
import { buildWorld, eventsOf, openPull, REVIEW_KEYS, type World } from './pulls-fixtures.ts';

async function reviewCount(t: TestApp, pullUuid: string): Promise<number> {
  const row = await t.deps.db
    .selectFrom('reviews')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('pull_uuid', '=', pullUuid)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

for (const dialect of DIALECTS) {
  describe(`reviews (${dialect})`, () => {
    let t: TestApp;
    let w: World;
    before(async () => {
      t = await startApp(dialect);
      w = await buildWorld(t);
    });
    after(() => t.close());

    for (const form of ['team', 'user'] as const) {
      describe(`${form} repo`, () => {
        const base = () => (form === 'team' ? w.teamPrivate.base : w.userPrivate.base);
        /** a reviewer who may review in this form's private repo without being the pull author */
        const reviewer = () => (form === 'team' ? w.reader : w.solo);

        it('creates a review: 201, full record, review-submitted event', async () => {
          const pull = await openPull(t, base());
          const res = await t.req('POST', `${base()}/pulls/${pull.number}/reviews`, {
            token: reviewer().token,
            body: { status: 'changes_requested', body: 'Please fix' },
          });
          assert.equal(res.status, 201, res.text);
          const r = res.body;
          assert.deepEqual(Object.keys(r).sort(), REVIEW_KEYS);
          assert.equal(r.pull_uuid, pull.uuid);
          assert.equal(r.pull_number, pull.number);
          assert.equal(r.status, 'changes_requested');
          assert.equal(r.body, 'Please fix');
          assert.equal(r.author_username, reviewer().username);
          assert.equal(r.author_uuid, reviewer().uuid);
          assert.equal(r.removed_at, null);
          assert.match(r.created_at, /Z$/);
          const got = await t.req('GET', `${base()}/pulls/${pull.number}/reviews/${r.uuid}`, { token: reviewer().token });
          assert.equal(got.status, 200);
          assert.deepEqual(got.body, r);

          for (const scope of [`review:${r.uuid}`, `pull:${pull.uuid}`]) {
            const ev = await eventsOf(t, scope, reviewer().token);
            assert.equal(ev.status, 200);
            const submitted = ev.body.results.filter((e: { kind: string }) => e.kind === 'review-submitted');
            assert.equal(submitted.length, 1, scope);
            assert.deepEqual(
              submitted[0].scopes.sort(),
              [`pull:${pull.uuid}`, `repo:${pull.repo_uuid}`, `review:${r.uuid}`].sort(),
            );
            assert.equal(submitted[0].payload.review_uuid, r.uuid);
            assert.equal(submitted[0].payload.status, 'changes_requested');
            assert.equal(submitted[0].actor.username, reviewer().username);
          }
          const hidden = await eventsOf(t, `review:${r.uuid}`, w.outsider.token);
          assert.equal(hidden.status, 404);
        });

        it('defaults body to an empty string', async () => {
          const pull = await openPull(t, base());
          const res = await t.req('POST', `${base()}/pulls/${pull.number}/reviews`, {
            token: reviewer().token,
            body: { status: 'approved' },
          });
          assert.equal(res.status, 201);
          assert.equal(res.body.body, '');
        });

        it("lets the pull's author only comment (403 cannot_approve_own_pull)", async () => {
          const pull = await openPull(t, base(), { token: reviewer().token });
          const url = `${base()}/pulls/${pull.number}/reviews`;
          for (const status of ['approved', 'changes_requested']) {
            const res = await t.req('POST', url, { token: reviewer().token, body: { status } });
            assert.equal(res.status, 403, status);
            assert.ok(isErrorBody(res.body, 'cannot_approve_own_pull'));
          }
          assert.equal(await reviewCount(t, pull.uuid), 0);
          const comment = await t.req('POST', url, { token: reviewer().token, body: { status: 'commented', body: 'note' } });
          assert.equal(comment.status, 201);
        });

        it('rejects invalid bodies with 400 and creates nothing', async () => {
          const pull = await openPull(t, base());
          const url = `${base()}/pulls/${pull.number}/reviews`;
          for (const body of [
            {},
            { status: 'approve' },
            { status: 'APPROVED' },
            { status: 'approved', body: 5 },
            { status: 'approved', body: null },
            { status: 'approved', extra: 1 },
            { status: 'approved', body: 'x'.repeat(65_537) },
          ]) {
            const res = await t.req('POST', url, { body });
            assert.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
            assert.ok(isErrorBody(res.body, 'invalid_request'));
          }
          assert.equal(await reviewCount(t, pull.uuid), 0);
        });

        it('reviews a closed pull but not a merged one (409 pull_merged)', async () => {
          const pull = await openPull(t, base());
          const url = `${base()}/pulls/${pull.number}`;
          await t.req('PUT', url, { body: { status: 'closed' } });
          const onClosed = await t.req('POST', `${url}/reviews`, { token: reviewer().token, body: { status: 'commented' } });
          assert.equal(onClosed.status, 201);
          await t.req('PUT', url, { body: { status: 'open' } });
          assert.equal((await t.req('POST', `${url}/merge`, { body: {} })).status, 200);
          for (const status of ['approved', 'commented', 'changes_requested']) {
            const res = await t.req('POST', `${url}/reviews`, { token: reviewer().token, body: { status } });
            assert.equal(res.status, 409);
            assert.ok(isErrorBody(res.body, 'pull_merged'));
          }
          assert.equal(await reviewCount(t, pull.uuid), 1);
        });

        it('lists reviews oldest first, paged, leaving removed ones out', async () => {
          const pull = await openPull(t, base());
          const url = `${base()}/pulls/${pull.number}/reviews`;
          const made = [];
          for (const status of ['commented', 'approved', 'changes_requested', 'approved']) {
            made.push((await t.req('POST', url, { token: reviewer().token, body: { status, body: status } })).body);
          }
          const list = await t.req('GET', url, { token: reviewer().token });
          assert.equal(list.status, 200);
          assert.deepEqual(Object.keys(list.body).sort(), ['next', 'previous', 'results']);
          assert.deepEqual(
            list.body.results.map((r: { uuid: string }) => r.uuid),
            made.map((r) => r.uuid),
          );
          const page = await t.req('GET', `${url}?per_page=3`);
          assert.equal(page.body.results.length, 3);
          const rest = await t.req('GET', page.body.next);
          assert.deepEqual(
            rest.body.results.map((r: { uuid: string }) => r.uuid),
            [made[3].uuid],
          );

          assert.equal((await t.req('DELETE', `${url}/${made[1].uuid}`, { token: reviewer().token })).status, 204);
          const after = await t.req('GET', url);
          assert.deepEqual(
            after.body.results.map((r: { uuid: string }) => r.uuid),
            [made[0].uuid, made[2].uuid, made[3].uuid],
          );
          const removed = await t.req('GET', `${url}/${made[1].uuid}`);
          assert.equal(removed.status, 200);
          assert.ok(removed.body.removed_at);
          assert.equal(removed.body.status, 'approved');
          assert.equal(removed.body.body, 'approved');
        });

        it('removes softly: author or maintain level, idempotent, one review-removed event', async () => {
          const pull = await openPull(t, base());
          const url = `${base()}/pulls/${pull.number}/reviews`;
          const own = (await t.req('POST', url, { token: reviewer().token, body: { status: 'approved' } })).body;
          // someone else below maintain level (team form: a member) may not remove it
          if (form === 'team') {
            const refused = await t.req('DELETE', `${url}/${own.uuid}`, { token: w.member.token });
            assert.equal(refused.status, 403);
            assert.ok(isErrorBody(refused.body, 'forbidden'));
            assert.equal((await t.req('GET', `${url}/${own.uuid}`)).body.removed_at, null);
          }
          const outsider = await t.req('DELETE', `${url}/${own.uuid}`, { token: w.outsider.token });
          assert.equal(outsider.status, 404);
          const del = await t.req('DELETE', `${url}/${own.uuid}`, { token: reviewer().token });
          assert.equal(del.status, 204);
          assert.equal(del.text, '');
          const first = (await t.req('GET', `${url}/${own.uuid}`)).body.removed_at;
          assert.ok(first);
          const again = await t.req('DELETE', `${url}/${own.uuid}`, { token: reviewer().token });
          assert.equal(again.status, 204);
          assert.equal((await t.req('GET', `${url}/${own.uuid}`)).body.removed_at, first);
          const ev = await eventsOf(t, `review:${own.uuid}`);
          assert.deepEqual(
            ev.body.results.map((e: { kind: string }) => e.kind),
            ['review-submitted', 'review-removed'],
          );

          // maintain level removes someone else's review
          const other = (await t.req('POST', url, { token: reviewer().token, body: { status: 'commented' } })).body;
          const maintainer = form === 'team' ? w.maintainer : w.staff;
          assert.equal((await t.req('DELETE', `${url}/${other.uuid}`, { token: maintainer.token })).status, 204);
          assert.ok((await t.req('GET', `${url}/${other.uuid}`)).body.removed_at);
        });

        it('refuses removing a review of a merged pull (409 pull_merged)', async () => {
          const pull = await openPull(t, base());
          const url = `${base()}/pulls/${pull.number}`;
          const review = (await t.req('POST', `${url}/reviews`, { token: reviewer().token, body: { status: 'approved' } })).body;
          assert.equal((await t.req('POST', `${url}/merge`, { body: {} })).status, 200);
          const res = await t.req('DELETE', `${url}/reviews/${review.uuid}`, { token: reviewer().token });
          assert.equal(res.status, 409);
          assert.ok(isErrorBody(res.body, 'pull_merged'));
          assert.equal((await t.req('GET', `${url}/reviews/${review.uuid}`)).body.removed_at, null);
        });

        it('answers 404 for unknown pulls and reviews, and for a review of another pull', async () => {
          const a = await openPull(t, base());
          const b = await openPull(t, base());
          const review = (
            await t.req('POST', `${base()}/pulls/${a.number}/reviews`, { token: reviewer().token, body: { status: 'approved' } })
          ).body;
          const cases: Array<[string, string, unknown]> = [
            ['GET', `${base()}/pulls/999/reviews`, undefined],
            ['POST', `${base()}/pulls/999/reviews`, { status: 'commented' }],
            ['GET', `${base()}/pulls/${a.number}/reviews/00000000-0000-4000-8000-000000000000`, undefined],
            ['GET', `${base()}/pulls/${a.number}/reviews/not-a-uuid`, undefined],
            ['GET', `${base()}/pulls/${b.number}/reviews/${review.uuid}`, undefined],
            ['DELETE', `${base()}/pulls/${b.number}/reviews/${review.uuid}`, undefined],
            ['DELETE', `${base()}/pulls/${a.number}/reviews/00000000-0000-4000-8000-000000000000`, undefined],
          ];
          for (const [method, url, body] of cases) {
            const res = await t.req(method, url, { body });
            assert.equal(res.status, 404, `${method} ${url}`);
            assert.ok(isErrorBody(res.body, 'not_found'));
          }
          assert.equal((await t.req('GET', `${base()}/pulls/x/reviews`)).status, 400);
          assert.equal((await t.req('GET', `${base()}/pulls/${a.number}/reviews/${review.uuid}`)).body.removed_at, null);
        });
      });
    }
  });
}
