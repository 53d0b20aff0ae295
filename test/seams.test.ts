import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { describe, test } from 'node:test';
import { SCOPE_READERS } from '../src/access/scopes.ts';
import { BlobTooLargeError, FsBlobStore } from '../src/blobs/store.ts';
import { type Database, openDatabase } from '../src/db/index.ts';
import { currentTransaction, runAfterCommit, withTransaction } from '../src/db/tx.ts';
import { createDeps } from '../src/root.ts';
import { DIALECTS, type DialectName, freshStore, testConfig } from './helpers.ts';

async function withDb(dialect: DialectName, fn: (database: Database, dataDir: string) => Promise<void>): Promise<void> {
  const store = await freshStore(dialect);
  const database = await openDatabase({ url: store.url, dataDir: store.dataDir, schema: store.schema });
  try {
    await fn(database, store.dataDir);
  } finally {
    await database.close();
    await store.drop();
  }
}

/** A row in a table every database has, to see what a transaction left behind. */
const addJob = (db: Database['db'], kind: string) =>
  db
    .insertInto('jobs')
    .values({
      kind,
      payload: '{}',
      dedupe_key: null,
      run_at: '2030-01-01T00:00:00.000Z',
      locked_until: null,
      attempts: 0,
      last_error: null,
      failed_at: null,
      created_at: '2030-01-01T00:00:00.000Z',
    })
    .execute();
const kinds = async (database: Database) =>
  (await database.db.selectFrom('jobs').select('kind').orderBy('id').execute()).map((r) => r.kind);

for (const dialect of DIALECTS) {
  describe(`withTransaction (${dialect})`, () => {
    test('a nested call joins the outer transaction: one commit for both', async () => {
      await withDb(dialect, async (database) => {
        await withTransaction(database.db, async (outer) => {
          assert.equal(outer.nested, false);
          await addJob(outer.trx, 'outer');
          await withTransaction(database.db, async (inner) => {
            assert.equal(inner.nested, true);
            assert.equal(inner.trx, outer.trx, 'the same transaction object');
            assert.equal(currentTransaction(database.db), outer.trx);
            await addJob(inner.trx, 'inner');
          });
        });
        assert.equal(currentTransaction(database.db), null);
        assert.deepEqual(await kinds(database), ['outer', 'inner']);
      });
    });

    test('an error in a nested call rolls back the whole outer transaction', async () => {
      await withDb(dialect, async (database) => {
        await assert.rejects(
          withTransaction(database.db, async (outer) => {
            await addJob(outer.trx, 'outer');
            await withTransaction(database.db, async (inner) => {
              await addJob(inner.trx, 'inner');
              throw new Error('inner failed');
            });
          }),
          /inner failed/,
        );
        assert.deepEqual(await kinds(database), []);
      });
    });

    test('after-commit callbacks run once after the outermost commit, in order, and never on rollback', async () => {
      await withDb(dialect, async (database) => {
        const log: string[] = [];
        await withTransaction(database.db, async (outer) => {
          outer.afterCommit(() => void log.push('outer'));
          await withTransaction(database.db, async (inner) => {
            inner.afterCommit(() => void log.push('inner'));
            runAfterCommit(database.db, () => void log.push('helper'));
          });
          assert.deepEqual(log, [], 'nothing runs before the outer commit');
          await addJob(outer.trx, 'x');
        });
        assert.deepEqual(log, ['outer', 'inner', 'helper']);

        log.length = 0;
        await assert.rejects(
          withTransaction(database.db, async (outer) => {
            outer.afterCommit(() => void log.push('outer'));
            await withTransaction(database.db, async (inner) => inner.afterCommit(() => void log.push('inner')));
            throw new Error('rollback');
          }),
        );
        await new Promise((r) => setTimeout(r, 20));
        assert.deepEqual(log, []);
      });
    });

    test('a failing after-commit callback is reported and does not undo the commit or stop the others', async () => {
      await withDb(dialect, async (database) => {
        const reported: unknown[] = [];
        const log: string[] = [];
        const result = await withTransaction(
          database.db,
          async (tx) => {
            await addJob(tx.trx, 'kept');
            tx.afterCommit(() => {
              throw new Error('callback failed');
            });
            tx.afterCommit(() => void log.push('second'));
            return 42;
          },
          (err) => reported.push((err as Error).message),
        );
        assert.equal(result, 42);
        assert.deepEqual(reported, ['callback failed']);
        assert.deepEqual(log, ['second']);
        assert.deepEqual(await kinds(database), ['kept']);
      });
    });

    test('outside a transaction runAfterCommit runs soon; another database never joins', async () => {
      await withDb(dialect, async (database) => {
        let ran = false;
        runAfterCommit(database.db, () => void (ran = true));
        await new Promise((r) => setTimeout(r, 10));
        assert.equal(ran, true);
        const other = await freshStore('sqlite');
        const otherDb = await openDatabase({ url: other.url, dataDir: other.dataDir });
        try {
          await withTransaction(database.db, async () => {
            await withTransaction(otherDb.db, async (tx) => assert.equal(tx.nested, false));
          });
        } finally {
          await otherDb.close();
          await other.drop();
        }
      });
    });
  });
}

