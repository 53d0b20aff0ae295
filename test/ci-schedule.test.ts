import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fireSchedule, followingSlot } from '../src/ci/schedule.ts';
import { cronFiresAt, nextCronTime } from '../src/ci/workflow/triggers.ts';
import { commitFiles, gitClient, makeWorkTree } from './git-fixtures.ts';
import { DIALECTS, startApp, type TestApp } from './helpers.ts';
import { ManualClock } from './timers-helpers.ts';

/**
 * docs/ci.md "Schedules": the cron part (five fields, UTC), then `schedule` runs from the default
 * branch's workflows through the job queue with a manual clock, on both databases, and a slot
 * that makes one run with two instances on one PostgreSQL database.
 */
const next = (cron: string, after: string) => nextCronTime([cron], new Date(after))?.toISOString() ?? null;

describe('CI schedules: cron times (UTC)', () => {
  it('fields, ranges, steps, lists and names', () => {
    assert.equal(next('*/5 * * * *', '2026-11-20T10:05:00.000Z'), '2026-11-20T10:10:00.000Z', 'strictly after');
    assert.equal(next('*/5 * * * *', '2026-11-20T10:04:59.000Z'), '2026-11-20T10:05:00.000Z');
    assert.equal(next('30 2 * * *', '2026-11-20T10:00:00.000Z'), '2026-11-21T02:30:00.000Z');
    assert.equal(next('0 9-17/4 * * *', '2026-11-20T10:00:00.000Z'), '2026-11-20T13:00:00.000Z');
    assert.equal(next('15,45 * * * *', '2026-11-20T10:20:00.000Z'), '2026-11-20T10:45:00.000Z');
    assert.equal(next('0 0 1 JAN *', '2026-11-20T10:00:00.000Z'), '2027-01-01T00:00:00.000Z');
    assert.equal(next('0 12 * * MON', '2026-11-20T10:00:00.000Z'), '2026-11-23T12:00:00.000Z', 'the 20th is a Friday');
    assert.equal(next('0 12 * * 0', '2026-11-20T10:00:00.000Z'), '2026-11-22T12:00:00.000Z', '0 is Sunday');
    assert.equal(next('0 12 * * 7', '2026-11-20T10:00:00.000Z'), '2026-11-22T12:00:00.000Z', '7 is Sunday too');
    assert.equal(next('0 0 29 2 *', '2026-03-01T00:00:00.000Z'), '2028-02-29T00:00:00.000Z', 'a leap day');
  });

  it('the earliest of several crons; none of a cron that never fires', () => {
    assert.equal(
      nextCronTime(['0 3 * * *', '*/30 * * * *'], new Date('2026-11-20T10:10:00.000Z'))?.toISOString(),
      '2026-11-20T10:30:00.000Z',
    );
    assert.equal(nextCronTime(['not a cron'], new Date()), null);
  });

  it('which cron fires at a slot', () => {
    assert.equal(cronFiresAt('*/5 * * * *', Date.parse('2026-11-20T10:05:00.000Z')), true);
    assert.equal(cronFiresAt('*/5 * * * *', Date.parse('2026-11-20T10:06:00.000Z')), false);
    assert.equal(cronFiresAt('0 12 * * FRI', Date.parse('2026-11-20T12:00:00.000Z')), true);
  });

  it('the minimum interval skips slots sooner than it after the last run', () => {
    const t = (iso: string) => Date.parse(iso);
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    const min = 300_000;
    assert.equal(iso(followingSlot(['* * * * *'], t('2026-11-20T10:00:10Z'), null, min)), '2026-11-20T10:01:00.000Z');
    assert.equal(
      iso(followingSlot(['* * * * *'], t('2026-11-20T10:01:00Z'), t('2026-11-20T10:01:00Z'), min)),
      '2026-11-20T10:06:00.000Z',
    );
    assert.equal(
      iso(followingSlot(['*/5 * * * *'], t('2026-11-20T10:05:00Z'), t('2026-11-20T10:05:00Z'), min)),
      '2026-11-20T10:10:00.000Z',
    );
    // missed slots (no server ran) are not made up: the next one after now
    assert.equal(
      iso(followingSlot(['*/5 * * * *'], t('2026-11-20T13:02:00Z'), t('2026-11-20T10:05:00Z'), min)),
      '2026-11-20T13:05:00.000Z',
    );
  });
});

const SCHEDULED = `name: Nightly
on:
  schedule:
    - cron: '*/5 * * * *'
    - cron: '0 3 * * *'
jobs:
  a:
    runs-on: linux
    steps:
      - run: echo \${{ weft.event_name }} \${{ weft.event.schedule }}
`;
const ON_PUSH = 'name: CI\non:\n  push:\n    branches: [nothing]\njobs:\n  a:\n    runs-on: linux\n    steps: [{run: x}]\n';

