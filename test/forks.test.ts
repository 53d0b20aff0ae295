import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import type { Person } from './common.ts';

const FORK_FIELDS = ['uuid', 'source_repo_uuid', 'source_full_name', 'repo', 'created_at', 'created_by_username'].sort();

for (const dialect of DIALECTS) {
  describe(`forks (${dialect})`, () => {
    let t: TestApp;
    let maint: Person;
    let member: Person;
    let outsider: Person;
    let other: Person;
    let team: { uuid: string; slug: string };
    let target: { uuid: string; slug: string };
    let source: { uuid: string; slug: string };
    const src = '/api/v1/teams/src/repos/tool';

    const namespaceRepos = async (path: string) => JSON.stringify((await t.req('GET', `${path}?per_page=100`)).body);

    before(async () => {
      t = await startApp(dialect);
      maint = await t.user('max');
      member = await t.user('mel');
      outsider = await t.user('oscar');
      other = await t.user('olive');
      team = await seedTeam(t, 'src', [
        { uuid: maint.uuid, role: 'maintainer' },
        { uuid: member.uuid, role: 'member' },
      ]);
      target = await seedTeam(t, 'dest', [
        { uuid: maint.uuid, role: 'maintainer' },
        { uuid: member.uuid, role: 'member' },
      ]);
      source = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'tool', { visibility: 'private' });
      const put = await t.req('PUT', src, {
        body: {
          name: 'The Tool',
          description: 'Does things',
          about: '# Tool',
          default_branch: 'trunk',
          public_repo_pull_policy: 'owner',
        },
      });
      assert.equal(put.status, 200);
    });
    after(() => t.close());

    it("forks into the caller's namespace, copying the documented fields, and emits fork-created", async () => {
      const res = await t.req('POST', `${src}/forks`, { token: member.token });
      assert.equal(res.status, 201, res.text);
      const fork = res.body;
      assert.deepEqual(Object.keys(fork).sort(), FORK_FIELDS);
      assert.equal(fork.source_repo_uuid, source.uuid);
      assert.equal(fork.source_full_name, 'src/tool');
      assert.equal(fork.created_by_username, 'mel');
      const repo = fork.repo;
      assert.equal(repo.fork_of_uuid, source.uuid);
      assert.equal(repo.name, 'The Tool');
      assert.equal(repo.slug, 'tool');
      assert.equal(repo.description, 'Does things');
      assert.equal(repo.about, '# Tool');
      assert.equal(repo.visibility, 'private');
      assert.equal(repo.default_branch, 'trunk');
      assert.equal(repo.public_repo_pull_policy, 'any', 'the policy is not copied');
      assert.equal(repo.is_archived, false);
      assert.deepEqual(repo.owner, { kind: 'user', slug_or_username: 'mel', uuid: member.uuid });
      assert.equal(repo.full_name, 'mel/tool');
      assert.equal(repo.clone_url, `${t.deps.config.publicUrl}/git/users/mel/tool.git`);
      assert.equal(repo.created_by_username, 'mel');
      assert.equal(fork.created_at, repo.created_at);

      const got = await t.req('GET', '/api/v1/users/mel/repos/tool', { token: member.token });
      assert.deepEqual(got.body, repo);

      for (const scope of [`repo:${source.uuid}`, `repo:${repo.uuid}`, `user:${member.uuid}`]) {
        const events = await t.req('GET', `/api/v1/events?scope=${scope}&kind=fork-created`, { token: member.token });
        assert.equal(events.status, 200, scope);
        assert.equal(events.body.results.length, 1, scope);
        const e = events.body.results[0];
        assert.deepEqual(e.payload, {
          fork_uuid: fork.uuid,
          repo_uuid: repo.uuid,
          full_name: 'mel/tool',
          source_repo_uuid: source.uuid,
          source_full_name: 'src/tool',
        });
        assert.deepEqual(e.actor, { uuid: member.uuid, username: 'mel' });
        // the new repo and its owner, and the source repo
        assert.deepEqual([...e.scopes].sort(), [`repo:${repo.uuid}`, `user:${member.uuid}`, `repo:${source.uuid}`].sort());
      }
    });

    it('reads the fork record back: /forks/{uuid}, {repo}/fork, {repo}/forks, forks/user/{u}', async () => {
      const list = await t.req('GET', `${src}/forks`, { token: member.token });
      assert.equal(list.status, 200);
      assert.equal(list.body.results.length, 1);
      const fork = list.body.results[0];
      assert.deepEqual((await t.req('GET', `/api/v1/forks/${fork.uuid}`, { token: member.token })).body, fork);
      assert.deepEqual((await t.req('GET', '/api/v1/users/mel/repos/tool/fork', { token: member.token })).body, fork);
      assert.deepEqual((await t.req('GET', `${src}/forks/user/mel`, { token: member.token })).body, fork);
      assert.deepEqual((await t.req('GET', `${src}/forks/user/MEL`)).body, fork);
    });

    it('forks into a team with ?team= for its maintainers; 403 for members, 404 for outsiders and unknown teams', async () => {
      const before = await namespaceRepos('/api/v1/teams/dest/repos');
      const asMember = await t.req('POST', `${src}/forks?team=dest`, { token: member.token });
      assert.equal(asMember.status, 403);
      assert.ok(isErrorBody(asMember.body, 'forbidden'));
      const pub = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'pubtool', { visibility: 'public' });
      const asOutsider = await t.req('POST', '/api/v1/teams/src/repos/pubtool/forks?team=dest', { token: outsider.token });
      assert.equal(asOutsider.status, 404);
      assert.ok(isErrorBody(asOutsider.body, 'not_found'));
      const unknown = await t.req('POST', `${src}/forks?team=nowhere`, { token: maint.token });
      assert.equal(unknown.status, 404);
      const empty = await t.req('POST', `${src}/forks?team=`, { token: maint.token });
      assert.equal(empty.status, 400);
      assert.equal(await namespaceRepos('/api/v1/teams/dest/repos'), before);

      const res = await t.req('POST', `${src}/forks?team=DEST`, { token: maint.token });
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(res.body.repo.owner, { kind: 'team', slug_or_username: 'dest', uuid: target.uuid });
      assert.equal(res.body.repo.full_name, 'dest/tool');
      assert.equal(res.body.repo.clone_url, `${t.deps.config.publicUrl}/git/teams/dest/tool.git`);
      const events = await t.req('GET', `/api/v1/events?scope=team:${target.uuid}&kind=fork-created`, { token: maint.token });
      assert.equal(events.body.results.length, 1);

      assert.deepEqual((await t.req('GET', `${src}/forks/team/dest`, { token: member.token })).body, res.body);
      const staffFork = await t.req('POST', '/api/v1/teams/src/repos/pubtool/forks?team=dest');
      assert.equal(staffFork.status, 201, 'staff may fork into any team');
      assert.equal(staffFork.body.source_repo_uuid, pub.uuid);
    });

    it('refuses forks into an inactive team with 403 team_inactive', async () => {
      await seedTeam(t, 'frozen', [{ uuid: maint.uuid, role: 'maintainer' }], { is_active: false });
      const res = await t.req('POST', `${src}/forks?team=frozen`, { token: maint.token });
      assert.equal(res.status, 403);
      assert.ok(isErrorBody(res.body, 'team_inactive'));
      assert.deepEqual((await t.req('GET', '/api/v1/teams/frozen/repos')).body.results, []);
    });

    it('is 409 slug_taken when the namespace has the slug, and nothing is created', async () => {
      const before = await namespaceRepos('/api/v1/users/mel/repos');
      const forksBefore = JSON.stringify((await t.req('GET', `${src}/forks`)).body);
      const res = await t.req('POST', `${src}/forks`, { token: member.token });
      assert.equal(res.status, 409);
      assert.ok(isErrorBody(res.body, 'slug_taken'), res.text);
      assert.equal(await namespaceRepos('/api/v1/users/mel/repos'), before);
      assert.equal(JSON.stringify((await t.req('GET', `${src}/forks`)).body), forksBefore);
      const again = await t.req('POST', `${src}/forks?team=dest`, { token: maint.token });
      assert.equal(again.status, 409);
      assert.ok(isErrorBody(again.body, 'slug_taken'));
    });

    it('needs read access: 404 for outsiders of a private repo, 201 for anyone on a public one, 401 anonymous', async () => {
      const before = await namespaceRepos('/api/v1/users/oscar/repos');
      const hidden = await t.req('POST', `${src}/forks`, { token: outsider.token });
      assert.equal(hidden.status, 404);
      assert.ok(isErrorBody(hidden.body, 'not_found'));
      assert.equal(await namespaceRepos('/api/v1/users/oscar/repos'), before);
      assert.equal((await t.req('POST', `${src}/forks`, { token: null })).status, 401);
      assert.equal((await t.req('POST', '/api/v1/teams/src/repos/nope/forks', { token: maint.token })).status, 404);
      const pub = await t.req('POST', '/api/v1/teams/src/repos/pubtool/forks', { token: outsider.token });
      assert.equal(pub.status, 201);
      assert.equal(pub.body.repo.visibility, 'public');
      assert.equal(pub.body.repo.full_name, 'oscar/pubtool');
    });

    it('lists only the forks the caller can read, oldest first, paged', async () => {
      // olive forks the public repo too, then makes her fork private
      const olive = await t.req('POST', '/api/v1/teams/src/repos/pubtool/forks', { token: other.token });
      assert.equal(olive.status, 201);
      await t.req('PUT', '/api/v1/users/olive/repos/pubtool', { token: other.token, body: { visibility: 'private' } });
      const names = async (token: string) =>
        (await t.req('GET', '/api/v1/teams/src/repos/pubtool/forks', { token })).body.results.map(
          (f: { repo: { full_name: string } }) => f.repo.full_name,
        );
      assert.deepEqual(await names(t.adminToken), ['dest/pubtool', 'oscar/pubtool', 'olive/pubtool']);
      assert.deepEqual(await names(other.token), ['dest/pubtool', 'oscar/pubtool', 'olive/pubtool']);
      assert.deepEqual(await names(outsider.token), ['dest/pubtool', 'oscar/pubtool']);
      assert.deepEqual(await names(maint.token), ['dest/pubtool', 'oscar/pubtool']);

      const page1 = await t.req('GET', '/api/v1/teams/src/repos/pubtool/forks?per_page=2');
      assert.equal(page1.body.results.length, 2);
      assert.equal(page1.body.next, '/api/v1/teams/src/repos/pubtool/forks?per_page=2&page=2');
      const page2 = await t.req('GET', page1.body.next);
      assert.deepEqual(
        page2.body.results.map((f: { repo: { full_name: string } }) => f.repo.full_name),
        ['olive/pubtool'],
      );
      assert.equal(page2.body.next, null);

      // a fork the caller cannot read is 404 through every route
      const oliveFork = olive.body.uuid;
      assert.equal((await t.req('GET', `/api/v1/forks/${oliveFork}`, { token: outsider.token })).status, 404);
      assert.equal(
        (await t.req('GET', '/api/v1/teams/src/repos/pubtool/forks/user/olive', { token: outsider.token })).status,
        404,
      );
      assert.equal((await t.req('GET', '/api/v1/users/olive/repos/pubtool/fork', { token: outsider.token })).status, 404);
      assert.equal((await t.req('GET', `/api/v1/forks/${oliveFork}`, { token: other.token })).status, 200);
    });

    it('answers 404 for unknown fork uuids, non-forks, namespaces without a fork, unknown namespaces', async () => {
      for (const path of [
        '/api/v1/forks/00000000-0000-4000-8000-000000000000',
        '/api/v1/forks/not-a-uuid',
        `${src}/fork`,
        `${src}/forks/user/oscar`,
        `${src}/forks/user/nobody-here`,
        `${src}/forks/team/src`,
        `${src}/forks/team/no-team`,
      ]) {
        const res = await t.req('GET', path);
        assert.equal(res.status, 404, path);
        assert.ok(isErrorBody(res.body, 'not_found'));
      }
      assert.equal((await t.req('GET', `${src}/forks`, { token: outsider.token })).status, 404);
      assert.equal((await t.req('GET', `${src}/forks`, { token: null })).status, 401);
    });

    it('works in the user form: forking a user repo into a team and reading it back', async () => {
      const u = await t.user('uma');
      await seedRepo(t, { kind: 'user', uuid: u.uuid }, 'lib', { visibility: 'public' });
      const res = await t.req('POST', '/api/v1/users/uma/repos/lib/forks?team=dest', { token: maint.token });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.source_full_name, 'uma/lib');
      assert.deepEqual((await t.req('GET', '/api/v1/users/uma/repos/lib/forks/team/dest', { token: u.token })).body, res.body);
      assert.deepEqual((await t.req('GET', '/api/v1/teams/dest/repos/lib/fork', { token: maint.token })).body, res.body);
      const list = await t.req('GET', '/api/v1/users/uma/repos/lib/forks', { token: u.token });
      assert.deepEqual(list.body.results, [res.body]);
    });

    it('forks archived sources (the fork is not archived) and forks of forks', async () => {
      const u = await t.user('arch');
      await seedRepo(t, { kind: 'user', uuid: u.uuid }, 'old', { visibility: 'public', is_archived: true });
      const res = await t.req('POST', '/api/v1/users/arch/repos/old/forks', { token: outsider.token });
      assert.equal(res.status, 201);
      assert.equal(res.body.repo.is_archived, false);
      const second = await t.req('POST', '/api/v1/users/oscar/repos/old/forks', { token: other.token });
      assert.equal(second.status, 201);
      assert.equal(second.body.source_full_name, 'oscar/old');
      assert.equal(second.body.repo.fork_of_uuid, res.body.repo.uuid);
    });

    it('never shows a private source through a fork record to someone who cannot read the source', async () => {
      const hidden = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'hushed', { visibility: 'private' });
      const res = await t.req('POST', '/api/v1/teams/src/repos/hushed/forks', { token: member.token });
      assert.equal(res.status, 201, res.text);
      const made = await t.req('PUT', '/api/v1/users/mel/repos/hushed', { token: member.token, body: { visibility: 'public' } });
      assert.equal(made.status, 200, made.text);
      // the fork repo itself is public now
      assert.equal((await t.req('GET', '/api/v1/users/mel/repos/hushed', { token: outsider.token })).status, 200);
      // but its fork record names the private source: 404 to anyone who cannot read the source
      for (const path of [`/api/v1/forks/${res.body.uuid}`, '/api/v1/users/mel/repos/hushed/fork']) {
        const denied = await t.req('GET', path, { token: outsider.token });
        assert.equal(denied.status, 404, `${path}: ${denied.text}`);
        assert.ok(isErrorBody(denied.body, 'not_found'));
        assert.doesNotMatch(denied.text, /src\/hushed/);
        const allowed = await t.req('GET', path, { token: member.token });
        assert.equal(allowed.status, 200, path);
        assert.equal(allowed.body.source_repo_uuid, hidden.uuid);
        assert.equal((await t.req('GET', path)).status, 200, `${path} (staff)`);
      }
      for (const path of ['/api/v1/teams/src/repos/hushed/forks', '/api/v1/teams/src/repos/hushed/forks/user/mel']) {
        assert.equal((await t.req('GET', path, { token: outsider.token })).status, 404, path);
      }
    });

    it("treats a deactivated user's repos as absent everywhere for non-staff: lists, fork lookups, event scopes", async () => {
      const ghost = await t.user('ghost');
      const own = await seedRepo(t, { kind: 'user', uuid: ghost.uuid }, 'haunt', { visibility: 'public' });
      const fork = await t.req('POST', '/api/v1/teams/src/repos/pubtool/forks', { token: ghost.token });
      assert.equal(fork.status, 201, fork.text);
      const fullNames = async (token: string) =>
        (await t.req('GET', '/api/v1/teams/src/repos/pubtool/forks?per_page=100', { token })).body.results.map(
          (f: { repo: { full_name: string } }) => f.repo.full_name,
        );
      assert.ok((await fullNames(outsider.token)).includes('ghost/pubtool'));
      assert.equal((await t.req('PUT', '/api/v1/users/ghost', { body: { is_active: false } })).status, 200);

      assert.equal((await t.req('GET', '/api/v1/users/ghost/repos/haunt', { token: outsider.token })).status, 404);
      assert.ok(!(await fullNames(outsider.token)).includes('ghost/pubtool'));
      for (const path of [
        '/api/v1/teams/src/repos/pubtool/forks/user/ghost',
        `/api/v1/forks/${fork.body.uuid}`,
        `/api/v1/events?scope=repo:${own.uuid}`,
        `/api/v1/events?scope=repo:${fork.body.repo.uuid}`,
      ]) {
        const res = await t.req('GET', path, { token: outsider.token });
        assert.equal(res.status, 404, `${path}: ${res.text}`);
        assert.ok(isErrorBody(res.body, 'not_found'));
      }
      // staff still see everything
      assert.ok((await fullNames(t.adminToken)).includes('ghost/pubtool'));
      assert.equal((await t.req('GET', '/api/v1/teams/src/repos/pubtool/forks/user/ghost')).status, 200);
      assert.equal((await t.req('GET', `/api/v1/events?scope=repo:${own.uuid}`)).status, 200);
      assert.equal((await t.req('PUT', '/api/v1/users/ghost', { body: { is_active: true } })).status, 200);
      assert.ok((await fullNames(outsider.token)).includes('ghost/pubtool'));
    });

    it('keeps forks as standalone repos when their source is deleted', async () => {
      const u = await t.user('dora');
      await seedRepo(t, { kind: 'user', uuid: u.uuid }, 'base', { visibility: 'public' });
      await sleep(2);
      const f1 = await t.req('POST', '/api/v1/users/dora/repos/base/forks', { token: outsider.token });
      const f2 = await t.req('POST', '/api/v1/users/dora/repos/base/forks', { token: other.token });
      assert.equal(f1.status, 201);
      assert.equal(f2.status, 201);
      const del = await t.req('DELETE', '/api/v1/users/dora/repos/base', { token: u.token });
      assert.equal(del.status, 204);
      for (const [who, path] of [
        [outsider, '/api/v1/users/oscar/repos/base'],
        [other, '/api/v1/users/olive/repos/base'],
      ] as const) {
        const repo = await t.req('GET', path, { token: who.token });
        assert.equal(repo.status, 200);
        assert.equal(repo.body.fork_of_uuid, null);
        assert.equal((await t.req('GET', `${path}/fork`, { token: who.token })).status, 404);
        const events = await t.req('GET', `/api/v1/events?scope=repo:${repo.body.uuid}&kind=repo-updated`, { token: who.token });
        assert.equal(events.body.results.length, 1);
        assert.equal(events.body.results[0].payload.action, 'fork_source_deleted');
      }
      assert.equal((await t.req('GET', `/api/v1/forks/${f1.body.uuid}`)).status, 404);
      // deleting a fork removes its own fork record and leaves the source's list
      const g = await t.req('POST', '/api/v1/teams/src/repos/pubtool/forks', { token: u.token });
      assert.equal(g.status, 201);
      assert.equal((await t.req('DELETE', '/api/v1/users/dora/repos/pubtool', { token: u.token })).status, 204);
      assert.equal((await t.req('GET', `/api/v1/forks/${g.body.uuid}`)).status, 404);
      const names = (await t.req('GET', '/api/v1/teams/src/repos/pubtool/forks')).body.results.map(
        (f: { repo: { full_name: string } }) => f.repo.full_name,
      );
      assert.ok(!names.includes('dora/pubtool'));
    });
  });
}
