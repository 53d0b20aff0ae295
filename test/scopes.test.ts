import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ROUTE_SCOPES } from '../src/http/route-scopes.ts';
import { routeKeysOf, unmappedRoutes } from '../src/http/scopes.ts';
import { seedRepo, seedTeam } from './fixtures.ts';
import { type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';

/** README "Scoped tokens": scopes and repo restrictions, over the API and git smart HTTP. */
for (const dialect of DIALECTS) {
  describe(`scoped tokens (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: { token: string; uuid: string; username: string };
    let team: { uuid: string; slug: string };
    const repos: Record<'a' | 'b' | 'c', { uuid: string; slug: string; api: string; git: string }> = {} as never;

    const token = async (owner: string, body: Record<string, unknown>, expect = 201) => {
      const res = await t.req('POST', '/api/v1/api-tokens', { token: owner, body: { name: 'scoped', ...body } });
      assert.equal(res.status, expect, res.text);
      return res.body;
    };
    const eventCount = async () =>
      Number(
        (
          await t.deps.db
            .selectFrom('events')
            .select((e) => e.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    before(async () => {
      t = await startApp(dialect);
      g = await gitClient(t);
      alice = await t.user(`alice${dialect}`);
      team = await seedTeam(t, `core${dialect}`, [{ uuid: alice.uuid, role: 'owner' }]);
      for (const name of ['a', 'b'] as const) {
        const res = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
          token: alice.token,
          body: { name, slug: name, visibility: 'private' },
        });
        assert.equal(res.status, 201, res.text);
        repos[name] = {
          uuid: res.body.uuid,
          slug: name,
          api: `/api/v1/users/${alice.username}/repos/${name}`,
          git: `/git/users/${alice.username}/${name}.git`,
        };
      }
      const c = await t.req('POST', `/api/v1/teams/${team.slug}/repos`, {
        token: alice.token,
        body: { name: 'c', slug: 'c', visibility: 'private' },
      });
      assert.equal(c.status, 201, c.text);
      repos.c = { uuid: c.body.uuid, slug: 'c', api: `/api/v1/teams/${team.slug}/repos/c`, git: `/git/teams/${team.slug}/c.git` };
      const work = await makeWorkTree(g, 'w', [{ 'a.txt': 'one\n' }]);
      for (const r of Object.values(repos)) await g.run(['-C', work, 'push', '-q', g.url(r.git, alice.token), 'main']);
    });
    after(async () => {
      await t.close();
      g.cleanup();
    });

    it('the scope table has an entry for every /api/v1 route, and none for a route that does not exist', () => {
      const missing = unmappedRoutes(t.app);
      assert.deepEqual(missing, [], `routes without an entry in src/http/route-scopes.ts:\n  ${missing.join('\n  ')}`);
      const keys = routeKeysOf(t.app);
      const stale = Object.keys(ROUTE_SCOPES).filter((k) => !keys.has(k));
      assert.deepEqual(stale, [], `entries in src/http/route-scopes.ts without a route:\n  ${stale.join('\n  ')}`);
    });

    it('create, read and list scopes and repos; bad values are 400 and create nothing', async () => {
      const created = await token(alice.token, { scopes: ['write:repo', 'read:user', 'read:user'], repos: [repos.a.uuid] });
      assert.deepEqual(created.scopes, ['read:user', 'write:repo']);
      assert.deepEqual(created.repos, [repos.a.uuid]);
      const got = await t.req('GET', `/api/v1/api-tokens/${created.uuid}`, { token: alice.token });
      assert.equal(got.status, 200);
      assert.deepEqual([got.body.scopes, got.body.repos], [['read:user', 'write:repo'], [repos.a.uuid]]);
      const self = await t.req('GET', '/api/v1/api-tokens/self', { token: created.token });
      assert.equal(self.status, 200);
      assert.deepEqual(self.body.scopes, ['read:user', 'write:repo']);
      const list = await t.req('GET', '/api/v1/api-tokens?name=scoped', { token: alice.token });
      assert.ok(list.body.results.some((r: { uuid: string; scopes: unknown }) => r.uuid === created.uuid));
      const plain = await token(alice.token, {});
      assert.equal(plain.scopes, null);
      assert.equal(plain.repos, null);

      const bob = await t.user(`bob${dialect}`);
      const before = await eventCount();
      for (const body of [
        { scopes: ['read:everything'] },
        { scopes: 'read:repo' },
        { scopes: [1] },
        { repos: ['not-a-uuid'] },
        { repos: repos.a.uuid },
        { scopes: ['read:repo'], extra: 1 },
      ]) {
        const res = await t.req('POST', '/api/v1/api-tokens', { token: alice.token, body: { name: 'bad', ...body } });
        assert.equal(res.status, 400, JSON.stringify(body));
        assert.ok(isErrorBody(res.body, 'invalid_request'));
      }
      // a repo the creator cannot read: 404, as if it did not exist
      const res = await t.req('POST', '/api/v1/api-tokens', { token: bob.token, body: { name: 'x', repos: [repos.a.uuid] } });
      assert.equal(res.status, 404);
      assert.ok(isErrorBody(res.body, 'not_found'));
      const unknown = await t.req('POST', '/api/v1/api-tokens', {
        token: alice.token,
        body: { name: 'x', repos: [randomUUID()] },
      });
      assert.equal(unknown.status, 404);
      assert.equal(await eventCount(), before);
      const bobs = await t.req('GET', '/api/v1/api-tokens', { token: bob.token });
      assert.equal(bobs.body.results.length, 1);
    });

    it('a token never creates a token that reaches further than itself', async () => {
      const scoped = await token(alice.token, { scopes: ['read:repo', 'write:user'], repos: [repos.a.uuid] });
      const before = await eventCount();
      for (const body of [{ scopes: ['write:repo'] }, { scopes: null }, { repos: null }, { scopes: ['admin'] }]) {
        const res = await t.req('POST', '/api/v1/api-tokens', { token: scoped.token, body: { name: 'wider', ...body } });
        assert.equal(res.status, 403, JSON.stringify(body));
        assert.ok(isErrorBody(res.body, 'forbidden'));
      }
      const other = await t.req('POST', '/api/v1/api-tokens', {
        token: scoped.token,
        body: { name: 'x', repos: [repos.b.uuid] },
      });
      assert.equal(other.status, 404);
      assert.equal(await eventCount(), before);
      // omitted: the caller's own restriction is copied
      const copy = await token(scoped.token, {});
      assert.deepEqual([copy.scopes, copy.repos], [['write:user', 'read:repo'], [repos.a.uuid]]);
      const narrower = await token(scoped.token, { scopes: ['read:repo'] });
      assert.deepEqual(narrower.scopes, ['read:repo']);
    });

    it('a restricted token sets no password and adds no SSH key (each would give the whole account), changing nothing', async () => {
      const key = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBh7rhDJbW0ISGqAV6L2jgTYvlMNt5plCDeDjuD9Ym0k t@laptop';
      const restricted = [
        await token(alice.token, { scopes: ['write:user'] }),
        await token(alice.token, { repos: [repos.a.uuid] }),
        await token(alice.token, { scopes: ['write:user', 'read:repo'], repos: [repos.a.uuid] }),
      ];
      const before = await eventCount();
      for (const r of restricted) {
        const pw = await t.req('PUT', `/api/v1/users/${alice.username}`, {
          token: r.token,
          body: { password: 'a-new-password-1' },
        });
        assert.equal(pw.status, 403, pw.text);
        assert.ok(isErrorBody(pw.body, 'forbidden'));
        assert.match(pw.body.detail, /Setting a password needs a token without scopes or repos/);
        const k = await t.req('POST', '/api/v1/user/keys', { token: r.token, body: { title: 'laptop', key } });
        assert.equal(k.status, 403, k.text);
        assert.ok(isErrorBody(k.body, 'forbidden'));
        assert.match(k.body.detail, /Adding an SSH key needs a token without scopes or repos/);
        // what such a token may still change on its own account
        const name = await t.req('PUT', `/api/v1/users/${alice.username}`, {
          token: r.token,
          body: { display_name: 'Alice' },
        });
        assert.equal(name.status, 200, name.text);
      }
      const login = await t.req('POST', '/api/v1/auth/login', {
        body: { username: alice.username, password: 'a-new-password-1', token_name: 'x' },
      });
      assert.equal(login.status, 401, 'no password was set');
      const keys = await t.req('GET', '/api/v1/user/keys', { token: alice.token });
      assert.equal(keys.body.length ?? keys.body.results?.length, 0, 'no key was added');
      assert.equal(await eventCount(), before + restricted.length, 'only the display_name updates emitted');
      // an unrestricted token may do both
      const pw = await t.req('PUT', `/api/v1/users/${alice.username}`, {
        token: alice.token,
        body: { password: 'a-new-password-1' },
      });
      assert.equal(pw.status, 200, pw.text);
      const k = await t.req('POST', '/api/v1/user/keys', { token: alice.token, body: { title: 'laptop', key } });
      assert.equal(k.status, 201, k.text);
      assert.equal((await t.req('DELETE', `/api/v1/user/keys/${k.body.uuid}`, { token: alice.token })).status, 204);
    });

    it('a read-only token is refused with 403 insufficient_scope on every write route, before any lookup, changing nothing', async () => {
      const reader = await token(alice.token, { scopes: ['read:user', 'read:repo', 'read:team', 'read:events'] });
      assert.equal((await t.req('GET', '/api/v1/user', { token: reader.token })).status, 200);
      assert.equal((await t.req('GET', repos.c.api, { token: reader.token })).status, 200);
      assert.equal((await t.req('GET', `/api/v1/teams/${team.slug}/members`, { token: reader.token })).status, 200);
      const doc = (await t.req('GET', '/api/v1/openapi.json')).body;
      const values: Record<string, string> = {
        team_slug: team.slug,
        username: alice.username,
        repo_slug: 'a',
        number: '1',
        reply_number: '1',
        id: '1',
        fork_team_slug: team.slug,
        fork_username: alice.username,
      };
      const before = await eventCount();
      let tried = 0;
      for (const [path, item] of Object.entries<any>(doc.paths)) {
        for (const [method, op] of Object.entries<any>(item)) {
          const needed: string | undefined = op.security?.[0]?.bearer?.[0];
          if (!needed || needed.startsWith('read:')) continue;
          const url = `/api/v1${path.replace(/\{(\w+)\}/g, (_m: string, name: string) => values[name] ?? randomUUID())}`;
          const res = await t.req(method.toUpperCase(), url, { token: reader.token, body: {} });
          assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
          assert.ok(isErrorBody(res.body, 'insufficient_scope'), `${method} ${path}`);
          assert.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="${needed}"`);
          tried++;
        }
      }
      assert.ok(tried > 60, `tried ${tried} write routes`);
      assert.equal(await eventCount(), before);
      // a token with no scope at all reaches only public routes
      const none = await token(alice.token, { scopes: [] });
      const res = await t.req('GET', '/api/v1/user', { token: none.token });
      assert.equal(res.status, 403);
      assert.equal(res.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="read:user"');
      assert.equal((await t.req('GET', '/api/v1/check-username?username=zed', { token: none.token })).status, 200);
      // write:X implies read:X
      const writer = await token(alice.token, { scopes: ['write:repo'] });
      assert.equal((await t.req('GET', repos.a.api, { token: writer.token })).status, 200);
      assert.equal((await t.req('GET', `/api/v1/teams/${team.slug}`, { token: writer.token })).status, 403);
    });

    it('git over HTTP: fetch needs read:repo, push write:repo', async () => {
      const reader = await token(alice.token, { scopes: ['read:repo'] });
      const teamOnly = await token(alice.token, { scopes: ['read:team'] });
      await g.run(['clone', '-q', g.url(repos.a.git, reader.token), g.tmp('scoped-clone')]);
      const push = await g.run(['-C', g.tmp('scoped-clone'), 'push', g.url(repos.a.git, reader.token), 'HEAD:refs/heads/other'], {
        ok: false,
      });
      assert.notEqual(push.code, 0);
      const basic = (tok: string) => ({ authorization: `Basic ${Buffer.from(`x:${tok}`).toString('base64')}` });
      const refused = await fetch(new URL(`${repos.a.git}/info/refs?service=git-receive-pack`, g.base), {
        headers: basic(reader.token),
      });
      assert.equal(refused.status, 403);
      assert.equal(refused.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="write:repo"');
      // git over HTTP refuses in text/plain, which the git client prints as `remote: …` (README "Git")
      assert.match(refused.headers.get('content-type') ?? '', /^text\/plain/);
      assert.match(await refused.text(), /lacks the scope write:repo/);
      const noRead = await fetch(new URL(`${repos.a.git}/info/refs?service=git-upload-pack`, g.base), {
        headers: basic(teamOnly.token),
      });
      assert.equal(noRead.status, 403);
      await noRead.body?.cancel();
      const branches = await t.req('GET', `${repos.a.api}/branches`, { token: alice.token });
      assert.deepEqual(
        branches.body.results.map((b: { name: string }) => b.name),
        ['main'],
      );
    });

    it('a repo-restricted token sees only its repos: gets, lists, events, git; it creates no repo', async () => {
      const only = await token(alice.token, { repos: [repos.a.uuid] });
      assert.equal((await t.req('GET', repos.a.api, { token: only.token })).status, 200);
      for (const r of [repos.b, repos.c]) {
        const res = await t.req('GET', r.api, { token: only.token });
        assert.equal(res.status, 404, r.api);
        assert.ok(isErrorBody(res.body, 'not_found'));
        assert.equal((await t.req('GET', `${r.api}/pulls`, { token: only.token })).status, 404);
        assert.equal((await t.req('PUT', r.api, { token: only.token, body: { description: 'x' } })).status, 404);
      }
      const mine = await t.req('GET', `/api/v1/users/${alice.username}/repos`, { token: only.token });
      assert.deepEqual(
        mine.body.results.map((r: { slug: string }) => r.slug),
        ['a'],
      );
      const teamRepos = await t.req('GET', `/api/v1/teams/${team.slug}/repos`, { token: only.token });
      assert.deepEqual(teamRepos.body.results, []);
      assert.equal((await t.req('GET', `/api/v1/teams/${team.slug}`, { token: only.token })).status, 200);

      // events: the repo scopes of other repos are 404; their events leave the owner's feeds
      assert.equal((await t.req('GET', `/api/v1/events?scope=repo:${repos.b.uuid}`, { token: only.token })).status, 404);
      assert.equal((await t.req('GET', `/api/v1/events?scope=repo:${repos.a.uuid}`, { token: only.token })).status, 200);
      const feed = await t.req('GET', `/api/v1/events?scope=user:${alice.uuid}&per_page=100`, { token: only.token });
      assert.equal(feed.status, 200);
      const repoUuids = (body: any) =>
        new Set(body.results.filter((e: any) => typeof e.payload.repo_uuid === 'string').map((e: any) => e.payload.repo_uuid));
      assert.deepEqual([...repoUuids(feed.body)], [repos.a.uuid]);
      const full = await t.req('GET', `/api/v1/events?scope=user:${alice.uuid}&per_page=100`, { token: alice.token });
      assert.ok(repoUuids(full.body).has(repos.b.uuid));
      const teamFeed = await t.req('GET', `/api/v1/teams/${team.slug}/activity`, { token: only.token });
      assert.equal(teamFeed.status, 200);
      assert.equal(repoUuids(teamFeed.body).size, 0);
      const activity = await t.req('GET', `/api/v1/users/${alice.username}/activity?per_page=100`, { token: only.token });
      assert.deepEqual([...repoUuids(activity.body)], [repos.a.uuid]);

      // git: only its repo
      await g.run(['clone', '-q', g.url(repos.a.git, only.token), g.tmp('only-a')]);
      const b = await g.run(['clone', '-q', g.url(repos.b.git, only.token), g.tmp('only-b')], { ok: false });
      assert.notEqual(b.code, 0);
      const basic = { authorization: `Basic ${Buffer.from(`x:${only.token}`).toString('base64')}` };
      const refs = await fetch(new URL(`${repos.c.git}/info/refs?service=git-upload-pack`, g.base), { headers: basic });
      assert.equal(refs.status, 404);
      await refs.body?.cancel();

      // creating a repo or a fork: outside its repos
      const before = await eventCount();
      const create = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: only.token,
        body: { name: 'd', slug: 'd' },
      });
      assert.equal(create.status, 403);
      assert.ok(isErrorBody(create.body, 'forbidden'));
      assert.equal((await t.req('POST', `${repos.a.api}/forks?team=${team.slug}`, { token: only.token })).status, 403);
      assert.equal(await eventCount(), before);
      // nor does it learn which slugs repos outside its list hold: the slug check is for creating
      for (const path of [`/api/v1/users/${alice.username}`, `/api/v1/teams/${team.slug}`]) {
        for (const slug of ['b', 'c', 'fresh']) {
          const check = await t.req('GET', `${path}/check-repo-slug?slug=${slug}`, { token: only.token });
          assert.equal(check.status, 403, `${path} ${slug}: ${check.text}`);
          assert.ok(isErrorBody(check.body, 'forbidden'));
        }
      }
      const unrestricted = await t.req('GET', `/api/v1/users/${alice.username}/check-repo-slug?slug=b`, { token: alice.token });
      assert.deepEqual([unrestricted.status, unrestricted.body.available], [409, false]);
    });

    it('a staff token restricted to repos is restricted too', async () => {
      const staffOnly = await token(t.adminToken, { repos: [repos.a.uuid] });
      assert.equal((await t.req('GET', repos.a.api, { token: staffOnly.token })).status, 200);
      assert.equal((await t.req('GET', repos.b.api, { token: staffOnly.token })).status, 404);
      const feed = await t.req('GET', `/api/v1/events?scope=team:${team.uuid}&per_page=100`, { token: staffOnly.token });
      assert.equal(feed.status, 200);
      assert.ok(feed.body.results.every((e: any) => e.payload.repo_uuid === undefined || e.payload.repo_uuid === repos.a.uuid));
      // and a seeded repo it was never given stays invisible
      const seeded = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'seeded');
      assert.equal(
        (await t.req('GET', `/api/v1/teams/${team.slug}/repos/${seeded.slug}`, { token: staffOnly.token })).status,
        404,
      );
      // admin routes: need the admin scope
      const noAdmin = await token(t.adminToken, { scopes: ['read:user'] });
      const settings = await t.req('GET', '/api/v1/site-settings', { token: noAdmin.token });
      assert.equal(settings.status, 403);
      assert.equal(settings.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="admin"');
      const admin = await token(t.adminToken, { scopes: ['admin'] });
      assert.equal((await t.req('GET', '/api/v1/site-settings', { token: admin.token })).status, 200);
      // admin on a non-staff user's token does nothing
      const fake = await token(alice.token, { scopes: ['admin'] });
      assert.equal((await t.req('GET', '/api/v1/site-settings', { token: fake.token })).status, 403);
    });
  });
}
