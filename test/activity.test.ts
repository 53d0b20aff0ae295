import type { EventKind } from '../src/events/kinds.ts';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Kysely } from 'kysely';
import { up } from '../src/db/migrations/092_actor_activity_index.ts';
import { MAX_MERGED_RANGES } from '../src/activity/service.ts';
import { inTransaction } from '../src/core/transaction.ts';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import type { Person } from './common.ts';

type Ev = {
  id: string;
  kind: string;
  scopes: string[];
  actor: { uuid: string; username: string } | null;
  payload: Record<string, unknown>;
};
const EVENT_KEYS = ['actor', 'created_at', 'id', 'kind', 'payload', 'scopes'];

for (const dialect of DIALECTS) {
  describe(`activity feeds (${dialect})`, () => {
    let t: TestApp;
    let alice: Person;
    let bob: Person;
    let carol: Person;
    let dave: Person;
    let team: { uuid: string };
    const ids: Record<string, string> = {};

    /** Set-up only: records an event as another domain (repos, threads) would. */
    const emit = async (name: string, kind: EventKind, scopes: string[], actor: Person | null) => {
      // the payload names the repo as the real producers do (the subject, src/events/kinds.ts)
      const repo = scopes.find((s) => s.startsWith('repo:'))?.slice(5);
      const teamUuid = scopes.find((s) => s.startsWith('team:'))?.slice(5);
      const payload = { label: name, ...(repo ? { repo_uuid: repo } : {}), ...(teamUuid ? { team_uuid: teamUuid } : {}) };
      const ev = await inTransaction(t.deps, (tx) =>
        tx.emit({ kind, scopes, actor: actor && { uuid: actor.uuid, username: actor.username }, payload }),
      );
      ids[name] = ev.id;
    };
    const feed = async (url: string, token?: string) => {
      const res = await t.req('GET', url, { token });
      assert.equal(res.status, 200, res.text);
      return res.body.results as Ev[];
    };
    const names = (events: Ev[]) => events.map((e) => (e.payload.label as string | undefined) ?? e.kind);

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
      dave = await t.user('dave');
      team = (await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Act', slug: 'act' } })).body;
      await t.req('POST', '/api/v1/teams/act/members', { token: alice.token, body: { username: 'bob', role: 'member' } });
      await t.req('POST', '/api/v1/teams/act/members', { token: alice.token, body: { username: 'carol', role: 'reader' } });
      const other = await seedTeam(t, 'other', [{ uuid: dave.uuid, role: 'owner' }]);
      const r1 = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'r1');
      const rOff = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'r-off');
      await t.deps.db.updateTable('repos').set({ is_active: 0 }).where('uuid', '=', rOff.uuid).execute();
      const r2 = await seedRepo(t, { kind: 'team', uuid: other.uuid }, 'r2');
      const rPub = await seedRepo(t, { kind: 'team', uuid: other.uuid }, 'r-pub', { visibility: 'public' });
      await emit('r1-created', 'repo-created', [`repo:${r1.uuid}`], alice);
      await emit('r1-thread', 'thread-created', [`repo:${r1.uuid}`, `thread:${randomUUID()}`], bob);
      await emit('roff-created', 'repo-created', [`repo:${rOff.uuid}`], alice);
      await emit('r2-created', 'repo-created', [`repo:${r2.uuid}`], alice);
      await emit('rpub-thread', 'thread-created', [`repo:${rPub.uuid}`], alice);
      await emit('alice-only', 'user-updated', [`user:${alice.uuid}`], alice);
      await emit('team-and-repo', 'repo-updated', [`team:${team.uuid}`, `repo:${r1.uuid}`], alice);
      // a team event without an actor (a team timer's firing is for the team's owners only)
      await emit('system', 'team-updated', [`team:${team.uuid}`], null);
    });
    after(() => t.close());

    describe('GET /teams/{t}/activity', () => {
      const forMembers = ['system', 'team-and-repo', 'r1-thread', 'r1-created', 'member-added', 'member-added', 'team-created'];

      it("lists the team's and its repos' events, newest first, each once", async () => {
        const events = await feed('/api/v1/teams/act/activity', bob.token);
        assert.deepEqual(names(events), forMembers);
        for (const e of events) assert.deepEqual(Object.keys(e).sort(), EVENT_KEYS);
        const idNums = events.map((e) => Number(e.id));
        assert.deepEqual(
          idNums,
          [...idNums].sort((a, b) => b - a),
        );
        assert.equal(events[0]!.actor, null);
        assert.deepEqual(events.at(-1)!.actor, { uuid: alice.uuid, username: 'alice' });
        assert.deepEqual(names(await feed('/api/v1/teams/act/activity', carol.token)), forMembers);
      });

      it("a deactivated repo's events show only from maintain level up", async () => {
        const withOff = [
          'system',
          'team-and-repo',
          'roff-created',
          'r1-thread',
          'r1-created',
          'member-added',
          'member-added',
          'team-created',
        ];
        assert.deepEqual(names(await feed('/api/v1/teams/ACT/activity', alice.token)), withOff);
        assert.deepEqual(names(await feed('/api/v1/teams/act/activity')), withOff, 'staff');
      });

      it('pages newest first', async () => {
        const p1 = await t.req('GET', '/api/v1/teams/act/activity?per_page=3', { token: bob.token });
        assert.equal(p1.status, 200);
        assert.deepEqual(names(p1.body.results), forMembers.slice(0, 3));
        assert.equal(p1.body.previous, null);
        assert.equal(p1.body.next, '/api/v1/teams/act/activity?per_page=3&page=2');
        const p3 = await t.req('GET', '/api/v1/teams/act/activity?per_page=3&page=3', { token: bob.token });
        assert.deepEqual(names(p3.body.results), forMembers.slice(6));
        assert.equal(p3.body.next, null);
        assert.equal(p3.body.previous, '/api/v1/teams/act/activity?per_page=3&page=2');
        const beyond = await t.req('GET', '/api/v1/teams/act/activity?page=9', { token: bob.token });
        assert.deepEqual(beyond.body.results, []);
        assert.equal((await t.req('GET', '/api/v1/teams/act/activity?per_page=0', { token: bob.token })).status, 400);
      });

      it('before_id: a page counts from the cursor, and the links keep it', async () => {
        const all = await feed('/api/v1/teams/act/activity?per_page=100', bob.token);
        assert.deepEqual(names(all), forMembers);
        // reading on from each page's last id gives the whole feed, a page at a time
        const read: Ev[] = [];
        let cursor: string | null = null;
        for (;;) {
          const res = await t.req('GET', `/api/v1/teams/act/activity?per_page=2${cursor ? `&before_id=${cursor}` : ''}`, {
            token: bob.token,
          });
          assert.equal(res.status, 200, res.text);
          read.push(...res.body.results);
          if (res.body.results.length < 2) break;
          cursor = res.body.results.at(-1).id;
        }
        assert.deepEqual(read, all);
        // page counts from the cursor; next and previous carry it
        const from = all[1]!.id;
        const p2 = await t.req('GET', `/api/v1/teams/act/activity?per_page=2&page=2&before_id=${from}`, { token: bob.token });
        assert.deepEqual(p2.body.results, all.slice(4, 6));
        assert.equal(p2.body.next, `/api/v1/teams/act/activity?per_page=2&page=3&before_id=${from}`);
        assert.equal(p2.body.previous, `/api/v1/teams/act/activity?per_page=2&page=1&before_id=${from}`);
        // beyond the oldest: empty; the cursor's own event is never included
        assert.deepEqual(await feed(`/api/v1/teams/act/activity?before_id=${all.at(-1)!.id}`, bob.token), []);
        assert.deepEqual(await feed('/api/v1/teams/act/activity?before_id=0', bob.token), []);
        for (const bad of ['-1', 'abc', '1.5', '12345678901234567', '']) {
          const res = await t.req('GET', `/api/v1/teams/act/activity?before_id=${bad}`, { token: bob.token });
          assert.equal(res.status, 400, bad);
          assert.ok(isErrorBody(res.body));
        }
        // still 404 to an outsider, cursor or not
        assert.equal((await t.req('GET', `/api/v1/teams/act/activity?before_id=${from}`, { token: dave.token })).status, 404);
      });

      it('404 to outsiders and for unknown teams, 401 anonymous', async () => {
        for (const [token, slug] of [
          [dave.token, 'act'],
          [bob.token, 'nope'],
        ] as const) {
          const res = await t.req('GET', `/api/v1/teams/${slug}/activity`, { token });
          assert.equal(res.status, 404);
          assert.ok(isErrorBody(res.body, 'not_found'));
        }
        const anon = await t.req('GET', '/api/v1/teams/act/activity', { token: null });
        assert.equal(anon.status, 401);
        assert.ok(isErrorBody(anon.body, 'unauthorized'));
      });

      it('a member who leaves loses the feed', async () => {
        assert.equal((await t.req('DELETE', '/api/v1/teams/act/members/carol', { token: carol.token })).status, 204);
        assert.equal((await t.req('GET', '/api/v1/teams/act/activity', { token: carol.token })).status, 404);
        const events = await feed('/api/v1/teams/act/activity', bob.token);
        assert.equal(events[0]!.kind, 'member-removed');
      });

      it("a deleted repo's events leave the feed, its repo-deleted event stays; the index key is no scope", async () => {
        const gone = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'gone');
        // no actor, and deleted by staff: the user feeds below stay as they are
        await emit('gone-pull', 'pull-opened', [`repo:${gone.uuid}`, `pull:${randomUUID()}`], null);
        await emit('gone-and-team', 'repo-updated', [`team:${team.uuid}`, `repo:${gone.uuid}`], null);
        const before = names(await feed('/api/v1/teams/act/activity', bob.token));
        assert.deepEqual(before.slice(0, 2), ['gone-and-team', 'gone-pull']);
        assert.equal((await t.req('DELETE', '/api/v1/teams/act/repos/gone')).status, 204);
        const after = names(await feed('/api/v1/teams/act/activity', bob.token));
        // Both were about the repo, which no longer exists (README "Event privacy": an event about
        // a thing the caller cannot read is left out); its repo-deleted event stays.
        assert.equal(after[0], 'repo-deleted');
        assert.ok(!after.includes('gone-pull') && !after.includes('gone-and-team'));
        const key = await t.req('GET', `/api/v1/events?scope=team-activity:${team.uuid}`, { token: alice.token });
        assert.equal(key.status, 400);
      });
    });

    describe('GET /users/{username}/activity', () => {
      it('the user themself sees every event they caused that they can read, newest first', async () => {
        const events = await feed('/api/v1/users/alice/activity', alice.token);
        // r2-created: a private repo of a team alice is not in, so not even she can read it
        assert.deepEqual(names(events), [
          'team-and-repo',
          'alice-only',
          'rpub-thread',
          'roff-created',
          'r1-created',
          'member-added',
          'member-added',
          'team-created',
        ]);
        for (const e of events) {
          assert.equal(e.actor?.uuid, alice.uuid);
          assert.deepEqual(Object.keys(e).sort(), EVENT_KEYS);
        }
      });

      it('others see only what they may read', async () => {
        assert.deepEqual(names(await feed('/api/v1/users/alice/activity', bob.token)), [
          'team-and-repo',
          'rpub-thread',
          'r1-created',
          'member-added',
          'member-added',
          'team-created',
        ]);
        // dave: owner of "other", outside "act": the public repo event and his team's private repo
        assert.deepEqual(names(await feed('/api/v1/users/ALICE/activity', dave.token)), ['rpub-thread', 'r2-created']);
        // carol left "act": she still sees the member-added event about herself (her user scope)
        assert.deepEqual(names(await feed('/api/v1/users/alice/activity', carol.token)), ['rpub-thread', 'member-added']);
        const staff = names(await feed('/api/v1/users/alice/activity'));
        assert.deepEqual(staff, [
          'team-and-repo',
          'alice-only',
          'rpub-thread',
          'r2-created',
          'roff-created',
          'r1-created',
          'member-added',
          'member-added',
          'team-created',
        ]);
        assert.deepEqual(names(await feed('/api/v1/users/bob/activity', alice.token)), ['r1-thread']);
        assert.deepEqual(names(await feed('/api/v1/users/dave/activity', alice.token)), []);
      });

      it('pages newest first', async () => {
        const p1 = await t.req('GET', '/api/v1/users/alice/activity?per_page=4');
        assert.deepEqual(names(p1.body.results), ['team-and-repo', 'alice-only', 'rpub-thread', 'r2-created']);
        assert.equal(p1.body.next, '/api/v1/users/alice/activity?per_page=4&page=2');
        const p3 = await t.req('GET', '/api/v1/users/alice/activity?per_page=4&page=3');
        assert.deepEqual(names(p3.body.results), ['team-created']);
        assert.equal(p3.body.next, null);
      });

      it('before_id: a page counts from the cursor, for staff and for others alike', async () => {
        for (const token of [undefined, bob.token]) {
          const all = await feed('/api/v1/users/alice/activity?per_page=100', token);
          assert.ok(all.length >= 3);
          for (let i = 0; i < all.length; i++) {
            const page = await feed(`/api/v1/users/alice/activity?per_page=2&before_id=${all[i]!.id}`, token);
            assert.deepEqual(page, all.slice(i + 1, i + 3), `after ${i}`);
          }
          const p2 = await feed(`/api/v1/users/alice/activity?per_page=1&page=2&before_id=${all[0]!.id}`, token);
          assert.deepEqual(p2, all.slice(2, 3));
        }
        assert.equal((await t.req('GET', '/api/v1/users/alice/activity?before_id=x', { token: bob.token })).status, 400);
      });

      it('404 for unknown users, and inactive ones except to staff; 401 anonymous', async () => {
        const res = await t.req('GET', '/api/v1/users/nobody/activity', { token: bob.token });
        assert.equal(res.status, 404);
        assert.ok(isErrorBody(res.body, 'not_found'));
        await t.req('PUT', '/api/v1/users/dave', { body: { is_active: false } });
        assert.equal((await t.req('GET', '/api/v1/users/dave/activity', { token: bob.token })).status, 404);
        assert.equal((await t.req('GET', '/api/v1/users/dave/activity')).status, 200);
        assert.equal((await t.req('GET', '/api/v1/users/alice/activity', { token: null })).status, 401);
      });

      it("follows a repo's visibility: an outsider sees its events while it is public (the index of events/actor-index.ts)", async () => {
        const erin = await t.user('erin');
        const seen = async () => names(await feed('/api/v1/users/alice/activity?per_page=100', erin.token));
        const before = await seen();
        assert.deepEqual(before, ['rpub-thread']);
        const created = await t.req('POST', '/api/v1/teams/act/repos', {
          token: alice.token,
          body: { name: 'Flip', slug: 'flip' },
        });
        assert.equal(created.status, 201, created.text);
        assert.deepEqual(await seen(), before);
        const open = await t.req('PUT', '/api/v1/teams/act/repos/flip', { token: alice.token, body: { visibility: 'public' } });
        assert.equal(open.status, 200, open.text);
        // its history too: the repo-created event written while it was private
        assert.deepEqual(await seen(), ['repo-updated', 'repo-created', ...before]);
        const close = await t.req('PUT', '/api/v1/teams/act/repos/flip', { token: alice.token, body: { visibility: 'private' } });
        assert.equal(close.status, 200, close.text);
        assert.deepEqual(await seen(), before);
        // members still see all three, staff too
        assert.deepEqual(
          (await feed('/api/v1/users/alice/activity?per_page=3', bob.token)).map((e) => e.kind),
          ['repo-updated', 'repo-updated', 'repo-created'],
        );
        assert.deepEqual(
          (await feed('/api/v1/users/alice/activity?per_page=3')).map((e) => e.kind),
          ['repo-updated', 'repo-updated', 'repo-created'],
        );
        // the index keys are no scope a client can name
        const key = await t.req('GET', `/api/v1/events?scope=actor:${alice.uuid}:pub`, { token: alice.token });
        assert.equal(key.status, 400);
      });

      it('a caller in more teams than one page merges ranges for sees the same (the scan)', async () => {
        const frank = await t.user('frank');
        await t.req('POST', '/api/v1/teams/act/members', { token: alice.token, body: { username: 'frank', role: 'member' } });
        const asBob = names(await feed('/api/v1/users/alice/activity?per_page=100', bob.token));
        assert.deepEqual(names(await feed('/api/v1/users/alice/activity?per_page=100', frank.token)), asBob);
        for (let i = 0; i < MAX_MERGED_RANGES; i++) await seedTeam(t, `many-${i}`, [{ uuid: frank.uuid, role: 'reader' }]);
        assert.deepEqual(names(await feed('/api/v1/users/alice/activity?per_page=100', frank.token)), asBob);
        assert.deepEqual(names(await feed('/api/v1/users/alice/activity?per_page=3&page=2', frank.token)), asBob.slice(3, 6));
      });

      it('migration 092 indexes existing events as they are written now', async () => {
        const actorRows = () =>
          t.deps.db
            .selectFrom('event_scopes')
            .select(['event_id', 'scope', 'kind'])
            .where('scope', 'like', 'actor:%')
            .orderBy('scope')
            .orderBy('event_id')
            .execute();
        const written = await actorRows();
        assert.ok(written.length > 10);
        await t.deps.db.deleteFrom('event_scopes').where('scope', 'like', 'actor:%').execute();
        await up(t.deps.db as unknown as Kysely<unknown>);
        assert.deepEqual(
          (await actorRows()).map((r) => ({ ...r, event_id: Number(r.event_id) })),
          written.map((r) => ({ ...r, event_id: Number(r.event_id) })),
        );
      });
    });
  });
}
