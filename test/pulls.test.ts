import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { seedRepo } from './fixtures.ts';
import { DIALECTS, isErrorBody, type Res, startApp, type TestApp } from './helpers.ts';
import {
  buildWorld,
  eventsOf,
  openPull,
  PULL_KEYS,
  type RepoHandle,
  setRepoFlags,
  setTeamActive,
  type World,
} from './pulls-fixtures.ts';

const newPull = (over: Record<string, unknown> = {}) => ({
  title: 'Add a feature',
  body: 'It does things.',
  source_branch: 'feature/x',
  target_branch: 'main',
  ...over,
});

async function pullCount(t: TestApp, repoUuid: string): Promise<number> {
  const row = await t.deps.db
    .selectFrom('pulls')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('repo_uuid', '=', repoUuid)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

// ------------------------------------------------------------------ access matrix

type Role = 'anonymous' | 'outsider' | 'reader' | 'member' | 'maintainer' | 'owner' | 'staff';
const TEAM_ROLES: Role[] = ['anonymous', 'outsider', 'reader', 'member', 'maintainer', 'owner', 'staff'];
const USER_ROLES: Role[] = ['anonymous', 'outsider', 'owner', 'staff'];

interface Attempt {
  res: Res;
  /** when the request was refused: true if nothing changed */
  unchanged(): Promise<boolean>;
}

interface Action {
  name: string;
  /** expected status per role on a private repo */
  private: Record<Role, number>;
  /** expected status for an authenticated outsider on a public repo (policy `any`) */
  publicOutsider: number;
  run(t: TestApp, repo: RepoHandle, token: string | null): Promise<Attempt>;
}

const reads = (ok: number): Record<Role, number> => ({
  anonymous: 401,
  outsider: 404,
  reader: ok,
  member: ok,
  maintainer: ok,
  owner: ok,
  staff: ok,
});
const nothing = async () => true;

const ACTIONS: Action[] = [
  {
    name: 'GET pulls',
    private: reads(200),
    publicOutsider: 200,
    run: async (t, repo, token) => {
      await openPull(t, repo.base);
      return { res: await t.req('GET', `${repo.base}/pulls`, { token }), unchanged: nothing };
    },
  },
  {
    name: 'POST pulls',
    private: reads(201),
    publicOutsider: 201,
    run: async (t, repo, token) => {
      const before = await pullCount(t, repo.uuid);
      const res = await t.req('POST', `${repo.base}/pulls`, { token, body: newPull() });
      return { res, unchanged: async () => (await pullCount(t, repo.uuid)) === before };
    },
  },
  {
    name: 'GET pull',
    private: reads(200),
    publicOutsider: 200,
    run: async (t, repo, token) => {
      const pull = await openPull(t, repo.base);
      return { res: await t.req('GET', `${repo.base}/pulls/${pull.number}`, { token }), unchanged: nothing };
    },
  },
  {
    name: 'PUT pull (not the author)',
    private: { ...reads(200), reader: 403, member: 403 },
    publicOutsider: 403,
    run: async (t, repo, token) => {
      const pull = await openPull(t, repo.base);
      const res = await t.req('PUT', `${repo.base}/pulls/${pull.number}`, {
        token,
        body: { title: 'Renamed', status: 'closed' },
      });
      return {
        res,
        unchanged: async () => {
          const now = await t.req('GET', `${repo.base}/pulls/${pull.number}`);
          return now.body.title === pull.title && now.body.status === 'open' && now.body.updated_at === pull.updated_at;
        },
      };
    },
  },
  {
    name: 'POST merge',
    private: { ...reads(200), reader: 403 },
    publicOutsider: 403,
    run: async (t, repo, token) => {
      const pull = await openPull(t, repo.base);
      const res = await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { token, body: {} });
      return {
        res,
        unchanged: async () => (await t.req('GET', `${repo.base}/pulls/${pull.number}`)).body.status === 'open',
      };
    },
  },
  {
    name: 'GET protection',
    private: reads(200),
    publicOutsider: 200,
    run: async (t, repo, token) => {
      const pull = await openPull(t, repo.base);
      return { res: await t.req('GET', `${repo.base}/pulls/${pull.number}/protection`, { token }), unchanged: nothing };
    },
  },
  {
    name: 'GET reviews',
    private: reads(200),
    publicOutsider: 200,
    run: async (t, repo, token) => {
      const pull = await openPull(t, repo.base);
      return { res: await t.req('GET', `${repo.base}/pulls/${pull.number}/reviews`, { token }), unchanged: nothing };
    },
  },
  {
    name: 'POST review',
    private: reads(201),
    publicOutsider: 201,
    run: async (t, repo, token) => {
      const pull = await openPull(t, repo.base);
      const url = `${repo.base}/pulls/${pull.number}/reviews`;
      const res = await t.req('POST', url, { token, body: { status: 'approved', body: 'LGTM' } });
      return { res, unchanged: async () => (await t.req('GET', url)).body.results.length === 0 };
    },
  },
  {
    name: 'GET review',
    private: reads(200),
    publicOutsider: 200,
    run: async (t, repo, token) => {
      const pull = await openPull(t, repo.base);
      const review = await t.req('POST', `${repo.base}/pulls/${pull.number}/reviews`, { body: { status: 'commented' } });
      assert.equal(review.status, 201, review.text);
      const res = await t.req('GET', `${repo.base}/pulls/${pull.number}/reviews/${review.body.uuid}`, { token });
      return { res, unchanged: nothing };
    },
  },
  {
    name: 'DELETE review (not the author)',
    private: { ...reads(204), reader: 403, member: 403 },
    publicOutsider: 403,
    run: async (t, repo, token) => {
      const pull = await openPull(t, repo.base);
      const review = await t.req('POST', `${repo.base}/pulls/${pull.number}/reviews`, { body: { status: 'commented' } });
      assert.equal(review.status, 201, review.text);
      const url = `${repo.base}/pulls/${pull.number}/reviews/${review.body.uuid}`;
      const res = await t.req('DELETE', url, { token });
      return { res, unchanged: async () => (await t.req('GET', url)).body.removed_at === null };
    },
  },
];

