import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';

const TEAM_KEYS = ['created_at', 'is_active', 'name', 'slug', 'updated_at', 'uuid'];

for (const dialect of DIALECTS) {
  describe(`teams (${dialect})`, () => {
    let t: TestApp;
    let alice: { token: string; uuid: string; username: string };
    let bob: { token: string; uuid: string; username: string };
    let carol: { token: string; uuid: string; username: string };

    const allTeams = async () =>
      (await t.req('GET', '/api/v1/teams?all=true&per_page=100')).body.results as Array<{
        slug: string;
        name: string;
        is_active: boolean;
      }>;
    const teamEvents = async (uuid: string) =>
      (await t.req('GET', `/api/v1/events?scope=team:${uuid}&per_page=100`)).body.results as Array<{
        kind: string;
        scopes: string[];
        actor: { username: string } | null;
        payload: Record<string, unknown>;
      }>;

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user('alice');
      bob = await t.user('bob');
      carol = await t.user('carol');
    });
    after(() => t.close());

    describe('POST /teams', () => {
      it('creates a team, lower-cases the slug, trims the name and makes the creator owner', async () => {
        const res = await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: '  Acme Corp ', slug: 'Acme' } });
        assert.equal(res.status, 201);
        assert.deepEqual(Object.keys(res.body).sort(), TEAM_KEYS);
        assert.equal(res.body.name, 'Acme Corp');
        assert.equal(res.body.slug, 'acme');
        assert.equal(res.body.is_active, true);
        assert.match(res.body.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        assert.equal(res.body.updated_at, res.body.created_at);
        const members = await t.req('GET', '/api/v1/teams/acme/members', { token: alice.token });
        assert.equal(members.status, 200);
        assert.equal(members.body.results.length, 1);
        assert.equal(members.body.results[0].username, 'alice');
        assert.equal(members.body.results[0].role, 'owner');
        const events = await teamEvents(res.body.uuid);
        const created = events.find((e) => e.kind === 'team-created');
        assert.ok(created);
        assert.deepEqual(created.scopes.sort(), [`team:${res.body.uuid}`, `user:${alice.uuid}`].sort());
        assert.equal(created.actor?.username, 'alice');
        assert.equal(created.payload.slug, 'acme');
      });

      it('refuses a taken slug (case-insensitively) with 409 slug_taken and changes nothing', async () => {
        const before = await allTeams();
        for (const slug of ['acme', 'ACME', ' acme ']) {
          const res = await t.req('POST', '/api/v1/teams', { token: bob.token, body: { name: 'Other', slug } });
          assert.equal(res.status, 409, slug);
          assert.ok(isErrorBody(res.body, 'slug_taken'));
        }
        assert.deepEqual(await allTeams(), before);
        assert.equal((await t.req('GET', '/api/v1/teams', { token: bob.token })).body.results.length, 0);
      });

      it('refuses reserved slugs with 409 slug_taken', async () => {
        for (const slug of ['admin', 'api', 'Staff', 'settings']) {
          const res = await t.req('POST', '/api/v1/teams', { token: bob.token, body: { name: 'x', slug } });
          assert.equal(res.status, 409, slug);
          assert.ok(isErrorBody(res.body, 'slug_taken'));
        }
      });

      it('validates the body with 400 and creates nothing', async () => {
        const before = await allTeams();
        const bodies: unknown[] = [
          { name: 'x' },
          { slug: 'xx' },
          { name: 'x', slug: 'xx', extra: 1 },
          { name: 'x', slug: '-starts-with-dash' },
          { name: 'x', slug: 'has space' },
          { name: 'x', slug: 'dots.not.allowed' },
          { name: 'x', slug: 'a'.repeat(40) },
          { name: 'x', slug: '' },
          { name: '   ', slug: 'blank-name' },
          { name: '', slug: 'empty-name' },
          { name: 5, slug: 'num-name' },
          { name: 'x', slug: 'é' },
        ];
        for (const body of bodies) {
          const res = await t.req('POST', '/api/v1/teams', { token: bob.token, body });
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.ok(isErrorBody(res.body, 'invalid_request'), JSON.stringify(res.body));
        }
        const bad = await t.req('POST', '/api/v1/teams', {
          token: bob.token,
          rawBody: '{"name":',
          headers: { 'content-type': 'application/json' },
        });
        assert.equal(bad.status, 400);
        assert.deepEqual(await allTeams(), before);
      });

      it('accepts a 39-character slug with digits, - and _', async () => {
        const slug = `9a_b-${'c'.repeat(34)}`;
        const res = await t.req('POST', '/api/v1/teams', { token: bob.token, body: { name: 'Long', slug } });
        assert.equal(res.status, 201);
        assert.equal(res.body.slug, slug);
      });

      it('needs authentication', async () => {
        const res = await t.req('POST', '/api/v1/teams', { token: null, body: { name: 'x', slug: 'anon-team' } });
        assert.equal(res.status, 401);
        assert.ok(isErrorBody(res.body, 'unauthorized'));
        assert.equal((await t.req('GET', '/api/v1/teams/anon-team')).status, 404);
      });

      it('gives one 201 and one 409 slug_taken to two simultaneous creations of the same slug', async () => {
        for (let round = 0; round < 5; round++) {
          const slug = `race-${round}`;
          const [a, b] = await Promise.all([
            t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'A', slug } }),
            t.req('POST', '/api/v1/teams', { token: bob.token, body: { name: 'B', slug } }),
          ]);
          assert.deepEqual([a.status, b.status].sort(), [201, 409], `${a.text} ${b.text}`);
          const loser = a.status === 409 ? a : b;
          assert.ok(isErrorBody(loser.body, 'slug_taken'));
          const winner = a.status === 201 ? a : b;
          const members = await t.req('GET', `/api/v1/teams/${slug}/members`);
          assert.equal(members.body.results.length, 1);
          assert.equal(members.body.results[0].username, winner === a ? 'alice' : 'bob');
          assert.equal((await allTeams()).filter((x) => x.slug === slug).length, 1);
        }
      });
    });

    describe('GET /teams', () => {
      it("lists the caller's teams, oldest first, paged", async () => {
        const c1 = await t.user('lister');
        for (const [i, slug] of ['list-1', 'list-2', 'list-3'].entries()) {
          assert.equal((await t.req('POST', '/api/v1/teams', { token: c1.token, body: { name: slug, slug } })).status, 201);
          // distinct creation times without sleeping: seconds apart, in the past
          const createdAt = new Date(Date.now() - (10 - i) * 1000).toISOString();
          const { uuid } = await t.deps.db
            .updateTable('teams')
            .set({ created_at: createdAt })
            .where('slug', '=', slug)
            .returning('uuid')
            .executeTakeFirstOrThrow();
          // the member rows carry the team's creation time (migration 093), as written with the team
          await t.deps.db.updateTable('team_members').set({ team_created_at: createdAt }).where('team_uuid', '=', uuid).execute();
        }
        // a team the caller is only a reader of counts too; one they are not in does not
        await seedTeam(t, 'list-4', [{ uuid: c1.uuid, role: 'reader' }]);
        await seedTeam(t, 'list-other', []);
        const all = await t.req('GET', '/api/v1/teams', { token: c1.token });
        assert.equal(all.status, 200);
        assert.deepEqual(
          all.body.results.map((x: { slug: string }) => x.slug),
          ['list-1', 'list-2', 'list-3', 'list-4'],
        );
        assert.deepEqual(Object.keys(all.body.results[0]).sort(), TEAM_KEYS);
        assert.equal(all.body.next, null);
        assert.equal(all.body.previous, null);
        const p1 = await t.req('GET', '/api/v1/teams?per_page=2', { token: c1.token });
        assert.deepEqual(
          p1.body.results.map((x: { slug: string }) => x.slug),
          ['list-1', 'list-2'],
        );
        assert.equal(p1.body.next, '/api/v1/teams?per_page=2&page=2');
        assert.equal(p1.body.previous, null);
        const p2 = await t.req('GET', p1.body.next, { token: c1.token });
        assert.deepEqual(
          p2.body.results.map((x: { slug: string }) => x.slug),
          ['list-3', 'list-4'],
        );
        assert.equal(p2.body.next, null);
        assert.equal(p2.body.previous, '/api/v1/teams?per_page=2&page=1');
        const explicitFalse = await t.req('GET', '/api/v1/teams?all=false', { token: c1.token });
        assert.equal(explicitFalse.status, 200);
        assert.equal(explicitFalse.body.results.length, 4);
      });

      it('all=true lists every team for staff and is 403 for others', async () => {
        const staff = await t.req('GET', '/api/v1/teams?all=true&per_page=100');
        assert.equal(staff.status, 200);
        const slugs = staff.body.results.map((x: { slug: string }) => x.slug);
        assert.ok(slugs.includes('list-other'));
        assert.ok(slugs.includes('acme'));
        const admin = await t.req('GET', '/api/v1/teams');
        assert.equal(admin.status, 200);
        assert.equal(admin.body.results.length, 0, 'staff without all=true: their own teams');
        const refused = await t.req('GET', '/api/v1/teams?all=true', { token: alice.token });
        assert.equal(refused.status, 403);
        assert.ok(isErrorBody(refused.body, 'forbidden'));
      });

      it('validates the query', async () => {
        for (const q of ['all=maybe', 'page=0', 'per_page=0', 'page=x', 'per_page=1.5']) {
          const res = await t.req('GET', `/api/v1/teams?${q}`, { token: alice.token });
          assert.equal(res.status, 400, q);
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        const clamp = await t.req('GET', '/api/v1/teams?per_page=1000', { token: alice.token });
        assert.equal(clamp.status, 200);
      });
    });

    describe('GET /teams/{team_slug}', () => {
      it('shows the team to members (slug case-insensitive) and staff, 404 to others', async () => {
        const m = await t.req('GET', '/api/v1/teams/ACME', { token: alice.token });
        assert.equal(m.status, 200);
        assert.equal(m.body.slug, 'acme');
        assert.deepEqual(Object.keys(m.body).sort(), TEAM_KEYS);
        assert.equal((await t.req('GET', '/api/v1/teams/acme')).status, 200);
        const outsider = await t.req('GET', '/api/v1/teams/acme', { token: carol.token });
        assert.equal(outsider.status, 404);
        assert.ok(isErrorBody(outsider.body, 'not_found'));
        const unknown = await t.req('GET', '/api/v1/teams/nope', { token: carol.token });
        assert.equal(unknown.status, 404);
        assert.ok(isErrorBody(unknown.body, 'not_found'));
        assert.equal((await t.req('GET', '/api/v1/teams/acme', { token: null })).status, 401);
      });
    });

    describe('PUT /teams/{team_slug}', () => {
      it('lets the owner rename the team and change its slug', async () => {
        await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Ren', slug: 'ren' } });
        // an older updated_at instead of a sleep, so the rename's new one is later
        const past = new Date(Date.now() - 60_000).toISOString();
        await t.deps.db.updateTable('teams').set({ updated_at: past }).where('slug', '=', 'ren').execute();
        const before = (await t.req('GET', '/api/v1/teams/ren')).body;
        const res = await t.req('PUT', '/api/v1/teams/ren', { token: alice.token, body: { name: ' Renamed ', slug: 'Ren-2' } });
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body).sort(), TEAM_KEYS);
        assert.equal(res.body.uuid, before.uuid);
        assert.equal(res.body.name, 'Renamed');
        assert.equal(res.body.slug, 'ren-2');
        assert.equal(res.body.created_at, before.created_at);
        assert.ok(res.body.updated_at > before.updated_at);
        assert.equal((await t.req('GET', '/api/v1/teams/ren')).status, 404);
        assert.deepEqual((await t.req('GET', '/api/v1/teams/ren-2')).body, res.body);
        const events = await teamEvents(before.uuid);
        const updated = events.find((e) => e.kind === 'team-updated');
        assert.ok(updated);
        assert.deepEqual(updated.scopes, [`team:${before.uuid}`]);
        assert.equal(updated.payload.previous_slug, 'ren');
        // the old slug is free again
        assert.equal((await t.req('GET', '/api/v1/check-team-slug?slug=ren', { token: null })).status, 200);
      });

      it('keeps the same slug without a conflict', async () => {
        const res = await t.req('PUT', '/api/v1/teams/ren-2', { token: alice.token, body: { name: 'Same slug', slug: 'REN-2' } });
        assert.equal(res.status, 200);
        assert.equal(res.body.name, 'Same slug');
        assert.equal(res.body.slug, 'ren-2');
      });

      it('refuses a taken or reserved slug with 409 slug_taken and changes nothing', async () => {
        const before = (await t.req('GET', '/api/v1/teams/ren-2')).body;
        for (const slug of ['acme', 'ACME', 'admin']) {
          const res = await t.req('PUT', '/api/v1/teams/ren-2', { token: alice.token, body: { name: 'Changed', slug } });
          assert.equal(res.status, 409, slug);
          assert.ok(isErrorBody(res.body, 'slug_taken'));
        }
        assert.deepEqual((await t.req('GET', '/api/v1/teams/ren-2')).body, before);
      });

      it('needs name and slug, and rejects bad values with 400', async () => {
        const before = (await t.req('GET', '/api/v1/teams/ren-2')).body;
        const bodies: unknown[] = [
          { name: 'only name' },
          { slug: 'ren-2' },
          {},
          { name: 'x', slug: 'ren-2', extra: true },
          { name: 'x', slug: 'bad slug' },
          { name: ' ', slug: 'ren-2' },
          { name: 'x', slug: 'ren-2', is_active: 'yes' },
        ];
        for (const body of bodies) {
          const res = await t.req('PUT', '/api/v1/teams/ren-2', { token: alice.token, body });
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        assert.deepEqual((await t.req('GET', '/api/v1/teams/ren-2')).body, before);
      });

      it('is_active is staff only (403 for the owner, even unchanged)', async () => {
        const before = (await t.req('GET', '/api/v1/teams/ren-2')).body;
        for (const is_active of [false, true]) {
          const res = await t.req('PUT', '/api/v1/teams/ren-2', {
            token: alice.token,
            body: { name: 'X', slug: 'ren-2', is_active },
          });
          assert.equal(res.status, 403);
          assert.ok(isErrorBody(res.body, 'forbidden'));
        }
        assert.deepEqual((await t.req('GET', '/api/v1/teams/ren-2')).body, before);
      });

      it('members below owner get 403, outsiders 404', async () => {
        await t.req('POST', '/api/v1/teams/ren-2/members', { token: alice.token, body: { username: 'bob', role: 'maintainer' } });
        const before = (await t.req('GET', '/api/v1/teams/ren-2')).body;
        const m = await t.req('PUT', '/api/v1/teams/ren-2', { token: bob.token, body: { name: 'Bob was here', slug: 'ren-2' } });
        assert.equal(m.status, 403);
        assert.ok(isErrorBody(m.body, 'forbidden'));
        const o = await t.req('PUT', '/api/v1/teams/ren-2', {
          token: carol.token,
          body: { name: 'Carol was here', slug: 'ren-2' },
        });
        assert.equal(o.status, 404);
        assert.ok(isErrorBody(o.body, 'not_found'));
        assert.deepEqual((await t.req('GET', '/api/v1/teams/ren-2')).body, before);
      });
    });

    describe('inactive teams', () => {
      it('staff deactivate; members still read; owners cannot change it or its members; staff can; members may leave', async () => {
        const team = (await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'Sleepy', slug: 'sleepy' } }))
          .body;
        await t.req('POST', '/api/v1/teams/sleepy/members', { token: alice.token, body: { username: 'bob', role: 'member' } });
        const off = await t.req('PUT', '/api/v1/teams/sleepy', { body: { name: 'Sleepy', slug: 'sleepy', is_active: false } });
        assert.equal(off.status, 200);
        assert.equal(off.body.is_active, false);
        assert.equal((await teamEvents(team.uuid)).filter((e) => e.kind === 'team-updated').length, 1);

        const read = await t.req('GET', '/api/v1/teams/sleepy', { token: bob.token });
        assert.equal(read.status, 200);
        assert.equal(read.body.is_active, false);
        assert.equal((await t.req('GET', '/api/v1/teams/sleepy/members', { token: bob.token })).status, 200);
        assert.equal((await t.req('GET', '/api/v1/teams/sleepy/activity', { token: bob.token })).status, 200);
        assert.ok(
          (await t.req('GET', '/api/v1/teams', { token: bob.token })).body.results.some(
            (x: { slug: string }) => x.slug === 'sleepy',
          ),
        );

        const membersBefore = (await t.req('GET', '/api/v1/teams/sleepy/members')).body;
        const refusals = [
          await t.req('PUT', '/api/v1/teams/sleepy', { token: alice.token, body: { name: 'Awake', slug: 'sleepy' } }),
          await t.req('POST', '/api/v1/teams/sleepy/members', {
            token: alice.token,
            body: { username: 'carol', role: 'member' },
          }),
          await t.req('PUT', '/api/v1/teams/sleepy/members/bob', { token: alice.token, body: { role: 'owner' } }),
          await t.req('DELETE', '/api/v1/teams/sleepy/members/bob', { token: alice.token }),
        ];
        for (const res of refusals) {
          assert.equal(res.status, 403);
          assert.ok(isErrorBody(res.body, 'team_inactive'), JSON.stringify(res.body));
        }
        assert.equal((await t.req('GET', '/api/v1/teams/sleepy')).body.name, 'Sleepy');
        assert.deepEqual((await t.req('GET', '/api/v1/teams/sleepy/members')).body, membersBefore);

        // staff may manage it
        assert.equal(
          (await t.req('POST', '/api/v1/teams/sleepy/members', { body: { username: 'carol', role: 'reader' } })).status,
          201,
        );
        assert.equal((await t.req('PUT', '/api/v1/teams/sleepy/members/carol', { body: { role: 'member' } })).status, 200);
        // a member may leave
        assert.equal((await t.req('DELETE', '/api/v1/teams/sleepy/members/carol', { token: carol.token })).status, 204);
        // staff reactivate; the owner can change it again
        const on = await t.req('PUT', '/api/v1/teams/sleepy', { body: { name: 'Sleepy', slug: 'sleepy', is_active: true } });
        assert.equal(on.status, 200);
        assert.equal(on.body.is_active, true);
        assert.equal(
          (await t.req('PUT', '/api/v1/teams/sleepy', { token: alice.token, body: { name: 'Awake', slug: 'sleepy' } })).status,
          200,
        );
      });
    });

    describe('GET /check-team-slug', () => {
      it('is public: 200 for a free slug', async () => {
        const res = await t.req('GET', '/api/v1/check-team-slug?slug=free-slug', { token: null });
        assert.equal(res.status, 200);
        assert.deepEqual(res.body, { available: true, suggestion: null });
        const upper = await t.req('GET', '/api/v1/check-team-slug?slug=Free-Slug', { token: null });
        assert.deepEqual(upper.body, { available: true, suggestion: null });
      });

      it('409 with a free suggestion for a taken slug', async () => {
        const res = await t.req('GET', '/api/v1/check-team-slug?slug=ACME', { token: null });
        assert.equal(res.status, 409);
        assert.deepEqual(res.body, { available: false, suggestion: 'acme-2' });
        await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'acme 2', slug: 'acme-2' } });
        const again = await t.req('GET', '/api/v1/check-team-slug?slug=acme', { token: alice.token });
        assert.equal(again.status, 409);
        assert.deepEqual(again.body, { available: false, suggestion: 'acme-3' });
        assert.equal((await t.req('GET', `/api/v1/check-team-slug?slug=${again.body.suggestion}`, { token: null })).status, 200);
      });

      it('409 for reserved slugs, with a suggestion', async () => {
        const res = await t.req('GET', '/api/v1/check-team-slug?slug=admin', { token: null });
        assert.equal(res.status, 409);
        assert.equal(res.body.available, false);
        assert.equal(res.body.suggestion, 'admin-2');
      });

      it('the suggestion fits the 39-character limit', async () => {
        const long = 'l'.repeat(39);
        assert.equal(
          (await t.req('POST', '/api/v1/teams', { token: alice.token, body: { name: 'long', slug: long } })).status,
          201,
        );
        const res = await t.req('GET', `/api/v1/check-team-slug?slug=${long}`, { token: null });
        assert.equal(res.status, 409);
        assert.equal(res.body.suggestion, `${'l'.repeat(37)}-2`);
      });

      it('400 for a missing or malformed slug', async () => {
        for (const q of ['', '?slug=', '?slug=-x', '?slug=a%20b', `?slug=${'a'.repeat(40)}`, '?slug=a.b', '?other=x']) {
          const res = await t.req('GET', `/api/v1/check-team-slug${q}`, { token: null });
          assert.equal(res.status, 400, q);
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
      });

      it('a bad token is still 401', async () => {
        const res = await t.req('GET', '/api/v1/check-team-slug?slug=x', { token: 'weft_nonsense' });
        assert.equal(res.status, 401);
      });
    });

    describe('GET /suggest-users', () => {
      before(async () => {
        await t.req('PUT', '/api/v1/users/carol', { body: { display_name: 'Caroline Smith' } });
        await t.user('sam');
        await t.req('PUT', '/api/v1/users/sam', { body: { display_name: 'Sam Carter' } });
        const gone = await t.user('cara');
        await t.req('PUT', '/api/v1/users/cara', { body: { is_active: false } });
        void gone;
        for (let i = 0; i < 12; i++) await t.user(`zed${String(i).padStart(2, '0')}`);
      });

      const names = (res: { body: { results: Array<{ username: string }> } }) => res.body.results.map((u) => u.username);

      it('matches username or display-name prefixes case-insensitively, active users only, no emails', async () => {
        const res = await t.req('GET', '/api/v1/suggest-users?name=CAR', { token: null });
        assert.equal(res.status, 200);
        assert.deepEqual(Object.keys(res.body), ['results']);
        assert.deepEqual(names(res), ['carol']);
        for (const u of res.body.results) assert.deepEqual(Object.keys(u).sort(), ['display_name', 'username', 'uuid']);
        assert.equal(res.body.results[0].uuid, carol.uuid);
        assert.equal(res.body.results[0].display_name, 'Caroline Smith');
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?name=sam', { token: null })), ['sam']);
        // a display-name prefix only: "Sam Carter" does not start with "carter"
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?name=carter', { token: null })), []);
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?name=caroline', { token: null })), ['carol']);
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?name=aro', { token: null })), []);
        // LIKE wildcards are literal
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?name=%25', { token: null })), []);
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?name=_', { token: null })), []);
      });

      it('at most 10 results, ordered by username', async () => {
        const res = await t.req('GET', '/api/v1/suggest-users?name=zed');
        assert.equal(res.status, 200);
        assert.deepEqual(
          names(res),
          Array.from({ length: 10 }, (_, i) => `zed${String(i).padStart(2, '0')}`),
        );
      });

      it('matches a whole email only, and can combine with name', async () => {
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?email=bob@example.com', { token: null })), ['bob']);
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?email=BOB@Example.com', { token: null })), ['bob']);
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?email=bob@example', { token: null })), []);
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?email=bob', { token: null })), []);
        assert.deepEqual(
          names(await t.req('GET', '/api/v1/suggest-users?email=cara@example.com', { token: null })),
          [],
          'inactive',
        );
        const both = await t.req('GET', '/api/v1/suggest-users?name=sa&email=bob@example.com', { token: null });
        assert.deepEqual(names(both), ['bob', 'sam']);
        assert.ok(!both.text.includes('@'), 'no email in the response');
      });

      it('with team_slug: only members of a team the caller can see, else 404', async () => {
        // acme: alice (owner); add bob
        await t.req('POST', '/api/v1/teams/acme/members', { token: alice.token, body: { username: 'bob', role: 'reader' } });
        const res = await t.req('GET', '/api/v1/suggest-users?name=b&team_slug=ACME', { token: alice.token });
        assert.equal(res.status, 200);
        assert.deepEqual(names(res), ['bob']);
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?name=c&team_slug=acme', { token: alice.token })), []);
        assert.deepEqual(names(await t.req('GET', '/api/v1/suggest-users?name=a&team_slug=acme')), ['alice']);
        for (const [token, slug] of [
          [null, 'acme'],
          [carol.token, 'acme'],
          [alice.token, 'no-such-team'],
        ] as const) {
          const r = await t.req('GET', `/api/v1/suggest-users?name=a&team_slug=${slug}`, { token });
          assert.equal(r.status, 404);
          assert.ok(isErrorBody(r.body, 'not_found'));
        }
      });

      it('400 without name or email, or with bad values', async () => {
        for (const q of ['', '?team_slug=acme', '?name=', '?email=', '?name=%20%20', `?name=${'x'.repeat(101)}`]) {
          const res = await t.req('GET', `/api/v1/suggest-users${q}`, { token: null });
          assert.equal(res.status, 400, q);
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
      });
    });
  });
}
