import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { branchMatchesPattern, isValidBranchName, isValidBranchPattern } from '../src/git/refname.ts';
import { seedRepo, seedTeam } from './fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';
import type { Person } from './common.ts';

describe('branch name helpers', () => {
  it('follows git check-ref-format --branch', () => {
    for (const ok of ['main', 'feature/x', 'release/1.0', 'héllo', '@a', 'a@', 'x/HEAD', 'foo.lock.x', 'v1.2.3']) {
      assert.equal(isValidBranchName(ok), true, ok);
    }
    for (const bad of [
      '',
      '-x',
      'HEAD',
      '@',
      'a@{b',
      'a..b',
      '.a',
      'a/.b',
      'a.lock',
      'a/b.lock',
      'a.lock/b',
      'a/',
      '/a',
      'a//b',
      'a.',
      'a b',
      'a~',
      'a^',
      'a:b',
      'a?',
      'a*',
      'a[',
      'a\\b',
      'a\tb',
      'a\u007fb',
      'x'.repeat(256),
    ]) {
      assert.equal(isValidBranchName(bad), false, JSON.stringify(bad));
    }
  });

  it('accepts glob patterns and matches them fnmatch-style', () => {
    for (const ok of ['release/*', '*', 'hotfix-?', 'feature/**', 'main']) assert.equal(isValidBranchPattern(ok), true, ok);
    for (const bad of ['', ' main', 'a b', 'rel[ea]se', '.*', 'a..*', '*.lock', 'x'.repeat(256)]) {
      assert.equal(isValidBranchPattern(bad), false, JSON.stringify(bad));
    }
    assert.equal(branchMatchesPattern('release/*', 'release/1.0'), true);
    assert.equal(branchMatchesPattern('release/*', 'release/1/2'), false);
    assert.equal(branchMatchesPattern('release/**', 'release/1/2'), true);
    assert.equal(branchMatchesPattern('hotfix-?', 'hotfix-1'), true);
    assert.equal(branchMatchesPattern('hotfix-?', 'hotfix-12'), false);
    assert.equal(branchMatchesPattern('v1.*', 'v1x2'), false, 'dots are literal');
    assert.equal(branchMatchesPattern('main', 'main'), true);
    assert.equal(branchMatchesPattern('main', 'mainline'), false);
  });
});

