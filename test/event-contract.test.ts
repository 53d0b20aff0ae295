import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { waitUntil } from './common.ts';
import { seedCommit } from './git-fixtures.ts';
import { DIALECTS, type Res, startApp } from './helpers.ts';

/**
 * The event contract in one table: one scenario drives every event kind through the API, then
 * each event written is compared whole (kind, exact scopes in order, actor, full payload) with
 * its row below. A new kind, a missing scope or a payload field that changes fails here.
 */
const ok = (res: Res, status: number): Res => {
  assert.equal(res.status, status, `${status} expected: ${res.text}`);
  return res;
};

const KINDS_COVERED = [
  'user-created',
  'user-updated',
  'token-created',
  'token-revoked',
  'token-deleted',
  'team-created',
  'team-updated',
  'member-added',
  'member-updated',
  'member-removed',
  'repo-created',
  'repo-updated',
  'repo-deleted',
  'fork-created',
  'protection-created',
  'protection-updated',
  'protection-deleted',
  'protection-approver-added',
  'protection-approver-removed',
  'pull-opened',
  'pull-updated',
  'pull-merged',
  'branch-pushed',
  'review-submitted',
  'review-removed',
  'notification-updated',
  'release-published',
  'release-updated',
  'release-deleted',
  'review-comment-created',
  'review-comment-edited',
  'review-comment-deleted',
  'conversation-resolved',
  'conversation-unresolved',
];

