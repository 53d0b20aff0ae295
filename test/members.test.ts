import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import { eventResults, type Person } from './common.ts';

const MEMBER_KEYS = ['created_at', 'display_name', 'origin', 'role', 'user_uuid', 'username'];
type Team = { uuid: string; slug: string; path: string };
type Roles = Partial<Record<'olive' | 'bob' | 'carol' | 'dave', string>>;

/**
 * Every test builds the team it asserts on (its own slug, its exact membership), so each runs
 * alone (--test-name-pattern) and in any order. The users are made once and never changed.
 */
for (const dialect of DIALECTS) {
  describe(`team members (${dialect})`, () => {
    let t: TestApp;
    let owner: Person;
    let bob: Person;
    let carol: Person;
    let dave: Person;
    let teams = 0;

    const members = async (team: Pick<Team, 'path'>) =>
      (await t.req('GET', `${team.path}/members?per_page=100`)).body.results as Array<{
        username: string;
        role: string;
      }>;
    const roles = async (team: Team) => Object.fromEntries((await members(team)).map((m) => [m.username, m.role]));
    /**
     * A new team that olive creates through the API, its membership then set to exactly `wanted`
     * straight in the table (no events), with created_at one second apart in the order given.
     */
    const crew = async (wanted: Roles = { olive: 'owner', bob: 'maintainer', carol: 'reader' }): Promise<Team> => {
      const slug = `crew-${++teams}`;
      const res = await t.req('POST', '/api/v1/teams', { token: owner.token, body: { name: `Crew ${teams}`, slug } });
      assert.equal(res.status, 201, res.text);
      const team = { uuid: res.body.uuid as string, slug, path: `/api/v1/teams/${slug}` };
      const users = { olive: owner, bob, carol, dave };
      await t.deps.db.deleteFrom('team_members').where('team_uuid', '=', team.uuid).execute();
      const entries = Object.entries(wanted);
      for (const [i, [name, role]] of entries.entries()) {
        await t.deps.db
          .insertInto('team_members')
          .values({
            team_uuid: team.uuid,
            user_uuid: users[name as keyof typeof users].uuid,
            role: role!,
            created_at: new Date(Date.now() - (entries.length - i) * 1000).toISOString(),
            team_created_at: res.body.created_at as string,
          })
          .execute();
      }
      return team;
    };
    const kinds = async (scope: string) => (await eventResults(t, scope)).map((e) => e.kind);
    /** Events of `kind` in a user's own scope that concern this team. */
    const userEvents = async (user: Person, kind: string, team: Team) =>
      (await t.req('GET', `/api/v1/events?scope=user:${user.uuid}&kind=${kind}`, { token: user.token })).body.results.filter(
        (e: { scopes: string[] }) => e.scopes.includes(`team:${team.uuid}`),
      );

    before(async () => {
      t = await startApp(dialect);
      owner = await t.user('olive');
      bob = await t.user('bob');
      carol = await t.user('carol');
      dave = await t.user('dave');
      await t.req('PUT', '/api/v1/users/bob', { body: { display_name: 'Bob Builder' } });
    });
    after(() => t.close());

    describe('POST /teams/{t}/members', () => {
      it('adds a member (username case-insensitive) and emits member-added', async () => {
        const team = await crew({ olive: 'owner' });
        const res = await t.req('POST', `${team.path}/members`, {
          token: owner.token,
          body: { username: ' BOB ', role: 'maintainer' },
        });
        assert.equal(res.status, 201);
        assert.deepEqual(Object.keys(res.body).sort(), MEMBER_KEYS);
        assert.equal(res.body.user_uuid, bob.uuid);
        assert.equal(res.body.username, 'bob');
        assert.equal(res.body.display_name, 'Bob Builder');
        assert.equal(res.body.role, 'maintainer');
        assert.match(res.body.created_at, /Z$/);
        const ev = (await t.req('GET', `/api/v1/events?scope=team:${team.uuid}&kind=member-added`)).body.results;
        assert.equal(ev.length, 1);
        assert.deepEqual(ev[0].scopes.sort(), [`team:${team.uuid}`, `user:${bob.uuid}`].sort());
        assert.deepEqual(ev[0].actor, { uuid: owner.uuid, username: 'olive' });
        assert.equal(ev[0].payload.username, 'bob');
        assert.equal(ev[0].payload.role, 'maintainer');
        // the member sees the event in their own user scope
        assert.equal((await userEvents(bob, 'member-added', team)).length, 1);
      });

      it('409 already_member for an existing member, and nothing changes', async () => {
        const team = await crew({ olive: 'owner', bob: 'maintainer' });
        const before = await members(team);
        for (const role of ['maintainer', 'reader', 'owner']) {
          const res = await t.req('POST', `${team.path}/members`, { token: owner.token, body: { username: 'bob', role } });
          assert.equal(res.status, 409);
          assert.ok(isErrorBody(res.body, 'already_member'));
        }
        const self = await t.req('POST', `${team.path}/members`, {
          token: owner.token,
          body: { username: 'olive', role: 'reader' },
        });
        assert.equal(self.status, 409);
        assert.ok(isErrorBody(self.body, 'already_member'));
        assert.deepEqual(await members(team), before);
      });

      it('404 for unknown and inactive users', async () => {
        const team = await crew({ olive: 'owner', bob: 'maintainer' });
        const gone = await t.user('gone');
        await t.req('PUT', '/api/v1/users/gone', { body: { is_active: false } });
        const before = await members(team);
        for (const username of ['nobody', 'gone']) {
          const res = await t.req('POST', `${team.path}/members`, {
            token: owner.token,
            body: { username, role: 'member' },
          });
          assert.equal(res.status, 404, username);
          assert.ok(isErrorBody(res.body, 'not_found'));
        }
        assert.deepEqual(await members(team), before);
        void gone;
      });

      it('400 for a bad role or body', async () => {
        const team = await crew({ olive: 'owner', bob: 'maintainer' });
        const before = await members(team);
        const bodies: unknown[] = [
          { username: 'carol', role: 'admin' },
          { username: 'carol', role: 'Owner' },
          { username: 'carol', role: '' },
          { username: 'carol' },
          { role: 'member' },
          { username: 'carol', role: 'member', extra: 1 },
          { username: 5, role: 'member' },
        ];
        for (const body of bodies) {
          const res = await t.req('POST', `${team.path}/members`, { token: owner.token, body });
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        assert.deepEqual(await members(team), before);
      });

      it('403 for members below owner, 404 for outsiders and unknown teams', async () => {
        const team = await crew({ olive: 'owner', bob: 'maintainer' });
        const before = await members(team);
        const m = await t.req('POST', `${team.path}/members`, {
          token: bob.token,
          body: { username: 'carol', role: 'reader' },
        });
        assert.equal(m.status, 403);
        assert.ok(isErrorBody(m.body, 'forbidden'));
        const o = await t.req('POST', `${team.path}/members`, {
          token: carol.token,
          body: { username: 'carol', role: 'owner' },
        });
        assert.equal(o.status, 404);
        assert.ok(isErrorBody(o.body, 'not_found'));
        const u = await t.req('POST', '/api/v1/teams/nope/members', { body: { username: 'carol', role: 'owner' } });
        assert.equal(u.status, 404);
        assert.deepEqual(await members(team), before);
      });

      it('staff may add members to any team', async () => {
        const team = await crew({ olive: 'owner', bob: 'maintainer' });
        const res = await t.req('POST', `${team.path}/members`, { body: { username: 'carol', role: 'reader' } });
        assert.equal(res.status, 201);
        assert.equal(res.body.role, 'reader');
      });
    });

    describe('GET /teams/{t}/members', () => {
      it('lists members oldest first, paged, to members and staff only', async () => {
        const team = await crew();
        const all = await t.req('GET', `${team.path}/members`, { token: carol.token });
        assert.equal(all.status, 200);
        assert.deepEqual(
          all.body.results.map((m: { username: string }) => m.username),
          ['olive', 'bob', 'carol'],
        );
        assert.deepEqual(
          all.body.results.map((m: { role: string }) => m.role),
          ['owner', 'maintainer', 'reader'],
        );
        for (const m of all.body.results) assert.deepEqual(Object.keys(m).sort(), MEMBER_KEYS);
        const p1 = await t.req('GET', `${team.path}/members?per_page=2`, { token: carol.token });
        assert.equal(p1.body.results.length, 2);
        assert.equal(p1.body.next, `${team.path}/members?per_page=2&page=2`);
        const p2 = await t.req('GET', p1.body.next, { token: carol.token });
        assert.deepEqual(
          p2.body.results.map((m: { username: string }) => m.username),
          ['carol'],
        );
        assert.equal(p2.body.next, null);
        assert.equal(p2.body.previous, `${team.path}/members?per_page=2&page=1`);
        const out = await t.req('GET', `${team.path}/members`, { token: dave.token });
        assert.equal(out.status, 404);
        assert.ok(isErrorBody(out.body, 'not_found'));
        assert.equal((await t.req('GET', `${team.path}/members`, { token: null })).status, 401);
        assert.equal((await t.req('GET', `${team.path}/members?page=0`)).status, 400);
      });
    });

    describe('GET /teams/{t}/members/{username}', () => {
      it('returns one member; 404 for non-members, unknown users and outsiders', async () => {
        const team = await crew();
        const res = await t.req('GET', `${team.path}/members/BOB`, { token: carol.token });
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), MEMBER_KEYS);
        assert.equal(res.body.username, 'bob');
        assert.equal(res.body.role, 'maintainer');
        for (const [token, name] of [
          [carol.token, 'dave'],
          [carol.token, 'nobody'],
          [dave.token, 'bob'],
        ] as const) {
          const r = await t.req('GET', `${team.path}/members/${name}`, { token });
          assert.equal(r.status, 404);
          assert.ok(isErrorBody(r.body, 'not_found'));
        }
      });
    });

    describe('PUT /teams/{t}/members/{username}', () => {
      it("changes a member's role and emits member-updated", async () => {
        const team = await crew();
        const res = await t.req('PUT', `${team.path}/members/carol`, { token: owner.token, body: { role: 'member' } });
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), MEMBER_KEYS);
        assert.equal(res.body.role, 'member');
        assert.equal((await roles(team)).carol, 'member');
        assert.ok((await kinds(`team:${team.uuid}`)).includes('member-updated'));
        // the same role again: 200, no new event
        const count = (await kinds(`team:${team.uuid}`)).length;
        const same = await t.req('PUT', `${team.path}/members/carol`, { token: owner.token, body: { role: 'member' } });
        assert.equal(same.status, 200);
        assert.equal(same.body.role, 'member');
        assert.equal((await kinds(`team:${team.uuid}`)).length, count);
      });

      it('409 last_owner when demoting the only owner; fine once another owner exists', async () => {
        const team = await crew();
        const before = await roles(team);
        for (const role of ['maintainer', 'member', 'reader']) {
          const res = await t.req('PUT', `${team.path}/members/olive`, { token: owner.token, body: { role } });
          assert.equal(res.status, 409);
          assert.ok(isErrorBody(res.body, 'last_owner'));
        }
        const byStaff = await t.req('PUT', `${team.path}/members/olive`, { body: { role: 'reader' } });
        assert.equal(byStaff.status, 409);
        assert.ok(isErrorBody(byStaff.body, 'last_owner'));
        assert.deepEqual(await roles(team), before);
        assert.equal(
          (await t.req('PUT', `${team.path}/members/bob`, { token: owner.token, body: { role: 'owner' } })).status,
          200,
        );
        const demote = await t.req('PUT', `${team.path}/members/olive`, { token: bob.token, body: { role: 'maintainer' } });
        assert.equal(demote.status, 200);
        assert.equal(demote.body.role, 'maintainer');
        assert.deepEqual(await roles(team), { olive: 'maintainer', bob: 'owner', carol: 'reader' });
      });

      it('400 for a bad role, 404 for non-members, 403 below owner, 404 for outsiders; nothing changes', async () => {
        const team = await crew();
        const before = await roles(team);
        for (const body of [{ role: 'king' }, {}, { role: 'member', x: 1 }, { role: null }]) {
          const res = await t.req('PUT', `${team.path}/members/carol`, { token: owner.token, body });
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        for (const name of ['dave', 'nobody']) {
          const res = await t.req('PUT', `${team.path}/members/${name}`, { token: owner.token, body: { role: 'member' } });
          assert.equal(res.status, 404);
          assert.ok(isErrorBody(res.body, 'not_found'));
        }
        const m = await t.req('PUT', `${team.path}/members/carol`, { token: bob.token, body: { role: 'owner' } });
        assert.equal(m.status, 403);
        assert.ok(isErrorBody(m.body, 'forbidden'));
        const selfPromote = await t.req('PUT', `${team.path}/members/carol`, {
          token: carol.token,
          body: { role: 'owner' },
        });
        assert.equal(selfPromote.status, 403);
        const o = await t.req('PUT', `${team.path}/members/carol`, { token: dave.token, body: { role: 'owner' } });
        assert.equal(o.status, 404);
        assert.deepEqual(await roles(team), before);
      });

      it('concurrent demotions and removals keep exactly one owner', async () => {
        const x = await t.user('xena');
        const y = await t.user('yuri');
        await t.req('POST', '/api/v1/teams', { token: x.token, body: { name: 'Duo', slug: 'duo' } });
        await t.req('POST', '/api/v1/teams/duo/members', { token: x.token, body: { username: 'yuri', role: 'owner' } });
        // staff demote both at once: the team keeps exactly one owner
        const [a, b] = await Promise.all([
          t.req('PUT', '/api/v1/teams/duo/members/yuri', { body: { role: 'member' } }),
          t.req('DELETE', '/api/v1/teams/duo/members/xena'),
        ]);
        assert.deepEqual([a.status, b.status].sort(), a.status === 200 ? [200, 409] : [204, 409], `${a.text} ${b.text}`);
        assert.ok(isErrorBody((a.status === 409 ? a : b).body, 'last_owner'));
        assert.equal((await members({ path: '/api/v1/teams/duo' })).filter((m) => m.role === 'owner').length, 1);
        // the two owners demoting each other at once: the loser is refused (403 once demoted, or 409)
        await t.req('PUT', '/api/v1/teams/duo/members/yuri', { body: { role: 'owner' } });
        await t.req('POST', '/api/v1/teams/duo/members', { body: { username: 'xena', role: 'owner' } });
        const [c, d] = await Promise.all([
          t.req('PUT', '/api/v1/teams/duo/members/yuri', { token: x.token, body: { role: 'member' } }),
          t.req('PUT', '/api/v1/teams/duo/members/xena', { token: y.token, body: { role: 'member' } }),
        ]);
        const statuses = [c.status, d.status].sort();
        assert.ok(statuses[0] === 200 && (statuses[1] === 403 || statuses[1] === 409), `${c.text} ${d.text}`);
        assert.equal((await members({ path: '/api/v1/teams/duo' })).filter((m) => m.role === 'owner').length, 1);
      });
    });

    describe('DELETE /teams/{t}/members/{username}', () => {
      it('the owner removes a member: 204, member-removed event, gone from the list', async () => {
        const team = await crew();
        await t.req('POST', `${team.path}/members`, { token: owner.token, body: { username: 'dave', role: 'member' } });
        const res = await t.req('DELETE', `${team.path}/members/DAVE`, { token: owner.token });
        assert.equal(res.status, 204);
        assert.equal(res.text, '');
        assert.equal((await t.req('GET', `${team.path}/members/dave`)).status, 404);
        assert.equal((await t.req('GET', team.path, { token: dave.token })).status, 404);
        const ev = (await t.req('GET', `/api/v1/events?scope=team:${team.uuid}&kind=member-removed`)).body.results;
        assert.equal(ev.length, 1);
        assert.deepEqual(ev[0].scopes.sort(), [`team:${team.uuid}`, `user:${dave.uuid}`].sort());
        assert.equal(ev[0].payload.username, 'dave');
        // the removed user still sees it in their own scope
        assert.equal((await userEvents(dave, 'member-removed', team)).length, 1);
        const again = await t.req('DELETE', `${team.path}/members/dave`, { token: owner.token });
        assert.equal(again.status, 404);
        assert.ok(isErrorBody(again.body, 'not_found'));
      });

      it('409 last_owner for the only owner, also when leaving; nothing changes', async () => {
        const team = await crew();
        const before = await roles(team);
        for (const token of [owner.token, t.adminToken]) {
          const res = await t.req('DELETE', `${team.path}/members/olive`, { token });
          assert.equal(res.status, 409);
          assert.ok(isErrorBody(res.body, 'last_owner'));
        }
        assert.deepEqual(await roles(team), before);
      });

      it('below owner: 403 for removing others; a member may leave; outsiders 404', async () => {
        const team = await crew();
        const before = await roles(team);
        const r1 = await t.req('DELETE', `${team.path}/members/carol`, { token: bob.token });
        assert.equal(r1.status, 403);
        assert.ok(isErrorBody(r1.body, 'forbidden'));
        const r2 = await t.req('DELETE', `${team.path}/members/olive`, { token: carol.token });
        assert.equal(r2.status, 403);
        const r3 = await t.req('DELETE', `${team.path}/members/carol`, { token: dave.token });
        assert.equal(r3.status, 404);
        const r4 = await t.req('DELETE', `${team.path}/members/nobody`, { token: carol.token });
        assert.equal(r4.status, 403);
        assert.deepEqual(await roles(team), before);
        const leave = await t.req('DELETE', `${team.path}/members/carol`, { token: carol.token });
        assert.equal(leave.status, 204);
        assert.equal((await t.req('GET', team.path, { token: carol.token })).status, 404);
        const ev = await userEvents(carol, 'member-removed', team);
        assert.equal(ev.length, 1);
        assert.equal(ev[0].payload.left, true);
      });

      it('an owner may leave when another owner remains; staff may remove anyone', async () => {
        const team = await crew({ olive: 'owner', bob: 'maintainer' });
        await t.req('PUT', `${team.path}/members/bob`, { token: owner.token, body: { role: 'owner' } });
        await t.req('POST', `${team.path}/members`, { token: owner.token, body: { username: 'dave', role: 'reader' } });
        assert.equal((await t.req('DELETE', `${team.path}/members/dave`)).status, 204);
        assert.equal((await t.req('DELETE', `${team.path}/members/olive`, { token: owner.token })).status, 204);
        assert.deepEqual(await roles(team), { bob: 'owner' });
      });

      it('a deactivated member is still listed and can be removed', async () => {
        const team = await crew({ bob: 'owner' });
        const z = await t.user('zoe');
        await t.req('POST', `${team.path}/members`, { token: bob.token, body: { username: 'zoe', role: 'member' } });
        await t.req('PUT', '/api/v1/users/zoe', { body: { is_active: false } });
        assert.equal((await roles(team)).zoe, 'member');
        assert.equal((await t.req('GET', `${team.path}/members/zoe`, { token: bob.token })).status, 200);
        assert.equal((await t.req('DELETE', `${team.path}/members/zoe`, { token: bob.token })).status, 204);
        assert.equal((await roles(team)).zoe, undefined);
        void z;
      });
    });
  });
}
