import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../src/config.ts';
import { seedRepo as seedRepoNow, seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import { eventResults, type Person } from './common.ts';

// Seeded rows get distinct, increasing created_at values (fixtures.ts), so oldest-first order is the seeding order.
const seedRepo = seedRepoNow;

const REPO_FIELDS = [
  'uuid',
  'name',
  'slug',
  'description',
  'about',
  'clone_url',
  'ssh_url',
  'visibility',
  'default_branch',
  'public_repo_pull_policy',
  'max_disk_bytes',
  'is_active',
  'created_at',
  'owner',
  'full_name',
  'is_archived',
  'fork_of_uuid',
  'disk_usage_bytes',
  'updated_at',
  'created_by_uuid',
  'created_by_username',
].sort();

/** Everything a refused request could have touched under one repo, as staff sees it. */
async function repoSnapshot(t: TestApp, path: string, repoUuid: string | null): Promise<string> {
  const parts = [await t.req('GET', path), await t.req('GET', `${path}/protections`), await t.req('GET', `${path}/forks`)];
  const out: unknown[] = parts.map((r) => [r.status, r.body]);
  if (repoUuid) out.push((await t.req('GET', `/api/v1/events?scope=repo:${repoUuid}&per_page=100`)).body);
  return JSON.stringify(out);
}

const eventsIn = eventResults;

for (const dialect of DIALECTS) {
  describe(`repos (${dialect})`, () => {
    let t: TestApp;
    let owner: Person;
    let maint: Person;
    let member: Person;
    let reader: Person;
    let outsider: Person;
    let team: { uuid: string; slug: string };

    before(async () => {
      t = await startApp(dialect);
      owner = await t.user('olga');
      maint = await t.user('max');
      member = await t.user('mel');
      reader = await t.user('rita');
      outsider = await t.user('oscar');
      team = await seedTeam(t, 'acme', [
        { uuid: owner.uuid, role: 'owner' },
        { uuid: maint.uuid, role: 'maintainer' },
        { uuid: member.uuid, role: 'member' },
        { uuid: reader.uuid, role: 'reader' },
      ]);
    });
    after(() => t.close());

    describe('create', () => {
      it('creates a team repo with the documented defaults and emits repo-created', async () => {
        const res = await t.req('POST', '/api/v1/teams/acme/repos', {
          token: maint.token,
          body: { name: '  Widget  ', slug: 'Widget-1', description: 'A widget' },
        });
        assert.equal(res.status, 201, res.text);
        const r = res.body;
        assert.deepEqual(Object.keys(r).sort(), REPO_FIELDS);
        assert.equal(r.name, 'Widget');
        assert.equal(r.slug, 'widget-1');
        assert.equal(r.description, 'A widget');
        assert.equal(r.about, '');
        assert.equal(r.visibility, 'private');
        assert.equal(r.default_branch, 'main');
        assert.equal(r.public_repo_pull_policy, 'any');
        assert.equal(r.max_disk_bytes, t.deps.config.defaultMaxDiskBytes);
        assert.equal(r.is_active, true);
        assert.equal(r.is_archived, false);
        assert.equal(r.fork_of_uuid, null);
        assert.equal(r.disk_usage_bytes, 0);
        assert.deepEqual(r.owner, { kind: 'team', slug_or_username: 'acme', uuid: team.uuid });
        assert.equal(r.full_name, 'acme/widget-1');
        assert.equal(r.clone_url, `${t.deps.config.publicUrl}/git/teams/acme/widget-1.git`);
        assert.equal(r.created_by_uuid, maint.uuid);
        assert.equal(r.created_by_username, 'max');
        assert.match(r.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        assert.equal(r.updated_at, r.created_at);

        const got = await t.req('GET', '/api/v1/teams/acme/repos/widget-1', { token: reader.token });
        assert.equal(got.status, 200);
        assert.deepEqual(got.body, r);

        for (const scope of [`repo:${r.uuid}`, `team:${team.uuid}`]) {
          const events = await eventsIn(t, scope, maint.token);
          const created = events.filter((e) => e.kind === 'repo-created' && e.payload.repo_uuid === r.uuid);
          assert.equal(created.length, 1);
          assert.deepEqual(created[0]!.scopes.sort(), [`repo:${r.uuid}`, `team:${team.uuid}`].sort());
          assert.equal(created[0]!.actor?.username, 'max');
          assert.equal(created[0]!.payload.full_name, 'acme/widget-1');
        }
      });

      it('lets the team owner and staff create, with visibility public', async () => {
        const a = await t.req('POST', '/api/v1/teams/acme/repos', {
          token: owner.token,
          body: { name: 'Pub', slug: 'pub-by-owner', visibility: 'public', description: null },
        });
        assert.equal(a.status, 201, a.text);
        assert.equal(a.body.visibility, 'public');
        assert.equal(a.body.description, null);
        const b = await t.req('POST', '/api/v1/teams/acme/repos', { body: { name: 'Staff', slug: 'by-staff' } });
        assert.equal(b.status, 201, b.text);
        assert.equal(b.body.created_by_username, 'admin');
      });

      it('refuses creation to members, readers (403), outsiders (404), anonymous (401); nothing is created', async () => {
        const before = await t.req('GET', '/api/v1/teams/acme/repos?per_page=100');
        const cases: Array<[Person | null, number, string]> = [
          [member, 403, 'forbidden'],
          [reader, 403, 'forbidden'],
          [outsider, 404, 'not_found'],
          [null, 401, 'unauthorized'],
        ];
        for (const [who, status, code] of cases) {
          const res = await t.req('POST', '/api/v1/teams/acme/repos', {
            token: who ? who.token : null,
            body: { name: 'Nope', slug: 'nope' },
          });
          assert.equal(res.status, status, `${who?.username ?? 'anonymous'}: ${res.text}`);
          assert.ok(isErrorBody(res.body, code), res.text);
        }
        const unknown = await t.req('POST', '/api/v1/teams/no-such-team/repos', { body: { name: 'x', slug: 'x' } });
        assert.equal(unknown.status, 404);
        assert.ok(isErrorBody(unknown.body, 'not_found'));
        const afterList = await t.req('GET', '/api/v1/teams/acme/repos?per_page=100');
        assert.deepEqual(afterList.body, before.body);
        assert.equal((await t.req('GET', '/api/v1/teams/acme/repos/nope')).status, 404);
      });

      it('refuses creation under an inactive team with 403 team_inactive', async () => {
        await seedTeam(t, 'sleepy', [{ uuid: maint.uuid, role: 'maintainer' }], { is_active: false });
        for (const token of [maint.token, t.adminToken]) {
          const res = await t.req('POST', '/api/v1/teams/sleepy/repos', { token, body: { name: 'x', slug: 'x' } });
          assert.equal(res.status, 403);
          assert.ok(isErrorBody(res.body, 'team_inactive'), res.text);
        }
        const list = await t.req('GET', '/api/v1/teams/sleepy/repos');
        assert.deepEqual(list.body.results, []);
      });

      it('validates the body: 400 for bad slugs, blank names, bad visibility, unknown or missing fields', async () => {
        const bodies: unknown[] = [
          { name: 'x', slug: '-leading-dash' },
          { name: 'x', slug: 'has space' },
          { name: 'x', slug: 'a'.repeat(101) },
          { name: 'x', slug: 'dot.ted' },
          { name: 'x', slug: '' },
          { name: '   ', slug: 'blank-name' },
          { name: 'x', slug: 'vis', visibility: 'internal' },
          { name: 'x', slug: 'extra', default_branch: 'main' },
          { name: 'x', slug: 'desc', description: 5 },
          { slug: 'no-name' },
          { name: 'no-slug' },
          [],
        ];
        for (const body of bodies) {
          const res = await t.req('POST', '/api/v1/teams/acme/repos', { token: maint.token, body });
          assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        const malformed = await t.req('POST', '/api/v1/teams/acme/repos', {
          token: maint.token,
          rawBody: '{"name": ',
          headers: { 'content-type': 'application/json' },
        });
        assert.equal(malformed.status, 400);
        const ok = await t.req('POST', '/api/v1/teams/acme/repos', {
          token: maint.token,
          body: { name: 'x', slug: 'a'.repeat(100) },
        });
        assert.equal(ok.status, 201, ok.text);
      });

      it('is 409 slug_taken for a duplicate slug in the owner, case-insensitively, but not across owners', async () => {
        const first = await t.req('POST', '/api/v1/teams/acme/repos', { token: maint.token, body: { name: 'Dup', slug: 'dup' } });
        assert.equal(first.status, 201);
        const again = await t.req('POST', '/api/v1/teams/acme/repos', {
          token: owner.token,
          body: { name: 'Other', slug: 'DUP' },
        });
        assert.equal(again.status, 409);
        assert.ok(isErrorBody(again.body, 'slug_taken'), again.text);
        const unchanged = await t.req('GET', '/api/v1/teams/acme/repos/dup');
        assert.equal(unchanged.body.name, 'Dup');
        const elsewhere = await t.req('POST', `/api/v1/users/${maint.username}/repos`, {
          token: maint.token,
          body: { name: 'Dup', slug: 'dup' },
        });
        assert.equal(elsewhere.status, 201);
      });

      it('gives exactly one 201 under concurrent creation of the same slug', async () => {
        const results = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            t.req('POST', '/api/v1/teams/acme/repos', { token: maint.token, body: { name: `Race ${i}`, slug: 'race' } }),
          ),
        );
        const statuses = results.map((r) => r.status).sort();
        assert.deepEqual(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
        for (const r of results.filter((x) => x.status === 409)) assert.ok(isErrorBody(r.body, 'slug_taken'), r.text);
        const winner = results.find((r) => r.status === 201)!;
        const events = await eventsIn(t, `repo:${winner.body.uuid}`);
        assert.equal(events.filter((e) => e.kind === 'repo-created').length, 1);
      });

      it('creates user repos for the user themself and staff; 403 for another user, 404 for an unknown user', async () => {
        const own = await t.req('POST', `/api/v1/users/${outsider.username}/repos`, {
          token: outsider.token,
          body: { name: 'Mine', slug: 'mine', visibility: 'public' },
        });
        assert.equal(own.status, 201, own.text);
        assert.deepEqual(own.body.owner, { kind: 'user', slug_or_username: 'oscar', uuid: outsider.uuid });
        assert.equal(own.body.full_name, 'oscar/mine');
        assert.equal(own.body.clone_url, `${t.deps.config.publicUrl}/git/users/oscar/mine.git`);
        const events = await eventsIn(t, `user:${outsider.uuid}`, outsider.token);
        assert.ok(events.some((e) => e.kind === 'repo-created' && e.payload.repo_uuid === own.body.uuid));

        const byStaff = await t.req('POST', `/api/v1/users/${outsider.username}/repos`, { body: { name: 'Gift', slug: 'gift' } });
        assert.equal(byStaff.status, 201);
        assert.equal(byStaff.body.created_by_username, 'admin');
        assert.equal(byStaff.body.owner.uuid, outsider.uuid);

        const other = await t.req('POST', `/api/v1/users/${outsider.username}/repos`, {
          token: member.token,
          body: { name: 'x', slug: 'intrude' },
        });
        assert.equal(other.status, 403);
        assert.ok(isErrorBody(other.body, 'forbidden'));
        assert.equal((await t.req('GET', '/api/v1/users/oscar/repos/intrude')).status, 404);

        const unknown = await t.req('POST', '/api/v1/users/nobody-here/repos', { body: { name: 'x', slug: 'x' } });
        assert.equal(unknown.status, 404);
        const anon = await t.req('POST', '/api/v1/users/oscar/repos', { token: null, body: { name: 'x', slug: 'x' } });
        assert.equal(anon.status, 401);
      });
    });

    describe('list and get', () => {
      let otherTeam: { uuid: string; slug: string };
      before(async () => {
        otherTeam = await seedTeam(t, 'listco', [
          { uuid: member.uuid, role: 'member' },
          { uuid: maint.uuid, role: 'maintainer' },
        ]);
        await seedRepo(t, { kind: 'team', uuid: otherTeam.uuid }, 'p1', { visibility: 'public' });
        await seedRepo(t, { kind: 'team', uuid: otherTeam.uuid }, 'secret');
        await seedRepo(t, { kind: 'team', uuid: otherTeam.uuid }, 'p2', { visibility: 'public' });
        const hidden = await seedRepo(t, { kind: 'team', uuid: otherTeam.uuid }, 'hidden', { visibility: 'public' });
        await t.deps.db.updateTable('repos').set({ is_active: 0 }).where('uuid', '=', hidden.uuid).execute();
      });

      it('shows an outsider only the active public repos, members all active ones, maintainers and staff all', async () => {
        const slugs = async (token: string) => {
          const res = await t.req('GET', '/api/v1/teams/listco/repos', { token });
          assert.equal(res.status, 200, res.text);
          for (const r of res.body.results) assert.deepEqual(Object.keys(r).sort(), REPO_FIELDS);
          return res.body.results.map((r: { slug: string }) => r.slug);
        };
        assert.deepEqual(await slugs(outsider.token), ['p1', 'p2']);
        assert.deepEqual(await slugs(member.token), ['p1', 'secret', 'p2']);
        assert.deepEqual(await slugs(maint.token), ['p1', 'secret', 'p2', 'hidden']);
        assert.deepEqual(await slugs(t.adminToken), ['p1', 'secret', 'p2', 'hidden']);
      });

      it('pages oldest first with next and previous links', async () => {
        const one = await t.req('GET', '/api/v1/teams/listco/repos?per_page=1', { token: member.token });
        assert.deepEqual(
          one.body.results.map((r: { slug: string }) => r.slug),
          ['p1'],
        );
        assert.equal(one.body.previous, null);
        assert.equal(one.body.next, '/api/v1/teams/listco/repos?per_page=1&page=2');
        const two = await t.req('GET', one.body.next, { token: member.token });
        assert.deepEqual(
          two.body.results.map((r: { slug: string }) => r.slug),
          ['secret'],
        );
        const three = await t.req('GET', two.body.next, { token: member.token });
        assert.deepEqual(
          three.body.results.map((r: { slug: string }) => r.slug),
          ['p2'],
        );
        assert.equal(three.body.next, null);
        assert.equal((await t.req('GET', '/api/v1/teams/listco/repos?per_page=0', { token: member.token })).status, 400);
        assert.equal((await t.req('GET', '/api/v1/teams/listco/repos?page=x', { token: member.token })).status, 400);
      });

      it('lists user repos: the owner sees private ones, others public only; 404 for an unknown user, 401 anonymous', async () => {
        const u = await t.user('lister');
        await seedRepo(t, { kind: 'user', uuid: u.uuid }, 'open', { visibility: 'public' });
        await seedRepo(t, { kind: 'user', uuid: u.uuid }, 'closed');
        const mine = await t.req('GET', '/api/v1/users/lister/repos', { token: u.token });
        assert.deepEqual(
          mine.body.results.map((r: { slug: string }) => r.slug),
          ['open', 'closed'],
        );
        const theirs = await t.req('GET', '/api/v1/users/lister/repos', { token: outsider.token });
        assert.deepEqual(
          theirs.body.results.map((r: { slug: string }) => r.slug),
          ['open'],
        );
        const staff = await t.req('GET', '/api/v1/users/LISTER/repos');
        assert.equal(staff.body.results.length, 2);
        assert.equal((await t.req('GET', '/api/v1/users/nobody-here/repos')).status, 404);
        assert.equal((await t.req('GET', '/api/v1/users/lister/repos', { token: null })).status, 401);
        assert.equal((await t.req('GET', '/api/v1/teams/no-such/repos')).status, 404);
      });

      it('gets one repo: 404 for a private repo to outsiders and for unknown owner or repo', async () => {
        assert.equal((await t.req('GET', '/api/v1/teams/listco/repos/secret', { token: outsider.token })).status, 404);
        const pub = await t.req('GET', '/api/v1/teams/listco/repos/p1', { token: outsider.token });
        assert.equal(pub.status, 200);
        assert.equal(pub.body.full_name, 'listco/p1');
        assert.equal((await t.req('GET', '/api/v1/teams/LISTCO/repos/P1', { token: outsider.token })).status, 200);
        assert.equal((await t.req('GET', '/api/v1/teams/listco/repos/hidden', { token: member.token })).status, 404);
        assert.equal((await t.req('GET', '/api/v1/teams/listco/repos/hidden', { token: maint.token })).status, 200);
        const missing = await t.req('GET', '/api/v1/teams/listco/repos/nope');
        assert.equal(missing.status, 404);
        assert.ok(isErrorBody(missing.body, 'not_found'));
        assert.equal((await t.req('GET', '/api/v1/teams/nope/repos/p1')).status, 404);
        assert.equal((await t.req('GET', '/api/v1/users/nope/repos/p1')).status, 404);
      });
    });

    describe('update', () => {
      let n = 0;
      const fresh = async (opts: { visibility?: 'public' | 'private' } = {}) => {
        n += 1;
        const slug = `upd-${n}`;
        const r = await seedRepo(t, { kind: 'team', uuid: team.uuid }, slug, { ...opts, created_by: owner.uuid });
        return { ...r, path: `/api/v1/teams/acme/repos/${slug}` };
      };

      it('updates every writable field, with or without name and slug, and answers with created_by fields', async () => {
        const r = await fresh();
        const res = await t.req('PUT', r.path, {
          token: maint.token,
          body: {
            description: 'New description',
            about: '# About\n\nText',
            visibility: 'public',
            default_branch: 'develop/next',
            public_repo_pull_policy: 'owner',
            is_active: true,
          },
        });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(Object.keys(res.body).sort(), REPO_FIELDS);
        assert.equal(res.body.description, 'New description');
        assert.equal(res.body.about, '# About\n\nText');
        assert.equal(res.body.visibility, 'public');
        assert.equal(res.body.default_branch, 'develop/next');
        assert.equal(res.body.public_repo_pull_policy, 'owner');
        assert.equal(res.body.created_by_uuid, owner.uuid);
        assert.equal(res.body.created_by_username, 'olga');
        assert.equal(res.body.name, r.slug);
        assert.ok(res.body.updated_at >= res.body.created_at);

        const renamed = await t.req('PUT', r.path, {
          token: maint.token,
          body: { name: 'Renamed', slug: 'Renamed-Repo', description: null },
        });
        assert.equal(renamed.status, 200, renamed.text);
        assert.equal(renamed.body.name, 'Renamed');
        assert.equal(renamed.body.slug, 'renamed-repo');
        assert.equal(renamed.body.description, null);
        assert.equal(renamed.body.full_name, 'acme/renamed-repo');
        assert.equal(renamed.body.clone_url, `${t.deps.config.publicUrl}/git/teams/acme/renamed-repo.git`);
        assert.equal((await t.req('GET', r.path)).status, 404);
        assert.equal((await t.req('GET', '/api/v1/teams/acme/repos/renamed-repo')).body.uuid, r.uuid);

        const empty = await t.req('PUT', '/api/v1/teams/acme/repos/renamed-repo', { token: maint.token, body: {} });
        assert.equal(empty.status, 200);
        assert.equal(empty.body.updated_at, renamed.body.updated_at);

        const events = await eventsIn(t, `repo:${r.uuid}`);
        const updates = events.filter((e) => e.kind === 'repo-updated');
        assert.equal(updates.length, 2, 'an empty update emits nothing');
        assert.deepEqual(updates[0]!.payload.changes, {
          description: 'New description',
          about: '# About\n\nText',
          visibility: 'public',
          default_branch: 'develop/next',
          public_repo_pull_policy: 'owner',
        });
        assert.deepEqual(updates[1]!.payload.changes, { name: 'Renamed', slug: 'renamed-repo', description: null });
        assert.deepEqual(updates[1]!.scopes.sort(), [`repo:${r.uuid}`, `team:${team.uuid}`].sort());
      });

      it('updates user repos too, slug included; the owner may, another user may not', async () => {
        const u = await t.user('ursula');
        await seedRepo(t, { kind: 'user', uuid: u.uuid }, 'mine');
        const res = await t.req('PUT', '/api/v1/users/ursula/repos/mine', {
          token: u.token,
          body: { slug: 'ours', name: 'Ours' },
        });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.full_name, 'ursula/ours');
        assert.equal(res.body.created_by_username, 'ursula');
        const bad = await t.req('PUT', '/api/v1/users/ursula/repos/ours', { token: outsider.token, body: { name: 'x' } });
        assert.equal(bad.status, 404);
        await t.req('PUT', '/api/v1/users/ursula/repos/ours', { token: u.token, body: { visibility: 'public' } });
        const bad2 = await t.req('PUT', '/api/v1/users/ursula/repos/ours', { token: outsider.token, body: { name: 'x' } });
        assert.equal(bad2.status, 403);
        assert.ok(isErrorBody(bad2.body, 'forbidden'));
        assert.equal((await t.req('GET', '/api/v1/users/ursula/repos/ours')).body.name, 'Ours');
      });

      it('is 403 without update access and changes nothing', async () => {
        const priv = await fresh();
        const pub = await fresh({ visibility: 'public' });
        for (const [who, r, status] of [
          [member, priv, 403],
          [reader, priv, 403],
          [outsider, priv, 404],
          [outsider, pub, 403],
          [member, pub, 403],
        ] as Array<[Person, typeof priv, number]>) {
          const before = await repoSnapshot(t, r.path, r.uuid);
          const res = await t.req('PUT', r.path, { token: who.token, body: { name: 'Hacked', visibility: 'public' } });
          assert.equal(res.status, status, `${who.username}: ${res.text}`);
          assert.ok(isErrorBody(res.body, status === 403 ? 'forbidden' : 'not_found'));
          assert.equal(await repoSnapshot(t, r.path, r.uuid), before);
        }
        assert.equal((await t.req('PUT', priv.path, { token: null, body: { name: 'x' } })).status, 401);
      });

      it('is 403 for max_disk_bytes from non-staff (even unchanged) and 200 for staff', async () => {
        const r = await fresh();
        const before = await repoSnapshot(t, r.path, r.uuid);
        for (const value of [5, t.deps.config.defaultMaxDiskBytes]) {
          const res = await t.req('PUT', r.path, { token: owner.token, body: { max_disk_bytes: value, name: 'Also' } });
          assert.equal(res.status, 403, res.text);
          assert.ok(isErrorBody(res.body, 'forbidden'));
        }
        assert.equal(await repoSnapshot(t, r.path, r.uuid), before);
        const staff = await t.req('PUT', r.path, { body: { max_disk_bytes: 5 * 1024 ** 3 } });
        assert.equal(staff.status, 200);
        assert.equal(staff.body.max_disk_bytes, 5 * 1024 ** 3);
        assert.equal((await t.req('PUT', r.path, { body: { max_disk_bytes: -1 } })).status, 400);
        assert.equal((await t.req('PUT', r.path, { body: { max_disk_bytes: 1.5 } })).status, 400);
      });

      it('checks visibility before the disallowed update: max_disk_bytes is 404 to whoever cannot see the repo, 403 to the rest', async () => {
        const priv = await fresh();
        const pub = await fresh({ visibility: 'public' });
        const off = await fresh({ visibility: 'public' });
        await t.deps.db.updateTable('repos').set({ is_active: 0 }).where('uuid', '=', off.uuid).execute();
        const quota = await t.user('quota');
        const uPriv = await seedRepo(t, { kind: 'user', uuid: quota.uuid }, 'q-priv');
        const uPub = await seedRepo(t, { kind: 'user', uuid: quota.uuid }, 'q-pub', { visibility: 'public' });
        const cases: Array<[Person | null, { path: string; uuid: string }, number, string]> = [
          [null, priv, 401, 'unauthorized'],
          [outsider, priv, 404, 'not_found'],
          [member, off, 404, 'not_found'],
          [reader, priv, 403, 'forbidden'],
          [member, priv, 403, 'forbidden'],
          [outsider, pub, 403, 'forbidden'],
          [maint, priv, 403, 'forbidden'],
          [outsider, { path: '/api/v1/users/quota/repos/q-priv', uuid: uPriv.uuid }, 404, 'not_found'],
          [outsider, { path: '/api/v1/users/quota/repos/q-pub', uuid: uPub.uuid }, 403, 'forbidden'],
          [quota, { path: '/api/v1/users/quota/repos/q-priv', uuid: uPriv.uuid }, 403, 'forbidden'],
        ];
        for (const [who, r, status, code] of cases) {
          const before = await repoSnapshot(t, r.path, r.uuid);
          const res = await t.req('PUT', r.path, { token: who ? who.token : null, body: { max_disk_bytes: 1 } });
          assert.equal(res.status, status, `${who?.username ?? 'anonymous'} ${r.path}: ${res.text}`);
          assert.ok(isErrorBody(res.body, code), res.text);
          assert.equal(await repoSnapshot(t, r.path, r.uuid), before);
        }
        for (const path of [
          '/api/v1/teams/acme/repos/nope',
          '/api/v1/users/quota/repos/nope',
          '/api/v1/users/nobody-here/repos/q-priv',
        ]) {
          const res = await t.req('PUT', path, { token: quota.token, body: { max_disk_bytes: 1 } });
          assert.equal(res.status, 404, path);
        }
      });

      it('answers a staff update of a user repo with the creator, not the caller, in created_by', async () => {
        const u = await t.user('creator');
        const made = await t.req('POST', '/api/v1/users/creator/repos', { token: u.token, body: { name: 'C', slug: 'c' } });
        assert.equal(made.status, 201);
        const res = await t.req('PUT', '/api/v1/users/creator/repos/c', { body: { max_disk_bytes: 10, name: 'Changed' } });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.max_disk_bytes, 10);
        assert.equal(res.body.created_by_uuid, u.uuid);
        assert.equal(res.body.created_by_username, 'creator');
        assert.equal(res.body.name, 'Changed');
      });

      it('is 404 when the owner or the repo does not exist', async () => {
        for (const path of [
          '/api/v1/teams/acme/repos/nope',
          '/api/v1/teams/nope/repos/upd-1',
          '/api/v1/users/nope/repos/x',
          '/api/v1/users/olga/repos/nope',
        ]) {
          const res = await t.req('PUT', path, { body: { name: 'x' } });
          assert.equal(res.status, 404, path);
          assert.ok(isErrorBody(res.body, 'not_found'));
        }
      });

      it('is 409 slug_taken for a slug another repo of the owner has; its own slug is fine', async () => {
        const a = await fresh();
        const b = await fresh();
        const before = await repoSnapshot(t, b.path, b.uuid);
        const res = await t.req('PUT', b.path, { token: maint.token, body: { slug: a.slug.toUpperCase(), name: 'Clash' } });
        assert.equal(res.status, 409);
        assert.ok(isErrorBody(res.body, 'slug_taken'), res.text);
        assert.equal(await repoSnapshot(t, b.path, b.uuid), before);
        const same = await t.req('PUT', b.path, { token: maint.token, body: { slug: b.slug } });
        assert.equal(same.status, 200);
      });

      it('is 409 invalid_pull_policy for team on a user repo or a private team repo; fine on a public team repo', async () => {
        const u = await t.user('pat');
        await seedRepo(t, { kind: 'user', uuid: u.uuid }, 'pubu', { visibility: 'public' });
        const user = await t.req('PUT', '/api/v1/users/pat/repos/pubu', {
          token: u.token,
          body: { public_repo_pull_policy: 'team' },
        });
        assert.equal(user.status, 409);
        assert.ok(isErrorBody(user.body, 'invalid_pull_policy'), user.text);
        assert.equal((await t.req('GET', '/api/v1/users/pat/repos/pubu')).body.public_repo_pull_policy, 'any');

        const priv = await fresh();
        const before = await repoSnapshot(t, priv.path, priv.uuid);
        const res = await t.req('PUT', priv.path, { token: maint.token, body: { public_repo_pull_policy: 'team', name: 'x' } });
        assert.equal(res.status, 409);
        assert.ok(isErrorBody(res.body, 'invalid_pull_policy'));
        assert.equal(await repoSnapshot(t, priv.path, priv.uuid), before);

        const becomingPublic = await t.req('PUT', priv.path, {
          token: maint.token,
          body: { public_repo_pull_policy: 'team', visibility: 'public' },
        });
        assert.equal(becomingPublic.status, 200, becomingPublic.text);
        assert.equal(becomingPublic.body.public_repo_pull_policy, 'team');

        const pub = await fresh({ visibility: 'public' });
        const ok = await t.req('PUT', pub.path, { token: maint.token, body: { public_repo_pull_policy: 'team' } });
        assert.equal(ok.status, 200);
        const turningPrivate = await t.req('PUT', pub.path, {
          token: maint.token,
          body: { visibility: 'private', public_repo_pull_policy: 'team' },
        });
        assert.equal(turningPrivate.status, 409);
        assert.ok(isErrorBody(turningPrivate.body, 'invalid_pull_policy'));
        assert.equal(
          (await t.req('PUT', pub.path, { token: maint.token, body: { public_repo_pull_policy: 'bogus' } })).status,
          400,
        );
      });

      it('validates default_branch as a git branch name and rejects bad bodies with 400', async () => {
        const r = await fresh();
        const before = await repoSnapshot(t, r.path, r.uuid);
        for (const branch of [
          'has space',
          '-dash',
          'a..b',
          'end.',
          'x.lock',
          'a//b',
          '/lead',
          'trail/',
          'HEAD',
          '@',
          'a~1',
          'a^',
          'a:b',
          'a?',
          'a*',
          'a[b',
          'a\\b',
          'a@{1}',
          '.hidden',
          'ctl\u0001x',
          '',
        ]) {
          const res = await t.req('PUT', r.path, { token: maint.token, body: { default_branch: branch } });
          assert.equal(res.status, 400, `${JSON.stringify(branch)}: ${res.text}`);
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        for (const body of [
          { visibility: 'secret' },
          { name: '' },
          { name: '   ' },
          { slug: 'bad slug' },
          { is_active: 'yes' },
          { owner: 'x' },
          { about: null },
        ]) {
          const res = await t.req('PUT', r.path, { token: maint.token, body });
          assert.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
        }
        assert.equal(await repoSnapshot(t, r.path, r.uuid), before);
        for (const branch of ['release/1.0', 'feature/x-y_z', 'héllo', 'v1@2']) {
          const res = await t.req('PUT', r.path, { token: maint.token, body: { default_branch: branch } });
          assert.equal(res.status, 200, branch);
          assert.equal(res.body.default_branch, branch);
        }
      });

      it('hides a deactivated repo from everyone below maintain level', async () => {
        const r = await fresh({ visibility: 'public' });
        const res = await t.req('PUT', r.path, { token: maint.token, body: { is_active: false } });
        assert.equal(res.status, 200);
        assert.equal(res.body.is_active, false);
        for (const who of [member, reader, outsider])
          assert.equal((await t.req('GET', r.path, { token: who.token })).status, 404);
        assert.equal((await t.req('GET', r.path, { token: maint.token })).status, 200);
        const back = await t.req('PUT', r.path, { token: owner.token, body: { is_active: true } });
        assert.equal(back.body.is_active, true);
        assert.equal((await t.req('GET', r.path, { token: outsider.token })).status, 200);
      });

      it('refuses updates under an inactive team (403 team_inactive)', async () => {
        const sleepy = await seedTeam(t, 'dozy', [{ uuid: maint.uuid, role: 'maintainer' }], { is_active: false });
        await seedRepo(t, { kind: 'team', uuid: sleepy.uuid }, 'zzz');
        const res = await t.req('PUT', '/api/v1/teams/dozy/repos/zzz', { token: maint.token, body: { name: 'x' } });
        assert.equal(res.status, 403);
        assert.ok(isErrorBody(res.body, 'team_inactive'));
        assert.equal((await t.req('GET', '/api/v1/teams/dozy/repos/zzz', { token: maint.token })).body.name, 'zzz');
      });
    });

    describe('archive', () => {
      it('archives and unarchives (maintain level, idempotent), refusing writes in between', async () => {
        const r = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'arch');
        const path = '/api/v1/teams/acme/repos/arch';
        const denied = await t.req('PUT', `${path}/archive`, { token: member.token });
        assert.equal(denied.status, 403);
        assert.equal((await t.req('PUT', `${path}/archive`, { token: outsider.token })).status, 404);
        assert.equal((await t.req('GET', path)).body.is_archived, false);

        const res = await t.req('PUT', `${path}/archive`, { token: maint.token });
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(Object.keys(res.body).sort(), REPO_FIELDS);
        assert.equal(res.body.is_archived, true);
        const again = await t.req('PUT', `${path}/archive`, { token: maint.token });
        assert.equal(again.status, 200);
        assert.equal(again.body.is_archived, true);

        const before = await repoSnapshot(t, path, r.uuid);
        for (const [method, url, body] of [
          ['PUT', path, { name: 'x' }],
          ['POST', `${path}/protections`, { branch: 'main' }],
        ] as const) {
          const refused = await t.req(method, url, { token: maint.token, body });
          assert.equal(refused.status, 403, url);
          assert.ok(isErrorBody(refused.body, 'repo_archived'), refused.text);
        }
        const staffRefused = await t.req('PUT', path, { body: { name: 'x' } });
        assert.ok(isErrorBody(staffRefused.body, 'repo_archived'));
        assert.equal(await repoSnapshot(t, path, r.uuid), before);
        assert.equal((await t.req('GET', path, { token: reader.token })).status, 200, 'still readable');

        assert.equal((await t.req('DELETE', `${path}/archive`, { token: reader.token })).status, 403);
        const un = await t.req('DELETE', `${path}/archive`, { token: maint.token });
        assert.equal(un.status, 200);
        assert.equal(un.body.is_archived, false);
        assert.equal((await t.req('DELETE', `${path}/archive`, { token: maint.token })).body.is_archived, false);
        assert.equal((await t.req('PUT', path, { token: maint.token, body: { name: 'Works' } })).status, 200);

        const events = (await eventsIn(t, `repo:${r.uuid}`)).filter((e) => e.kind === 'repo-updated');
        assert.deepEqual(
          events.map((e) => [e.payload.action ?? null, e.payload.changes]),
          [
            ['archived', { is_archived: true }],
            ['unarchived', { is_archived: false }],
            [null, { name: 'Works' }],
          ],
        );
      });

      it('archives user repos in the user form', async () => {
        const u = await t.user('archie');
        await seedRepo(t, { kind: 'user', uuid: u.uuid }, 'old');
        const res = await t.req('PUT', '/api/v1/users/archie/repos/old/archive', { token: u.token });
        assert.equal(res.status, 200);
        assert.equal(res.body.is_archived, true);
        assert.equal((await t.req('PUT', '/api/v1/users/archie/repos/old/archive', { token: outsider.token })).status, 404);
        assert.equal(
          (await t.req('DELETE', '/api/v1/users/archie/repos/old/archive', { token: u.token })).body.is_archived,
          false,
        );
      });
    });

    describe('delete', () => {
      it('lets the team owner and staff delete; maintainers and below get 403 and nothing changes', async () => {
        const r = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'doomed');
        const path = '/api/v1/teams/acme/repos/doomed';
        await t.req('POST', `${path}/protections`, { body: { branch: 'main' } });
        const before = await repoSnapshot(t, path, r.uuid);
        for (const [who, status] of [
          [maint, 403],
          [member, 403],
          [reader, 403],
          [outsider, 404],
        ] as Array<[Person, number]>) {
          const res = await t.req('DELETE', path, { token: who.token });
          assert.equal(res.status, status, who.username);
        }
        assert.equal((await t.req('DELETE', path, { token: null })).status, 401);
        assert.equal(await repoSnapshot(t, path, r.uuid), before);

        const res = await t.req('DELETE', path, { token: owner.token });
        assert.equal(res.status, 204);
        assert.equal(res.text, '');
        assert.equal((await t.req('GET', path)).status, 404);
        assert.equal((await t.req('DELETE', path)).status, 404);
        // the repo scope is gone with the repo; the team scope keeps the record
        assert.equal((await t.req('GET', `/api/v1/events?scope=repo:${r.uuid}`)).status, 404);
        const teamEvents = await eventsIn(t, `team:${team.uuid}`, owner.token);
        const deleted = teamEvents.find((e) => e.kind === 'repo-deleted' && e.payload.repo_uuid === r.uuid);
        assert.ok(deleted);
        assert.equal(deleted.payload.full_name, 'acme/doomed');
        // the slug is free again
        const again = await t.req('POST', '/api/v1/teams/acme/repos', {
          token: maint.token,
          body: { name: 'Doomed', slug: 'doomed' },
        });
        assert.equal(again.status, 201);
        assert.deepEqual((await t.req('GET', `${path}/protections`)).body.results, []);

        const staff = await t.req('DELETE', path);
        assert.equal(staff.status, 204);
      });

      it('lets a user delete their own repo, archived or not; another user gets 403 on a public one', async () => {
        const u = await t.user('della');
        await seedRepo(t, { kind: 'user', uuid: u.uuid }, 'gone', { visibility: 'public', is_archived: true });
        const other = await t.req('DELETE', '/api/v1/users/della/repos/gone', { token: outsider.token });
        assert.equal(other.status, 403);
        const res = await t.req('DELETE', '/api/v1/users/della/repos/gone', { token: u.token });
        assert.equal(res.status, 204);
        assert.equal((await t.req('GET', '/api/v1/users/della/repos/gone')).status, 404);
        const events = await eventsIn(t, `user:${u.uuid}`, u.token);
        assert.ok(events.some((e) => e.kind === 'repo-deleted'));
      });
    });

    describe('check-repo-slug', () => {
      before(async () => {
        await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'taken');
        await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'taken-2');
        await seedRepo(t, { kind: 'user', uuid: reader.uuid }, 'taken');
      });

      it('answers 200 when free and 409 with a free suggestion when taken, in both forms', async () => {
        const free = await t.req('GET', '/api/v1/teams/acme/check-repo-slug?slug=Brand-New', { token: reader.token });
        assert.equal(free.status, 200);
        assert.deepEqual(free.body, { available: true, suggestion: null });
        const taken = await t.req('GET', '/api/v1/teams/acme/check-repo-slug?slug=TAKEN', { token: reader.token });
        assert.equal(taken.status, 409);
        assert.deepEqual(taken.body, { available: false, suggestion: 'taken-3' });
        const create = await t.req('POST', '/api/v1/teams/acme/repos', {
          token: maint.token,
          body: { name: 'x', slug: taken.body.suggestion },
        });
        assert.equal(create.status, 201);

        const mine = await t.req('GET', '/api/v1/users/rita/check-repo-slug?slug=taken', { token: reader.token });
        assert.equal(mine.status, 409);
        assert.deepEqual(mine.body, { available: false, suggestion: 'taken-2' });
        const mineFree = await t.req('GET', '/api/v1/users/rita/check-repo-slug?slug=fresh', { token: reader.token });
        assert.deepEqual([mineFree.status, mineFree.body], [200, { available: true, suggestion: null }]);
        const staff = await t.req('GET', '/api/v1/users/rita/check-repo-slug?slug=taken');
        assert.equal(staff.status, 409);
      });

      it('is 400 for a missing or malformed slug, 401 anonymous, 404 for outsiders of a team, 403 for another user', async () => {
        for (const q of ['', '?slug=', '?slug=-x', '?slug=has%20space', `?slug=${'a'.repeat(101)}`, '?slug=a.b']) {
          const res = await t.req('GET', `/api/v1/teams/acme/check-repo-slug${q}`, { token: reader.token });
          assert.equal(res.status, 400, q);
          assert.ok(isErrorBody(res.body, 'invalid_request'));
        }
        assert.equal((await t.req('GET', '/api/v1/users/rita/check-repo-slug?slug=a.b', { token: reader.token })).status, 400);
        assert.equal((await t.req('GET', '/api/v1/teams/acme/check-repo-slug?slug=x', { token: null })).status, 401);
        assert.equal((await t.req('GET', '/api/v1/teams/acme/check-repo-slug?slug=x', { token: outsider.token })).status, 404);
        assert.equal((await t.req('GET', '/api/v1/teams/nope/check-repo-slug?slug=x')).status, 404);
        const other = await t.req('GET', '/api/v1/users/rita/check-repo-slug?slug=x', { token: outsider.token });
        assert.equal(other.status, 403);
        assert.ok(isErrorBody(other.body, 'forbidden'));
        assert.equal((await t.req('GET', '/api/v1/users/nope/check-repo-slug?slug=x')).status, 404);
      });
    });

    describe('repo event scope', () => {
      it('serves repo:<uuid> to readers and is 404 to outsiders of a private repo', async () => {
        const created = await t.req('POST', '/api/v1/teams/acme/repos', { token: maint.token, body: { name: 'Ev', slug: 'ev' } });
        const scope = `repo:${created.body.uuid}`;
        for (const who of [reader, member, maint, owner]) {
          const res = await t.req('GET', `/api/v1/events?scope=${scope}`, { token: who.token });
          assert.equal(res.status, 200, who.username);
          assert.deepEqual(
            res.body.results.map((e: { kind: string }) => e.kind),
            ['repo-created'],
          );
        }
        const hidden = await t.req('GET', `/api/v1/events?scope=${scope}`, { token: outsider.token });
        assert.equal(hidden.status, 404);
        assert.ok(isErrorBody(hidden.body, 'not_found'));
        await t.req('PUT', '/api/v1/teams/acme/repos/ev', { token: maint.token, body: { visibility: 'public' } });
        const now = await t.req('GET', `/api/v1/events?scope=${scope}`, { token: outsider.token });
        assert.equal(now.status, 200);
        assert.deepEqual(
          now.body.results.map((e: { kind: string }) => e.kind),
          ['repo-created', 'repo-updated'],
        );
      });
    });
  });
}

