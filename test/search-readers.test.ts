import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Kysely, sql } from 'kysely';
import { ConfigError, loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/index.ts';
import { SqliteReaderDialect } from '../src/db/sqlite-reader.ts';
import type { DB } from '../src/db/types.ts';
import { searchRepos } from '../src/search/service.ts';
import { statementsOf } from './common.ts';
import { DIALECTS, type TestApp, startApp } from './helpers.ts';

type User = { token: string; uuid: string; username: string };

/**
 * docs/search.md "On SQLite": on a SQLite file the search reads through `Database.reader`, a pool
 * of read-only connections on worker threads (src/db/sqlite-reader.ts), so the server's thread
 * answers other requests meanwhile; each search statement sees what was committed before it, on
 * whichever connection, access included. On PostgreSQL the reader is the pool itself.
 */
for (const dialect of DIALECTS) {
  describe(`search through the reader connections (${dialect})`, () => {
    let t: TestApp;
    let alice: User;
    let bob: User;

    /** The statements `run` makes in its async context, by connection (main, writer, reader). */
    const byConnection = (run: () => Promise<unknown>) => statementsOf(t.deps.database, run);
    const search = (kind: string, q: string, token: string) =>
      t.req('GET', `/api/v1/search/${kind}?q=${encodeURIComponent(q)}`, { token });
    const total = async (kind: string, q: string, token: string) => {
      const res = await search(kind, q, token);
      assert.equal(res.status, 200, res.text);
      return res.headers['x-total-count'];
    };

    before(async () => {
      t = await startApp(dialect);
      alice = await t.user(`alice${dialect}`);
      bob = await t.user(`bob${dialect}`);
    });
    after(async () => t?.close());

    it('is a pool of worker connections on a SQLite file, the main database on PostgreSQL', () => {
      const { database } = t.deps;
      if (dialect === 'postgres') assert.equal(database.reader, database.db);
      else assert.notEqual(database.reader, database.db);
    });

    it('every search statement runs on the reader; the main connection only authenticates', async () => {
      // the token's `last_used_at` is written at most once a minute: written now, not during the counts
      assert.equal((await t.req('GET', '/api/v1/user', { token: bob.token })).status, 200);
      const user = await byConnection(() => t.req('GET', '/api/v1/user', { token: bob.token }));
      for (const [kind, q] of [
        ['code', 'needle'],
        ['threads', 'zebra'],
        ['threads', 'is:open'],
        ['commits', 'zebra'],
        ['repos', 'zebra'],
      ] as const) {
        const counted = await byConnection(async () => assert.ok(await total(kind, q, bob.token)));
        if (dialect === 'postgres') {
          assert.equal(counted.reader, 0, kind);
          continue;
        }
        assert.ok(counted.reader >= 1, `${kind} ${q}: ${JSON.stringify(counted)}`);
        // no more on the main connection than a request that reads nothing but its caller
        assert.ok(counted.main <= user.main, `${kind} ${q}: ${JSON.stringify(counted)} (GET /user: ${JSON.stringify(user)})`);
        assert.equal(counted.writer, 0);
      }
    });

    it('a search sees every write committed before it, on any connection: access changes at once', async () => {
      const base = `/api/v1/users/${alice.username}/repos/quagga`;
      const created = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: 'quagga', slug: 'quagga', visibility: 'private' },
      });
      assert.equal(created.status, 201, created.text);
      assert.equal(await total('repos', 'quagga', alice.token), '1');
      assert.equal(await total('repos', 'quagga', bob.token), '0');
      const thread = await t.req('POST', `${base}/threads`, {
        token: alice.token,
        body: { title: 'Wombat sightings', body: 'Seen near the quagga.' },
      });
      assert.equal(thread.status, 201, thread.text);
      assert.equal(await total('threads', 'wombat', alice.token), '1');
      assert.equal(await total('threads', 'wombat', bob.token), '0');
      for (const [visibility, seen] of [
        ['public', '1'],
        ['private', '0'],
        ['public', '1'],
      ] as const) {
        const res = await t.req('PUT', base, { token: alice.token, body: { visibility } });
        assert.equal(res.status, 200, res.text);
        assert.equal(await total('repos', 'quagga', bob.token), seen, visibility);
        assert.equal(await total('threads', 'wombat', bob.token), seen, visibility);
      }
      const edited = await t.req('PATCH', `${base}/threads/${thread.body.number}`, {
        token: alice.token,
        body: { title: 'Numbat sightings' },
      });
      assert.equal(edited.status, 200, edited.text);
      assert.equal(await total('threads', 'numbat', bob.token), '1');
      assert.equal(await total('threads', 'wombat', bob.token), '0');
    });

    it("a search does not wait for the main connection's open transaction, nor see it", async (ctx) => {
      if (dialect === 'postgres') return ctx.skip('the reader is the pool');
      const viewer = { uuid: bob.uuid, username: bob.username, isStaff: false, tokenUuid: 'test' };
      const found = async () => (await searchRepos(t.deps, viewer, { q: 'aardwolf' }, { offset: 0, limit: 10 })).total;
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let changed!: () => void;
      const written = new Promise<void>((resolve) => (changed = resolve));
      // on the main connection a search would wait for this transaction (Kysely's one connection)
      const trx = t.deps.db.transaction().execute(async (trx) => {
        await trx.updateTable('repos').set({ description: 'aardwolf den' }).where('slug', '=', 'quagga').execute();
        changed();
        await held;
      });
      await written;
      try {
        let timer: NodeJS.Timeout | undefined;
        const waited = new Promise<'waited'>((resolve) => (timer = setTimeout(() => resolve('waited'), 5000)));
        assert.equal(await Promise.race([found(), waited]), 0);
        clearTimeout(timer);
      } finally {
        release();
        await trx;
      }
      assert.equal(await found(), 1);
    });

    it("a reader's statement does not hold the server's thread", async (ctx) => {
      if (dialect === 'postgres') return ctx.skip('the reader is the pool');
      const slow = sql<{ n: number }>`with recursive c(x) as (select 1 union all select x + 1 from c where x < 3000000)
        select count(*) as n from c`.execute(t.deps.database.reader);
      let done = false;
      void slow.then(() => (done = true));
      // a second reader is free: a search is answered as well
      assert.equal((await search('repos', 'quagga', bob.token)).status, 200);
      assert.equal((await t.req('GET', '/api/v1/user', { token: bob.token })).status, 200);
      assert.equal(done, false, 'the slow statement was still running');
      assert.equal((await slow).rows[0]?.n, 3000000);
    });

    it('refuses a statement that writes; a read transaction reads one snapshot', async (ctx) => {
      if (dialect === 'postgres') return ctx.skip('the reader is the pool');
      const { reader, db } = t.deps.database;
      for (const statement of [
        sql`update repos set description = 'no' where slug = 'quagga'`,
        sql`delete from search_docs`,
        sql`insert into repos select * from repos where 0`,
        sql`commit`,
        sql`pragma user_version = 7`,
      ])
        await assert.rejects(statement.execute(reader), (err: { code?: string }) => err.code === 'WEFT_READER_WRITE');
      assert.equal(
        (await db.selectFrom('repos').select('description').where('slug', '=', 'quagga').executeTakeFirstOrThrow()).description,
        'aardwolf den',
      );
      const description = () => reader.selectFrom('repos').select('description').where('slug', '=', 'quagga');
      const seen = await reader.transaction().execute(async (trx) => {
        const read = async () =>
          (await trx.selectFrom('repos').select('description').where('slug', '=', 'quagga').executeTakeFirstOrThrow())
            .description;
        const first = await read();
        // committed on the main connection after the read transaction's first read: not in its snapshot
        await db.updateTable('repos').set({ description: 'aardvark' }).where('slug', '=', 'quagga').execute();
        const second = await read();
        await assert.rejects(sql`delete from repos`.execute(trx), (err: { code?: string }) => err.code === 'WEFT_READER_WRITE');
        return [first, second];
      });
      assert.deepEqual(seen, ['aardwolf den', 'aardwolf den']);
      assert.equal((await description().executeTakeFirstOrThrow()).description, 'aardvark');
    });
  });
}

