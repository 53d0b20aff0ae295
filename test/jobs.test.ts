import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Database, openDatabase } from '../src/db/index.ts';
import { withTransaction } from '../src/db/tx.ts';
import { DbJobQueue, type JobQueueOptions } from '../src/jobs/queue.ts';
import type { Clock } from '../src/time.ts';
import { waitUntil } from './common.ts';
import { DIALECTS, type DialectName, freshStore } from './helpers.ts';

/** The job queue on a database of its own (no app): each test opens and drops one. */
async function withDb(dialect: DialectName, fn: (database: Database) => Promise<void>): Promise<void> {
  const store = await freshStore(dialect);
  const database = await openDatabase({ url: store.url, dataDir: store.dataDir, schema: store.schema });
  try {
    await fn(database);
  } finally {
    await database.close();
    await store.drop();
  }
}

function queue(database: Database, opts: Partial<JobQueueOptions> = {}): DbJobQueue {
  return new DbJobQueue(database.db, { dialect: database.dialect, clock: { now: () => new Date() }, pollMs: 50, ...opts });
}

const jobRows = (database: Database) => database.db.selectFrom('jobs').selectAll().orderBy('id').execute();

/** A clock the test moves by hand. */
function manualClock(start = Date.parse('2030-01-01T00:00:00.000Z')): Clock & { advance(ms: number): void } {
  let t = start;
  return { now: () => new Date(t), advance: (ms) => (t += ms) };
}