for (const dialect of DIALECTS) {
  describe(`event contract (${dialect})`, () => {
    test('every event kind: exact scopes, actor and payload', async () => {
      const t = await startApp(dialect);
      try {
        const admin = ok(await t.req('GET', '/api/v1/user'), 200).body as { uuid: string; username: string };
        const first = await t.deps.db
          .selectFrom('events')
          .select((eb) => eb.fn.max('id').as('id'))
          .executeTakeFirst();
        const startId = Number(first?.id ?? 0);

        const alice = await t.user('alice');
        const bob = await t.user('bob');
        const A = { uuid: alice.uuid, username: 'alice' };
        const B = { uuid: bob.uuid, username: 'bob' };
        const ADMIN = { uuid: admin.uuid, username: admin.username };
        const as = (who: { token: string }) => ({ token: who.token });

        ok(
          await t.req('PUT', '/api/v1/users/alice', {
            ...as(alice),
            body: { display_name: 'Alice', password: 'another long one' },
          }),
          200,
        );
        const ci = ok(await t.req('POST', '/api/v1/api-tokens', { ...as(alice), body: { name: 'ci' } }), 201).body;
        ok(await t.req('PUT', `/api/v1/api-tokens/${ci.uuid}/revoke`, as(alice)), 200);
        ok(await t.req('DELETE', `/api/v1/api-tokens/${ci.uuid}`, as(alice)), 204);

        const team = ok(await t.req('POST', '/api/v1/teams', { ...as(alice), body: { name: 'Crew', slug: 'crew' } }), 201).body;
        ok(await t.req('PUT', '/api/v1/teams/crew', { ...as(alice), body: { name: 'Crew 2', slug: 'crew' } }), 200);
        ok(await t.req('POST', '/api/v1/teams/crew/members', { ...as(alice), body: { username: 'bob', role: 'member' } }), 201);
        ok(await t.req('PUT', '/api/v1/teams/crew/members/bob', { ...as(alice), body: { role: 'maintainer' } }), 200);

        const repo = ok(
          await t.req('POST', '/api/v1/teams/crew/repos', { ...as(alice), body: { name: 'Tool', slug: 'tool' } }),
          201,
        ).body;
        const base = '/api/v1/teams/crew/repos/tool';
        ok(await t.req('PUT', base, { ...as(alice), body: { about: 'A tool' } }), 200);
        ok(await t.req('PUT', `${base}/archive`, as(alice)), 200);
        ok(await t.req('DELETE', `${base}/archive`, as(alice)), 200);
        const fork = ok(await t.req('POST', `${base}/forks`, as(bob)), 201).body;

        const prot = ok(await t.req('POST', `${base}/protections`, { ...as(alice), body: { branch: 'main' } }), 201).body;
        ok(await t.req('PUT', `${base}/protections/${prot.uuid}`, { ...as(alice), body: { required_approvals: 2 } }), 200);
        ok(await t.req('POST', `${base}/protections/${prot.uuid}/approvers`, { ...as(alice), body: { username: 'bob' } }), 201);
        ok(await t.req('DELETE', `${base}/protections/${prot.uuid}/approvers/${bob.uuid}`, as(alice)), 204);
        ok(await t.req('DELETE', `${base}/protections/${prot.uuid}`, as(alice)), 204);

        // a commit to merge, made in the bare repository (a push would add branch-pushed here; the merge adds one)
        const repoUuid = ok(await t.req('GET', base, as(alice)), 200).body.uuid as string;
        await seedCommit(t, repoUuid, 'feature/x', { onto: 'main' });
        const headSha = await t.deps.git.branchSha(repoUuid, 'feature/x');
        const baseSha = await t.deps.git.branchSha(repoUuid, 'main');
        const pull = ok(
          await t.req('POST', `${base}/pulls`, {
            ...as(bob),
            body: { title: 'Change', body: 'Details', source_branch: 'feature/x', target_branch: 'main' },
          }),
          201,
        ).body;
        ok(await t.req('PUT', `${base}/pulls/1`, { ...as(bob), body: { title: 'Change 2' } }), 200);
        const review = ok(
          await t.req('POST', `${base}/pulls/1/reviews`, { ...as(alice), body: { status: 'approved' } }),
          201,
        ).body;
        ok(await t.req('DELETE', `${base}/pulls/1/reviews/${review.uuid}`, as(alice)), 204);
        const removedAt = ok(await t.req('GET', `${base}/pulls/1/reviews/${review.uuid}`, as(alice)), 200).body.removed_at;
        // code review on lines: a comment, a reply, an edit, resolution and its undoing, a deletion
        const seedPath = ok(await t.req('GET', `${base}/pulls/1/files`, as(alice)), 200).body.results[0].path as string;
        const lineReview = ok(
          await t.req('POST', `${base}/pulls/1/reviews`, {
            ...as(alice),
            body: { status: 'commented', comments: [{ path: seedPath, line: 1, body: 'Nice' }] },
          }),
          201,
        ).body;
        const lineComment = ok(await t.req('GET', `${base}/pulls/1/comments`, as(alice)), 200).body.results[0];
        const lineReply = ok(
          await t.req('POST', `${base}/pulls/1/comments/${lineComment.uuid}/replies`, { ...as(bob), body: { body: 'Thanks' } }),
          201,
        ).body;
        ok(await t.req('PATCH', `${base}/pulls/1/comments/${lineComment.uuid}`, { ...as(alice), body: { body: 'Nice!' } }), 200);
        ok(await t.req('PUT', `${base}/pulls/1/comments/${lineComment.uuid}/resolution`, as(bob)), 200);
        ok(await t.req('DELETE', `${base}/pulls/1/comments/${lineComment.uuid}/resolution`, as(bob)), 200);
        ok(await t.req('DELETE', `${base}/pulls/1/comments/${lineReply.uuid}`, as(bob)), 204);
        const pullMergedSha = ok(await t.req('POST', `${base}/pulls/1/merge`, { ...as(alice), body: {} }), 200).body
          .merge_commit_sha as string;

        // a release: its tag made at main, published, changed, deleted
        const release = ok(await t.req('POST', `${base}/releases`, { ...as(alice), body: { tag_name: 'v1' } }), 201).body;
        ok(await t.req('PATCH', `${base}/releases/v1`, { ...as(alice), body: { name: 'One', prerelease: true } }), 200);
        ok(await t.req('DELETE', `${base}/releases/v1`, as(alice)), 204);

        ok(await t.req('DELETE', '/api/v1/teams/crew/members/bob', as(alice)), 204);
        ok(await t.req('DELETE', base, as(alice)), 204);

        const tokenRows = await t.deps.db.selectFrom('api_tokens').select(['uuid', 'user_uuid']).execute();
        const testToken = (userUuid: string) => tokenRows.find((r) => r.user_uuid === userUuid)!.uuid;
        const T = `team:${team.uuid}`;
        const R = `repo:${repo.uuid}`;
        const F = `repo:${fork.repo.uuid}`;
        const P = `pull:${pull.uuid}`;
        const pullPayload = (title: string, status: string) => ({
          repo_uuid: repo.uuid,
          pull_uuid: pull.uuid,
          number: 1,
          title,
          status,
          source_branch: 'feature/x',
          target_branch: 'main',
          author_username: 'bob',
        });
        const reviewPayload = {
          repo_uuid: repo.uuid,
          pull_uuid: pull.uuid,
          pull_number: 1,
          review_uuid: review.uuid,
          status: 'approved',
          author_username: 'alice',
          target_branch: 'main',
          head_sha: headSha,
          base_sha: baseSha,
        };
        const protPayload = { repo_uuid: repo.uuid, protection_uuid: prot.uuid };
        const commentPayload = (
          uuid: string,
          reviewUuid: string | null,
          inReplyTo: string | null,
          body: string,
          author: string,
        ) => ({
          repo_uuid: repo.uuid,
          pull_uuid: pull.uuid,
          pull_number: 1,
          comment_uuid: uuid,
          review_uuid: reviewUuid,
          in_reply_to: inReplyTo,
          path: seedPath,
          line: 1,
          side: 'RIGHT',
          start_line: null,
          start_side: null,
          commit_sha: headSha,
          body,
          author_username: author,
        });
        const conversationPayload = {
          repo_uuid: repo.uuid,
          pull_uuid: pull.uuid,
          pull_number: 1,
          comment_uuid: lineComment.uuid,
          path: seedPath,
          line: 1,
          side: 'RIGHT',
        };

        // kind, scopes, actor, payload: one row per event, in the order the scenario wrote them.
        const expected: [string, string[], { uuid: string; username: string } | null, Record<string, unknown>][] = [
          ['user-created', [`user:${A.uuid}`], ADMIN, { user_uuid: A.uuid, username: 'alice' }],
          [
            'token-created',
            [`user:${A.uuid}`],
            ADMIN,
            { token_uuid: testToken(A.uuid), name: 'test', username: 'alice', expires_at: null },
          ],
          ['user-created', [`user:${B.uuid}`], ADMIN, { user_uuid: B.uuid, username: 'bob' }],
          [
            'token-created',
            [`user:${B.uuid}`],
            ADMIN,
            { token_uuid: testToken(B.uuid), name: 'test', username: 'bob', expires_at: null },
          ],
          ['user-updated', [`user:${A.uuid}`], A, { user_uuid: A.uuid, username: 'alice', fields: ['display_name'] }],
          ['token-created', [`user:${A.uuid}`], A, { token_uuid: ci.uuid, name: 'ci', username: 'alice', expires_at: null }],
          ['token-revoked', [`user:${A.uuid}`], A, { token_uuid: ci.uuid, name: 'ci', username: 'alice' }],
          ['token-deleted', [`user:${A.uuid}`], A, { token_uuid: ci.uuid, name: 'ci', username: 'alice' }],
          ['team-created', [T, `user:${A.uuid}`], A, { team_uuid: team.uuid, slug: 'crew', name: 'Crew' }],
          ['team-updated', [T], A, { team_uuid: team.uuid, slug: 'crew', name: 'Crew 2', is_active: true, fields: ['name'] }],
          [
            'member-added',
            [T, `user:${B.uuid}`],
            A,
            { team_uuid: team.uuid, team_slug: 'crew', user_uuid: B.uuid, username: 'bob', role: 'member' },
          ],
          [
            'member-updated',
            [T, `user:${B.uuid}`],
            A,
            {
              team_uuid: team.uuid,
              team_slug: 'crew',
              user_uuid: B.uuid,
              username: 'bob',
              role: 'maintainer',
              previous_role: 'member',
            },
          ],
          [
            'repo-created',
            [R, T],
            A,
            { repo_uuid: repo.uuid, full_name: 'crew/tool', name: 'Tool', visibility: 'private', fork_of_uuid: null },
          ],
          [
            'repo-updated',
            [R, T],
            A,
            { repo_uuid: repo.uuid, full_name: 'crew/tool', fields: ['about'], changes: { about: 'A tool' } },
          ],
          [
            'repo-updated',
            [R, T],
            A,
            {
              repo_uuid: repo.uuid,
              full_name: 'crew/tool',
              fields: ['is_archived'],
              changes: { is_archived: true },
              action: 'archived',
            },
          ],
          [
            'repo-updated',
            [R, T],
            A,
            {
              repo_uuid: repo.uuid,
              full_name: 'crew/tool',
              fields: ['is_archived'],
              changes: { is_archived: false },
              action: 'unarchived',
            },
          ],
          [
            'repo-created',
            [F, `user:${B.uuid}`],
            B,
            { repo_uuid: fork.repo.uuid, full_name: 'bob/tool', name: 'Tool', visibility: 'private', fork_of_uuid: repo.uuid },
          ],
          [
            'fork-created',
            [F, `user:${B.uuid}`, R],
            B,
            {
              fork_uuid: fork.uuid,
              repo_uuid: fork.repo.uuid,
              full_name: 'bob/tool',
              source_repo_uuid: repo.uuid,
              source_full_name: 'crew/tool',
            },
          ],
          [
            'protection-created',
            [R, T],
            A,
            { ...protPayload, branch: 'main', required_approvals: 1, required_status_contexts: [] },
          ],
          [
            'protection-updated',
            [R, T],
            A,
            {
              ...protPayload,
              branch: 'main',
              required_approvals: 2,
              required_status_contexts: [],
              fields: ['required_approvals'],
            },
          ],
          ['protection-approver-added', [R, T], A, { ...protPayload, branch: 'main', user_uuid: B.uuid, username: 'bob' }],
          ['protection-approver-removed', [R, T], A, { ...protPayload, branch: 'main', user_uuid: B.uuid, username: 'bob' }],
          ['protection-deleted', [R, T], A, { ...protPayload, branch: 'main' }],
          ['pull-opened', [R, P], B, { ...pullPayload('Change', 'open'), head_sha: headSha, base_sha: baseSha }],
          [
            'pull-updated',
            [R, P],
            B,
            {
              ...pullPayload('Change 2', 'open'),
              action: 'edited',
              changed: ['title'],
              renamed: { from: 'Change', to: 'Change 2' },
            },
          ],
          ['review-submitted', [R, P, `review:${review.uuid}`], A, reviewPayload],
          ['review-removed', [R, P, `review:${review.uuid}`], A, { ...reviewPayload, removed_at: removedAt }],
          [
            'review-submitted',
            [R, P, `review:${lineReview.uuid}`],
            A,
            { ...reviewPayload, review_uuid: lineReview.uuid, status: 'commented' },
          ],
          ['review-comment-created', [R, P], A, commentPayload(lineComment.uuid, lineReview.uuid, null, 'Nice', 'alice')],
          ['review-comment-created', [R, P], B, commentPayload(lineReply.uuid, null, lineComment.uuid, 'Thanks', 'bob')],
          ['review-comment-edited', [R, P], A, commentPayload(lineComment.uuid, lineReview.uuid, null, 'Nice!', 'alice')],
          ['conversation-resolved', [R, P], B, conversationPayload],
          ['conversation-unresolved', [R, P], B, conversationPayload],
          [
            'review-comment-deleted',
            [R, P],
            B,
            {
              repo_uuid: repo.uuid,
              pull_uuid: pull.uuid,
              pull_number: 1,
              comment_uuid: lineReply.uuid,
              review_uuid: null,
              in_reply_to: lineComment.uuid,
              path: seedPath,
              author_username: 'bob',
            },
          ],
          [
            'branch-pushed',
            [R],
            A,
            {
              repo_uuid: repo.uuid,
              repo: { uuid: repo.uuid, full_name: 'crew/tool' },
              ref: 'refs/heads/main',
              before: baseSha ?? '0'.repeat(40),
              after: pullMergedSha,
              forced: false,
              pusher: { uuid: A.uuid, username: 'alice' },
            },
          ],
          [
            'pull-merged',
            [R, P],
            A,
            {
              ...pullPayload('Change 2', 'merged'),
              head_sha: headSha,
              base_sha: baseSha,
              merge_strategy: 'merge',
              merge_commit_sha: pullMergedSha,
              merged_by_username: 'alice',
            },
          ],
          [
            'branch-pushed',
            [R],
            A,
            {
              repo_uuid: repo.uuid,
              repo: { uuid: repo.uuid, full_name: 'crew/tool' },
              ref: 'refs/tags/v1',
              before: '0'.repeat(40),
              after: pullMergedSha,
              forced: false,
              pusher: { uuid: A.uuid, username: 'alice' },
            },
          ],
          [
            'release-published',
            [R, T],
            A,
            {
              repo_uuid: repo.uuid,
              repo: { uuid: repo.uuid, full_name: 'crew/tool' },
              release: { uuid: release.uuid, tag_name: 'v1', name: 'v1', prerelease: false },
            },
          ],
          [
            'release-updated',
            [R, T],
            A,
            {
              repo_uuid: repo.uuid,
              repo: { uuid: repo.uuid, full_name: 'crew/tool' },
              release: { uuid: release.uuid, tag_name: 'v1', name: 'One', prerelease: true },
            },
          ],
          [
            'release-deleted',
            [R, T],
            A,
            {
              repo_uuid: repo.uuid,
              repo: { uuid: repo.uuid, full_name: 'crew/tool' },
              release: { uuid: release.uuid, tag_name: 'v1', name: 'One', prerelease: true },
            },
          ],
          [
            'member-removed',
            [T, `user:${B.uuid}`],
            A,
            { team_uuid: team.uuid, team_slug: 'crew', user_uuid: B.uuid, username: 'bob', role: 'maintainer', left: false },
          ],
          [
            'repo-updated',
            [F, `user:${B.uuid}`],
            A,
            {
              repo_uuid: fork.repo.uuid,
              fields: ['fork_of_uuid'],
              changes: { fork_of_uuid: null },
              action: 'fork_source_deleted',
              source_repo_uuid: repo.uuid,
            },
          ],
          [
            'repo-deleted',
            [R, T],
            A,
            { repo_uuid: repo.uuid, full_name: 'crew/tool', is_active: true, detached_fork_uuids: [fork.repo.uuid] },
          ],
        ];

        const top = Number(
          (
            await t.deps.db
              .selectFrom('events')
              .select((eb) => eb.fn.max('id').as('id'))
              .where('kind', '!=', 'notification-updated')
              .executeTakeFirst()
          )?.id ?? 0,
        );
        await waitUntil(
          async () =>
            Number(
              (await t.deps.db.selectFrom('notification_dispatch').select('last_event_id').executeTakeFirstOrThrow())
                .last_event_id,
            ) >= top,
          20_000,
          'the notification fan-out',
        );
        const all = await t.deps.db.selectFrom('events').selectAll().where('id', '>', startId).orderBy('id').execute();
        // the notification fan-out writes its events in its own transactions, after the ones it
        // reads (docs/notifications.md): bob's inbox changed with the review and the merge of his pull
        const rows = all.filter((r) => r.kind !== 'notification-updated');
        const inboxRows = all.filter((r) => r.kind === 'notification-updated');
        const bobsPull = await t.deps.db
          .selectFrom('notifications')
          .select('uuid')
          .where('user_uuid', '=', B.uuid)
          .where('subject_uuid', '=', pull.uuid)
          .executeTakeFirst();
        assert.ok(inboxRows.length >= 1 && bobsPull, 'the fan-out wrote notification-updated');
        for (const r of inboxRows)
          assert.deepEqual(
            [r.kind, JSON.parse(r.scopes), r.actor_uuid, JSON.parse(r.payload)],
            [
              'notification-updated',
              [`user:${B.uuid}`],
              null,
              { user_uuid: B.uuid, notification_uuids: [bobsPull!.uuid], change: 'activity' },
            ],
          );
        const actual = rows.map((r) => [
          r.kind,
          JSON.parse(r.scopes) as string[],
          r.actor_uuid === null ? null : { uuid: r.actor_uuid, username: r.actor_username },
          JSON.parse(r.payload) as Record<string, unknown>,
        ]);
        assert.equal(actual.length, expected.length, `kinds written: ${actual.map((a) => a[0]).join(', ')}`);
        for (let i = 0; i < expected.length; i++) assert.deepEqual(actual[i], expected[i], `event ${i + 1} (${expected[i]![0]})`);
        assert.deepEqual(
          [...new Set(expected.map((e) => e[0]))].sort(),
          [...KINDS_COVERED].filter((k) => k !== 'notification-updated').sort(),
          'every kind on main is covered',
        );
      } finally {
        await t.close();
      }
    });
  });
}
