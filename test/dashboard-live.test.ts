/**
 * The dashboard's live activity (README "Web interface", docs/web.md "Live parts"): one stream of
 * the viewer's own scope, the viewer's own actions anywhere (`actor:UUID`) and the four most
 * recently updated repos. The viewer's own event in a repo outside those four arrives; another
 * user's there does not; an event in a followed repo and the actor scope comes once; another user
 * (staff included) cannot follow someone's actor scope; an event the viewer may no longer read is
 * not sent; an action on one instance reaches a dashboard served by another (PostgreSQL).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Person } from './common.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';
import { type Frame, type SseClient, eventFrames, listen, openSse } from './sse-client.ts';
import { pageReq, signIn } from './web-helpers.ts';

const ok = (res: { status: number; text: string }, status = 201) => assert.equal(res.status, status, res.text);

/** The dashboard's stream address (one per page), as its page renders it. */
async function dashboardStream(t: TestApp, cookie: string): Promise<{ path: string; scopes: string[] }> {
  const home = await pageReq(t, 'GET', '/', { cookie });
  assert.equal(home.status, 200);
  const found = [...home.text.matchAll(/sse-connect="(\/api\/v1\/tail-events\?[^"]+)"/g)].map((m) =>
    m[1]!.replaceAll('&amp;', '&'),
  );
  assert.equal(found.length, 1, 'one stream on the dashboard');
  const path = found[0]!;
  const scopes = new URL(path, 'http://x').searchParams.get('scope')!.split(',');
  return { path, scopes };
}

const framesWith = (frames: Frame[], text: string) => eventFrames(frames).filter((f) => f.data.includes(text));

