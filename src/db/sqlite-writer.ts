/**
 * A second SQLite connection, on a worker thread, for background writes that must not hold the
 * server's thread (docs/notifications.md "Bounded": the notification fan-out's ranges).
 * better-sqlite3 runs every statement synchronously on the thread that calls it; through this
 * dialect Kysely compiles on the server's thread and the worker runs the statement on its own
 * connection to the same file (WAL: the server's connection reads meanwhile), so the event loop
 * only waits for a message. The worker is plain JavaScript needing only better-sqlite3 (evaluated
 * from the string below), so it runs the same from src/ under tsx and from the bundled dist/.
 *
 * - Transactions begin with `BEGIN IMMEDIATE` inside the process's write gate (write-gate.ts),
 *   as the main connection's do: SQLite still has one writer at a time, so event ids stay in
 *   commit order (events/order.ts: on SQLite every committed event is settled), and neither
 *   connection waits for the other in SQLite's busy handler. A statement outside a transaction
 *   takes the gate too.
 * - Nothing inside a transaction on this connection may wait for the main connection through
 *   Kysely (a main transaction may be holding it while it waits for the gate); a nested
 *   `withTransaction` on the main database joins this one instead (db/tx.ts `sameStore`).
 * - The worker starts on the first query and ends with `destroy` (Database.close); while no
 *   query is in flight it does not keep the process alive. If it dies, the queries in flight and
 *   the rest of an open transaction fail (SQLite rolled it back) and the next query starts a new one.
 */
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import { WriteGate } from './write-gate.ts';

const require = createRequire(import.meta.url);