for (const dialect of DIALECTS) {
  describe(`DbJobQueue (${dialect})`, () => {
    test('a job enqueued in a transaction that rolls back leaves nothing and never runs', async () => {
      await withDb(dialect, async (database) => {
        const q = queue(database);
        let runs = 0;
        q.register('k', async () => void runs++);
        q.start();
        await assert.rejects(
          withTransaction(database.db, async (tx) => {
            await q.enqueue(tx.trx, { kind: 'k', payload: { a: 1 } });
            throw new Error('roll back');
          }),
          /roll back/,
        );
        await sleep(150);
        assert.deepEqual(await jobRows(database), []);
        assert.equal(runs, 0);
        await q.stop();
      });
    });

    test('a committed job runs exactly once with its payload, then is deleted', async () => {
      await withDb(dialect, async (database) => {
        const q = queue(database);
        const seen: unknown[] = [];
        q.register('k', async (payload, job) => void seen.push({ payload, attempts: job.attempts }));
        q.start();
        await withTransaction(database.db, (tx) => q.enqueue(tx.trx, { kind: 'k', payload: { n: 7, s: 'x' } }));
        await waitUntil(() => seen.length === 1, 10_000, 'the job to run');
        await waitUntil(async () => (await jobRows(database)).length === 0, 10_000, 'the row to go');
        await sleep(200);
        assert.deepEqual(seen, [{ payload: { n: 7, s: 'x' }, attempts: 1 }]);
        await q.stop();
      });
    });

    test('a dedupe key still queued makes a second enqueue a no-op', async () => {
      await withDb(dialect, async (database) => {
        const q = queue(database);
        await q.enqueue(database.db, { kind: 'k', payload: { n: 1 }, dedupeKey: 'same' });
        await q.enqueue(database.db, { kind: 'k', payload: { n: 2 }, dedupeKey: 'same' });
        const rows = await jobRows(database);
        assert.equal(rows.length, 1);
        assert.equal(JSON.parse(rows[0]!.payload).n, 1);
      });
    });

    test('a failing job is retried with exponential back-off, then succeeds', async () => {
      await withDb(dialect, async (database) => {
        const clock = manualClock();
        const errors: string[] = [];
        const q = queue(database, { clock, onError: (err) => errors.push(String((err as Error).message)) });
        let calls = 0;
        q.register('flaky', async () => {
          calls++;
          if (calls <= 2) throw new Error(`boom ${calls}`);
        });
        await q.enqueue(database.db, { kind: 'flaky', payload: {} });
        q.start();
        await waitUntil(async () => (await jobRows(database))[0]?.last_error === 'boom 1', 10_000, 'the first failure');
        let [row] = await jobRows(database);
        assert.equal(row!.attempts, 1);
        assert.equal(row!.locked_until, null);
        assert.equal(row!.run_at, new Date(clock.now().getTime() + 1000).toISOString());
        // Not due yet: waking does not run it again.
        q.wake();
        await sleep(150);
        assert.equal(calls, 1);

        clock.advance(1000);
        q.wake();
        await waitUntil(async () => (await jobRows(database))[0]?.last_error === 'boom 2', 10_000, 'the second failure');
        [row] = await jobRows(database);
        assert.equal(row!.attempts, 2);
        assert.equal(row!.run_at, new Date(clock.now().getTime() + 2000).toISOString(), 'the second back-off doubles');

        clock.advance(2000);
        q.wake();
        await waitUntil(async () => (await jobRows(database)).length === 0, 10_000, 'the job to succeed');
        assert.equal(calls, 3);
        assert.deepEqual(errors, ['boom 1', 'boom 2']);
        await q.stop();
      });
    });

    test('a job that fails on its last attempt is kept as failed and frees its dedupe key', async () => {
      await withDb(dialect, async (database) => {
        const q = queue(database, { maxAttempts: 1, onError: () => {} });
        q.register('bad', async () => {
          throw new Error('always');
        });
        await q.enqueue(database.db, { kind: 'bad', payload: {}, dedupeKey: 'key' });
        q.start();
        await waitUntil(async () => (await jobRows(database))[0]?.failed_at != null, 10_000, 'the job to give up');
        await q.stop();
        const [row] = await jobRows(database);
        assert.equal(row!.dedupe_key, null);
        assert.equal(row!.last_error, 'always');
        await q.enqueue(database.db, { kind: 'bad', payload: {}, dedupeKey: 'key' });
        assert.equal((await jobRows(database)).length, 2, 'the same work can be asked for again');
      });
    });

    test('a job whose lease expired (its worker died) is taken over by another worker', async () => {
      await withDb(dialect, async (database) => {
        // A worker that claims and then hangs, as if it crashed holding the job.
        const stuck = queue(database, { leaseMs: 300 });
        let release!: () => void;
        const hung = new Promise<void>((r) => (release = r));
        let stuckRuns = 0;
        stuck.register('k', async () => {
          stuckRuns++;
          await hung;
        });
        await stuck.enqueue(database.db, { kind: 'k', payload: {} });
        stuck.start();
        await waitUntil(() => stuckRuns === 1, 10_000, 'the first claim');

        const rescuer = queue(database);
        let rescued = 0;
        rescuer.register('k', async (_p, job) => {
          rescued++;
          assert.equal(job.attempts, 2);
        });
        rescuer.start();
        await sleep(100);
        assert.equal(rescued, 0, 'not while the lease holds');
        await waitUntil(() => rescued === 1, 10_000, 'the takeover');
        await waitUntil(async () => (await jobRows(database)).length === 0, 10_000, 'the row to go');
        release();
        await stuck.stop();
        await rescuer.stop();
        assert.equal(stuckRuns, 1);
      });
    });

    test('a kind registered with holdLease keeps its job past the lease while it runs, then lets a dead worker go', async () => {
      await withDb(dialect, async (database) => {
        const slow = queue(database, { leaseMs: 300 });
        let release!: () => void;
        const hung = new Promise<void>((r) => (release = r));
        let slowRuns = 0;
        slow.register(
          'k',
          async () => {
            slowRuns++;
            await hung;
          },
          { holdLease: true },
        );
        await slow.enqueue(database.db, { kind: 'k', payload: {} });
        slow.start();
        await waitUntil(() => slowRuns === 1, 10_000, 'the first claim');

        const other = queue(database);
        let taken = 0;
        other.register('k', async () => void taken++, { holdLease: true });
        other.start();
        // Four leases long: without renewal the other worker would have taken the job over.
        await sleep(1200);
        assert.equal(taken, 0, 'not taken over while its worker renews the lease');
        const [held] = await jobRows(database);
        assert.ok(held!.locked_until! > new Date().toISOString(), 'the lease was moved on');
        release();
        await waitUntil(async () => (await jobRows(database)).length === 0, 10_000, 'the row to go');
        assert.equal(taken, 0);
        assert.equal(slowRuns, 1);
        await other.stop();
        await slow.stop();

        // A worker that stops renewing (as a killed one does) loses the job when its lease runs out.
        let release2!: () => void;
        const hung2 = new Promise<void>((r) => (release2 = r));
        let stuck = 0;
        const dying = queue(database, { leaseMs: 300 });
        dying.register('j', async () => {
          stuck++;
          await hung2;
        });
        await dying.enqueue(database.db, { kind: 'j', payload: {} });
        dying.start();
        await waitUntil(() => stuck === 1, 10_000, 'the claim');
        const rescuer = queue(database);
        let rescued = 0;
        rescuer.register('j', async () => void rescued++, { holdLease: true });
        rescuer.start();
        await waitUntil(() => rescued === 1, 10_000, 'the takeover');
        release2();
        await dying.stop();
        await rescuer.stop();
      });
    });

    test('a worker whose lease was taken over does not delete or unlock the job when it finishes late', async () => {
      await withDb(dialect, async (database) => {
        const late = queue(database, { leaseMs: 200, onError: () => {} });
        let release!: () => void;
        const hung = new Promise<void>((r) => (release = r));
        let lateRuns = 0;
        late.register('k', async () => {
          lateRuns++;
          await hung;
          throw new Error('late failure');
        });
        await late.enqueue(database.db, { kind: 'k', payload: {} });
        late.start();
        await waitUntil(() => lateRuns === 1, 10_000, 'the first claim');
        await sleep(250);
        // Another worker's lease, as a takeover writes it.
        const theirs = new Date(Date.now() + 60_000).toISOString();
        await database.db.updateTable('jobs').set({ locked_until: theirs, attempts: 2 }).execute();
        release();
        await late.stop();
        const [row] = await jobRows(database);
        assert.equal(row!.locked_until, theirs, 'the late failure left the other lease alone');
        assert.equal(row!.last_error, null);
      });
    });

    test('two queues on one database run each of many jobs exactly once', async () => {
      await withDb(dialect, async (database) => {
        // On PostgreSQL the second queue has its own pool, as a second instance would.
        const second =
          dialect === 'postgres'
            ? await openDatabase({
                url: process.env.TEST_DATABASE_URL!,
                dataDir: '',
                schema: await schemaOf(database),
                migrate: false,
              })
            : database;
        const runs = new Map<number, number>();
        const mk = (db: Database) => {
          const q = queue(db, { batchSize: 5 });
          q.register('n', async (payload) => {
            const n = payload.n as number;
            runs.set(n, (runs.get(n) ?? 0) + 1);
            await sleep(1);
          });
          return q;
        };
        const a = mk(database);
        const b = mk(second);
        const total = 300;
        for (let i = 0; i < total; i += 50) {
          await database.db
            .insertInto('jobs')
            .values(
              Array.from({ length: 50 }, (_, j) => ({
                kind: 'n',
                payload: JSON.stringify({ n: i + j }),
                dedupe_key: null,
                run_at: new Date(0).toISOString(),
                locked_until: null,
                attempts: 0,
                last_error: null,
                failed_at: null,
                created_at: new Date().toISOString(),
              })),
            )
            .execute();
        }
        a.start();
        b.start();
        await waitUntil(async () => (await jobRows(database)).length === 0, 60_000, 'every job to run');
        await a.stop();
        await b.stop();
        if (second !== database) await second.close();
        assert.equal(runs.size, total);
        assert.deepEqual(
          [...runs].filter(([, count]) => count !== 1),
          [],
          'no job ran twice',
        );
      });
    });
  });
}

async function schemaOf(database: Database): Promise<string> {
  const { rows } = await database.pool!.query<{ s: string }>('select current_schema() as s');
  return rows[0]!.s;
}
