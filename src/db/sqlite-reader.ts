/**
 * Read-only SQLite connections on worker threads, for the reads that are long enough to hold the
 * server's thread (search, docs/search.md "On SQLite"): `Database.reader` on a SQLite file. A pool
 * of N worker connections (sqlite-worker.ts) to the same file, opened `readonly` with the busy
 * timeout (WAL is the file's, set by the main connection): while one runs a statement the server's
 * thread answers other requests, and N statements run at once.
 *
 * - Each query gets an idle worker, or waits for one (first come, first served).
 * - Reads take no write gate (write-gate.ts): under WAL they wait for no writer. Each statement
 *   reads what was committed when it started (a commit of the main connection or the writer that
 *   resolved before the query was sent is seen), never another connection's open transaction.
 * - A statement that is not a reader is refused (the worker throws, code `WEFT_READER_WRITE`).
 * - `transaction()` is a read transaction: `BEGIN` (deferred) ... `COMMIT` on one worker, its
 *   statements reading one snapshot (from the first of them).
 */
import type { DatabaseConnection, Driver } from 'kysely';
import { WorkerConnection, WorkerDialect } from './sqlite-worker.ts';

class ReaderPool implements Driver {
  private readonly idle: WorkerConnection[];
  private readonly all: WorkerConnection[];
  /** Queries waiting for a connection, first in first served. */
  private readonly waiting: Array<{ resolve: (c: WorkerConnection) => void; reject: (e: Error) => void }> = [];
  private destroyed = false;

  constructor(file: string, size: number) {
    this.all = Array.from(
      { length: size },
      (_, i) => new WorkerConnection({ file, readonly: true, gate: null, name: `SQLite reader ${i + 1}` }),
    );
    // the first is handed out first (its worker started, its statements prepared); the others start under load
    this.idle = [...this.all].reverse();
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.destroyed) throw new Error('the SQLite readers are closed');
    const connection = this.idle.pop();
    if (connection) return connection;
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const next = this.waiting.shift();
    if (next) next.resolve(connection as WorkerConnection);
    else this.idle.push(connection as WorkerConnection);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as WorkerConnection).begin('begin');
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as WorkerConnection).end('commit');
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await (connection as WorkerConnection).end('rollback');
  }

  async destroy(): Promise<void> {
    this.destroyed = true;
    for (const w of this.waiting.splice(0)) w.reject(new Error('the SQLite readers are closed'));
    await Promise.all(this.all.map((c) => c.close()));
  }
}

/** Kysely over `size` read-only connections to `file`, each on a worker thread. */
export class SqliteReaderDialect extends WorkerDialect {
  constructor(
    private readonly file: string,
    private readonly size: number,
  ) {
    super();
    if (!Number.isInteger(size) || size < 1) throw new Error(`SQLite readers: ${size} is not a positive number of connections`);
  }

  createDriver(): Driver {
    return new ReaderPool(this.file, this.size);
  }
}
