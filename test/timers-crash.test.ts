/**
 * A real crash: a server process (dist/main.js) is killed with SIGKILL while it holds a batch of
 * claimed timers inside its firing transaction, then restarted on the same database. Each
 * occurrence fires exactly once: not twice, not never (README "Timers").
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { type Database, openDatabase } from '../src/db/index.ts';
import { DIALECTS, freshStore } from './helpers.ts';
import { type StoreHandle, spawnWeft, storeEnv } from './server-process.ts';
import { firedTimerUuids, insertDueTimers, insertUserRow } from './timers-helpers.ts';

const N = 60;

/** Starts the built server (dist/main.js) on the store, on any free port. */
function startServer(store: StoreHandle, env: Record<string, string>): ChildProcess {
  return spawnWeft('main', [], { PORT: '0', LOG_LEVEL: 'warn', ...storeEnv(store), ...env });
}

function waitForStderr(child: ChildProcess, pattern: RegExp, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${ms} ms; stderr: ${seen.slice(-2000)}`)), ms);
    child.stderr!.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (pattern.test(seen)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}) before ${pattern}; stderr: ${seen.slice(-2000)}`));
    });
  });
}

async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

for (const dialect of DIALECTS) {
  describe(`timer firing survives SIGKILL of a real server process (${dialect})`, () => {
    let store: StoreHandle;
    let database: Database;
    const children: ChildProcess[] = [];

    before(async () => {
      store = await freshStore(dialect);
      database = await openDatabase({ url: store.url, dataDir: store.dataDir, schema: store.schema });
    });
    after(async () => {
      for (const c of children) await stopChild(c, 'SIGKILL');
      await database.close();
      await store.drop();
    });

    const firedUuids = () => firedTimerUuids(database.db);

    it('fires each occurrence claimed by the killed process exactly once after restart', { timeout: 90_000 }, async () => {
      const { db } = database;
      const owner = await insertUserRow(db, 'crash');
      const due = new Date(Date.now() - 1000).toISOString();
      const timers = await insertDueTimers(
        db,
        owner,
        N,
        () => due,
        (i) => `crash ${i} @crash`,
      );

      // First process: claims the due batch, then holds its firing transaction open until killed.
      const first = startServer(store, { WEFT_TEST_TIMER_HOLD_MS: '60000' });
      children.push(first);
      await waitForStderr(first, new RegExp(`holding ${N} claimed timers`), 30_000);
      await stopChild(first, 'SIGKILL');
      assert.equal(first.signalCode, 'SIGKILL');
      assert.deepEqual(await firedUuids(), [], 'the killed transaction fired nothing');
      const untouched = await db.selectFrom('timers').select(['run_count', 'status', 'next_run_at']).execute();
      for (const row of untouched) assert.deepEqual(row, { run_count: 0, status: 'active', next_run_at: due });

      // Second process: the occurrences are still due and fire once.
      const second = startServer(store, {});
      children.push(second);
      const deadline = Date.now() + 30_000;
      let fired: string[] = [];
      while (Date.now() < deadline && fired.length < N) {
        await new Promise((r) => setTimeout(r, 100));
        fired = await firedUuids();
      }
      await new Promise((r) => setTimeout(r, 500)); // a second firing, were there one, would show now
      await stopChild(second, 'SIGTERM');
      assert.equal(second.exitCode, 0);
      fired = await firedUuids();
      assert.equal(fired.length, N);
      assert.deepEqual(new Set(fired), new Set(timers));
      const rows = await db.selectFrom('timers').select(['run_count', 'status', 'schedule_kind', 'last_run_at']).execute();
      for (const row of rows) {
        assert.equal(row.run_count, 1);
        assert.equal(row.status, row.schedule_kind === 'once' ? 'completed' : 'active');
        assert.notEqual(row.last_run_at, null);
      }
    });
  });
}
