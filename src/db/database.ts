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
  dialect: Dialect;
  /** PostgreSQL only: the pool, for LISTEN/NOTIFY and advisory locks. */
  pool: pg.Pool | null;
  /**
   * SQLite only: the connection Kysely runs on, for the compiled hot reads (`compiledOnce`),
   * which run on it directly while no transaction is open on it.
   */
  sqlite: SQLite.Database | null;
  /** Told of every query's kind and duration (the metrics module adds one when metrics are on). */
  queryObservers: Set<QueryObserver>;
  close(): Promise<void>;
}
