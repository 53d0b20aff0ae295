import type SQLite from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type pg from 'pg';
import type { Dialect } from './dialect.ts';
import type { QueryObserver } from './query-timing.ts';
import type { DB } from './types.ts';

/** An open store: Kysely over one of the two dialects, and what the fast path runs on directly. */
export interface Database {
  db: Kysely<DB>;
  /**
   * For background writes that must not hold the server's thread (the notification fan-out): on
   * a SQLite file a second connection on a worker thread (sqlite-writer.ts); else `db` itself
   * (PostgreSQL's driver does not hold the thread; an in-memory SQLite database has one connection).
   */
  writer: Kysely<DB>;
  /**
   * For reads long enough to hold the server's thread (search): on a SQLite file a pool of
   * read-only connections on worker threads (sqlite-reader.ts; `WEFT_SQLITE_READERS`, default 2),
   * each statement reading what was committed when it started; else (PostgreSQL, an in-memory
   * SQLite database, or `WEFT_SQLITE_READERS=0`) `db` itself. Never for a read that must see the
   * caller's own open transaction: the readers see committed data only.
   */
  reader: Kysely<DB>;
  dialect: Dialect;
  /** PostgreSQL only: the pool, for LISTEN/NOTIFY and advisory locks. */
  pool: pg.Pool | null;
  /**
   * PostgreSQL only: a small pool of its own for the compiled hot reads (`compiledOnce`: the token
   * lookup of every request, the repo read, the unread count), which run outside any transaction,
   * so they never wait for a connection that the main pool's write transactions hold.
   */
  hotPool: pg.Pool | null;
  /**
   * SQLite only: the connection Kysely runs on, for the compiled hot reads (`compiledOnce`),
   * which run on it directly while no transaction is open on it.
   */
  sqlite: SQLite.Database | null;
  /**
   * Starts the background writer's worker now (a SQLite file; elsewhere nothing to start). Once it
   * runs it takes the WAL checkpoints, so none happens in a commit on the server's thread: the
   * server starts it with its background work (root.ts), not at the first large write.
   */
  startWriter(): Promise<void>;
  /** Told of every query's kind and duration (the metrics module adds one when metrics are on). */
  queryObservers: Set<QueryObserver>;
  close(): Promise<void>;
}
