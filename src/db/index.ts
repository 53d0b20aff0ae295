import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { migrateToLatest } from './migrate.ts';
import { sqliteConnection } from './fast-path.ts';
import { type QueryObserver, queryLogger } from './query-timing.ts';
import { SqliteReaderDialect } from './sqlite-reader.ts';
import { SqliteWriterDialect } from './sqlite-writer.ts';
import { sameStore } from './tx.ts';
import { GatedSqliteDialect, WriteGate } from './write-gate.ts';
import type { DB } from './types.ts';
import type { Database } from './database.ts';

export type { Dialect } from './dialect.ts';
export type { Database } from './database.ts';

export interface OpenOptions {
  /** null: SQLite file under dataDir; `sqlite:PATH`; or a postgres:// URL. */
  url: string | null;
  dataDir: string;
  /** PostgreSQL only: the schema to work in (tests use one schema per run). */
  schema?: string;
  migrate?: boolean;
  /**
   * SQLite file only: read-only worker connections of `Database.reader` (sqlite-reader.ts;
   * `WEFT_SQLITE_READERS`, default 2); 0: none, `reader` is the main connection.
   */
  readers?: number;
  /**
   * PostgreSQL only: connections of the hot reads' own pool (`Database.hotPool`;
   * `WEFT_PG_HOT_CONNECTIONS`, default 3); 0: none, they run on the main pool.
   */
  hotConnections?: number;
}

/**
 * PostgreSQL: connections per instance. The main pool runs every Kysely query and transaction; the
 * hot pool runs only `compiledOnce`'s statements (db/fast-path.ts: the token lookup of every
 * request, the repo read, the unread count, pull list pages), short reads outside any
 * transaction, so a request's authentication never waits for a connection held by another
 * request's write transaction (docs/architecture.md "One store, two dialects").
 */
const PG_POOL_MAX = 10;
const PG_HOT_POOL_MAX = 3;

// int8 columns (counts, byte sizes, event ids) fit in a double for any realistic value.
pg.types.setTypeParser(20, (v) => Number(v));

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  let database: Database;
  const queryObservers = new Set<QueryObserver>();
  const log = queryLogger(queryObservers);
  if (opts.dataDir) mkdirSync(opts.dataDir, { recursive: true, mode: 0o700 });
  if (opts.url && /^postgres(ql)?:\/\//.test(opts.url)) {
    const settings = {
      connectionString: opts.url,
      // Names this deployment's connections: the event order (events/order.ts) ignores other deployments' transactions.
      application_name: `weft:${opts.schema ?? 'public'}`,
      ...(opts.schema ? { options: `-c search_path=${opts.schema}` } : {}),
    };
    const pool = new pg.Pool({ ...settings, max: PG_POOL_MAX });
    // the hot reads' own connections (Database.hotPool): never queued behind the main pool's transactions
    const hot = opts.hotConnections ?? PG_HOT_POOL_MAX;
    const hotPool = hot > 0 ? new pg.Pool({ ...settings, max: hot }) : null;
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), log });
    database = {
      db,
      writer: db,
      reader: db,
      dialect: 'postgres',
      pool,
      hotPool,
      sqlite: null,
      queryObservers,
      startWriter: async () => {},
      close: async () => {
        await hotPool?.end();
        await db.destroy();
      },
    };
  } else {
    const file = opts.url?.startsWith('sqlite:') ? opts.url.slice('sqlite:'.length) : join(opts.dataDir, 'weft.sqlite');
    // Only the server's user may read the data (README "Files and durability"): directories it
    // creates are 0700, the database and its -wal/-shm files 0600 (SQLite gives those the
    // database file's mode; existing files are tightened too).
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
    const handle = new SQLite(file);
    handle.pragma('journal_mode = WAL');
    for (const f of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) chmodSync(f, 0o600);
    handle.pragma('busy_timeout = 5000');
    handle.pragma('foreign_keys = ON');
    handle.pragma('synchronous = NORMAL');
    // the main connection and the background writer (a worker thread's connection, sqlite-writer.ts)
    // take turns at writing through one gate; an in-memory database cannot be opened by another
    // connection, so there the writer is the main connection
    const gate = new WriteGate();
    const db = new Kysely<DB>({ dialect: new GatedSqliteDialect(sqliteConnection(handle), gate), log });
    // Once the writer's thread runs, it does the WAL checkpoints (after its commits, and every
    // second for the server's own writes) instead of the server's connection, whose commit would
    // otherwise copy the worker's pages back into the database file on the server's thread
    // (docs/architecture.md "One store, two dialects").
    let checkpoints: NodeJS.Timeout | null = null;
    const writerDialect = handle.memory
      ? null
      : new SqliteWriterDialect(file, gate, () => {
          handle.pragma('wal_autocheckpoint = 0');
          checkpoints ??= setInterval(() => void writerDialect!.checkpoint().catch(() => {}), 1000).unref();
        });
    const writer = writerDialect ? new Kysely<DB>({ dialect: writerDialect, log: queryLogger(queryObservers, 'writer') }) : db;
    if (writer !== db) sameStore(writer, db);
    // the search's reads (sqlite-reader.ts): read-only connections on worker threads, taking no gate
    const readers = opts.readers ?? 2;
    const reader =
      handle.memory || readers === 0
        ? db
        : new Kysely<DB>({ dialect: new SqliteReaderDialect(file, readers), log: queryLogger(queryObservers, 'reader') });
    const close = async () => {
      if (checkpoints) clearInterval(checkpoints);
      if (reader !== db) await reader.destroy();
      if (writer !== db) await writer.destroy();
      await db.destroy();
    };
    const startWriter = async () => {
      if (writer !== db) await sql`select 1`.execute(writer);
    };
    database = {
      db,
      writer,
      reader,
      dialect: 'sqlite',
      pool: null,
      hotPool: null,
      sqlite: handle,
      queryObservers,
      startWriter,
      close,
    };
  }
  if (opts.migrate !== false) await migrateToLatest(database.db as Kysely<unknown>, database.dialect);
  return database;
}

export async function pingDatabase(database: Database): Promise<boolean> {
  try {
    await sql`select 1`.execute(database.db);
    return true;
  } catch {
    return false;
  }
}
