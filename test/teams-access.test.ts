import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { inTransaction } from '../src/core/transaction.ts';
import { seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';

/**
 * The access matrix of every teams, members, availability, suggestion and activity route: each
 * caller gets exactly the status the rules give. Every cell runs against a freshly seeded team
 * in which reader, member, maintainer and owner hold those roles (plus a member "target"),
 * so cells cannot affect one another.
 */
const CALLERS = ['anonymous', 'outsider', 'reader', 'member', 'maintainer', 'owner', 'staff'] as const;
type Caller = (typeof CALLERS)[number];
type Expect = [number, number, number, number, number, number, number];

interface Cell {
  /** the seeded team's slug, and the caller's username (the outsider's for anonymous) */
  team: string;
  me: string;
  n: number;
  /** the seeded team's uuid */
  uuid: string;
  /** with `event: true`, the id of an event in the team's scope */
  event: string;
}

interface Row {
  name: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: (c: Cell) => string;
  body?: (c: Cell) => unknown;
  inactive?: boolean;
  /** record an event in the team's scope first (as a team change would) */
  event?: boolean;
  /** anonymous, outsider, reader, member, maintainer, owner, staff */
  expect: Expect;
  /** the error code expected with each 403 */
  code403?: string;
}

const ROWS: Row[] = [
  {
    name: 'POST /teams',
    method: 'POST',
    path: () => '/teams',
    body: (c) => ({ name: 'New', slug: `new-${c.n}` }),
    expect: [401, 201, 201, 201, 201, 201, 201],
  },
  { name: 'GET /teams', method: 'GET', path: () => '/teams', expect: [401, 200, 200, 200, 200, 200, 200] },
  { name: 'GET /teams?all=true', method: 'GET', path: () => '/teams?all=true', expect: [401, 403, 403, 403, 403, 403, 200] },
  { name: 'GET /teams/{t}', method: 'GET', path: (c) => `/teams/${c.team}`, expect: [401, 404, 200, 200, 200, 200, 200] },
  {
    name: 'GET /teams/{t} (inactive)',
    inactive: true,
    method: 'GET',
    path: (c) => `/teams/${c.team}`,
    expect: [401, 404, 200, 200, 200, 200, 200],
  },
  {
    name: 'PUT /teams/{t}',
    method: 'PUT',
    path: (c) => `/teams/${c.team}`,
    body: (c) => ({ name: 'Renamed', slug: c.team }),
    expect: [401, 404, 403, 403, 403, 200, 200],
  },
  {
    name: 'PUT /teams/{t} with is_active',
    method: 'PUT',
    path: (c) => `/teams/${c.team}`,
    body: (c) => ({ name: 'Renamed', slug: c.team, is_active: true }),
    expect: [401, 404, 403, 403, 403, 403, 200],
  },
  {
    name: 'PUT /teams/{t} (inactive)',
    inactive: true,
    method: 'PUT',
    path: (c) => `/teams/${c.team}`,
    body: (c) => ({ name: 'Renamed', slug: c.team }),
    expect: [401, 404, 403, 403, 403, 403, 200],
  },
  {
    name: 'GET /teams/{t}/activity',
    method: 'GET',
    path: (c) => `/teams/${c.team}/activity`,
    expect: [401, 404, 200, 200, 200, 200, 200],
  },
  {
    name: 'GET /teams/{t}/activity (inactive)',
    inactive: true,
    method: 'GET',
    path: (c) => `/teams/${c.team}/activity`,
    expect: [401, 404, 200, 200, 200, 200, 200],
  },
  {
    name: 'GET /events?scope=team:{uuid}',
    method: 'GET',
    path: (c) => `/events?scope=team:${c.uuid}`,
    expect: [401, 404, 200, 200, 200, 200, 200],
  },
  {
    name: 'GET /events/{id} of a team event',
    event: true,
    method: 'GET',
    path: (c) => `/events/${c.event}`,
    expect: [401, 404, 200, 200, 200, 200, 200],
  },
  {
    name: 'GET /check-team-slug (free)',
    method: 'GET',
    path: (c) => `/check-team-slug?slug=free-${c.n}`,
    expect: [200, 200, 200, 200, 200, 200, 200],
  },
  {
    name: 'GET /check-team-slug (taken)',
    method: 'GET',
    path: (c) => `/check-team-slug?slug=${c.team}`,
    expect: [409, 409, 409, 409, 409, 409, 409],
  },
  {
    name: 'GET /teams/{t}/members',
    method: 'GET',
    path: (c) => `/teams/${c.team}/members`,
    expect: [401, 404, 200, 200, 200, 200, 200],
  },
  {
    name: 'POST /teams/{t}/members',
    method: 'POST',
    path: (c) => `/teams/${c.team}/members`,
    body: () => ({ username: 'newbie', role: 'member' }),
    expect: [401, 404, 403, 403, 403, 201, 201],
  },
  {
    name: 'POST /teams/{t}/members (inactive)',
    inactive: true,
    method: 'POST',
    path: (c) => `/teams/${c.team}/members`,
    body: () => ({ username: 'newbie', role: 'member' }),
    expect: [401, 404, 403, 403, 403, 403, 201],
  },
  {
    name: 'GET /teams/{t}/members/{u}',
    method: 'GET',
    path: (c) => `/teams/${c.team}/members/target`,
    expect: [401, 404, 200, 200, 200, 200, 200],
  },
  {
    name: 'PUT /teams/{t}/members/{u}',
    method: 'PUT',
    path: (c) => `/teams/${c.team}/members/target`,
    body: () => ({ role: 'maintainer' }),
    expect: [401, 404, 403, 403, 403, 200, 200],
  },
  {
    name: 'PUT /teams/{t}/members/{u} (inactive)',
    inactive: true,
    method: 'PUT',
    path: (c) => `/teams/${c.team}/members/target`,
    body: () => ({ role: 'maintainer' }),
    expect: [401, 404, 403, 403, 403, 403, 200],
  },
  {
    name: 'DELETE /teams/{t}/members/{u}',
    method: 'DELETE',
    path: (c) => `/teams/${c.team}/members/target`,
    expect: [401, 404, 403, 403, 403, 204, 204],
  },
  {
    name: 'DELETE /teams/{t}/members/{u} (inactive)',
    inactive: true,
    method: 'DELETE',
    path: (c) => `/teams/${c.team}/members/target`,
    expect: [401, 404, 403, 403, 403, 403, 204],
  },
  // leaving: the owner is the only owner (409 last_owner); staff are not members (404)
  {
    name: 'DELETE /teams/{t}/members/{me}',
    method: 'DELETE',
    path: (c) => `/teams/${c.team}/members/${c.me}`,
    expect: [401, 404, 204, 204, 204, 409, 404],
  },
  {
    name: 'DELETE /teams/{t}/members/{me} (inactive)',
    inactive: true,
    method: 'DELETE',
    path: (c) => `/teams/${c.team}/members/${c.me}`,
    expect: [401, 404, 204, 204, 204, 409, 404],
  },
  {
    name: 'GET /suggest-users',
    method: 'GET',
    path: () => '/suggest-users?name=tar',
    expect: [200, 200, 200, 200, 200, 200, 200],
  },
  {
    name: 'GET /suggest-users?team_slug',
    method: 'GET',
    path: (c) => `/suggest-users?name=tar&team_slug=${c.team}`,
    expect: [404, 404, 200, 200, 200, 200, 200],
  },
  {
    name: 'GET /users/{u}/activity',
    method: 'GET',
    path: () => '/users/target/activity',
    expect: [401, 200, 200, 200, 200, 200, 200],
  },
];

for (const dialect of DIALECTS) {
  describe(`teams access matrix (${dialect})`, () => {
    let t: TestApp;
    const users = {} as Record<Caller | 'target' | 'newbie', { token: string; uuid: string; username: string }>;
    let n = 0;

    before(async () => {
      t = await startApp(dialect);
      for (const name of ['outsider', 'reader', 'member', 'maintainer', 'owner', 'target', 'newbie'] as const)
        users[name] = await t.user(name);
      users.staff = await t.user('staffer', { staff: true });
    });
    after(() => t.close());

    for (const row of ROWS) {
      it(row.name, async () => {
        const got: number[] = [];
        for (const caller of CALLERS) {
          n += 1;
          const team = await seedTeam(
            t,
            `matrix-${n}`,
            [
              { uuid: users.owner.uuid, role: 'owner' },
              { uuid: users.maintainer.uuid, role: 'maintainer' },
              { uuid: users.member.uuid, role: 'member' },
              { uuid: users.reader.uuid, role: 'reader' },
              { uuid: users.target.uuid, role: 'member' },
            ],
            { is_active: !row.inactive },
          );
          const me = caller === 'anonymous' ? 'outsider' : caller === 'staff' ? 'staffer' : caller;
          let event = '';
          if (row.event) {
            const ev = await inTransaction(t.deps, (tx) =>
              tx.emit({
                kind: 'team-updated',
                scopes: [`team:${team.uuid}`],
                actor: null,
                payload: { team_uuid: team.uuid, fields: [] },
              }),
            );
            event = ev.id;
          }
          const cell = { team: team.slug, me, n, uuid: team.uuid, event };
          const res = await t.req(row.method, `/api/v1${row.path(cell)}`, {
            token: caller === 'anonymous' ? null : users[caller].token,
            ...(row.body ? { body: row.body(cell) } : {}),
          });
          got.push(res.status);
          if (res.status === 403) {
            const want = row.code403 ?? (row.inactive && caller === 'owner' ? 'team_inactive' : 'forbidden');
            assert.equal(res.body.error, want, `${row.name} as ${caller}: ${res.text}`);
          }
        }
        assert.deepEqual(
          Object.fromEntries(CALLERS.map((c, i) => [c, got[i]])),
          Object.fromEntries(CALLERS.map((c, i) => [c, row.expect[i]])),
        );
      });
    }
  });
}