// ---------------------------------------------------------------- clone_url with PUBLIC_URL

for (const dialect of DIALECTS) {
  describe(`clone_url under a configured PUBLIC_URL (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      // as the server reads it from the environment: a path prefix and a trailing slash
      const { publicUrl } = loadConfig({ PUBLIC_URL: 'https://code.example.org/weft/' });
      t = await startApp(dialect, { config: { publicUrl } });
    });
    after(() => t.close());

    it('is {PUBLIC_URL}/git/teams/{t}/{slug}.git or /git/users/{u}/{slug}.git in every answer that carries a repo', async () => {
      const u = await t.user('cloner');
      assert.equal((await t.req('POST', '/api/v1/teams', { token: u.token, body: { name: 'C', slug: 'clones' } })).status, 201);
      const team = await t.req('POST', '/api/v1/teams/clones/repos', { token: u.token, body: { name: 'R', slug: 'Repo' } });
      assert.equal(team.body.clone_url, 'https://code.example.org/weft/git/teams/clones/repo.git');
      const user = await t.req('POST', '/api/v1/users/cloner/repos', { token: u.token, body: { name: 'R', slug: 'mine' } });
      assert.equal(user.body.clone_url, 'https://code.example.org/weft/git/users/cloner/mine.git');
      const fork = await t.req('POST', '/api/v1/teams/clones/repos/repo/forks', { token: u.token });
      assert.equal(fork.status, 201, fork.text);
      assert.equal(fork.body.repo.clone_url, 'https://code.example.org/weft/git/users/cloner/repo.git');
      const list = await t.req('GET', '/api/v1/teams/clones/repos', { token: u.token });
      assert.deepEqual(
        list.body.results.map((r: { clone_url: string }) => r.clone_url),
        [team.body.clone_url],
      );
      const renamed = await t.req('PUT', '/api/v1/users/cloner/repos/mine', { token: u.token, body: { slug: 'ours' } });
      assert.equal(renamed.body.clone_url, 'https://code.example.org/weft/git/users/cloner/ours.git');
    });
  });
}

// ---------------------------------------------------------------- read-only states

interface StateCtx {
  repo: string;
  repoUuid: string;
  protection: string;
  approver: string;
}

/** Every route under a repo (issue 3), with what an archived repo and an inactive team answer. */
const STATE_CASES: Array<{
  name: string;
  method: string;
  path: (c: StateCtx) => string;
  body?: unknown;
  /** [status, error code] on an archived repo, and under an inactive team */
  archived: [number, string?];
  inactive: [number, string?];
}> = [
  { name: 'GET repo', method: 'GET', path: (c) => c.repo, archived: [200], inactive: [200] },
  {
    name: 'PUT repo',
    method: 'PUT',
    path: (c) => c.repo,
    body: { description: 'x' },
    archived: [403, 'repo_archived'],
    inactive: [403, 'team_inactive'],
  },
  {
    name: 'PUT repo (max_disk_bytes)',
    method: 'PUT',
    path: (c) => c.repo,
    body: { max_disk_bytes: 1 },
    archived: [403, 'repo_archived'],
    inactive: [403, 'team_inactive'],
  },
  { name: 'PUT archive', method: 'PUT', path: (c) => `${c.repo}/archive`, archived: [200], inactive: [403, 'team_inactive'] },
  {
    name: 'DELETE archive',
    method: 'DELETE',
    path: (c) => `${c.repo}/archive`,
    archived: [200],
    inactive: [403, 'team_inactive'],
  },
  { name: 'DELETE repo', method: 'DELETE', path: (c) => c.repo, archived: [204], inactive: [403, 'team_inactive'] },
  { name: 'POST forks (into the caller)', method: 'POST', path: (c) => `${c.repo}/forks`, archived: [201], inactive: [201] },
  { name: 'GET forks', method: 'GET', path: (c) => `${c.repo}/forks`, archived: [200], inactive: [200] },
  { name: 'GET protections', method: 'GET', path: (c) => `${c.repo}/protections`, archived: [200], inactive: [200] },
  {
    name: 'POST protections',
    method: 'POST',
    path: (c) => `${c.repo}/protections`,
    body: { branch: 'main' },
    archived: [403, 'repo_archived'],
    inactive: [403, 'team_inactive'],
  },
  {
    name: 'GET protection',
    method: 'GET',
    path: (c) => `${c.repo}/protections/${c.protection}`,
    archived: [200],
    inactive: [200],
  },
  {
    name: 'PUT protection',
    method: 'PUT',
    path: (c) => `${c.repo}/protections/${c.protection}`,
    body: { required_approvals: 3 },
    archived: [403, 'repo_archived'],
    inactive: [403, 'team_inactive'],
  },
  {
    name: 'DELETE protection',
    method: 'DELETE',
    path: (c) => `${c.repo}/protections/${c.protection}`,
    archived: [403, 'repo_archived'],
    inactive: [403, 'team_inactive'],
  },
  {
    name: 'GET approvers',
    method: 'GET',
    path: (c) => `${c.repo}/protections/${c.protection}/approvers`,
    archived: [200],
    inactive: [200],
  },
  {
    name: 'POST approvers',
    method: 'POST',
    path: (c) => `${c.repo}/protections/${c.protection}/approvers`,
    body: { username: 's-extra' },
    archived: [403, 'repo_archived'],
    inactive: [403, 'team_inactive'],
  },
  {
    name: 'DELETE approver',
    method: 'DELETE',
    path: (c) => `${c.repo}/protections/${c.protection}/approvers/${c.approver}`,
    archived: [403, 'repo_archived'],
    inactive: [403, 'team_inactive'],
  },
  {
    name: 'GET events of the repo scope',
    method: 'GET',
    path: (c) => `/api/v1/events?scope=repo:${c.repoUuid}`,
    archived: [200],
    inactive: [200],
  },
];

for (const dialect of DIALECTS) {
  describe(`archived repos and inactive teams (${dialect})`, () => {
    let t: TestApp;
    let owner: Person;
    let maint: Person;
    let userOwner: Person;
    let n = 0;

    before(async () => {
      t = await startApp(dialect);
      owner = await t.user('s-owner');
      maint = await t.user('s-maint');
      userOwner = await t.user('s-user');
      await t.user('s-approver');
      await t.user('s-extra');
    });
    after(() => t.close());

    /** A fresh repo with one protection and one approver; `state` is applied last. */
    async function prepare(state: 'archived' | 'inactive', kind: 'team' | 'user'): Promise<StateCtx> {
      n += 1;
      let repo: string;
      let repoUuid: string;
      let teamUuid = '';
      if (kind === 'team') {
        const team = await seedTeam(t, `st-${n}`, [
          { uuid: owner.uuid, role: 'owner' },
          { uuid: maint.uuid, role: 'maintainer' },
        ]);
        teamUuid = team.uuid;
        repoUuid = (await seedRepoNow(t, { kind: 'team', uuid: team.uuid }, `r-${n}`)).uuid;
        repo = `/api/v1/teams/st-${n}/repos/r-${n}`;
      } else {
        repoUuid = (await seedRepoNow(t, { kind: 'user', uuid: userOwner.uuid }, `r-${n}`)).uuid;
        repo = `/api/v1/users/s-user/repos/r-${n}`;
      }
      const p = await t.req('POST', `${repo}/protections`, { body: { branch: 'release/*' } });
      assert.equal(p.status, 201, p.text);
      const a = await t.req('POST', `${repo}/protections/${p.body.uuid}/approvers`, { body: { username: 's-approver' } });
      assert.equal(a.status, 201, a.text);
      if (state === 'archived')
        await t.deps.db.updateTable('repos').set({ is_archived: 1 }).where('uuid', '=', repoUuid).execute();
      else await t.deps.db.updateTable('teams').set({ is_active: 0 }).where('uuid', '=', teamUuid).execute();
      return { repo, repoUuid, protection: p.body.uuid, approver: a.body.user_uuid };
    }

    for (const state of ['archived', 'inactive'] as const) {
      for (const kind of state === 'archived' ? (['team', 'user'] as const) : (['team'] as const)) {
        for (const c of STATE_CASES) {
          it(`${c.name}: ${state === 'archived' ? `archived ${kind} repo` : 'repo of an inactive team'}`, async () => {
            const [status, code] = c[state];
            // the strongest callers: staff, and the repo's owner (team owner or user); maintainers for maintain-level routes
            const callers = kind === 'user' ? [userOwner.token, t.adminToken] : [owner.token, maint.token, t.adminToken];
            for (const token of callers) {
              if (token === maint.token && c.name === 'DELETE repo') continue; // needs the owner level anyway
              if (token === userOwner.token && c.method === 'POST' && c.name.startsWith('POST forks')) continue; // own slug: 409
              const ctx = await prepare(state, kind);
              const before = await repoSnapshot(t, ctx.repo, ctx.repoUuid);
              const res = await t.req(c.method, c.path(ctx), { token, ...(c.body === undefined ? {} : { body: c.body }) });
              assert.equal(res.status, status, `${c.method} ${c.path(ctx)}: ${res.text}`);
              if (code) {
                assert.ok(isErrorBody(res.body, code), res.text);
                assert.equal(await repoSnapshot(t, ctx.repo, ctx.repoUuid), before, 'a refused write changed something');
              }
            }
          });
        }
      }
    }
  });
}

// ---------------------------------------------------------------- access matrix

type Role = 'anon' | 'outsider' | 'reader' | 'member' | 'maintainer' | 'owner' | 'staff';
const TEAM_FORM_ROLES: Role[] = ['anon', 'outsider', 'reader', 'member', 'maintainer', 'owner', 'staff'];
const USER_FORM_ROLES: Role[] = ['anon', 'outsider', 'owner', 'staff'];

interface MatrixCtx {
  repo: string; // the repo path
  repoUuid: string;
  protection: string; // a protection uuid (when the case asks for one)
  approver: string; // a listed approver's user uuid
  /** setup 'forked': a fork of the repo in the same namespace, as visible as the repo */
  fork: string; // the fork repo's path
  forkUuid: string; // the fork record's uuid
  namespace: string; // "team/matrix" or "user/umatrix"
  event: string; // setup 'event': the id of a repo-updated event of the repo
}

interface RepoCase {
  name: string;
  method: string;
  path: (c: MatrixCtx) => string;
  body?: unknown;
  setup?: 'protection' | 'approver' | 'forked' | 'event';
  /** expected statuses in role order: TEAM_FORM_ROLES for team, USER_FORM_ROLES for user */
  team: { private: string; public: string };
  user: { private: string; public: string };
}

const READ = {
  team: { private: '401 404 200 200 200 200 200', public: '401 200 200 200 200 200 200' },
  user: { private: '401 404 200 200', public: '401 200 200 200' },
};
const maintain = (s: number) => ({
  team: { private: `401 404 403 403 ${s} ${s} ${s}`, public: `401 403 403 403 ${s} ${s} ${s}` },
  user: { private: `401 404 ${s} ${s}`, public: `401 403 ${s} ${s}` },
});

const REPO_CASES: RepoCase[] = [
  { name: 'GET repo', method: 'GET', path: (c) => c.repo, ...READ },
  { name: 'PUT repo', method: 'PUT', path: (c) => c.repo, body: { description: 'changed' }, ...maintain(200) },
  { name: 'PUT archive', method: 'PUT', path: (c) => `${c.repo}/archive`, ...maintain(200) },
  { name: 'DELETE archive', method: 'DELETE', path: (c) => `${c.repo}/archive`, ...maintain(200) },
  {
    name: 'DELETE repo',
    method: 'DELETE',
    path: (c) => c.repo,
    team: { private: '401 404 403 403 403 204 204', public: '401 403 403 403 403 204 204' },
    user: { private: '401 404 204 204', public: '401 403 204 204' },
  },
  {
    // into the caller's own namespace with the same slug: a user forking their own repo collides
    name: 'POST forks',
    method: 'POST',
    path: (c) => `${c.repo}/forks`,
    team: { private: '401 404 201 201 201 201 201', public: '401 201 201 201 201 201 201' },
    user: { private: '401 404 409 201', public: '401 201 409 201' },
  },
  { name: 'GET forks', method: 'GET', path: (c) => `${c.repo}/forks`, ...READ },
  {
    name: 'GET fork (not a fork)',
    method: 'GET',
    path: (c) => `${c.repo}/fork`,
    team: { private: '401 404 404 404 404 404 404', public: '401 404 404 404 404 404 404' },
    user: { private: '401 404 404 404', public: '401 404 404 404' },
  },
  { name: 'GET events of the repo scope', method: 'GET', path: (c) => `/api/v1/events?scope=repo:${c.repoUuid}`, ...READ },
  { name: 'GET protections', method: 'GET', path: (c) => `${c.repo}/protections`, ...READ },
  { name: 'POST protections', method: 'POST', path: (c) => `${c.repo}/protections`, body: { branch: 'main' }, ...maintain(201) },
  { name: 'GET protection', method: 'GET', setup: 'protection', path: (c) => `${c.repo}/protections/${c.protection}`, ...READ },
  {
    name: 'PUT protection',
    method: 'PUT',
    setup: 'protection',
    path: (c) => `${c.repo}/protections/${c.protection}`,
    body: { required_approvals: 2 },
    ...maintain(200),
  },
  {
    name: 'DELETE protection',
    method: 'DELETE',
    setup: 'protection',
    path: (c) => `${c.repo}/protections/${c.protection}`,
    ...maintain(204),
  },
  {
    name: 'GET approvers',
    method: 'GET',
    setup: 'approver',
    path: (c) => `${c.repo}/protections/${c.protection}/approvers`,
    ...READ,
  },
  {
    name: 'POST approvers',
    method: 'POST',
    setup: 'protection',
    path: (c) => `${c.repo}/protections/${c.protection}/approvers`,
    body: { username: 'approver' },
    ...maintain(201),
  },
  {
    name: 'DELETE approver',
    method: 'DELETE',
    setup: 'approver',
    path: (c) => `${c.repo}/protections/${c.protection}/approvers/${c.approver}`,
    ...maintain(204),
  },
  { name: 'GET fork (a fork)', method: 'GET', setup: 'forked', path: (c) => `${c.fork}/fork`, ...READ },
  { name: 'GET /forks/{uuid}', method: 'GET', setup: 'forked', path: (c) => `/api/v1/forks/${c.forkUuid}`, ...READ },
  { name: 'GET forks/{kind}/{owner}', method: 'GET', setup: 'forked', path: (c) => `${c.repo}/forks/${c.namespace}`, ...READ },
  {
    // the destination team "mdest" has the same members with the same roles as "matrix"; umatrix is not in it
    name: 'POST forks?team=',
    method: 'POST',
    path: (c) => `${c.repo}/forks?team=mdest`,
    team: { private: '401 404 403 403 201 201 201', public: '401 404 403 403 201 201 201' },
    user: { private: '401 404 404 201', public: '401 404 404 201' },
  },
  { name: 'GET /events/{id} of a repo event', method: 'GET', setup: 'event', path: (c) => `/api/v1/events/${c.event}`, ...READ },
];

interface OwnerCase {
  name: string;
  method: string;
  path: string;
  body?: () => unknown;
  expect: string;
}

let matrixSlug = 0;
const TEAM_OWNER_CASES: OwnerCase[] = [
  {
    name: 'POST team repos',
    method: 'POST',
    path: '/api/v1/teams/matrix/repos',
    body: () => ({ name: 'n', slug: `new-${++matrixSlug}` }),
    expect: '401 404 403 403 201 201 201',
  },
  { name: 'GET team repos', method: 'GET', path: '/api/v1/teams/matrix/repos', expect: '401 200 200 200 200 200 200' },
  {
    name: 'GET team check-repo-slug',
    method: 'GET',
    path: '/api/v1/teams/matrix/check-repo-slug?slug=zz',
    expect: '401 404 200 200 200 200 200',
  },
];
const USER_OWNER_CASES: OwnerCase[] = [
  {
    name: 'POST user repos',
    method: 'POST',
    path: '/api/v1/users/umatrix/repos',
    body: () => ({ name: 'n', slug: `new-${++matrixSlug}` }),
    expect: '401 403 201 201',
  },
  { name: 'GET user repos', method: 'GET', path: '/api/v1/users/umatrix/repos', expect: '401 200 200 200' },
  {
    name: 'GET user check-repo-slug',
    method: 'GET',
    path: '/api/v1/users/umatrix/check-repo-slug?slug=zz',
    expect: '401 403 200 200',
  },
];

for (const dialect of DIALECTS) {
  describe(`repo access matrix (${dialect})`, () => {
    let t: TestApp;
    const tokens: Partial<Record<Role, string | null>> = {};
    const userTokens: Partial<Record<Role, string | null>> = {};
    let teamUuid: string;
    let userOwner: Person;
    let n = 0;

    before(async () => {
      t = await startApp(dialect);
      const users: Record<string, Person> = {};
      for (const name of ['m-outsider', 'm-reader', 'm-member', 'm-maint', 'm-owner']) users[name] = await t.user(name);
      userOwner = await t.user('umatrix');
      await t.user('approver');
      await t.user('approver2');
      const roles = [
        { uuid: users['m-reader']!.uuid, role: 'reader' as const },
        { uuid: users['m-member']!.uuid, role: 'member' as const },
        { uuid: users['m-maint']!.uuid, role: 'maintainer' as const },
        { uuid: users['m-owner']!.uuid, role: 'owner' as const },
      ];
      const team = await seedTeam(t, 'matrix', roles);
      await seedTeam(t, 'mdest', roles);
      teamUuid = team.uuid;
      Object.assign(tokens, {
        anon: null,
        outsider: users['m-outsider']!.token,
        reader: users['m-reader']!.token,
        member: users['m-member']!.token,
        maintainer: users['m-maint']!.token,
        owner: users['m-owner']!.token,
        staff: t.adminToken,
      });
      Object.assign(userTokens, {
        anon: null,
        outsider: users['m-outsider']!.token,
        owner: userOwner.token,
        staff: t.adminToken,
      });
    });
    after(() => t.close());

    for (const kind of ['team', 'user'] as const) {
      for (const visibility of ['private', 'public'] as const) {
        for (const c of REPO_CASES) {
          it(`${c.name}, ${visibility} ${kind} repo`, async () => {
            const roles = kind === 'team' ? TEAM_FORM_ROLES : USER_FORM_ROLES;
            const expected = c[kind][visibility].split(' ').map(Number);
            assert.equal(expected.length, roles.length);
            for (const [i, role] of roles.entries()) {
              n += 1;
              const slug = `mx-${n}`;
              const ownerUuid = kind === 'team' ? teamUuid : userOwner.uuid;
              const seeded = await seedRepoNow(t, { kind, uuid: ownerUuid }, slug, { visibility });
              const repo = kind === 'team' ? `/api/v1/teams/matrix/repos/${slug}` : `/api/v1/users/umatrix/repos/${slug}`;
              const namespace = kind === 'team' ? 'team/matrix' : 'user/umatrix';
              const ctx: MatrixCtx = {
                repo,
                repoUuid: seeded.uuid,
                protection: '',
                approver: '',
                fork: '',
                forkUuid: '',
                namespace,
                event: '',
              };
              if (c.setup === 'forked') {
                const forkRepo = await seedRepoNow(t, { kind, uuid: ownerUuid }, `${slug}-fork`, { visibility });
                await t.deps.db
                  .updateTable('repos')
                  .set({ fork_of_uuid: seeded.uuid })
                  .where('uuid', '=', forkRepo.uuid)
                  .execute();
                ctx.forkUuid = randomUUID();
                await t.deps.db
                  .insertInto('forks')
                  .values({
                    uuid: ctx.forkUuid,
                    source_repo_uuid: seeded.uuid,
                    repo_uuid: forkRepo.uuid,
                    created_by_uuid: ownerUuid,
                    created_at: new Date().toISOString(),
                  })
                  .execute();
                ctx.fork = `${repo}-fork`;
              } else if (c.setup === 'event') {
                const put = await t.req('PUT', repo, { body: { about: 'for the event' } });
                assert.equal(put.status, 200);
                const events = await t.req('GET', `/api/v1/events?scope=repo:${seeded.uuid}&kind=repo-updated`);
                ctx.event = events.body.results[0].id;
              } else if (c.setup) {
                const p = await t.req('POST', `${repo}/protections`, { body: { branch: 'release/*' } });
                assert.equal(p.status, 201);
                ctx.protection = p.body.uuid;
                if (c.setup === 'approver') {
                  const a = await t.req('POST', `${repo}/protections/${ctx.protection}/approvers`, {
                    body: { username: 'approver2' },
                  });
                  assert.equal(a.status, 201);
                  ctx.approver = a.body.user_uuid;
                }
              }
              const extra = ctx.protection ? `${repo}/protections/${ctx.protection}/approvers` : null;
              const snapshot = async () =>
                (await repoSnapshot(t, repo, seeded.uuid)) + (extra ? JSON.stringify((await t.req('GET', extra)).body) : '');
              const before = await snapshot();
              const token = (kind === 'team' ? tokens : userTokens)[role] ?? null;
              const res = await t.req(c.method, c.path(ctx), { token, ...(c.body === undefined ? {} : { body: c.body }) });
              assert.equal(res.status, expected[i], `${role}: ${res.text}`);
              if (res.status >= 400) {
                assert.ok(isErrorBody(res.body), res.text);
                assert.equal(await snapshot(), before, `${role}: a refused request changed something`);
              }
            }
          });
        }
      }
    }

    for (const [kind, cases] of [
      ['team', TEAM_OWNER_CASES],
      ['user', USER_OWNER_CASES],
    ] as const) {
      for (const c of cases) {
        it(`${c.name}`, async () => {
          const roles = kind === 'team' ? TEAM_FORM_ROLES : USER_FORM_ROLES;
          const expected = c.expect.split(' ').map(Number);
          const listPath =
            kind === 'team' ? '/api/v1/teams/matrix/repos?per_page=100' : '/api/v1/users/umatrix/repos?per_page=100';
          for (const [i, role] of roles.entries()) {
            const before = JSON.stringify((await t.req('GET', listPath)).body);
            const token = (kind === 'team' ? tokens : userTokens)[role] ?? null;
            const body = c.body?.();
            const res = await t.req(c.method, c.path, { token, ...(body === undefined ? {} : { body }) });
            assert.equal(res.status, expected[i], `${role}: ${res.text}`);
            if (res.status >= 400) assert.equal(JSON.stringify((await t.req('GET', listPath)).body), before);
          }
        });
      }
    }
  });
}