describe('the SQLite reader pool', () => {
  it('hands out idle connections, then serves the waiting queries first come, first served', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'weft-readers-'));
    const database = await openDatabase({ url: null, dataDir });
    const pool = new Kysely<DB>({ dialect: new SqliteReaderDialect(join(dataDir, 'weft.sqlite'), 1) });
    try {
      const order: number[] = [];
      const answers = await Promise.all(
        [0, 1, 2, 3].map(async (i) => {
          const r = await sql<{ i: number }>`select ${i} as i`.execute(pool);
          order.push(i);
          return r.rows[0]?.i;
        }),
      );
      assert.deepEqual(answers, [0, 1, 2, 3]);
      assert.deepEqual(order, [0, 1, 2, 3]);
    } finally {
      await pool.destroy();
      await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('WEFT_SQLITE_READERS: 2 by default, 0 reads on the main connection', async () => {
    assert.equal(loadConfig({ DATA_DIR: '/tmp/x' }).sqliteReaders, 2);
    assert.equal(loadConfig({ DATA_DIR: '/tmp/x', WEFT_SQLITE_READERS: '0' }).sqliteReaders, 0);
    assert.throws(() => loadConfig({ DATA_DIR: '/tmp/x', WEFT_SQLITE_READERS: 'two' }), ConfigError);
    assert.throws(() => loadConfig({ DATA_DIR: '/tmp/x', WEFT_SQLITE_READERS: '65' }), ConfigError);
    const dataDir = mkdtempSync(join(tmpdir(), 'weft-readers-'));
    const database = await openDatabase({ url: null, dataDir, readers: 0 });
    try {
      assert.equal(database.reader, database.db);
    } finally {
      await database.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