describe('scope readers are checked at start-up', () => {
  test('createDeps with every reader starts; a missing or unknown kind throws', async () => {
    await withDb('sqlite', async (database, dataDir) => {
      const config = testConfig(dataDir);
      assert.ok(createDeps(config, database).scopes);
      const { timer: _timer, ...withoutTimer } = SCOPE_READERS;
      assert.throws(
        () => createDeps(config, database, { scopeReaders: withoutTimer }),
        /no scope reader for scope kinds: timer$/,
      );
      assert.throws(
        () => createDeps(config, database, { scopeReaders: { ...SCOPE_READERS, wiki: async () => true } }),
        /unknown scope kinds: wiki$/,
      );
      assert.throws(
        () => createDeps(config, database, { scopeReaders: { ...SCOPE_READERS, repo: 'nope' as never } }),
        /no scope reader for scope kinds: repo$/,
      );
    });
  });
});

describe('FsBlobStore', () => {
  const withStore = async (fn: (store: FsBlobStore, root: string) => Promise<void>) => {
    const root = mkdtempSync(join(tmpdir(), 'weft-blobs-'));
    try {
      await fn(new FsBlobStore(root), root);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  };
  const SHA_HELLO = '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824';
  const files = (root: string): string[] =>
    readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => e.name);

  test('put addresses content by its SHA-256; identical content is stored once', async () => {
    await withStore(async (store, root) => {
      const a = await store.put(Readable.from([Buffer.from('hel'), Buffer.from('lo')]));
      const b = await store.put(Readable.from([Buffer.from('hello')]));
      assert.deepEqual(a, { sha256: SHA_HELLO, size: 5 });
      assert.deepEqual(b, a);
      assert.deepEqual(files(root), [SHA_HELLO]);
      assert.equal(await text(store.get(SHA_HELLO)), 'hello');
      assert.equal(await store.size(SHA_HELLO), 5);
    });
  });

  test('a stream over maxBytes is refused and leaves no file, finished or temporary', async () => {
    await withStore(async (store, root) => {
      await assert.rejects(store.put(Readable.from([Buffer.alloc(6, 1), Buffer.alloc(6, 2)]), { maxBytes: 10 }), (err) => {
        assert.ok(err instanceof BlobTooLargeError);
        assert.equal(err.maxBytes, 10);
        return true;
      });
      assert.deepEqual(files(root), []);
      // Exactly maxBytes is accepted.
      assert.equal((await store.put(Readable.from([Buffer.alloc(10, 3)]), { maxBytes: 10 })).size, 10);
    });
  });

  test('get reads an inclusive byte range; delete removes; unknown is null; a bad address throws', async () => {
    await withStore(async (store) => {
      const { sha256 } = await store.put(Readable.from([Buffer.from('0123456789')]));
      assert.equal(await text(store.get(sha256, { start: 2, end: 5 })), '2345');
      assert.equal(await text(store.get(sha256, { start: 9, end: 9 })), '9');
      await store.delete(sha256);
      assert.equal(await store.size(sha256), null);
      await store.delete(sha256);
      assert.throws(() => store.get('../../etc/passwd'), /not a blob address/);
    });
  });

  test('an empty stream is a blob too', async () => {
    await withStore(async (store) => {
      const empty = await store.put(Readable.from([]));
      assert.deepEqual(empty, { sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', size: 0 });
      assert.equal(await text(store.get(empty.sha256)), '');
    });
  });
});
