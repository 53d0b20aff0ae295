import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fanoutSettled, type Person, waitUntil } from './common.ts';
import { commitFiles, type GitClient, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, type Res, startApp, type TestApp } from './helpers.ts';
import { freePort } from './server-process.ts';
import { header, Inbox } from './smtp.ts';

const CI = `name: CI
on:
  push:
    branches: [main]
  pull_request:
    types: [opened, synchronize]
jobs:
  build:
    runs-on: linux
    steps:
      - run: echo build
`;

const ok = (res: Res, status = 200): Res => {
  assert.equal(res.status, status, `${status} expected: ${res.text}`);
  return res;
};

type Note = {
  uuid: string;
  subject: { kind: string; repo: string; number: number; title: string; url: string };
  reason: string;
  reasons: string[];
};

/** docs/notifications.md "CI runs": a failing run, or a passing one after a failing one, notifies its actor (reason `ci`). */
for (const dialect of DIALECTS) {
  describe(`notifications of CI runs (${dialect})`, () => {
    let t: TestApp;
    let g: GitClient;
    let alice: Person;
    let bob: Person;
    let secret: string;
    let work: string;
    let smtp: Inbox;
    const api = '/api/v1/users/alice/repos/app';
    const remote = () => g.url('/git/users/alice/app.git', alice.token);

    const runnerCall = (path: string, body: unknown) =>
      t.req('POST', `/api/v1/runner${path}`, { token: null, body, headers: { 'x-weft-runner-secret': secret } });
    /** Every queued job finished with `conclusion`, through the runner protocol. */
    const finishAll = async (conclusion: 'success' | 'failure') => {
      let done = 0;
      await waitUntil(
        async () => {
          const polled = ok(await runnerCall('/poll', { free: 4, running: [] })).body as { jobs: Array<{ uuid: string }> };
          for (const job of polled.jobs) {
            assert.equal((await runnerCall(`/jobs/${job.uuid}/finish`, { conclusion })).status, 204);
            done++;
          }
          return done > 0;
        },
        20_000,
        'a queued job',
      );
    };
    const runs = async () => t.deps.db.selectFrom('ci_runs').selectAll().orderBy('number').execute();
    const settled = () => fanoutSettled(t);
    const ciOf = async (who: Person): Promise<Note[]> =>
      (
        ok(await t.req('GET', '/api/v1/notifications?state=all&per_page=100', { token: who.token })).body.results as Note[]
      ).filter((n) => n.reasons.includes('ci'));
    const push = async (file: string) => {
      await commitFiles(g, work, [{ [file]: `${file}\n` }]);
      await g.run(['-C', work, 'push', '-q', remote(), 'HEAD']);
    };

    before(async () => {
      const port = await freePort();
      smtp = await new Inbox(port).start();
      t = await startApp(dialect, {
        config: { smtpUrl: `smtp://127.0.0.1:${port}`, mailFrom: 'Weft <weft@example.com>', mailBatchMs: 1000 },
      });
      g = await gitClient(t);
      alice = await t.user('alice');
      bob = await t.user('bob');
      ok(
        await t.req('POST', '/api/v1/users/alice/repos', {
          token: alice.token,
          body: { name: 'app', slug: 'app', visibility: 'public' },
        }),
        201,
      );
      const reg = await t.req('POST', `${api}/runners/registration-token`, { token: alice.token });
      const r = await t.req('POST', '/api/v1/runner/register', {
        token: null,
        body: { token: reg.body.token, name: 'r1', labels: ['linux'] },
      });
      assert.equal(r.status, 201, r.text);
      secret = r.body.secret;
      // bob watches the repo: he sees its activity, never alice's runs
      ok(await t.req('PUT', `${api}/subscription`, { token: bob.token, body: { level: 'watching' } }));
      work = await makeWorkTree(g, 'w', [{ 'README.md': 'hi\n', '.weft/workflows/ci.yml': CI }]);
      await g.run(['-C', work, 'push', '-q', remote(), 'main']);
    });
    after(async () => {
      g.cleanup();
      await t.close();
      await smtp.stop();
    });

    it('a failing push run notifies the pusher once; passing after failing notifies; passing after passing does not', async () => {
      // run 1 fails
      await finishAll('failure');
      await settled();
      const [run1] = await runs();
      assert.equal(run1!.conclusion, 'failure');
      let mine = await ciOf(alice);
      assert.equal(mine.length, 1, JSON.stringify(mine));
      assert.equal(mine[0]!.reason, 'ci');
      assert.deepEqual(mine[0]!.reasons, ['ci']);
      assert.equal(mine[0]!.subject.kind, 'run');
      assert.equal(mine[0]!.subject.number, run1!.number);
      assert.equal(mine[0]!.subject.title, 'Workflow CI failed on branch main');
      assert.match(mine[0]!.subject.url, new RegExp(`/users/alice/app/runs/${run1!.number}$`));
      const row = await t.deps.db.selectFrom('notifications').selectAll().where('subject_uuid', '=', run1!.uuid).execute();
      assert.equal(row.length, 1, 'once');
      assert.equal(row[0]!.user_uuid, alice.uuid);
      // mailed as the other reasons are (instant by default)
      await waitUntil(() => smtp.to('alice@example.com').length >= 1, 20_000, 'the mail');
      const [m] = smtp.to('alice@example.com');
      assert.equal(m!.mail.subject, `[alice/app] Workflow CI failed on branch main (run ${run1!.number})`);
      assert.equal(header(m!, 'x-weft-reason'), 'ci');
      assert.match(m!.mail.text ?? '', new RegExp(`/users/alice/app/runs/${run1!.number}`));

      // run 2 passes after the failure: notified
      await push('b.txt');
      await finishAll('success');
      await settled();
      const run2 = (await runs())[1]!;
      assert.equal(run2.conclusion, 'success');
      mine = await ciOf(alice);
      assert.equal(mine.length, 2);
      const passed = mine.find((n) => n.subject.number === run2.number);
      assert.ok(passed, 'the passing run after a failing one');
      assert.equal(passed.subject.title, 'Workflow CI succeeded on branch main');

      // run 3 passes after a pass: nothing; run 4 fails: notified (so run 3 was read before it)
      await push('c.txt');
      await finishAll('success');
      await push('d.txt');
      await finishAll('failure');
      await settled();
      const all = await runs();
      assert.deepEqual(
        all.map((r) => r.conclusion),
        ['failure', 'success', 'success', 'failure'],
      );
      mine = await ciOf(alice);
      assert.deepEqual(mine.map((n) => n.subject.number).sort(), [all[0]!.number, all[1]!.number, all[3]!.number].sort());
      assert.equal(
        (await t.deps.db.selectFrom('notifications').select('uuid').where('subject_uuid', '=', all[2]!.uuid).execute()).length,
        0,
      );

      // bob watches the repo: not notified of alice's runs
      assert.deepEqual(await ciOf(bob), []);
      assert.equal(
        (
          await t.deps.db
            .selectFrom('notifications')
            .select('uuid')
            .where('user_uuid', '=', bob.uuid)
            .where('subject_kind', '=', 'run')
            .execute()
        ).length,
        0,
      );
    });

    it("a pull's run notifies with the pull as subject", async () => {
      await g.run(['-C', work, 'checkout', '-q', '-b', 'feat']);
      await commitFiles(g, work, [{ 'f.txt': 'f\n' }]);
      await g.run(['-C', work, 'push', '-q', remote(), 'feat']);
      const pull = ok(
        await t.req('POST', `${api}/pulls`, {
          token: alice.token,
          body: { title: 'Feat', body: '', source_branch: 'feat', target_branch: 'main' },
        }),
        201,
      ).body as { number: number };
      await finishAll('failure');
      await settled();
      const run = (await runs()).find((r) => r.pull_number === pull.number);
      assert.ok(run);
      assert.equal(run.conclusion, 'failure');
      const notes = (await ciOf(alice)).filter((n) => n.subject.kind === 'pull');
      assert.equal(notes.length, 1, JSON.stringify(notes));
      assert.equal(notes[0]!.subject.number, pull.number);
      assert.equal(notes[0]!.subject.title, 'Feat');
      assert.equal(notes[0]!.reason, 'ci');
      assert.deepEqual(await ciOf(bob), []);
    });
  });
}