async function waitFor<T>(what: string, fn: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function scheduledRuns(t: TestApp, token: string) {
  const res = await t.req('GET', '/api/v1/users/alice/repos/app/runs?event=schedule&per_page=100', { token });
  assert.equal(res.status, 200, res.text);
  // biome-ignore lint/suspicious/noExplicitAny: runs are inspected freely
  return res.body.results as any[];
}

/** Lets the instances' job queues look for due work until `fn` holds, then a moment more. */
async function drain(apps: TestApp[], what: string, fn: () => Promise<boolean>): Promise<void> {
  await waitFor(what, async () => {
    for (const a of apps) a.deps.jobs.wake();
    return fn();
  });
}

async function setUp(t: TestApp) {
  const g = await gitClient(t);
  const alice = await t.user('alice');
  const created = await t.req('POST', '/api/v1/users/alice/repos', { token: alice.token, body: { name: 'app', slug: 'app' } });
  assert.equal(created.status, 201, created.text);
  const url = g.url('/git/users/alice/app.git', alice.token);
  const work = await makeWorkTree(g, 'w', [
    { 'README.md': 'hi\n', '.weft/workflows/nightly.yml': SCHEDULED, '.weft/workflows/ci.yml': ON_PUSH },
  ]);
  await g.run(['-C', work, 'push', '-q', url, 'main']);
  return { g, alice, repoUuid: created.body.uuid as string, url, work };
}

for (const dialect of DIALECTS) {
  describe(`CI schedule runs (${dialect})`, () => {
    it('runs a scheduled workflow of the default branch once per slot; a push changes or stops it', async () => {
      const clock = ManualClock.at('2026-11-20T10:00:30.000Z');
      const t = await startApp(dialect, { deps: { clock } });
      const { g, alice, repoUuid, url, work } = await setUp(t);
      try {
        const rows = await t.deps.db.selectFrom('ci_schedules').selectAll().where('repo_uuid', '=', repoUuid).execute();
        assert.deepEqual(
          rows.map((r) => [r.workflow_path, JSON.parse(r.crons), r.next_at, r.actor_uuid]),
          [['.weft/workflows/nightly.yml', ['*/5 * * * *', '0 3 * * *'], '2026-11-20T10:05:00.000Z', alice.uuid]],
        );
        assert.deepEqual(await scheduledRuns(t, alice.token), [], 'nothing before the slot');

        clock.set('2026-11-20T10:05:00.200Z');
        await drain([t], 'the first scheduled run', async () => (await scheduledRuns(t, alice.token)).length === 1);
        const [run] = await scheduledRuns(t, alice.token);
        assert.equal(run.event, 'schedule');
        assert.equal(run.workflow.path, '.weft/workflows/nightly.yml');
        assert.equal(run.head_branch, 'main');
        assert.equal(run.actor.username, 'alice');
        assert.equal(run.status, 'queued');
        const head = (await g.run(['-C', work, 'rev-parse', 'HEAD'])).stdout.trim();
        assert.equal(run.head_sha, head);
        const job = await t.deps.db.selectFrom('ci_jobs').selectAll().where('run_uuid', '=', run.uuid).executeTakeFirstOrThrow();
        assert.equal(job.context, 'Nightly / a');
        const stored = await t.deps.db
          .selectFrom('ci_runs')
          .select(['ref', 'event'])
          .where('uuid', '=', run.uuid)
          .executeTakeFirstOrThrow();
        assert.equal(stored.ref, 'refs/heads/main');

        // the same slot again (a job run twice) does nothing; the next slot is queued
        assert.equal(await fireSchedule(t.deps, repoUuid, '.weft/workflows/nightly.yml', '2026-11-20T10:05:00.000Z'), null);
        const row = await t.deps.db
          .selectFrom('ci_schedules')
          .selectAll()
          .where('repo_uuid', '=', repoUuid)
          .executeTakeFirstOrThrow();
        assert.equal(row.next_at, '2026-11-20T10:10:00.000Z');
        assert.equal(row.last_slot, '2026-11-20T10:05:00.000Z');

        clock.set('2026-11-20T10:09:00.000Z');
        t.deps.jobs.wake();
        await new Promise((r) => setTimeout(r, 500));
        assert.equal((await scheduledRuns(t, alice.token)).length, 1, 'not before the next slot');
        clock.set('2026-11-20T10:10:00.100Z');
        await drain([t], 'the second scheduled run', async () => (await scheduledRuns(t, alice.token)).length === 2);

        // a push to another branch changes nothing; a push to the default branch changes the cron
        await commitFiles(g, work, [{ '.weft/workflows/nightly.yml': SCHEDULED.replace("'*/5 * * * *'", "'0 * * * *'") }]);
        await g.run(['-C', work, 'push', '-q', url, 'HEAD:other']);
        let r2 = await t.deps.db
          .selectFrom('ci_schedules')
          .selectAll()
          .where('repo_uuid', '=', repoUuid)
          .executeTakeFirstOrThrow();
        assert.equal(r2.next_at, '2026-11-20T10:15:00.000Z');
        await g.run(['-C', work, 'push', '-q', url, 'HEAD:main']);
        r2 = await t.deps.db.selectFrom('ci_schedules').selectAll().where('repo_uuid', '=', repoUuid).executeTakeFirstOrThrow();
        assert.deepEqual(JSON.parse(r2.crons), ['0 * * * *', '0 3 * * *']);
        assert.equal(r2.next_at, '2026-11-20T11:00:00.000Z');
        // the stale 10:15 job finds another slot and does nothing
        clock.set('2026-11-20T10:15:00.100Z');
        assert.equal(await fireSchedule(t.deps, repoUuid, '.weft/workflows/nightly.yml', '2026-11-20T10:15:00.000Z'), null);

        // removing the workflow stops its schedule
        await g.run(['-C', work, 'rm', '-q', '.weft/workflows/nightly.yml']);
        await g.run(['-C', work, 'commit', '-q', '-m', 'no nightly']);
        await g.run(['-C', work, 'push', '-q', url, 'HEAD:main']);
        assert.equal(
          (await t.deps.db.selectFrom('ci_schedules').selectAll().where('repo_uuid', '=', repoUuid).execute()).length,
          0,
        );
        clock.set('2026-11-20T11:00:00.100Z');
        assert.equal(await fireSchedule(t.deps, repoUuid, '.weft/workflows/nightly.yml', '2026-11-20T11:00:00.000Z'), null);
        t.deps.jobs.wake();
        await new Promise((r) => setTimeout(r, 500));
        assert.equal((await scheduledRuns(t, alice.token)).length, 2);
      } finally {
        g.cleanup();
        await t.close();
      }
    });

    const oneProcessOnly = dialect === 'sqlite' ? 'an SQLite file serves one server process' : false;
    it('two instances on one database make one run per slot', { skip: oneProcessOnly }, async () => {
      const clock = ManualClock.at('2026-11-20T10:00:30.000Z');
      const a = await startApp(dialect, { deps: { clock } });
      const b = await startApp(dialect, { store: a.store, deps: { clock } });
      const { g, alice, repoUuid } = await setUp(a);
      try {
        for (const [i, slot] of ['10:05', '10:10', '10:15', '10:20'].entries()) {
          clock.set(`2026-11-20T${slot}:00.050Z`);
          await drain([a, b], `run ${i + 1}`, async () => (await scheduledRuns(a, alice.token)).length >= i + 1);
          // both instances fire the same slot at once: one of them takes it
          const path = '.weft/workflows/nightly.yml';
          const again = await Promise.all([
            fireSchedule(a.deps, repoUuid, path, `2026-11-20T${slot}:00.000Z`),
            fireSchedule(b.deps, repoUuid, path, `2026-11-20T${slot}:00.000Z`),
          ]);
          assert.deepEqual(again, [null, null], 'the slot was taken already');
        }
        // a slot raced by both instances directly, before either queue ran it
        clock.set('2026-11-20T10:25:00.050Z');
        const raced = await Promise.all([
          fireSchedule(a.deps, repoUuid, '.weft/workflows/nightly.yml', '2026-11-20T10:25:00.000Z'),
          fireSchedule(b.deps, repoUuid, '.weft/workflows/nightly.yml', '2026-11-20T10:25:00.000Z'),
        ]);
        assert.equal(raced.filter((x) => x !== null).length, 1, 'one instance took the slot');
        for (const x of [a, b]) x.deps.jobs.wake();
        await new Promise((r) => setTimeout(r, 1000));
        const runs = await scheduledRuns(a, alice.token);
        assert.equal(runs.length, 5, 'one run per slot');
        assert.deepEqual(
          runs.map((r) => r.number).sort((x: number, y: number) => x - y),
          [...new Set(runs.map((r) => r.number))].sort((x: number, y: number) => x - y),
        );
      } finally {
        g.cleanup();
        await b.close();
        await a.close();
      }
    });
  });
}
