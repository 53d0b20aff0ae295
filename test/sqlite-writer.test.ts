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
});
