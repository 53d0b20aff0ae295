import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { seedRepo, seedTeam } from './fixtures.ts';
import { seedCommit } from './git-fixtures.ts';
import { DIALECTS, isErrorBody, startApp, type TestApp } from './helpers.ts';
import { q, whileUncommitted } from './locks.ts';

/**
 * Writes made through `command` (src/core/command.ts) racing a member removal or an archive that
 * another connection holds uncommitted (test/locks.ts, as in access-race.test.ts): the write's
 * decision is made inside its transaction on locked rows, so it sees the committed change and is
 * refused, and nothing changes. Merge decided its access before its claim once; attach and detach
 * read the repo without a lock; a reply edit read it twice.
 */

const base = '/api/v1/teams/crew/repos/tool';

/** alice owns the team, bob is a member (write level) of its private repo `tool`. */
async function world(t: TestApp) {
  const alice = await t.user('alice');
  const bob = await t.user('bob');
  const team = await seedTeam(t, 'crew', [
    { uuid: alice.uuid, role: 'owner' },
    { uuid: bob.uuid, role: 'member' },
  ]);
  const repo = await seedRepo(t, { kind: 'team', uuid: team.uuid }, 'tool');
  const removeBob = `delete from team_members where team_uuid = ${q(team.uuid)} and user_uuid = ${q(bob.uuid)}`;
  const archive = `update repos set is_archived = 1 where uuid = ${q(repo.uuid)}`;
  return { alice, bob, team, repo, removeBob, archive };
}

/** A pull whose source branch holds a commit to land (a merge of nothing is refused before its claim). */
async function openPull(t: TestApp, token: string) {
  await seedCommit(t, (await t.req('GET', base)).body.uuid, 'feature/a', { onto: 'main' });
  const res = await t.req('POST', `${base}/pulls`, {
    token,
    body: { title: 'Change', body: '', source_branch: 'feature/a', target_branch: 'main' },
  });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function threadWithUpload(t: TestApp, token: string) {
  const thread = await t.req('POST', `${base}/threads`, { token, body: { title: 'Topic', body: 'hello' } });
  assert.equal(thread.status, 201, thread.text);
  const upload = await t.req('POST', `${base}/uploads?filename=a.txt`, {
    token,
    rawBody: `race ${Math.random()}`,
    headers: { 'content-type': 'text/plain' },
  });
  assert.equal(upload.status, 201, upload.text);
  return { thread: thread.body, upload: upload.body };
}

function assertRefused(res: { status: number; text: string; body: any }, change: 'removal' | 'archive') {
  if (change === 'removal') {
    // the repo is private: a former member no longer sees it
    assert.equal(res.status, 404, res.text);
    assert.ok(isErrorBody(res.body, 'not_found'));
    assert.match(res.body.detail, /Repo/);
  } else {
    assert.equal(res.status, 403, res.text);
    assert.ok(isErrorBody(res.body, 'repo_archived'));
  }
}

for (const dialect of DIALECTS) {
  describe(`commands racing a member removal or an archive (${dialect})`, () => {
    for (const change of ['removal', 'archive'] as const) {
      test(`a merge racing the ${change} is refused and the pull stays open`, async () => {
        const t = await startApp(dialect);
        try {
          const w = await world(t);
          await openPull(t, w.alice.token);
          const res = await whileUncommitted(t, w.bob.token, [change === 'removal' ? w.removeBob : w.archive], () =>
            t.req('POST', `${base}/pulls/1/merge`, { token: w.bob.token, body: {} }),
          );
          assertRefused(res, change);
          const pull = await t.deps.db.selectFrom('pulls').selectAll().executeTakeFirstOrThrow();
          assert.equal(pull.status, 'open');
          assert.equal(pull.merge_pending, 0);
          const merged = await t.deps.db.selectFrom('events').select('id').where('kind', '=', 'pull-merged').execute();
          assert.deepEqual(merged, []);
        } finally {
          await t.close();
        }
      });

      test(`an attach racing the ${change} is refused and nothing is attached`, async () => {
        const t = await startApp(dialect);
        try {
          const w = await world(t);
          const { upload } = await threadWithUpload(t, w.bob.token);
          const res = await whileUncommitted(t, w.bob.token, [change === 'removal' ? w.removeBob : w.archive], () =>
            t.req('POST', `${base}/threads/1/attachments`, { token: w.bob.token, body: { upload_uuid: upload.uuid } }),
          );
          assertRefused(res, change);
          assert.deepEqual(await t.deps.db.selectFrom('attachments').select('uuid').execute(), []);
        } finally {
          await t.close();
        }
      });

      test(`a detach racing the ${change} is refused and the attachment stays`, async () => {
        const t = await startApp(dialect);
        try {
          const w = await world(t);
          const { upload } = await threadWithUpload(t, w.bob.token);
          const attached = await t.req('POST', `${base}/threads/1/attachments`, {
            token: w.bob.token,
            body: { upload_uuid: upload.uuid },
          });
          assert.equal(attached.status, 201, attached.text);
          const res = await whileUncommitted(t, w.bob.token, [change === 'removal' ? w.removeBob : w.archive], () =>
            t.req('DELETE', `${base}/threads/1/attachments/${upload.uuid}`, { token: w.bob.token }),
          );
          assertRefused(res, change);
          assert.equal((await t.deps.db.selectFrom('attachments').select('uuid').execute()).length, 1);
        } finally {
          await t.close();
        }
      });

      test(`a reply edit racing the ${change} is refused and the reply is unchanged`, async () => {
        const t = await startApp(dialect);
        try {
          const w = await world(t);
          await threadWithUpload(t, w.bob.token);
          const reply = await t.req('POST', `${base}/threads/1/replies`, { token: w.bob.token, body: { body: 'first' } });
          assert.equal(reply.status, 201, reply.text);
          const res = await whileUncommitted(t, w.bob.token, [change === 'removal' ? w.removeBob : w.archive], () =>
            t.req('PATCH', `${base}/threads/1/replies/1`, { token: w.bob.token, body: { body: 'second' } }),
          );
          assertRefused(res, change);
          const row = await t.deps.db.selectFrom('replies').select(['body', 'version']).executeTakeFirstOrThrow();
          assert.deepEqual(row, { body: 'first', version: 1 });
        } finally {
          await t.close();
        }
      });
    }
  });
}