/** The worker: opens the file with the main connection's pragmas (db/index.ts) and runs what it is sent. */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.module);
const db = new SQLite(workerData.file);
db.pragma('journal_mode = WAL');
db.pragma('busy_timeout = 5000');
db.pragma('foreign_keys = ON');
db.pragma('synchronous = NORMAL');
// checkpoints run here, outside the write gate: after a commit (at most every 200 ms) and when
// the server's thread asks (index.ts), never inside a commit that the gate waits for
db.pragma('wal_autocheckpoint = 0');
let checkpointed = 0;
function checkpoint() {
  checkpointed = Date.now();
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {}
}
const statements = new Map();
function prepare(text) {
  let s = statements.get(text);
  if (!s) {
    if (statements.size >= 200) statements.delete(statements.keys().next().value);
    s = db.prepare(text);
    statements.set(text, s);
  }
  return s;
}
parentPort.on('message', (m) => {
  if (m.close) {
    db.close();
    parentPort.close();
    return;
  }
  if (m.checkpoint) {
    if (!db.inTransaction) checkpoint();
    return parentPort.postMessage({ id: m.id, rows: [] });
  }
  try {
    // SQLite may have rolled back by itself (SQLITE_FULL, SQLITE_IOERR): nothing left to roll back
    if (m.sql === 'rollback' && !db.inTransaction) return parentPort.postMessage({ id: m.id, rows: [] });
    const s = prepare(m.sql);
    const params = m.parameters.map((p) => (p instanceof Uint8Array ? Buffer.from(p.buffer, p.byteOffset, p.byteLength) : p));
    if (s.reader) return parentPort.postMessage({ id: m.id, rows: s.all(params) });
    const r = s.run(params);
    parentPort.postMessage({ id: m.id, changes: r.changes, insertId: r.lastInsertRowid });
    if (m.sql === 'commit' && Date.now() - checkpointed >= 200) checkpoint();
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: { message: String((e && e.message) || e), code: e && e.code } });
  }
});
`;

interface Answer {
  id: number;
  rows?: Record<string, unknown>[];
  changes?: number | bigint;
  insertId?: number | bigint;
  error?: { message: string; code?: string };
}

/** The worker's connection as Kysely sees it: each query one message there and back. */
class WorkerConnection implements DatabaseConnection {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();
  private nextId = 0;
  /** A transaction is open on this connection. */
  inTransaction = false;
  /** The worker died during the open transaction: its remaining statements fail. */
  private lost = false;

  constructor(
    private readonly file: string,
    private readonly gate: WriteGate,
    private readonly started?: () => void,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.inTransaction) return this.run<R>(query.sql, query.parameters);
    await this.gate.take();
    try {
      return await this.run<R>(query.sql, query.parameters);
    } finally {
      this.gate.release();
    }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('the SQLite writer does not stream');
  }

  async begin(): Promise<void> {
    await this.run('begin immediate', []);
    this.inTransaction = true;
  }

  async end(how: 'commit' | 'rollback'): Promise<void> {
    if (how === 'rollback' && this.lost) {
      // SQLite rolled it back when the thread's connection closed
      this.inTransaction = false;
      this.lost = false;
      return;
    }
    await this.run(how, []);
    this.inTransaction = false;
  }

  async run<R>(text: string, parameters: readonly unknown[]): Promise<QueryResult<R>> {
    if (this.lost) throw new Error('the SQLite writer thread stopped during this transaction');
    const answer = await this.send({ sql: text, parameters });
    if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
    if (answer.rows) {
      for (const row of answer.rows)
        for (const key in row) {
          const v = row[key];
          // structured cloning turned BLOBs into plain Uint8Arrays
          if (v instanceof Uint8Array) row[key] = Buffer.from(v.buffer, v.byteOffset, v.byteLength);
        }
      return { rows: answer.rows as R[] };
    }
    return {
      rows: [],
      numAffectedRows: answer.changes === undefined ? undefined : BigInt(answer.changes),
      insertId: answer.insertId === undefined ? undefined : BigInt(answer.insertId),
    };
  }

  /**
   * A passive WAL checkpoint on the worker's connection, outside the write gate (writers go on
   * meanwhile); skipped while a statement or a transaction is open there.
   */
  async checkpoint(): Promise<void> {
    if (this.inTransaction || this.lost || this.pending.size > 0) return;
    await this.send({ checkpoint: true });
  }

  private send(message: { sql: string; parameters: readonly unknown[] } | { checkpoint: true }): Promise<Answer> {
    const worker = this.worker ?? this.start();
    const id = ++this.nextId;
    return new Promise<Answer>((resolve, reject) => {
      if (this.pending.size === 0) worker.ref();
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, ...message });
    });
  }

  private start(): Worker {
    const worker = new Worker(WORKER, {
      eval: true,
      // not the parent's `--import tsx`: the worker is plain JavaScript
      execArgv: [],
      workerData: { file: this.file, module: require.resolve('better-sqlite3') },
    });
    worker.unref();
    worker.on('message', (answer: Answer) => {
      const waiting = this.pending.get(answer.id);
      if (!waiting) return;
      this.pending.delete(answer.id);
      if (this.pending.size === 0) worker.unref();
      waiting.resolve(answer);
    });
    const gone = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = null;
      if (this.inTransaction) this.lost = true;
      const err = new Error(`the SQLite writer thread stopped: ${why}`);
      for (const waiting of this.pending.values()) waiting.reject(err);
      this.pending.clear();
    };
    worker.on('error', (err) => gone(String(err)));
    worker.on('exit', (code) => gone(`exit ${code}`));
    this.worker = worker;
    this.started?.();
    return worker;
  }

  /** Closes the worker's connection and waits for the thread to end (terminated after 2 s). */
  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.worker = null;
    const exited = once(worker, 'exit');
    worker.postMessage({ close: true });
    const timer = setTimeout(() => void worker.terminate(), 2000);
    await exited.catch(() => {});
    clearTimeout(timer);
  }
}

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
      await this.connection.begin();
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
export class SqliteWriterDialect implements Dialect {
  private readonly connection: WorkerConnection;

  /** `started`: called each time the worker thread starts (index.ts moves checkpoints to it). */
  constructor(
    file: string,
    private readonly gate: WriteGate,
    started?: () => void,
  ) {
    this.connection = new WorkerConnection(file, gate, started);
  }

  createDriver(): Driver {
    return new WorkerDriver(this.connection, this.gate);
  }

  /** A passive WAL checkpoint on the worker (WorkerConnection.checkpoint). */
  checkpoint(): Promise<void> {
    return this.connection.checkpoint();
  }

  createQueryCompiler(): QueryCompiler {
    return new SqliteQueryCompiler();
  }

  createAdapter(): DialectAdapter {
    return new SqliteAdapter();
  }

  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new SqliteIntrospector(db);
  }
}