for (const dialect of DIALECTS) {
  describe(`protections (${dialect})`, () => {
    let t: TestApp;
    let maint: Person;
    let member: Person;
    let reader: Person;
    let outsider: Person;
    let team: { uuid: string; slug: string };
    let repo: { uuid: string; slug: string };
    const base = '/api/v1/teams/acme/repos/app/protections';

    const snapshot = async (path = base) => {
      const list = await t.req('GET', `${path}?per_page=100`);
      const approvers = [];
      for (const p of list.body.results) approvers.push((await t.req('GET', `${path}/${p.uuid}/approvers?per_page=100`)).body);
      return JSON.stringify([list.body, approvers]);
    };

    before(async () => {
      t = await startApp(dialect);
      maint = await t.user('max');
      member = await t.user('mel');
      reader = await t.user('rita');
      outsider = await t.user('oscar');
      team = await seedTeam(t, 'acme', [
        { uuid: maint.uuid, role: 'maintainer' },
        { uuid: member.uuid, role: 'member' },
        { uuid: reader.uuid, role: 'reader' },
      ]);
      repo = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'app');
    });
    after(() => t.close());

    it('creates, reads, updates and deletes a protection', async () => {
      const created = await t.req('POST', base, { token: maint.token, body: { branch: 'main' } });
      assert.equal(created.status, 201, created.text);
      const p = created.body;
      assert.deepEqual(Object.keys(p).sort(), [
        'branch',
        'created_at',
        'require_conversation_resolution',
        'required_approvals',
        'required_status_contexts',
        'updated_at',
        'uuid',
      ]);
      assert.equal(p.branch, 'main');
      assert.equal(p.required_approvals, 1);

      assert.deepEqual((await t.req('GET', `${base}/${p.uuid}`, { token: reader.token })).body, p);
      const list = await t.req('GET', base, { token: reader.token });
      assert.deepEqual(list.body, { results: [p], next: null, previous: null });

      const upd = await t.req('PUT', `${base}/${p.uuid}`, { token: maint.token, body: { required_approvals: 3 } });
      assert.equal(upd.status, 200);
      assert.equal(upd.body.branch, 'main');
      assert.equal(upd.body.required_approvals, 3);
      assert.equal(upd.body.created_at, p.created_at);
      const renamed = await t.req('PUT', `${base}/${p.uuid}`, { token: maint.token, body: { branch: 'release/*' } });
      assert.equal(renamed.body.branch, 'release/*');
      assert.equal(renamed.body.required_approvals, 3);
      const noop = await t.req('PUT', `${base}/${p.uuid}`, { token: maint.token, body: {} });
      assert.deepEqual(noop.body, renamed.body);

      const del = await t.req('DELETE', `${base}/${p.uuid}`, { token: maint.token });
      assert.equal(del.status, 204);
      assert.equal((await t.req('GET', `${base}/${p.uuid}`)).status, 404);
      assert.equal((await t.req('DELETE', `${base}/${p.uuid}`)).status, 404);
      assert.equal((await t.req('PUT', `${base}/${p.uuid}`, { body: {} })).status, 404);

      const events = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}`, { token: reader.token });
      assert.deepEqual(
        events.body.results.map((e: { kind: string; payload: { branch: string } }) => [e.kind, e.payload.branch]),
        [
          ['protection-created', 'main'],
          ['protection-updated', 'main'],
          ['protection-updated', 'release/*'],
          ['protection-deleted', 'release/*'],
        ],
      );
      for (const e of events.body.results) assert.deepEqual(e.scopes.sort(), [`repo:${repo.uuid}`, `team:${team.uuid}`].sort());
    });

    it('takes required_approvals on create and validates it', async () => {
      const res = await t.req('POST', base, { token: maint.token, body: { branch: 'two', required_approvals: 2 } });
      assert.equal(res.status, 201);
      assert.equal(res.body.required_approvals, 2);
      const before = await snapshot();
      for (const body of [
        { branch: 'x', required_approvals: -1 },
        { branch: 'x', required_approvals: 1.5 },
        { branch: 'x', required_approvals: '2' },
        { branch: 'x', required_approvals: null },
        { required_approvals: 1 },
        { branch: 'x', extra: true },
        { branch: 5 },
      ]) {
        const bad = await t.req('POST', base, { token: maint.token, body });
        assert.equal(bad.status, 400, JSON.stringify(body));
        assert.ok(isErrorBody(bad.body, 'invalid_request'));
      }
      const put = await t.req('PUT', `${base}/${res.body.uuid}`, { token: maint.token, body: { required_approvals: -1 } });
      assert.equal(put.status, 400);
      assert.equal(await snapshot(), before);
    });

    it('validates branch patterns: 400 for empty, too long, white space, control characters, bad ref syntax', async () => {
      const before = await snapshot();
      for (const branch of [
        '',
        ' ',
        'has space',
        'tab\there',
        'nl\nx',
        'ctl\u0001',
        'a'.repeat(256),
        'a..b',
        'x~1',
        'a:b',
        'rel[ea]se',
        '.hidden',
        'x.lock',
        '-x',
        'a//b',
        'HEAD',
      ]) {
        const res = await t.req('POST', base, { token: maint.token, body: { branch } });
        assert.equal(res.status, 400, JSON.stringify(branch));
        assert.ok(isErrorBody(res.body, 'invalid_request'));
      }
      assert.equal(await snapshot(), before);
      for (const branch of ['release/*', 'hotfix-?', 'feature/**', 'a'.repeat(255), 'v1.x']) {
        const res = await t.req('POST', base, { token: maint.token, body: { branch } });
        assert.equal(res.status, 201, `${branch}: ${res.text}`);
        assert.equal(res.body.branch, branch);
      }
      const some = (await t.req('GET', base)).body.results[0];
      const put = await t.req('PUT', `${base}/${some.uuid}`, { token: maint.token, body: { branch: 'bad name' } });
      assert.equal(put.status, 400);
    });

    it('is 409 conflict for a duplicate branch on create and update; other repos are independent', async () => {
      const a = await t.req('POST', base, { token: maint.token, body: { branch: 'stable' } });
      const b = await t.req('POST', base, { token: maint.token, body: { branch: 'next' } });
      assert.equal(a.status, 201);
      const before = await snapshot();
      const dup = await t.req('POST', base, { token: maint.token, body: { branch: 'stable', required_approvals: 4 } });
      assert.equal(dup.status, 409);
      assert.ok(isErrorBody(dup.body, 'conflict'), dup.text);
      const put = await t.req('PUT', `${base}/${b.body.uuid}`, {
        token: maint.token,
        body: { branch: 'stable', required_approvals: 5 },
      });
      assert.equal(put.status, 409);
      assert.ok(isErrorBody(put.body, 'conflict'));
      assert.equal(await snapshot(), before);
      // branch names are case-sensitive, as git's are
      assert.equal((await t.req('POST', base, { token: maint.token, body: { branch: 'Stable' } })).status, 201);
      await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'other');
      assert.equal(
        (await t.req('POST', '/api/v1/teams/acme/repos/other/protections', { token: maint.token, body: { branch: 'stable' } }))
          .status,
        201,
      );
      // a protection of another repo is not reachable here
      const foreign = (await t.req('GET', '/api/v1/teams/acme/repos/other/protections')).body.results[0].uuid;
      assert.equal((await t.req('GET', `${base}/${foreign}`)).status, 404);
      assert.equal((await t.req('DELETE', `${base}/${foreign}`)).status, 404);
    });

    it('pages the protection list oldest first', async () => {
      await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'paged');
      const path = '/api/v1/teams/acme/repos/paged/protections';
      for (const branch of ['a', 'b', 'c']) {
        await t.req('POST', path, { body: { branch } });
        await sleep(2);
      }
      const p1 = await t.req('GET', `${path}?per_page=2`, { token: reader.token });
      assert.deepEqual(
        p1.body.results.map((p: { branch: string }) => p.branch),
        ['a', 'b'],
      );
      const p2 = await t.req('GET', p1.body.next, { token: reader.token });
      assert.deepEqual(
        p2.body.results.map((p: { branch: string }) => p.branch),
        ['c'],
      );
      assert.equal(p2.body.previous, `${path}?per_page=2&page=1`);
    });

    it('needs read access to read and maintain level to change; refusals change nothing', async () => {
      const p = (await t.req('POST', base, { body: { branch: 'guarded' } })).body;
      const before = await snapshot();
      const attempts: Array<[string, string, unknown]> = [
        ['POST', base, { branch: 'nope' }],
        ['PUT', `${base}/${p.uuid}`, { required_approvals: 9 }],
        ['DELETE', `${base}/${p.uuid}`, undefined],
        ['POST', `${base}/${p.uuid}/approvers`, { username: 'rita' }],
      ];
      for (const [who, status] of [
        [member, 403],
        [reader, 403],
        [outsider, 404],
      ] as Array<[Person, number]>) {
        for (const [method, url, body] of attempts) {
          const res = await t.req(method, url, { token: who.token, ...(body === undefined ? {} : { body }) });
          assert.equal(res.status, status, `${who.username} ${method} ${url}`);
          assert.ok(isErrorBody(res.body, status === 403 ? 'forbidden' : 'not_found'));
        }
      }
      for (const [method, url, body] of attempts) {
        const res = await t.req(method, url, { token: null, ...(body === undefined ? {} : { body }) });
        assert.equal(res.status, 401);
      }
      assert.equal(await snapshot(), before);
      for (const url of [base, `${base}/${p.uuid}`, `${base}/${p.uuid}/approvers`]) {
        assert.equal((await t.req('GET', url, { token: reader.token })).status, 200, url);
        assert.equal((await t.req('GET', url, { token: member.token })).status, 200, url);
        assert.equal((await t.req('GET', url, { token: outsider.token })).status, 404, url);
        assert.equal((await t.req('GET', url, { token: null })).status, 401, url);
      }
    });

    it('manages approvers: add, list, duplicate 409, unknown or inactive user 404, remove, not listed 404', async () => {
      const p = (await t.req('POST', base, { token: maint.token, body: { branch: 'approved/*' } })).body;
      const ap = `${base}/${p.uuid}/approvers`;
      const a = await t.req('POST', ap, { token: maint.token, body: { username: 'Rita' } });
      assert.equal(a.status, 201, a.text);
      assert.deepEqual(Object.keys(a.body).sort(), ['created_at', 'user_uuid', 'username']);
      assert.equal(a.body.user_uuid, reader.uuid);
      assert.equal(a.body.username, 'rita');
      await sleep(2);
      const b = await t.req('POST', ap, { token: maint.token, body: { username: 'oscar' } });
      assert.equal(b.status, 201, 'any active user may be listed');

      const list = await t.req('GET', ap, { token: reader.token });
      assert.deepEqual(list.body, { results: [a.body, b.body], next: null, previous: null });
      const paged = await t.req('GET', `${ap}?per_page=1`, { token: reader.token });
      assert.deepEqual(paged.body.results, [a.body]);
      assert.ok(paged.body.next);

      const before = await snapshot();
      const dup = await t.req('POST', ap, { token: maint.token, body: { username: 'rita' } });
      assert.equal(dup.status, 409);
      assert.ok(isErrorBody(dup.body, 'conflict'));
      const unknown = await t.req('POST', ap, { token: maint.token, body: { username: 'nobody-here' } });
      assert.equal(unknown.status, 404);
      assert.ok(isErrorBody(unknown.body, 'not_found'));
      await t.user('gone');
      await t.req('PUT', '/api/v1/users/gone', { body: { is_active: false } });
      assert.equal((await t.req('POST', ap, { token: maint.token, body: { username: 'gone' } })).status, 404);
      assert.equal((await t.req('POST', ap, { token: maint.token, body: {} })).status, 400);
      assert.equal((await t.req('POST', ap, { token: maint.token, body: { username: 'x', extra: 1 } })).status, 400);
      assert.equal(
        (
          await t.req('POST', `${base}/00000000-0000-4000-8000-000000000000/approvers`, {
            token: maint.token,
            body: { username: 'rita' },
          })
        ).status,
        404,
      );
      assert.equal(await snapshot(), before);

      const del = await t.req('DELETE', `${ap}/${reader.uuid}`, { token: maint.token });
      assert.equal(del.status, 204);
      const again = await t.req('DELETE', `${ap}/${reader.uuid}`, { token: maint.token });
      assert.equal(again.status, 404);
      assert.ok(isErrorBody(again.body, 'not_found'));
      assert.equal((await t.req('DELETE', `${ap}/${member.uuid}`, { token: maint.token })).status, 404);
      assert.deepEqual((await t.req('GET', ap)).body.results, [b.body]);
      assert.equal((await t.req('GET', `${base}/00000000-0000-4000-8000-000000000000/approvers`)).status, 404);

      const events = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}&kind=protection-approver-added`);
      assert.deepEqual(
        events.body.results.map((e: { payload: { username: string } }) => e.payload.username),
        ['rita', 'oscar'],
      );
      const removed = await t.req('GET', `/api/v1/events?scope=repo:${repo.uuid}&kind=protection-approver-removed`);
      assert.equal(removed.body.results.length, 1);

      // deleting the protection takes its approvers with it
      assert.equal((await t.req('DELETE', `${base}/${p.uuid}`, { token: maint.token })).status, 204);
      assert.equal((await t.req('GET', ap)).status, 404);
    });

    it('refuses changes on an archived repo (403 repo_archived) and under an inactive team (403 team_inactive)', async () => {
      await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'frozen', { is_archived: true });
      const path = '/api/v1/teams/acme/repos/frozen/protections';
      const res = await t.req('POST', path, { token: maint.token, body: { branch: 'main' } });
      assert.equal(res.status, 403);
      assert.ok(isErrorBody(res.body, 'repo_archived'));
      assert.equal((await t.req('GET', path, { token: reader.token })).status, 200);
      assert.deepEqual((await t.req('GET', path)).body.results, []);

      const sleepy = await seedTeam(t, 'sleepy', [{ uuid: maint.uuid, role: 'maintainer' }], { is_active: false });
      await seedRepo(t, { kind: 'team', uuid: sleepy.uuid }, 'r');
      const inactive = await t.req('POST', '/api/v1/teams/sleepy/repos/r/protections', {
        token: maint.token,
        body: { branch: 'main' },
      });
      assert.equal(inactive.status, 403);
      assert.ok(isErrorBody(inactive.body, 'team_inactive'));
      assert.equal((await t.req('GET', '/api/v1/teams/sleepy/repos/r/protections', { token: maint.token })).status, 200);
    });

    it('works in the user form', async () => {
      const u = await t.user('uma');
      await seedRepo(t, { kind: 'user', uuid: u.uuid }, 'lib', { visibility: 'public' });
      const path = '/api/v1/users/uma/repos/lib/protections';
      const p = await t.req('POST', path, { token: u.token, body: { branch: 'main', required_approvals: 2 } });
      assert.equal(p.status, 201);
      assert.equal((await t.req('POST', path, { token: outsider.token, body: { branch: 'x' } })).status, 403);
      assert.equal((await t.req('GET', `${path}/${p.body.uuid}`, { token: outsider.token })).status, 200);
      const a = await t.req('POST', `${path}/${p.body.uuid}/approvers`, { token: u.token, body: { username: 'max' } });
      assert.equal(a.status, 201);
      assert.equal(
        (await t.req('DELETE', `${path}/${p.body.uuid}/approvers/${maint.uuid}`, { token: outsider.token })).status,
        403,
      );
      assert.equal((await t.req('DELETE', `${path}/${p.body.uuid}/approvers/${maint.uuid}`, { token: u.token })).status, 204);
      const events = await t.req('GET', `/api/v1/events?scope=user:${u.uuid}&kind=protection-created`, { token: u.token });
      assert.equal(events.body.results.length, 1);
    });
  });
}
