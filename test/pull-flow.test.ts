import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { DIALECTS, isErrorBody, type Res, startApp, type TestApp } from './helpers.ts';
import { seedCommit } from './git-fixtures.ts';
import { type Person, eventsInScope } from './common.ts';

/**
 * End-to-end pull flows through HTTP only: teams, members, repos, protections and approvers are
 * created through their routes (no seeding), then pulls are opened, reviewed, checked and merged.
 * Also what happens to pulls and their approvals when the world around them changes: protections
 * edited or deleted, members demoted, removed or deactivated, the repo archived, the team
 * deactivated, the repo deleted.
 */

const ok = (res: Res, status: number, what: string): Res => {
  assert.equal(res.status, status, `${what}: ${res.status} ${res.text}`);
  return res;
};

const kinds = (res: Res): string[] => res.body.results.map((e: { kind: string }) => e.kind);

for (const dialect of DIALECTS) {
  describe(`pull flow through HTTP (${dialect})`, () => {
    let t: TestApp;
    let n = 0;
    const tag = () => `${++n}${randomUUID().slice(0, 4)}`;

    /** A team created through POST /teams by `owner`, with members added through the members route. */
    const makeTeam = async (owner: Person, members: Array<[Person, string]>) => {
      const slug = `flow${tag()}`;
      ok(await t.req('POST', '/api/v1/teams', { token: owner.token, body: { name: `Flow ${slug}`, slug } }), 201, 'POST /teams');
      for (const [person, role] of members) {
        ok(
          await t.req('POST', `/api/v1/teams/${slug}/members`, { token: owner.token, body: { username: person.username, role } }),
          201,
          `add ${role}`,
        );
      }
      return slug;
    };
    /** A repo created through its route; returns its API base path and uuid. */
    const makeRepo = async (token: string, ownerPath: string, visibility: 'public' | 'private') => {
      const slug = `repo${tag()}`;
      const res = ok(
        await t.req('POST', `/api/v1/${ownerPath}/repos`, { token, body: { name: slug, slug, visibility } }),
        201,
        'POST repos',
      );
      return { base: `/api/v1/${ownerPath}/repos/${slug}`, uuid: res.body.uuid as string, ownerPath, slug };
    };
    const protect = async (token: string, base: string, branch: string, required_approvals: number, approvers: Person[] = []) => {
      const res = ok(
        await t.req('POST', `${base}/protections`, { token, body: { branch, required_approvals } }),
        201,
        'POST protection',
      );
      for (const a of approvers) {
        ok(
          await t.req('POST', `${base}/protections/${res.body.uuid}/approvers`, { token, body: { username: a.username } }),
          201,
          'POST approver',
        );
      }
      return res.body.uuid as string;
    };
    let branch = 0;
    /** Opens a pull whose source branch holds a commit the target lacks (a merge must land one). */
    const open = async (token: string, base: string, target = 'main') => {
      const source = `topic/b${++branch}`;
      await seedCommit(t, ok(await t.req('GET', base), 200, 'GET repo').body.uuid, source, { onto: target });
      return ok(
        await t.req('POST', `${base}/pulls`, {
          token,
          body: { title: 'Change', body: 'Details', source_branch: source, target_branch: target },
        }),
        201,
        'POST pull',
      ).body;
    };
    const review = async (token: string, base: string, number: number, status: string) =>
      ok(await t.req('POST', `${base}/pulls/${number}/reviews`, { token, body: { status } }), 201, `review ${status}`).body;
    const status = async (base: string, number: number, token?: string) =>
      ok(await t.req('GET', `${base}/pulls/${number}/protection`, { token }), 200, 'GET protection').body;
    const events = (scope: string, token?: string) => eventsInScope(t, scope, token);

    let owner: Person;
    let maintainer: Person;
    let member: Person;
    let reader: Person;
    let outsider: Person;
    let staff: Person;

    before(async () => {
      t = await startApp(dialect);
      const s = tag();
      owner = await t.user(`fown${s}`);
      maintainer = await t.user(`fmnt${s}`);
      member = await t.user(`fmem${s}`);
      reader = await t.user(`frdr${s}`);
      outsider = await t.user(`fout${s}`);
      staff = await t.user(`fstf${s}`, { staff: true });
    });
    after(() => t.close());

    it('team form: team, members, private repo, protection; open, review, check, merge', async () => {
      const team = await makeTeam(owner, [
        [maintainer, 'maintainer'],
        [member, 'member'],
        [reader, 'reader'],
      ]);
      const repo = await makeRepo(owner.token, `teams/${team}`, 'private');
      // a member (write level) may not manage protections; a maintainer may
      assert.equal(
        (await t.req('POST', `${repo.base}/protections`, { token: member.token, body: { branch: 'main' } })).status,
        403,
      );
      await protect(maintainer.token, repo.base, 'main', 2);

      const pull = await open(reader.token, repo.base);
      assert.equal(pull.number, 1);
      assert.equal(pull.author_username, reader.username);
      assert.deepEqual(await status(repo.base, 1, reader.token), {
        protected: true,
        branch_pattern: 'main',
        required_approvals: 2,
        approvers: [],
        approved_by: [],
        required_status_contexts: [],
        status_checks: [],
        require_conversation_resolution: false,
        satisfied: false,
      });
      assert.equal((await t.req('GET', `${repo.base}/pulls/1/protection`, { token: outsider.token })).status, 404);

      // the author may only comment
      const own = await t.req('POST', `${repo.base}/pulls/1/reviews`, { token: reader.token, body: { status: 'approved' } });
      assert.equal(own.status, 403);
      assert.ok(isErrorBody(own.body, 'cannot_approve_own_pull'));
      await review(reader.token, repo.base, 1, 'commented');
      await review(member.token, repo.base, 1, 'approved');
      assert.deepEqual((await status(repo.base, 1)).approved_by, [member.username]);

      const early = await t.req('POST', `${repo.base}/pulls/1/merge`, { token: member.token, body: {} });
      assert.equal(early.status, 409);
      assert.ok(isErrorBody(early.body, 'protection_unsatisfied'));
      assert.equal((await t.req('GET', `${repo.base}/pulls/1`)).body.status, 'open');

      await review(maintainer.token, repo.base, 1, 'approved');
      const s = await status(repo.base, 1, reader.token);
      assert.deepEqual(s.approved_by, [member.username, maintainer.username]);
      assert.equal(s.satisfied, true);

      // a reader cannot merge even a satisfied pull; a member can
      assert.equal((await t.req('POST', `${repo.base}/pulls/1/merge`, { token: reader.token, body: {} })).status, 403);
      const merged = ok(
        await t.req('POST', `${repo.base}/pulls/1/merge`, { token: member.token, body: { merge_strategy: 'squash' } }),
        200,
        'merge',
      );
      assert.deepEqual(Object.keys(merged.body).sort(), [
        'merge_commit_sha',
        'merge_strategy',
        'merged_at',
        'merged_by_username',
        'pull',
      ]);
      assert.equal(merged.body.merge_strategy, 'squash');
      assert.equal(merged.body.merged_by_username, member.username);
      assert.match(merged.body.merge_commit_sha, /^[0-9a-f]{40}$/);
      assert.equal(merged.body.pull.status, 'merged');
      assert.equal(merged.body.pull.merged_at, merged.body.merged_at);
      assert.deepEqual((await t.req('GET', `${repo.base}/pulls/1`, { token: reader.token })).body, merged.body.pull);

      const pullEvents = await events(`pull:${pull.uuid}`, reader.token);
      assert.equal(pullEvents.status, 200);
      assert.deepEqual(kinds(pullEvents), [
        'pull-opened',
        'review-submitted',
        'review-submitted',
        'review-submitted',
        'pull-merged',
      ]);
      assert.equal((await events(`pull:${pull.uuid}`, outsider.token)).status, 404);
      const submitted = pullEvents.body.results[1];
      assert.deepEqual(
        [...submitted.scopes].sort(),
        [`pull:${pull.uuid}`, `repo:${repo.uuid}`, `review:${submitted.payload.review_uuid}`].sort(),
      );
      assert.equal((await events(`review:${submitted.payload.review_uuid}`, reader.token)).status, 200);
      assert.equal((await events(`review:${submitted.payload.review_uuid}`, outsider.token)).status, 404);
      for (const e of pullEvents.body.results) {
        assert.equal((await t.req('GET', `/api/v1/events/${e.id}`, { token: reader.token })).status, 200);
        const hidden = await t.req('GET', `/api/v1/events/${e.id}`, { token: outsider.token });
        assert.equal(hidden.status, 404, e.kind);
        assert.ok(isErrorBody(hidden.body, 'not_found'));
      }
      const repoEvents = await events(`repo:${repo.uuid}`, member.token);
      assert.deepEqual(
        kinds(repoEvents).filter((k) => k.startsWith('pull-') || k.startsWith('review-') || k.startsWith('protection-')),
        ['protection-created', 'pull-opened', 'review-submitted', 'review-submitted', 'review-submitted', 'pull-merged'],
      );
    });

    it('user form: public repo, glob protection with an approver list, outsiders open and approve', async () => {
      const solo = await t.user(`fsolo${tag()}`);
      const contributor = await t.user(`fcon${tag()}`);
      const repo = await makeRepo(solo.token, `users/${solo.username}`, 'public');
      await protect(solo.token, repo.base, 'release/*', 1, [outsider]);
      // another user cannot manage the protections of someone else's repo
      assert.equal(
        (await t.req('POST', `${repo.base}/protections`, { token: outsider.token, body: { branch: 'x' } })).status,
        403,
      );

      const pull = await open(contributor.token, repo.base, 'release/1.0');
      // an outsider of a public repo may comment and remove their own review, not someone else's
      const note = await review(outsider.token, repo.base, pull.number, 'commented');
      const other = await t.req('DELETE', `${repo.base}/pulls/${pull.number}/reviews/${note.uuid}`, { token: contributor.token });
      assert.equal(other.status, 403);
      assert.ok(isErrorBody(other.body, 'forbidden'));
      ok(
        await t.req('DELETE', `${repo.base}/pulls/${pull.number}/reviews/${note.uuid}`, { token: outsider.token }),
        204,
        'remove own',
      );
      // and the author of a pull, at read level, may edit and close it; others at read level may not
      const retitle = await t.req('PUT', `${repo.base}/pulls/${pull.number}`, {
        token: outsider.token,
        body: { title: 'Mine now' },
      });
      assert.equal(retitle.status, 403);
      ok(
        await t.req('PUT', `${repo.base}/pulls/${pull.number}`, { token: contributor.token, body: { title: 'Release fix' } }),
        200,
        'edit own',
      );
      let s = await status(repo.base, pull.number, contributor.token);
      assert.equal(s.branch_pattern, 'release/*');
      assert.deepEqual(s.approvers, [outsider.username]);
      await review(solo.token, repo.base, pull.number, 'approved'); // the repo owner is not listed
      s = await status(repo.base, pull.number);
      assert.deepEqual(s.approved_by, []);
      const refused = await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { token: solo.token, body: {} });
      assert.ok(isErrorBody(refused.body, 'protection_unsatisfied'), refused.text);
      // the contributor has only read access: cannot merge
      assert.equal(
        (await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { token: contributor.token, body: {} })).status,
        403,
      );
      await review(outsider.token, repo.base, pull.number, 'approved'); // listed, read access is enough
      s = await status(repo.base, pull.number);
      assert.deepEqual(s.approved_by, [outsider.username]);
      assert.equal(s.satisfied, true);
      ok(
        await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { token: solo.token, body: { merge_strategy: 'rebase' } }),
        200,
        'merge',
      );

      // a pull into an unprotected branch merges at once
      const free = await open(contributor.token, repo.base, 'main');
      assert.equal((await status(repo.base, free.number)).protected, false);
      ok(
        await t.req('POST', `${repo.base}/pulls/${free.number}/merge`, {
          token: staff.token,
          body: { merge_strategy: 'fast_forward' },
        }),
        200,
        'merge',
      );
      const ev = await events(`repo:${repo.uuid}`, outsider.token);
      assert.equal(kinds(ev).filter((k) => k === 'pull-merged').length, 2);
    });

    it('protection status follows edits and deletion of the protection and its approvers', async () => {
      const team = await makeTeam(owner, [
        [maintainer, 'maintainer'],
        [member, 'member'],
        [reader, 'reader'],
      ]);
      const repo = await makeRepo(owner.token, `teams/${team}`, 'private');
      const glob = await protect(maintainer.token, repo.base, '*', 3);
      const pull = await open(owner.token, repo.base);
      assert.equal((await status(repo.base, 1)).branch_pattern, '*');
      const exact = await protect(maintainer.token, repo.base, 'main', 1);
      assert.equal((await status(repo.base, 1)).branch_pattern, 'main', 'an exact name beats a glob created earlier');

      await review(member.token, repo.base, 1, 'approved');
      await review(maintainer.token, repo.base, 1, 'approved');
      await review(reader.token, repo.base, 1, 'approved');
      let s = await status(repo.base, 1);
      assert.deepEqual(s.approved_by, [member.username, maintainer.username]);
      assert.equal(s.satisfied, true);

      const put = (body: unknown) => t.req('PUT', `${repo.base}/protections/${exact}`, { token: maintainer.token, body });
      ok(await put({ required_approvals: 3 }), 200, 'raise required_approvals');
      s = await status(repo.base, 1);
      assert.equal(s.required_approvals, 3);
      assert.equal(s.satisfied, false);
      ok(await put({ required_approvals: 2 }), 200, 'lower required_approvals');
      assert.equal((await status(repo.base, 1)).satisfied, true);

      // an approver list: only listed users count from now on, even a reader
      const addApprover = await t.req('POST', `${repo.base}/protections/${exact}/approvers`, {
        token: maintainer.token,
        body: { username: reader.username },
      });
      ok(addApprover, 201, 'add approver');
      s = await status(repo.base, 1);
      assert.deepEqual(s.approvers, [reader.username]);
      assert.deepEqual(s.approved_by, [reader.username]);
      assert.equal(s.satisfied, false);
      const merge = await t.req('POST', `${repo.base}/pulls/1/merge`, { token: member.token, body: {} });
      assert.ok(isErrorBody(merge.body, 'protection_unsatisfied'), merge.text);
      ok(await put({ required_approvals: 1 }), 200, 'required 1');
      assert.equal((await status(repo.base, 1)).satisfied, true);
      // removing the last approver brings back "any user with write access"
      ok(
        await t.req('DELETE', `${repo.base}/protections/${exact}/approvers/${reader.uuid}`, { token: maintainer.token }),
        204,
        'remove approver',
      );
      s = await status(repo.base, 1);
      assert.deepEqual(s.approvers, []);
      assert.deepEqual(s.approved_by, [member.username, maintainer.username]);

      // renaming the exact protection away hands the pull to the glob; deleting both unprotects it
      ok(await put({ branch: 'trunk' }), 200, 'rename protection');
      s = await status(repo.base, 1);
      assert.equal(s.branch_pattern, '*');
      assert.equal(s.required_approvals, 3);
      assert.equal(s.satisfied, false);
      ok(await t.req('DELETE', `${repo.base}/protections/${glob}`, { token: maintainer.token }), 204, 'delete glob');
      ok(await t.req('DELETE', `${repo.base}/protections/${exact}`, { token: maintainer.token }), 204, 'delete exact');
      assert.deepEqual(await status(repo.base, 1), {
        protected: false,
        branch_pattern: null,
        required_approvals: 0,
        approvers: [],
        approved_by: [],
        required_status_contexts: [],
        status_checks: [],
        require_conversation_resolution: false,
        satisfied: true,
      });
      ok(await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { token: member.token, body: {} }), 200, 'merge');
    });

    it('an approval stops counting when its author loses write access (access is evaluated now)', async () => {
      const writer = await t.user(`fwri${tag()}`);
      const team = await makeTeam(owner, [
        [maintainer, 'maintainer'],
        [writer, 'member'],
        [reader, 'reader'],
      ]);
      const repo = await makeRepo(owner.token, `teams/${team}`, 'private');
      await protect(maintainer.token, repo.base, 'main', 1);
      const pull = await open(reader.token, repo.base);
      const approval = await review(writer.token, repo.base, pull.number, 'approved');
      assert.equal((await status(repo.base, pull.number)).satisfied, true);

      const role = (r: string) =>
        t.req('PUT', `/api/v1/teams/${team}/members/${writer.username}`, { token: owner.token, body: { role: r } });
      ok(await role('reader'), 200, 'demote');
      let s = await status(repo.base, pull.number);
      assert.deepEqual(s.approved_by, []);
      assert.equal(s.satisfied, false);
      const refused = await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { token: maintainer.token, body: {} });
      assert.ok(isErrorBody(refused.body, 'protection_unsatisfied'), refused.text);
      ok(await role('maintainer'), 200, 'promote');
      assert.deepEqual((await status(repo.base, pull.number)).approved_by, [writer.username]);

      ok(await t.req('DELETE', `/api/v1/teams/${team}/members/${writer.username}`, { token: owner.token }), 204, 'remove member');
      s = await status(repo.base, pull.number);
      assert.deepEqual(s.approved_by, []);
      assert.equal(s.satisfied, false);
      // the review itself is still there and readable by those who can read the repo
      const kept = await t.req('GET', `${repo.base}/pulls/${pull.number}/reviews/${approval.uuid}`, { token: reader.token });
      assert.equal(kept.status, 200);
      assert.equal(kept.body.removed_at, null);
      // the former member no longer sees the pull, its events or its review's events
      assert.equal((await t.req('GET', `${repo.base}/pulls/${pull.number}`, { token: writer.token })).status, 404);
      assert.equal((await events(`pull:${pull.uuid}`, writer.token)).status, 404);
      assert.equal((await events(`review:${approval.uuid}`, writer.token)).status, 404);

      // back in the team at write level: the same approval counts again
      ok(
        await t.req('POST', `/api/v1/teams/${team}/members`, {
          token: owner.token,
          body: { username: writer.username, role: 'member' },
        }),
        201,
        're-add',
      );
      assert.deepEqual((await status(repo.base, pull.number)).approved_by, [writer.username]);
      ok(await t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { token: maintainer.token, body: {} }), 200, 'merge');
    });

    it("a deactivated user's approval does not count, nor a listed approver's who can no longer read the repo", async () => {
      const writer = await t.user(`fdea${tag()}`);
      const listed = await t.user(`flst${tag()}`);
      const team = await makeTeam(owner, [
        [maintainer, 'maintainer'],
        [writer, 'member'],
        [listed, 'reader'],
      ]);
      const repo = await makeRepo(owner.token, `teams/${team}`, 'private');
      await protect(maintainer.token, repo.base, 'main', 1);
      await protect(maintainer.token, repo.base, 'release/*', 1, [listed]);

      const a = await open(owner.token, repo.base, 'main');
      await review(writer.token, repo.base, a.number, 'approved');
      assert.equal((await status(repo.base, a.number)).satisfied, true);
      ok(await t.req('PUT', `/api/v1/users/${writer.username}`, { body: { is_active: false } }), 200, 'deactivate');
      assert.deepEqual((await status(repo.base, a.number)).approved_by, []);
      ok(await t.req('PUT', `/api/v1/users/${writer.username}`, { body: { is_active: true } }), 200, 'reactivate');
      assert.deepEqual((await status(repo.base, a.number)).approved_by, [writer.username]);

      const b = await open(owner.token, repo.base, 'release/2');
      await review(listed.token, repo.base, b.number, 'approved');
      assert.deepEqual((await status(repo.base, b.number)).approved_by, [listed.username]);
      ok(await t.req('DELETE', `/api/v1/teams/${team}/members/${listed.username}`, { token: owner.token }), 204, 'remove listed');
      const s = await status(repo.base, b.number);
      assert.deepEqual(s.approvers, [listed.username], 'still on the list');
      assert.deepEqual(s.approved_by, []);
      assert.equal(s.satisfied, false);
    });

    it('archived through PUT {repo}/archive: pulls stay readable, every pull write is 403 repo_archived', async () => {
      const team = await makeTeam(owner, [
        [member, 'member'],
        [reader, 'reader'],
      ]);
      const repo = await makeRepo(owner.token, `teams/${team}`, 'public');
      const pull = await open(reader.token, repo.base);
      const rev = await review(member.token, repo.base, pull.number, 'approved');
      const before = (await t.req('GET', `${repo.base}/pulls/${pull.number}`)).body;
      ok(await t.req('PUT', `${repo.base}/archive`, { token: owner.token }), 200, 'archive');

      const url = `${repo.base}/pulls/${pull.number}`;
      const writes: Array<[string, string, string, unknown]> = [
        ['POST', `${repo.base}/pulls`, reader.token, { title: 't', body: '', source_branch: 'a', target_branch: 'b' }],
        ['PUT', url, reader.token, { status: 'closed' }],
        ['POST', `${url}/reviews`, outsider.token, { status: 'commented' }],
        ['DELETE', `${url}/reviews/${rev.uuid}`, member.token, undefined],
        ['POST', `${url}/merge`, owner.token, {}],
      ];
      for (const [method, path, token, body] of writes) {
        const res = await t.req(method, path, { token, body });
        assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
        assert.ok(isErrorBody(res.body, 'repo_archived'), res.text);
      }
      assert.deepEqual((await t.req('GET', url, { token: outsider.token })).body, before);
      for (const path of [`${repo.base}/pulls`, url, `${url}/reviews`, `${url}/reviews/${rev.uuid}`, `${url}/protection`]) {
        assert.equal((await t.req('GET', path, { token: outsider.token })).status, 200, path);
      }
      assert.equal((await events(`pull:${pull.uuid}`, outsider.token)).status, 200);
      assert.equal((await events(`review:${rev.uuid}`, outsider.token)).status, 200);

      ok(await t.req('DELETE', `${repo.base}/archive`, { token: owner.token }), 200, 'unarchive');
      ok(await t.req('POST', `${url}/merge`, { token: member.token, body: {} }), 200, 'merge after unarchive');
    });

    it('a deactivated team (PUT /teams by staff): pulls stay readable, writes are 403 team_inactive', async () => {
      const team = await makeTeam(owner, [
        [member, 'member'],
        [reader, 'reader'],
      ]);
      const repo = await makeRepo(owner.token, `teams/${team}`, 'private');
      const pull = await open(reader.token, repo.base);
      const rev = await review(member.token, repo.base, pull.number, 'approved');
      const setActive = (is_active: boolean) =>
        t.req('PUT', `/api/v1/teams/${team}`, { token: staff.token, body: { name: `Flow ${team}`, slug: team, is_active } });
      ok(await setActive(false), 200, 'deactivate team');

      const url = `${repo.base}/pulls/${pull.number}`;
      for (const [method, path, body] of [
        ['POST', `${repo.base}/pulls`, { title: 't', body: '', source_branch: 'a', target_branch: 'b' }],
        ['PUT', url, { title: 'x' }],
        ['POST', `${url}/reviews`, { status: 'commented' }],
        ['DELETE', `${url}/reviews/${rev.uuid}`, undefined],
        ['POST', `${url}/merge`, {}],
      ] as Array<[string, string, unknown]>) {
        const res = await t.req(method, path, { token: owner.token, body });
        assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
        assert.ok(isErrorBody(res.body, 'team_inactive'), res.text);
      }
      assert.equal((await t.req('GET', url, { token: reader.token })).body.status, 'open');
      assert.equal((await status(repo.base, pull.number, reader.token)).protected, false);
      assert.equal((await events(`pull:${pull.uuid}`, reader.token)).status, 200);
      assert.equal((await events(`pull:${pull.uuid}`, outsider.token)).status, 404);

      ok(await setActive(true), 200, 'reactivate team');
      ok(await t.req('POST', `${url}/merge`, { token: member.token, body: {} }), 200, 'merge after reactivation');
    });

    for (const form of ['team', 'user'] as const) {
      it(`a deleted ${form} repo: its pulls, reviews and their events' pull and review scopes are 404`, async () => {
        let deleter: string;
        let member_: Person;
        let repo: Awaited<ReturnType<typeof makeRepo>>;
        if (form === 'team') {
          const team = await makeTeam(owner, [[member, 'member']]);
          repo = await makeRepo(owner.token, `teams/${team}`, 'private');
          deleter = owner.token;
          member_ = member;
        } else {
          const solo = await t.user(`fdel${tag()}`);
          repo = await makeRepo(solo.token, `users/${solo.username}`, 'private');
          deleter = solo.token;
          member_ = solo;
        }
        const { base, uuid: repoUuid } = repo;
        const pull = await open(member_.token, base);
        const rev = await review(staff.token, base, pull.number, 'approved');
        const opened = (await events(`pull:${pull.uuid}`, member_.token)).body.results[0];
        assert.equal(opened.kind, 'pull-opened');
        assert.equal((await t.req('GET', `/api/v1/events/${opened.id}`, { token: member_.token })).status, 200);

        ok(await t.req('DELETE', base, { token: deleter }), 204, 'delete repo');
        for (const path of [
          `${base}/pulls`,
          `${base}/pulls/${pull.number}`,
          `${base}/pulls/${pull.number}/reviews/${rev.uuid}`,
        ]) {
          const res = await t.req('GET', path, { token: member_.token });
          assert.equal(res.status, 404, path);
          assert.ok(isErrorBody(res.body, 'not_found'));
        }
        for (const token of [member_.token, staff.token]) {
          for (const scope of [`pull:${pull.uuid}`, `review:${rev.uuid}`, `repo:${repoUuid}`]) {
            const res = await events(scope, token);
            assert.equal(res.status, 404, scope);
            assert.ok(isErrorBody(res.body, 'not_found'));
          }
          assert.equal((await t.req('GET', `/api/v1/events/${opened.id}`, { token })).status, 404);
        }
        // a new repo with the same slug starts its pulls at 1 again and does not see the old ones
        const again = ok(
          await t.req('POST', `/api/v1/${repo.ownerPath}/repos`, { token: deleter, body: { name: repo.slug, slug: repo.slug } }),
          201,
          'recreate',
        );
        assert.notEqual(again.body.uuid, repoUuid);
        assert.deepEqual((await t.req('GET', `${base}/pulls`, { token: deleter })).body.results, []);
        assert.equal((await open(deleter, base)).number, 1);
      });
    }

    it('pull writes racing the deletion of their repo succeed or are 404, never 500', async () => {
      for (let round = 0; round < 3; round++) {
        const team = await makeTeam(owner, [[member, 'member']]);
        const repo = await makeRepo(owner.token, `teams/${team}`, 'private');
        const pull = await open(member.token, repo.base);
        const body = { title: 'Racer', body: '', source_branch: 'topic/race', target_branch: 'main' };
        const results = await Promise.all([
          ...Array.from({ length: 8 }, () => t.req('POST', `${repo.base}/pulls`, { token: member.token, body })),
          t.req('DELETE', repo.base, { token: owner.token }),
          ...Array.from({ length: 8 }, () =>
            t.req('POST', `${repo.base}/pulls/${pull.number}/reviews`, { token: owner.token, body: { status: 'approved' } }),
          ),
          ...Array.from({ length: 8 }, () => t.req('POST', `${repo.base}/pulls`, { token: member.token, body })),
          t.req('PUT', `${repo.base}/pulls/${pull.number}`, { token: member.token, body: { title: 'Renamed' } }),
          t.req('POST', `${repo.base}/pulls/${pull.number}/merge`, { token: member.token, body: {} }),
        ]);
        for (const res of results) {
          // (a PUT that loses to the merge is 409 pull_merged)
          const fine = [200, 201, 204, 404].includes(res.status) || (res.status === 409 && res.body.error === 'pull_merged');
          assert.ok(fine, `${res.status} ${res.text}`);
        }
        assert.equal(results[8]!.status, 204);
      }
    });

    it('two merges at once through HTTP after approvals: one 200, one 409 pull_merged, one event', async () => {
      const team = await makeTeam(owner, [
        [maintainer, 'maintainer'],
        [member, 'member'],
      ]);
      const repo = await makeRepo(owner.token, `teams/${team}`, 'private');
      await protect(owner.token, repo.base, 'main', 1);
      const pull = await open(member.token, repo.base);
      await review(maintainer.token, repo.base, pull.number, 'approved');
      const url = `${repo.base}/pulls/${pull.number}/merge`;
      const results = await Promise.all([
        t.req('POST', url, { token: member.token, body: {} }),
        t.req('POST', url, { token: maintainer.token, body: { merge_strategy: 'squash' } }),
        t.req('POST', url, { token: owner.token, body: { merge_strategy: 'rebase' } }),
      ]);
      assert.deepEqual(results.map((r) => r.status).sort(), [200, 409, 409], results.map((r) => r.text).join(' | '));
      for (const r of results.filter((x) => x.status === 409)) assert.ok(isErrorBody(r.body, 'pull_merged'));
      const ev = await events(`pull:${pull.uuid}`, member.token);
      assert.equal(kinds(ev).filter((k) => k === 'pull-merged').length, 1);
    });
  });
}
