/**
 * The SQLite background writer (docs/architecture.md "One store, two dialects"): once its worker
 * thread runs, the WAL checkpoints happen there, not in a commit on the server's thread.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../src/db/index.ts';
import { startApp } from './helpers.ts';

describe('the SQLite writer thread', () => {
  const dir = mkdtempSync(join(tmpdir(), 'weft-writer-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('takes the WAL checkpoints off the server connection once it runs', async () => {
    const database = await openDatabase({ url: null, dataDir: dir });
    try {
      const handle = database.sqlite!;
      assert.equal(handle.pragma('wal_autocheckpoint', { simple: true }), 1000);
      await sql`select 1`.execute(database.writer);
      assert.equal(handle.pragma('wal_autocheckpoint', { simple: true }), 0, 'the server connection no longer checkpoints');
      const file = join(dir, 'weft.sqlite');
      const before = statSync(file).size;
      await sql`create table filler (b blob)`.execute(database.db);
      for (let i = 0; i < 8; i++) await sql`insert into filler values (randomblob(262144))`.execute(database.db);
      // the writes are in the WAL; the worker's timer copies them into the database file
      const deadline = Date.now() + 5000;
      while (statSync(file).size < before + 2 * 1024 * 1024 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      assert.ok(statSync(file).size >= before + 2 * 1024 * 1024, 'checkpointed into the database file by the worker');
      // and a commit on the writer still works, with its own checkpoint after it
      await database.writer.transaction().execute(async (trx) => {
        await sql`insert into filler values (randomblob(16))`.execute(trx);
      });
      const n = await sql<{ n: number }>`select count(*) as n from filler`.execute(database.db);
      assert.equal(Number(n.rows[0]!.n), 9);
    } finally {
      await database.close();
    }
  });

  it('a server takes its checkpoints off the main connection from the start, before any large write', async () => {
    const t = await startApp('sqlite');
    try {
      assert.equal(t.deps.database.sqlite!.pragma('wal_autocheckpoint', { simple: true }), 0);
    } finally {
      await t.close();
    }
  });

  it('a write that returns rows (UPDATE … RETURNING) waits at the gate while the writer holds a transaction', async () => {
    const sub = mkdtempSync(join(dir, 'returning-'));
    const database = await openDatabase({ url: null, dataDir: sub });
    try {
      await sql`create table counters (id integer primary key, n integer)`.execute(database.db);
      await sql`insert into counters values (1, 0)`.execute(database.db);
      let finish!: () => void;
      const held = new Promise<void>((r) => (finish = r));
      let begun!: () => void;
      const inside = new Promise<void>((r) => (begun = r));
      const writer = database.writer.transaction().execute(async (trx) => {
        await sql`update counters set n = n + 1 where id = 1`.execute(trx);
        begun();
        await held;
      });
      await inside;
      // before the fix this went past the gate: SQLite's busy handler held this thread for
      // busy_timeout (5 s) while the writer waited for it, then it failed with SQLITE_BUSY
      let settled = false;
      const update = sql<{ n: number }>`update counters set n = n + 10 where id = 1 returning n`
        .execute(database.db)
        .finally(() => (settled = true));
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 200));
      assert.ok(performance.now() - t0 < 1000, 'the event loop was not held');
      assert.equal(settled, false, 'the update waits for the writer');
      finish();
      await writer;
      assert.deepEqual((await update).rows, [{ n: 11 }]);
    } finally {
      await database.close();
    }
  });
});
