/**
 * A second SQLite connection, on a worker thread (sqlite-worker.ts), for background writes that
 * must not hold the server's thread (docs/notifications.md "Bounded": the notification fan-out's
 * ranges). better-sqlite3 runs every statement synchronously on the thread that calls it; through
 * this dialect Kysely compiles on the server's thread and the worker runs the statement on its own
 * connection to the same file (WAL: the server's connection reads meanwhile), so the event loop
 * only waits for a message.
 *
 * - Transactions begin with `BEGIN IMMEDIATE` inside the process's write gate (write-gate.ts),
 *   as the main connection's do: SQLite still has one writer at a time, so event ids stay in
 *   commit order (events/order.ts: on SQLite every committed event is settled), and neither
 *   connection waits for the other in SQLite's busy handler. A statement outside a transaction
 *   takes the gate too.
 * - Nothing inside a transaction on this connection may wait for the main connection through
 *   Kysely (a main transaction may be holding it while it waits for the gate); a nested
 *   `withTransaction` on the main database joins this one instead (db/tx.ts `sameStore`).
 * - Once its worker runs, the WAL checkpoints happen there (passive, after its commits and when
 *   index.ts asks), outside the gate (docs/architecture.md "One store, two dialects").
 * - The worker starts on the first query and ends with `destroy` (Database.close); while no
 *   query is in flight it does not keep the process alive. If it dies, the queries in flight and
 *   the rest of an open transaction fail (SQLite rolled it back) and the next query starts a new one.
 */
import type { DatabaseConnection, Driver } from 'kysely';
import { WorkerConnection, WorkerDialect } from './sqlite-worker.ts';
import { WriteGate } from './write-gate.ts';

class WorkerDriver implements Driver {
  /** One connection: Kysely's queries and transactions on it take turns. */
  private readonly turn = new WriteGate();

  constructor(
    readonly connection: WorkerConnection,
    private readonly gate: WriteGate,
  ) {}

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    await this.turn.take();
    return this.connection;
  }

  async beginTransaction(): Promise<void> {
    await this.gate.take();
    try {
      await this.connection.begin('begin immediate');
    } catch (err) {
      this.gate.release();
      throw err;
    }
  }

  async commitTransaction(): Promise<void> {
    // a failed commit keeps the gate: Kysely rolls back next, and that gives it back
    await this.connection.end('commit');
    this.gate.release();
  }

  async rollbackTransaction(): Promise<void> {
    try {
      await this.connection.end('rollback');
    } finally {
      this.gate.release();
    }
  }

  async releaseConnection(): Promise<void> {
    this.turn.release();
  }

  async destroy(): Promise<void> {
    await this.connection.close();
  }
}

/** Kysely's SQLite adapter, compiler and introspector over a connection on a worker thread. */
export class SqliteWriterDialect extends WorkerDialect {
  private readonly connection: WorkerConnection;

  /** `started`: called each time the worker thread starts (index.ts moves checkpoints to it). */
  constructor(
    file: string,
    private readonly gate: WriteGate,
    started?: () => void,
  ) {
    super();
    this.connection = new WorkerConnection({ file, readonly: false, gate, name: 'the SQLite writer', started });
  }

  createDriver(): Driver {
    return new WorkerDriver(this.connection, this.gate);
  }

  /** A passive WAL checkpoint on the worker (WorkerConnection.checkpoint). */
  checkpoint(): Promise<void> {
    return this.connection.checkpoint();
  }
}