for (const dialect of DIALECTS) {
  describe(`the dashboard's live activity (${dialect})`, () => {
    let t: TestApp;
    let base: string;
    let alice: Person;
    let bob: Person;
    const repos = new Map<string, string>();
    const api = (slug: string) => `/api/v1/teams/crew/repos/${slug}`;
    const subscribed = async (n: number) => {
      for (let i = 0; i < 400 && t.deps.live.subscriberCount < n; i++) await new Promise((r) => setTimeout(r, 10));
      assert.ok(t.deps.live.subscriberCount >= n, `${n} scopes subscribed`);
    };

    before(async () => {
      t = await startApp(dialect);
      base = await listen(t);
      alice = await t.user('alice');
      bob = await t.user('bob');
      ok(await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Crew', slug: 'crew' } }));
      ok(await t.req('POST', '/api/v1/teams/crew/members', { token: alice.token, body: { username: 'bob', role: 'member' } }));
      for (let i = 1; i <= 6; i++) {
        const made = await t.req('POST', '/api/v1/teams/crew/repos', {
          token: alice.token,
          body: { name: `R${i}`, slug: `r${i}`, visibility: 'private' },
        });
        ok(made);
        repos.set(`r${i}`, made.body.uuid as string);
      }
    });
    after(async () => {
      await t.close();
    });

    it("shows the viewer's own event in a repo it does not follow, not another user's there, and a followed repo's event once", async () => {
      const browser = await signIn(t, 'alice');
      const { path, scopes } = await dashboardStream(t, browser.cookie);
      assert.ok(scopes.includes(`user:${alice.uuid}`) && scopes.includes(`actor:${alice.uuid}`), scopes.join(','));
      assert.equal(scopes.filter((s) => s.startsWith('repo:')).length, 4, 'four repos followed');
      const outside = [...repos].find(([, uuid]) => !scopes.includes(`repo:${uuid}`))![0];
      const followed = [...repos].find(([, uuid]) => scopes.includes(`repo:${uuid}`))![0];

      const sse = await openSse(base, path, null, { cookie: browser.cookie });
      try {
        assert.equal(sse.status, 200);
        await subscribed(6);
        ok(
          await t.req('POST', `${api(outside)}/threads`, { token: alice.token, body: { title: 'Outside plan', body: 'first' } }),
        );
        ok(await t.req('POST', `${api(outside)}/threads/1/replies`, { token: bob.token, body: { body: 'bob was here' } }));
        ok(await t.req('POST', `${api(outside)}/threads/1/replies`, { token: alice.token, body: { body: 'alice replies' } }));
        ok(await t.req('POST', `${api(followed)}/threads`, { token: alice.token, body: { title: 'Both ways', body: 'twice?' } }));
        await sse.waitFor((f) => framesWith(f, 'Both ways').length >= 1, 10_000);

        const replies = (actor: string, repo: string) =>
          framesWith(sse.frames, `<a href="/repos/${repos.get(repo)}/threads/1">`).filter(
            (f) => f.event === 'reply-created' && f.data.includes(`<span class="actor">${actor}</span>`),
          );
        const reply = replies('alice', outside);
        assert.equal(reply.length, 1, "alice's reply in the repo not followed arrives");
        assert.equal(reply[0]!.event, 'reply-created');
        // a sentence with links, and the time for the page to show relatively
        assert.match(reply[0]!.data, new RegExp(`replied on <a href="/repos/${repos.get(outside)}/threads/1">#1</a>`));
        assert.match(reply[0]!.data, /<time datetime="\d{4}-\d\d-\d\dT[^"]+"/);
        assert.equal(framesWith(sse.frames, 'Outside plan').length, 1, "alice's thread there too");
        assert.equal(replies('bob', outside).length, 0, "bob's reply in a repo not followed does not");
        assert.equal(framesWith(sse.frames, 'Both ways').length, 1, 'an event in a followed repo and the actor scope comes once');
        const ids = eventFrames(sse.frames).map((f) => Number(f.id));
        assert.deepEqual(
          [...ids].sort((a, b) => a - b),
          ids,
          'in id order',
        );
        assert.equal(new Set(ids).size, ids.length, 'no id twice');

        // bob's reply in a followed repo is on alice's dashboard (the repo's stream), once
        ok(await t.req('POST', `${api(followed)}/threads/1/replies`, { token: bob.token, body: { body: 'bob in followed' } }));
        await sse.waitFor(() => replies('bob', followed).length === 1, 10_000);
      } finally {
        sse.close();
      }
    });

    it("refuses another user's actor scope (404, staff included), a malformed one (400), and keeps it out of GET /events", async () => {
      const tail = (query: string, token: string | null, headers: Record<string, string> = {}) =>
        openSse(base, `/api/v1/tail-events?${query}`, token, headers);
      const refused = async (sse: SseClient, status: number) => {
        try {
          assert.equal(sse.status, status, sse.raw());
        } finally {
          sse.close();
        }
      };
      await refused(await tail(`scope=actor:${alice.uuid}`, bob.token), 404);
      await refused(await tail(`scope=actor:${alice.uuid}`, t.adminToken), 404);
      await refused(await tail(`scope=user:${bob.uuid},actor:${alice.uuid}`, bob.token), 404);
      const bobBrowser = await signIn(t, 'bob');
      await refused(await tail(`scope=actor:${alice.uuid}&html=true`, null, { cookie: bobBrowser.cookie }), 404);
      await refused(await tail('scope=actor:alice', alice.token), 400);
      await refused(await tail(`scope=user:${alice.uuid},`, alice.token), 400);
      // the same scope nine times is one; nine different ones are too many
      await refused(
        await tail(`scope=${Array.from({ length: 9 }, () => `repo:${repos.get('r1')}`).join(',')}`, alice.token),
        200,
      );
      const nine = [
        ...[...repos.values()].map((u) => `repo:${u}`),
        `user:${alice.uuid}`,
        `actor:${alice.uuid}`,
        `user:${bob.uuid}`,
      ];
      await refused(await tail(`scope=${nine.join(',')}`, alice.token), 400);
      // GET /events and tickets: the actor scope is a stream's only
      const events = await t.req('GET', `/api/v1/events?scope=actor:${alice.uuid}`, { token: alice.token });
      assert.equal(events.status, 400, events.text);
      ok(await t.req('POST', '/api/v1/tail-events/tickets', { token: alice.token, body: { scope: `actor:${alice.uuid}` } }));
      ok(await t.req('POST', '/api/v1/tail-events/tickets', { token: bob.token, body: { scope: `actor:${alice.uuid}` } }), 404);
      ok(await t.req('POST', '/api/v1/tail-events/tickets', { token: alice.token, body: { scope: `actor:${bob.uuid}` } }), 404);
    });

    it('checks access at delivery: an event of the actor in a repo it may no longer read is not sent', async () => {
      ok(await t.req('POST', '/api/v1/teams', { token: bob.token, body: { name: 'Side', slug: 'side' } }));
      ok(await t.req('POST', '/api/v1/teams/side/members', { token: bob.token, body: { username: 'alice', role: 'member' } }));
      const secret = await t.req('POST', '/api/v1/teams/side/repos', {
        token: bob.token,
        body: { name: 'Secret', slug: 'secret', visibility: 'private' },
      });
      ok(secret);
      ok(
        await t.req('POST', '/api/v1/teams/side/repos/secret/threads', {
          token: alice.token,
          body: { title: 'S', body: 'hidden later' },
        }),
      );
      const inSecret = await t.req('GET', `/api/v1/events?scope=repo:${secret.body.uuid}&kind=thread-created`, {
        token: bob.token,
      });
      const hiddenId = Number((inSecret.body.results as Array<{ id: string }>).at(-1)!.id);
      ok(await t.req('DELETE', '/api/v1/teams/side/members/alice', { token: bob.token }), 204);
      ok(await t.req('POST', `${api('r1')}/threads`, { token: alice.token, body: { title: 'Still mine', body: 'after' } }));

      const sse = await openSse(base, `/api/v1/tail-events?scope=actor:${alice.uuid}&last_event_id=${hiddenId - 1}`, alice.token);
      try {
        assert.equal(sse.status, 200);
        await sse.waitFor((f) => eventFrames(f).some((x) => x.data.includes('Still mine')), 10_000);
        const ids = eventFrames(sse.frames).map((f) => Number(f.id));
        assert.ok(!ids.includes(hiddenId), 'the thread in the repo alice left is not replayed');
        for (const f of eventFrames(sse.frames)) assert.equal(JSON.parse(f.data).actor.uuid, alice.uuid, 'only her own events');
      } finally {
        sse.close();
      }
    });
  });
}

// Several instances are a PostgreSQL deployment: the dashboard on one shows an action written on the other.
for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`the dashboard's live activity across instances (${dialect})`, () => {
    let a: TestApp;
    let b: TestApp;
    before(async () => {
      const first = await startApp(dialect);
      a = first;
      b = await startApp(dialect, { store: first.store });
    });
    after(async () => {
      await b.close();
      await a.close();
    });

    it("an action of the viewer through instance a reaches the viewer's dashboard stream on instance b", async () => {
      const carol = await a.user('carol');
      ok(await a.req('POST', '/api/v1/teams', { token: carol.token, body: { name: 'Far', slug: 'far' } }));
      const uuids: string[] = [];
      for (let i = 1; i <= 6; i++) {
        const made = await a.req('POST', '/api/v1/teams/far/repos', {
          token: carol.token,
          body: { name: `F${i}`, slug: `f${i}` },
        });
        ok(made);
        uuids.push(made.body.uuid as string);
      }
      const browser = await signIn(b, 'carol');
      const { path, scopes } = await dashboardStream(b, browser.cookie);
      const outside = uuids.findIndex((u) => !scopes.includes(`repo:${u}`)) + 1;
      assert.ok(outside > 0, 'a repo not followed');
      const sse = await openSse(await listen(b), path, null, { cookie: browser.cookie });
      try {
        assert.equal(sse.status, 200);
        for (let i = 0; i < 400 && b.deps.live.subscriberCount < 6; i++) await new Promise((r) => setTimeout(r, 10));
        ok(
          await a.req('POST', `/api/v1/teams/far/repos/f${outside}/threads`, {
            token: carol.token,
            body: { title: 'From a', body: 'x' },
          }),
        );
        await sse.waitFor((f) => framesWith(f, 'From a').length === 1, 10_000);
      } finally {
        sse.close();
      }
    });
  });
}
