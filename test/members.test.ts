import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import { eventResults } from './common.ts';

const tick = () => new Promise((r) => setTimeout(r, 3));
const MEMBER_KEYS = ['created_at', 'display_name', 'role', 'user_uuid', 'username'];
type U = { token: string; uuid: string; username: string };

for (const dialect of DIALECTS) {
  describe(`team members (${dialect})`, () => {
    let t: TestApp;
    let owner: U;
    let bob: U;
    let carol: U;
    let dave: U;
    let team: { uuid: string; slug: string };

    const members = async (slug = team.slug) =>
      (await t.req('GET', `/api/v1/teams/${slug}/members?per_page=100`)).body.results as Array<{
        username: string;
        role: string;
      }>;
    const roles = async (slug = team.slug) => Object.fromEntries((await members(slug)).map((m) => [m.username, m.role]));
    /** Sets the team's membership to exactly these roles (set-up straight in the table). */
    const setRoles = async (wanted: Record<string, string>) => {
      const users = { olive: owner, bob, carol, dave };
      await t.deps.db.deleteFrom('team_members').where('team_uuid', '=', team.uuid).execute();
      for (const [name, role] of Object.entries(wanted)) {
        await t.deps.db
          .insertInto('team_members')
          .values({
            team_uuid: team.uuid,
            user_uuid: users[name as keyof typeof users].uuid,
            role,
            created_at: new Date().toISOString(),
          })
          .execute();
      }
    };
    const kinds = async (scope: string) => (await eventResults(t, scope)).map((e) => e.kind);

    before(async () => {
      t = await startApp(dialect);
      owner = await t.user('olive');
      bob = await t.user('bob');
      carol = await t.user('carol');
      dave = await t.user('dave');
      await t.req('PUT', '/api/v1/users/bob', { body: { display_name: 'Bob Builder' } });
      const res = await t.req('POST', '/api/v1/teams', { token: owner.token, body: { name: 'Crew', slug: 'crew' } });
      team = { uuid: res.body.uuid, slug: 'crew' };
    });
    after(() => t.close());

    describe('POST /teams/{t}/members', () => {
      it('adds a member (username case-insensitive) and emits member-added', async () => {
        const res = await t.req('POST', '/api/v1/teams/crew/members', {
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
        const mine = await t.req('GET', `/api/v1/events?scope=user:${bob.uuid}&kind=member-added`, { token: bob.token });
        assert.equal(mine.body.results.length, 1);
        await tick();
      });

      it('409 already_member for an existing member, and nothing changes', async () => {
        const before = await members();
        for (const role of ['maintainer', 'reader', 'owner']) {
          const res = await t.req('POST', '/api/v1/teams/crew/members', { token: owner.token, body: { username: 'bob', role } });
          assert.equal(res.status, 409);
          assert.ok(isErrorBody(res.body, 'already_member'));
        }
        const self = await t.req('POST', '/api/v1/teams/crew/members', {
          token: owner.token,
          body: { username: 'olive', role: 'reader' },
        });
        assert.equal(self.status, 409);
        assert.ok(isErrorBody(self.body, 'already_member'));
        assert.deepEqual(await members(), before);
      });

      it('404 for unknown and inactive users', async () => {
        const gone = await t.user('gone');
        await t.req('PUT', '/api/v1/users/gone', { body: { is_active: false } });
        const before = await members();
        for (const username of ['nobody', 'gone']) {
          const res = await t.req('POST', '/api/v1/teams/crew/members', {
            token: owner.token,
            body: { username, role: 'member' },
          });
          assert.equal(res.status, 404, username);
          assert.ok(isErrorBody(res.body, 'not_found'));
        }
        assert.deepEqual(await members(), before);
        void gone;
      });

      it('400 for a bad role or body', async () => {
        const before = await members();
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
          const res = await t.req('POST', '/api/v1/teams/crew/members', { token: owner.token, body });
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        assert.deepEqual(await members(), before);
      });

      it('403 for members below owner, 404 for outsiders and unknown teams', async () => {
        const before = await members();
        const m = await t.req('POST', '/api/v1/teams/crew/members', {
          token: bob.token,
          body: { username: 'carol', role: 'reader' },
        });
        assert.equal(m.status, 403);
        assert.ok(isErrorBody(m.body, 'forbidden'));
        const o = await t.req('POST', '/api/v1/teams/crew/members', {
          token: carol.token,
          body: { username: 'carol', role: 'owner' },
        });
        assert.equal(o.status, 404);
        assert.ok(isErrorBody(o.body, 'not_found'));
        const u = await t.req('POST', '/api/v1/teams/nope/members', { body: { username: 'carol', role: 'owner' } });
        assert.equal(u.status, 404);
        assert.deepEqual(await members(), before);
      });

      it('staff may add members to any team', async () => {
        const res = await t.req('POST', '/api/v1/teams/crew/members', { body: { username: 'carol', role: 'reader' } });
        assert.equal(res.status, 201);
        assert.equal(res.body.role, 'reader');
        await tick();
      });
    });

    describe('GET /teams/{t}/members', () => {
      it('lists members oldest first, paged, to members and staff only', async () => {
        const all = await t.req('GET', '/api/v1/teams/crew/members', { token: carol.token });
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
        const p1 = await t.req('GET', '/api/v1/teams/crew/members?per_page=2', { token: carol.token });
        assert.equal(p1.body.results.length, 2);
        assert.equal(p1.body.next, '/api/v1/teams/crew/members?per_page=2&page=2');
        const p2 = await t.req('GET', p1.body.next, { token: carol.token });
        assert.deepEqual(
          p2.body.results.map((m: { username: string }) => m.username),
          ['carol'],
        );
        assert.equal(p2.body.next, null);
        assert.equal(p2.body.previous, '/api/v1/teams/crew/members?per_page=2&page=1');
        const out = await t.req('GET', '/api/v1/teams/crew/members', { token: dave.token });
        assert.equal(out.status, 404);
        assert.ok(isErrorBody(out.body, 'not_found'));
        assert.equal((await t.req('GET', '/api/v1/teams/crew/members', { token: null })).status, 401);
        assert.equal((await t.req('GET', '/api/v1/teams/crew/members?page=0')).status, 400);
      });
    });

    describe('GET /teams/{t}/members/{username}', () => {
      it('returns one member; 404 for non-members, unknown users and outsiders', async () => {
        // Builds the membership it asserts, so it also runs alone (--test-name-pattern).
        await setRoles({ olive: 'owner', bob: 'maintainer', carol: 'reader' });
        const res = await t.req('GET', '/api/v1/teams/crew/members/BOB', { token: carol.token });
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), MEMBER_KEYS);
        assert.equal(res.body.username, 'bob');
        assert.equal(res.body.role, 'maintainer');
        for (const [token, name] of [
          [carol.token, 'dave'],
          [carol.token, 'nobody'],
          [dave.token, 'bob'],
        ] as const) {
          const r = await t.req('GET', `/api/v1/teams/crew/members/${name}`, { token });
          assert.equal(r.status, 404);
          assert.ok(isErrorBody(r.body, 'not_found'));
        }
      });
    });

    describe('PUT /teams/{t}/members/{username}', () => {
      it("changes a member's role and emits member-updated", async () => {
        const res = await t.req('PUT', '/api/v1/teams/crew/members/carol', { token: owner.token, body: { role: 'member' } });
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), MEMBER_KEYS);
        assert.equal(res.body.role, 'member');
        assert.equal((await roles()).carol, 'member');
        assert.ok((await kinds(`team:${team.uuid}`)).includes('member-updated'));
        // the same role again: 200, no new event
        const count = (await kinds(`team:${team.uuid}`)).length;
        const same = await t.req('PUT', '/api/v1/teams/crew/members/carol', { token: owner.token, body: { role: 'member' } });
        assert.equal(same.status, 200);
        assert.equal(same.body.role, 'member');
        assert.equal((await kinds(`team:${team.uuid}`)).length, count);
      });

      it('409 last_owner when demoting the only owner; fine once another owner exists', async () => {
        const before = await roles();
        for (const role of ['maintainer', 'member', 'reader']) {
          const res = await t.req('PUT', '/api/v1/teams/crew/members/olive', { token: owner.token, body: { role } });
          assert.equal(res.status, 409);
          assert.ok(isErrorBody(res.body, 'last_owner'));
        }
        const byStaff = await t.req('PUT', '/api/v1/teams/crew/members/olive', { body: { role: 'reader' } });
        assert.equal(byStaff.status, 409);
        assert.ok(isErrorBody(byStaff.body, 'last_owner'));
        assert.deepEqual(await roles(), before);
        assert.equal(
          (await t.req('PUT', '/api/v1/teams/crew/members/bob', { token: owner.token, body: { role: 'owner' } })).status,
          200,
        );
        const demote = await t.req('PUT', '/api/v1/teams/crew/members/olive', { token: bob.token, body: { role: 'maintainer' } });
        assert.equal(demote.status, 200);
        assert.equal(demote.body.role, 'maintainer');
        // and back, so olive owns the team for the tests below
        assert.equal(
          (await t.req('PUT', '/api/v1/teams/crew/members/olive', { token: bob.token, body: { role: 'owner' } })).status,
          200,
        );
        assert.equal(
          (await t.req('PUT', '/api/v1/teams/crew/members/bob', { token: owner.token, body: { role: 'maintainer' } })).status,
          200,
        );
      });

      it('400 for a bad role, 404 for non-members, 403 below owner, 404 for outsiders; nothing changes', async () => {
        const before = await roles();
        for (const body of [{ role: 'king' }, {}, { role: 'member', x: 1 }, { role: null }]) {
          const res = await t.req('PUT', '/api/v1/teams/crew/members/carol', { token: owner.token, body });
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        for (const name of ['dave', 'nobody']) {
          const res = await t.req('PUT', `/api/v1/teams/crew/members/${name}`, { token: owner.token, body: { role: 'member' } });
          assert.equal(res.status, 404);
          assert.ok(isErrorBody(res.body, 'not_found'));
        }
        const m = await t.req('PUT', '/api/v1/teams/crew/members/carol', { token: bob.token, body: { role: 'owner' } });
        assert.equal(m.status, 403);
        assert.ok(isErrorBody(m.body, 'forbidden'));
        const selfPromote = await t.req('PUT', '/api/v1/teams/crew/members/carol', {
          token: carol.token,
          body: { role: 'owner' },
        });
        assert.equal(selfPromote.status, 403);
        const o = await t.req('PUT', '/api/v1/teams/crew/members/carol', { token: dave.token, body: { role: 'owner' } });
        assert.equal(o.status, 404);
        assert.deepEqual(await roles(), before);
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
        assert.equal((await members('duo')).filter((m) => m.role === 'owner').length, 1);
        // the two owners demoting each other at once: the loser is refused (403 once demoted, or 409)
        await t.req('PUT', '/api/v1/teams/duo/members/yuri', { body: { role: 'owner' } });
        await t.req('POST', '/api/v1/teams/duo/members', { body: { username: 'xena', role: 'owner' } });
        const [c, d] = await Promise.all([
          t.req('PUT', '/api/v1/teams/duo/members/yuri', { token: x.token, body: { role: 'member' } }),
          t.req('PUT', '/api/v1/teams/duo/members/xena', { token: y.token, body: { role: 'member' } }),
        ]);
        const statuses = [c.status, d.status].sort();
        assert.ok(statuses[0] === 200 && (statuses[1] === 403 || statuses[1] === 409), `${c.text} ${d.text}`);
        assert.equal((await members('duo')).filter((m) => m.role === 'owner').length, 1);
      });
    });

    describe('DELETE /teams/{t}/members/{username}', () => {
      it('the owner removes a member: 204, member-removed event, gone from the list', async () => {
        await t.req('POST', '/api/v1/teams/crew/members', { token: owner.token, body: { username: 'dave', role: 'member' } });
        const res = await t.req('DELETE', '/api/v1/teams/crew/members/DAVE', { token: owner.token });
        assert.equal(res.status, 204);
        assert.equal(res.text, '');
        assert.equal((await t.req('GET', '/api/v1/teams/crew/members/dave')).status, 404);
        assert.equal((await t.req('GET', '/api/v1/teams/crew', { token: dave.token })).status, 404);
        const ev = (await t.req('GET', `/api/v1/events?scope=team:${team.uuid}&kind=member-removed`)).body.results;
        assert.equal(ev.length, 1);
        assert.deepEqual(ev[0].scopes.sort(), [`team:${team.uuid}`, `user:${dave.uuid}`].sort());
        assert.equal(ev[0].payload.username, 'dave');
        // the removed user still sees it in their own scope
        const mine = await t.req('GET', `/api/v1/events?scope=user:${dave.uuid}&kind=member-removed`, { token: dave.token });
        assert.equal(mine.body.results.length, 1);
        const again = await t.req('DELETE', '/api/v1/teams/crew/members/dave', { token: owner.token });
        assert.equal(again.status, 404);
        assert.ok(isErrorBody(again.body, 'not_found'));
      });

      it('409 last_owner for the only owner, also when leaving; nothing changes', async () => {
        const before = await roles();
        for (const token of [owner.token, t.adminToken]) {
          const res = await t.req('DELETE', '/api/v1/teams/crew/members/olive', { token });
          assert.equal(res.status, 409);
          assert.ok(isErrorBody(res.body, 'last_owner'));
        }
        assert.deepEqual(await roles(), before);
      });

      it('below owner: 403 for removing others; a member may leave; outsiders 404', async () => {
        const before = await roles();
        const r1 = await t.req('DELETE', '/api/v1/teams/crew/members/carol', { token: bob.token });
        assert.equal(r1.status, 403);
        assert.ok(isErrorBody(r1.body, 'forbidden'));
        const r2 = await t.req('DELETE', '/api/v1/teams/crew/members/olive', { token: carol.token });
        assert.equal(r2.status, 403);
        const r3 = await t.req('DELETE', '/api/v1/teams/crew/members/carol', { token: dave.token });
        assert.equal(r3.status, 404);
        const r4 = await t.req('DELETE', '/api/v1/teams/crew/members/nobody', { token: carol.token });
        assert.equal(r4.status, 403);
        assert.deepEqual(await roles(), before);
        const leave = await t.req('DELETE', '/api/v1/teams/crew/members/carol', { token: carol.token });
        assert.equal(leave.status, 204);
        assert.equal((await t.req('GET', '/api/v1/teams/crew', { token: carol.token })).status, 404);
        const ev = (await t.req('GET', `/api/v1/events?scope=user:${carol.uuid}&kind=member-removed`, { token: carol.token }))
          .body.results;
        assert.equal(ev.at(-1).payload.left, true);
      });

      it('an owner may leave when another owner remains; staff may remove anyone', async () => {
        await t.req('PUT', '/api/v1/teams/crew/members/bob', { token: owner.token, body: { role: 'owner' } });
        await t.req('POST', '/api/v1/teams/crew/members', { token: owner.token, body: { username: 'dave', role: 'reader' } });
        assert.equal((await t.req('DELETE', '/api/v1/teams/crew/members/dave')).status, 204);
        assert.equal((await t.req('DELETE', '/api/v1/teams/crew/members/olive', { token: owner.token })).status, 204);
        assert.deepEqual(await roles(), { bob: 'owner' });
      });

      it('a deactivated member is still listed and can be removed', async () => {
        const z = await t.user('zoe');
        await t.req('POST', '/api/v1/teams/crew/members', { token: bob.token, body: { username: 'zoe', role: 'member' } });
        await t.req('PUT', '/api/v1/users/zoe', { body: { is_active: false } });
        assert.equal((await roles()).zoe, 'member');
        assert.equal((await t.req('GET', '/api/v1/teams/crew/members/zoe', { token: bob.token })).status, 200);
        assert.equal((await t.req('DELETE', '/api/v1/teams/crew/members/zoe', { token: bob.token })).status, 204);
        assert.equal((await roles()).zoe, undefined);
        void z;
      });
    });
  });
}