const ERROR_CODE: Record<number, string> = { 401: 'unauthorized', 403: 'forbidden', 404: 'not_found' };

function tokenFor(w: World, role: Role, form: 'team' | 'user'): string | null {
  switch (role) {
    case 'anonymous':
      return null;
    case 'owner':
      return form === 'team' ? w.owner.token : w.solo.token;
    default:
      return w[role].token;
  }
}

for (const dialect of DIALECTS) {
  describe(`pulls (${dialect})`, () => {
    let t: TestApp;
    let w: World;
    before(async () => {
      t = await startApp(dialect);
      w = await buildWorld(t);
    });
    after(() => t.close());

    describe('access matrix', () => {
      const cases: Array<{ form: 'team' | 'user'; visibility: 'private' | 'public'; roles: Role[] }> = [
        { form: 'team', visibility: 'private', roles: TEAM_ROLES },
        { form: 'team', visibility: 'public', roles: TEAM_ROLES },
        { form: 'user', visibility: 'private', roles: USER_ROLES },
        { form: 'user', visibility: 'public', roles: USER_ROLES },
      ];
      for (const c of cases) {
        for (const action of ACTIONS) {
          it(`${action.name} on a ${c.visibility} ${c.form} repo`, async () => {
            const repo =
              c.form === 'team'
                ? c.visibility === 'private'
                  ? w.teamPrivate
                  : w.teamPublic
                : c.visibility === 'private'
                  ? w.userPrivate
                  : w.userPublic;
            for (const role of c.roles) {
              const expected = c.visibility === 'public' && role === 'outsider' ? action.publicOutsider : action.private[role];
              const { res, unchanged } = await action.run(t, repo, tokenFor(w, role, c.form));
              assert.equal(res.status, expected, `${role}: ${res.status} ${res.text}`);
              if (expected >= 400) {
                assert.ok(isErrorBody(res.body, ERROR_CODE[expected]), `${role}: ${res.text}`);
                assert.ok(await unchanged(), `${role}: a refused request changed something`);
              }
            }
          });
        }
      }
    });

    describe('create', () => {
      it('returns 201 with the full pull and emits pull-opened', async () => {
        const res = await t.req('POST', `${w.teamPrivate.base}/pulls`, {
          token: w.reader.token,
          body: newPull({ title: '  Padded title  ', body: '' }),
        });
        assert.equal(res.status, 201, res.text);
        const p = res.body;
        assert.deepEqual(Object.keys(p).sort(), PULL_KEYS);
        assert.equal(p.title, 'Padded title');
        assert.equal(p.body, '');
        assert.equal(p.status, 'open');
        assert.equal(p.repo_uuid, w.teamPrivate.uuid);
        assert.equal(p.author_username, w.reader.username);
        assert.equal(p.author_uuid, w.reader.uuid);
        assert.equal(p.source_branch, 'feature/x');
        assert.equal(p.target_branch, 'main');
        assert.ok(Number.isInteger(p.number) && p.number >= 1);
        assert.match(p.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        assert.equal(p.updated_at, p.created_at);
        for (const k of ['closed_at', 'merged_at', 'merged_by_username', 'merge_commit_sha', 'merge_strategy']) {
          assert.equal(p[k], null, k);
        }
        const got = await t.req('GET', `${w.teamPrivate.base}/pulls/${p.number}`, { token: w.reader.token });
        assert.deepEqual(got.body, p);

        const ev = await eventsOf(t, `pull:${p.uuid}`, w.reader.token);
        assert.equal(ev.status, 200);
        const opened = ev.body.results.find((e: { kind: string }) => e.kind === 'pull-opened');
        assert.ok(opened);
        assert.deepEqual(opened.scopes.sort(), [`pull:${p.uuid}`, `repo:${w.teamPrivate.uuid}`].sort());
        assert.equal(opened.actor.username, w.reader.username);
        assert.equal(opened.payload.pull_uuid, p.uuid);
        assert.equal(opened.payload.number, p.number);
        const repoEv = await eventsOf(t, `repo:${w.teamPrivate.uuid}`, w.reader.token);
        assert.ok(
          repoEv.body.results.some(
            (e: { kind: string; payload: { pull_uuid?: string } }) => e.kind === 'pull-opened' && e.payload.pull_uuid === p.uuid,
          ),
        );
        // an outsider of the private repo cannot read the pull's scope
        const hidden = await eventsOf(t, `pull:${p.uuid}`, w.outsider.token);
        assert.equal(hidden.status, 404);
        assert.ok(isErrorBody(hidden.body, 'not_found'));
      });

      it('numbers pulls per repo from 1, without gaps', async () => {
        const team = w.team;
        const a = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'numbers-a');
        const b = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'numbers-b');
        const baseA = `/api/v1/teams/${team.slug}/repos/${a.slug}`;
        const baseB = `/api/v1/teams/${team.slug}/repos/${b.slug}`;
        assert.equal((await openPull(t, baseA)).number, 1);
        assert.equal((await openPull(t, baseA)).number, 2);
        assert.equal((await openPull(t, baseB)).number, 1);
        // a refused creation does not use up a number
        const bad = await t.req('POST', `${baseA}/pulls`, { body: newPull({ source_branch: 'main' }) });
        assert.equal(bad.status, 400);
        assert.equal((await openPull(t, baseA)).number, 3);
      });

      it('rejects invalid bodies with 400 and creates nothing', async () => {
        const base = w.teamPrivate.base;
        const before = await pullCount(t, w.teamPrivate.uuid);
        const bad: Array<[string, unknown]> = [
          ['missing title', { body: '', source_branch: 'a', target_branch: 'b' }],
          ['missing body', { title: 't', source_branch: 'a', target_branch: 'b' }],
          ['missing source_branch', { title: 't', body: '', target_branch: 'b' }],
          ['missing target_branch', { title: 't', body: '', source_branch: 'a' }],
          ['unknown property', newPull({ wip: true })],
          ['status on create', newPull({ status: 'open' })],
          ['title not a string', newPull({ title: 5 })],
          ['body null', newPull({ body: null })],
          ['blank title', newPull({ title: '   ' })],
          ['empty title', newPull({ title: '' })],
          ['title over 256', newPull({ title: 'x'.repeat(257) })],
          ['body over 65536', newPull({ body: 'x'.repeat(65_537) })],
          ['same branches', newPull({ source_branch: 'dev', target_branch: 'dev' })],
          ['array body', [newPull()]],
        ];
        for (const bad_ of [
          'a..b',
          '-x',
          '/x',
          'x/',
          'x.lock',
          'a/b.lock/c',
          'x.',
          'a//b',
          'a@{b',
          '@',
          'HEAD',
          'a/.b',
          '.a',
          'a b',
          'a~b',
          'a^b',
          'a:b',
          'a?b',
          'a*b',
          'a[b',
          'a\\b',
          'a\tb',
          'a\u007fb',
          '',
          'x'.repeat(256),
          'é'.repeat(128),
        ]) {
          bad.push([`source_branch ${JSON.stringify(bad_)}`, newPull({ source_branch: bad_ })]);
          bad.push([`target_branch ${JSON.stringify(bad_)}`, newPull({ target_branch: bad_ })]);
        }
        for (const [what, body] of bad) {
          const res = await t.req('POST', `${base}/pulls`, { body });
          assert.equal(res.status, 400, `${what}: ${res.text}`);
          assert.ok(isErrorBody(res.body, 'invalid_request'), what);
        }
        const malformed = await t.req('POST', `${base}/pulls`, {
          rawBody: '{"title":',
          headers: { 'content-type': 'application/json' },
        });
        assert.equal(malformed.status, 400);
        assert.equal(await pullCount(t, w.teamPrivate.uuid), before);
      });

      it('accepts valid branch names that git accepts', async () => {
        const good = [
          'main',
          'feature/x',
          'a.b',
          'a@b',
          'héllo',
          'a.lock.x',
          'a{b}',
          'release/1.2.3',
          'x'.repeat(255),
          'é'.repeat(127),
        ];
        for (const name of good) {
          const res = await t.req('POST', `${w.teamPrivate.base}/pulls`, {
            body: newPull({ source_branch: name, target_branch: 'other' }),
          });
          assert.equal(res.status, 201, `${name}: ${res.text}`);
          assert.equal(res.body.source_branch, name);
        }
      });

      it('follows public_repo_pull_policy for every role, in both owner forms and both visibilities', async () => {
        // docs/behaviour.md "Repos and forks": any = read access; team = members of the owning team; owner = maintain level
        // only (write level is not enough); staff always. Outsiders of a private repo get 404.
        type Who = 'outsider' | 'reader' | 'member' | 'maintainer' | 'owner' | 'staff';
        const teamCases: Array<[visibility: 'public' | 'private', policy: string, expected: Record<Who, number>]> = [
          ['public', 'any', { outsider: 201, reader: 201, member: 201, maintainer: 201, owner: 201, staff: 201 }],
          ['public', 'team', { outsider: 403, reader: 201, member: 201, maintainer: 201, owner: 201, staff: 201 }],
          ['public', 'owner', { outsider: 403, reader: 403, member: 403, maintainer: 201, owner: 201, staff: 201 }],
          ['private', 'any', { outsider: 404, reader: 201, member: 201, maintainer: 201, owner: 201, staff: 201 }],
          ['private', 'team', { outsider: 404, reader: 201, member: 201, maintainer: 201, owner: 201, staff: 201 }],
          ['private', 'owner', { outsider: 404, reader: 403, member: 403, maintainer: 201, owner: 201, staff: 201 }],
        ];
        const userCases: Array<
          [visibility: 'public' | 'private', policy: string, expected: Record<'outsider' | 'owner' | 'staff', number>]
        > = [
          ['public', 'any', { outsider: 201, owner: 201, staff: 201 }],
          ['public', 'owner', { outsider: 403, owner: 201, staff: 201 }],
          ['private', 'any', { outsider: 404, owner: 201, staff: 201 }],
          ['private', 'owner', { outsider: 404, owner: 201, staff: 201 }],
        ];
        const attempt = async (base: string, repoUuid: string, who: string, token: string, expected: number) => {
          const before = await pullCount(t, repoUuid);
          const res = await t.req('POST', `${base}/pulls`, { token, body: newPull() });
          assert.equal(res.status, expected, `${base} as ${who}: ${res.text}`);
          if (expected !== 201) {
            assert.ok(isErrorBody(res.body, expected === 403 ? 'forbidden' : 'not_found'), res.text);
            assert.equal(await pullCount(t, repoUuid), before);
          }
        };
        for (const [visibility, policy, expected] of teamCases) {
          const slug = `policy-${visibility}-${policy}`;
          const r = await seedRepo(t, { kind: 'team', uuid: w.team.uuid }, slug, { visibility, public_repo_pull_policy: policy });
          for (const [who, status] of Object.entries(expected) as Array<[Who, number]>) {
            await attempt(`/api/v1/teams/${w.team.slug}/repos/${slug}`, r.uuid, who, w[who].token, status);
          }
        }
        for (const [visibility, policy, expected] of userCases) {
          const slug = `policy-${visibility}-${policy}`;
          const r = await seedRepo(t, { kind: 'user', uuid: w.solo.uuid }, slug, { visibility, public_repo_pull_policy: policy });
          const tokens = { outsider: w.outsider.token, owner: w.solo.token, staff: w.staff.token };
          for (const [who, status] of Object.entries(expected) as Array<[keyof typeof tokens, number]>) {
            await attempt(`/api/v1/users/${w.solo.username}/repos/${slug}`, r.uuid, who, tokens[who], status);
          }
        }
      });

      it('applies a policy changed through PUT {repo} to the next pull', async () => {
        const r = await seedRepo(t, { kind: 'team', uuid: w.team.uuid }, 'policy-switch', { visibility: 'public' });
        const base = `/api/v1/teams/${w.team.slug}/repos/${r.slug}`;
        assert.equal((await t.req('POST', `${base}/pulls`, { token: w.outsider.token, body: newPull() })).status, 201);
        const put = await t.req('PUT', base, { token: w.maintainer.token, body: { public_repo_pull_policy: 'team' } });
        assert.equal(put.status, 200, put.text);
        assert.equal((await t.req('POST', `${base}/pulls`, { token: w.outsider.token, body: newPull() })).status, 403);
        assert.equal((await t.req('POST', `${base}/pulls`, { token: w.reader.token, body: newPull() })).status, 201);
        assert.equal(
          (await t.req('PUT', base, { token: w.maintainer.token, body: { public_repo_pull_policy: 'owner' } })).status,
          200,
        );
        assert.equal((await t.req('POST', `${base}/pulls`, { token: w.member.token, body: newPull() })).status, 403);
        assert.equal((await t.req('POST', `${base}/pulls`, { token: w.maintainer.token, body: newPull() })).status, 201);
        // pulls opened before the change stay readable and editable by their authors
        const first = await t.req('PUT', `${base}/pulls/1`, { token: w.outsider.token, body: { status: 'closed' } });
        assert.equal(first.status, 200, first.text);
      });

      it('answers 404 for an unknown owner or repo', async () => {
        for (const url of [
          '/api/v1/teams/nope/repos/r-private/pulls',
          `/api/v1/teams/${w.team.slug}/repos/nope/pulls`,
          '/api/v1/users/nope/repos/r-private/pulls',
        ]) {
          const res = await t.req('POST', url, { body: newPull() });
          assert.equal(res.status, 404, url);
          assert.ok(isErrorBody(res.body, 'not_found'));
          assert.equal((await t.req('GET', url)).status, 404);
        }
      });
    });

    describe('list and get', () => {
      let repo: RepoHandle;
      before(async () => {
        const r = await seedRepo(t, { kind: 'team', uuid: w.team.uuid }, 'listing');
        repo = { uuid: r.uuid, base: `/api/v1/teams/${w.team.slug}/repos/${r.slug}` };
        for (let i = 0; i < 5; i++) await openPull(t, repo.base, { title: `Pull ${i + 1}` });
        await t.req('PUT', `${repo.base}/pulls/2`, { body: { status: 'closed' } });
        await t.req('PUT', `${repo.base}/pulls/4`, { body: { status: 'closed' } });
        await t.req('POST', `${repo.base}/pulls/5/merge`, { body: {} });
      });

      it('lists by number ascending, paged', async () => {
        const all = await t.req('GET', `${repo.base}/pulls`, { token: w.reader.token });
        assert.equal(all.status, 200);
        assert.deepEqual(Object.keys(all.body).sort(), ['next', 'previous', 'results']);
        assert.deepEqual(
          all.body.results.map((p: { number: number }) => p.number),
          [1, 2, 3, 4, 5],
        );
        for (const p of all.body.results) assert.deepEqual(Object.keys(p).sort(), PULL_KEYS);
        const page1 = await t.req('GET', `${repo.base}/pulls?per_page=2`);
        assert.deepEqual(
          page1.body.results.map((p: { number: number }) => p.number),
          [1, 2],
        );
        assert.equal(page1.body.previous, null);
        assert.ok(page1.body.next);
        const page2 = await t.req('GET', page1.body.next);
        assert.deepEqual(
          page2.body.results.map((p: { number: number }) => p.number),
          [3, 4],
        );
        const page3 = await t.req('GET', page2.body.next);
        assert.deepEqual(
          page3.body.results.map((p: { number: number }) => p.number),
          [5],
        );
        assert.equal(page3.body.next, null);
      });

      it('filters by status', async () => {
        const by = async (status: string) =>
          (await t.req('GET', `${repo.base}/pulls?status=${status}`)).body.results.map((p: { number: number }) => p.number);
        assert.deepEqual(await by('open'), [1, 3]);
        assert.deepEqual(await by('closed'), [2, 4]);
        assert.deepEqual(await by('merged'), [5]);
        const next = await t.req('GET', `${repo.base}/pulls?status=open&per_page=1`);
        assert.match(next.body.next, /status=open/);
        for (const bad of ['draft', 'OPEN', '']) {
          const res = await t.req('GET', `${repo.base}/pulls?status=${bad}`);
          assert.equal(res.status, 400, bad);
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        assert.equal((await t.req('GET', `${repo.base}/pulls?page=0`)).status, 400);
        assert.equal((await t.req('GET', `${repo.base}/pulls?per_page=500`)).status, 200);
      });

      it('gets one pull by number; a bad number is 400, an unknown one 404', async () => {
        const res = await t.req('GET', `${repo.base}/pulls/3`, { token: w.reader.token });
        assert.equal(res.status, 200);
        assert.equal(res.body.title, 'Pull 3');
        for (const bad of ['abc', '0', '-1', '1.5', '99999999999']) {
          const r = await t.req('GET', `${repo.base}/pulls/${bad}`);
          assert.equal(r.status, 400, bad);
          assert.ok(isErrorBody(r.body, 'invalid_request'));
        }
        const missing = await t.req('GET', `${repo.base}/pulls/99`);
        assert.equal(missing.status, 404);
        assert.ok(isErrorBody(missing.body, 'not_found'));
        // the number is per repo: pull 3 of another repo is not this one
        const other = await t.req('GET', `${w.userPrivate.base}/pulls/3`);
        assert.notEqual(other.body?.uuid, res.body.uuid);
      });
    });

    describe('update', () => {
      it('edits title and body, bumps updated_at and emits pull-updated', async () => {
        const pull = await openPull(t, w.teamPrivate.base, { token: w.reader.token });
        // an older updated_at instead of a sleep, so the edit's new one is later
        pull.updated_at = new Date(Date.now() - 60_000).toISOString();
        await t.deps.db.updateTable('pulls').set({ updated_at: pull.updated_at }).where('uuid', '=', pull.uuid).execute();
        const res = await t.req('PUT', `${w.teamPrivate.base}/pulls/${pull.number}`, {
          token: w.reader.token,
          body: { title: ' New title ', body: 'New body' },
        });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(Object.keys(res.body).sort(), PULL_KEYS);
        assert.equal(res.body.title, 'New title');
        assert.equal(res.body.body, 'New body');
        assert.equal(res.body.status, 'open');
        assert.ok(res.body.updated_at > pull.updated_at);
        assert.equal(res.body.created_at, pull.created_at);
        const ev = await eventsOf(t, `pull:${pull.uuid}`);
        const updated = ev.body.results.filter((e: { kind: string }) => e.kind === 'pull-updated');
        assert.equal(updated.length, 1);
        assert.equal(updated[0].payload.action, 'edited');
        assert.deepEqual(updated[0].payload.changed.sort(), ['body', 'title']);
        assert.deepEqual(updated[0].scopes.sort(), [`pull:${pull.uuid}`, `repo:${w.teamPrivate.uuid}`].sort());
      });

      it('a PUT that changes nothing returns the pull and emits nothing', async () => {
        const pull = await openPull(t, w.teamPrivate.base);
        for (const body of [{}, { title: pull.title, body: pull.body, status: 'open' }]) {
          const res = await t.req('PUT', `${w.teamPrivate.base}/pulls/${pull.number}`, { body });
          assert.equal(res.status, 200);
          assert.deepEqual(res.body, pull);
        }
        const ev = await eventsOf(t, `pull:${pull.uuid}`);
        assert.equal(ev.body.results.filter((e: { kind: string }) => e.kind === 'pull-updated').length, 0);
      });

      it('closes and reopens, setting and clearing closed_at', async () => {
        const pull = await openPull(t, w.teamPrivate.base, { token: w.member.token });
        const url = `${w.teamPrivate.base}/pulls/${pull.number}`;
        const closed = await t.req('PUT', url, { token: w.member.token, body: { status: 'closed' } });
        assert.equal(closed.status, 200);
        assert.equal(closed.body.status, 'closed');
        assert.ok(closed.body.closed_at);
        assert.equal(closed.body.merged_at, null);
        const reopened = await t.req('PUT', url, { token: w.maintainer.token, body: { status: 'open' } });
        assert.equal(reopened.status, 200);
        assert.equal(reopened.body.status, 'open');
        assert.equal(reopened.body.closed_at, null);
        const ev = await eventsOf(t, `pull:${pull.uuid}`);
        const actions = ev.body.results
          .filter((e: { kind: string }) => e.kind === 'pull-updated')
          .map((e: { payload: { action: string } }) => e.payload.action);
        assert.deepEqual(actions, ['closed', 'reopened']);
      });

      it('refuses bad updates with 400 and changes nothing', async () => {
        const pull = await openPull(t, w.teamPrivate.base);
        const url = `${w.teamPrivate.base}/pulls/${pull.number}`;
        for (const body of [
          { status: 'merged' },
          { status: 'draft' },
          { title: '  ' },
          { title: 'x'.repeat(257) },
          { body: 'x'.repeat(65_537) },
          { source_branch: 'other' },
          { target_branch: 'other' },
          { number: 7 },
          { title: null },
        ]) {
          const res = await t.req('PUT', url, { body });
          assert.equal(res.status, 400, JSON.stringify(body));
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        assert.deepEqual((await t.req('GET', url)).body, pull);
      });

      it('lets only the author or maintain level change a pull', async () => {
        const pull = await openPull(t, w.teamPrivate.base, { token: w.reader.token });
        const url = `${w.teamPrivate.base}/pulls/${pull.number}`;
        const refused = await t.req('PUT', url, { token: w.member.token, body: { status: 'closed' } });
        assert.equal(refused.status, 403);
        assert.ok(isErrorBody(refused.body, 'forbidden'));
        assert.equal((await t.req('GET', url)).body.status, 'open');
        const byAuthor = await t.req('PUT', url, { token: w.reader.token, body: { status: 'closed' } });
        assert.equal(byAuthor.status, 200);
        assert.equal(byAuthor.body.status, 'closed');
      });

      it('refuses any change to a merged pull with 409 pull_merged', async () => {
        const pull = await openPull(t, w.teamPrivate.base);
        const url = `${w.teamPrivate.base}/pulls/${pull.number}`;
        assert.equal((await t.req('POST', `${url}/merge`, { body: {} })).status, 200);
        const before = (await t.req('GET', url)).body;
        for (const body of [{ title: 'Later' }, { status: 'closed' }, { status: 'open' }, { body: 'x' }, {}]) {
          const res = await t.req('PUT', url, { body });
          assert.equal(res.status, 409, JSON.stringify(body));
          assert.ok(isErrorBody(res.body, 'pull_merged'));
        }
        assert.deepEqual((await t.req('GET', url)).body, before);
      });
    });

    describe('archived repo and inactive team', () => {
      it('refuses writes with 403 repo_archived and keeps reads', async () => {
        const r = await seedRepo(t, { kind: 'team', uuid: w.team.uuid }, 'archived');
        const base = `/api/v1/teams/${w.team.slug}/repos/${r.slug}`;
        const pull = await openPull(t, base);
        const review = await t.req('POST', `${base}/pulls/${pull.number}/reviews`, {
          token: w.member.token,
          body: { status: 'approved' },
        });
        await setRepoFlags(t, r.uuid, { is_archived: 1 });
        const writes: Array<[string, string, unknown]> = [
          ['POST', `${base}/pulls`, newPull()],
          ['PUT', `${base}/pulls/${pull.number}`, { title: 'x' }],
          ['POST', `${base}/pulls/${pull.number}/merge`, {}],
          ['POST', `${base}/pulls/${pull.number}/reviews`, { status: 'commented' }],
          ['DELETE', `${base}/pulls/${pull.number}/reviews/${review.body.uuid}`, undefined],
        ];
        for (const [method, url, body] of writes) {
          for (const token of [t.adminToken, w.owner.token]) {
            const res = await t.req(method, url, { token, body });
            assert.equal(res.status, 403, `${method} ${url}`);
            assert.ok(isErrorBody(res.body, 'repo_archived'), res.text);
          }
        }
        // a reader of an archived repo is refused writes too (with the archive reason)
        assert.equal(
          (await t.req('POST', `${base}/pulls`, { token: w.reader.token, body: newPull() })).body.error,
          'repo_archived',
        );
        assert.equal(await pullCount(t, r.uuid), 1);
        const now = await t.req('GET', `${base}/pulls/${pull.number}`);
        assert.deepEqual(now.body, pull);
        assert.equal((await t.req('GET', `${base}/pulls/${pull.number}/reviews/${review.body.uuid}`)).body.removed_at, null);
        for (const url of [`${base}/pulls`, `${base}/pulls/${pull.number}/reviews`, `${base}/pulls/${pull.number}/protection`]) {
          assert.equal((await t.req('GET', url, { token: w.reader.token })).status, 200, url);
        }
      });

      it('refuses writes under an inactive team with 403 team_inactive', async () => {
        const r = await seedRepo(t, { kind: 'team', uuid: w.team.uuid }, 'sleepy');
        const base = `/api/v1/teams/${w.team.slug}/repos/${r.slug}`;
        const pull = await openPull(t, base);
        const review = await t.req('POST', `${base}/pulls/${pull.number}/reviews`, {
          token: w.member.token,
          body: { status: 'approved' },
        });
        await setTeamActive(t, w.team.uuid, false);
        try {
          const writes: Array<[string, string, unknown]> = [
            ['POST', `${base}/pulls`, newPull()],
            ['PUT', `${base}/pulls/${pull.number}`, { title: 'x' }],
            ['POST', `${base}/pulls/${pull.number}/merge`, {}],
            ['POST', `${base}/pulls/${pull.number}/reviews`, { status: 'commented' }],
            ['DELETE', `${base}/pulls/${pull.number}/reviews/${review.body.uuid}`, undefined],
          ];
          for (const [method, url, body] of writes) {
            const res = await t.req(method, url, { token: w.owner.token, body });
            assert.equal(res.status, 403, `${method} ${url}`);
            assert.ok(isErrorBody(res.body, 'team_inactive'), res.text);
          }
          assert.equal(await pullCount(t, r.uuid), 1);
          assert.deepEqual((await t.req('GET', `${base}/pulls/${pull.number}`)).body, pull);
        } finally {
          await setTeamActive(t, w.team.uuid, true);
        }
      });
    });

    describe('concurrency', () => {
      it('numbers 20 simultaneous creations 1..20 without gaps or duplicates', async () => {
        const r = await seedRepo(t, { kind: 'team', uuid: w.team.uuid }, 'race');
        const base = `/api/v1/teams/${w.team.slug}/repos/${r.slug}`;
        const tokens = [w.owner.token, w.maintainer.token, w.member.token, w.reader.token, t.adminToken];
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            t.req('POST', `${base}/pulls`, { token: tokens[i % tokens.length], body: newPull({ title: `Racer ${i}` }) }),
          ),
        );
        for (const res of results) assert.equal(res.status, 201, res.text);
        const numbers = results.map((res) => res.body.number as number).sort((a, b) => a - b);
        assert.deepEqual(
          numbers,
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
        const listed = await t.req('GET', `${base}/pulls?per_page=100`);
        assert.deepEqual(
          listed.body.results.map((p: { number: number }) => p.number),
          numbers,
        );
        const ev = await eventsOf(t, `repo:${r.uuid}`);
        assert.equal(ev.body.results.filter((e: { kind: string }) => e.kind === 'pull-opened').length, 20);
      });
    });

    it('documents the pull routes in both owner forms in OpenAPI', async () => {
      const doc = await t.req('GET', '/api/v1/openapi.json');
      for (const prefix of ['/teams/{team_slug}/repos/{repo_slug}', '/users/{username}/repos/{repo_slug}']) {
        for (const [path, methods] of [
          ['/pulls', ['get', 'post']],
          ['/pulls/{number}', ['get', 'put']],
          ['/pulls/{number}/merge', ['post']],
          ['/pulls/{number}/protection', ['get']],
          ['/pulls/{number}/reviews', ['get', 'post']],
          ['/pulls/{number}/reviews/{review_uuid}', ['get', 'delete']],
        ] as const) {
          const item = doc.body.paths[prefix + path];
          assert.ok(item, prefix + path);
          for (const m of methods) assert.ok(item[m], `${m} ${prefix}${path}`);
        }
      }
      const protection = doc.body.paths['/teams/{team_slug}/repos/{repo_slug}/pulls/{number}/protection'].get;
      assert.match(protection.description, /most literal/);
    });
  });
}
