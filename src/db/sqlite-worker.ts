/**
 * A SQLite connection on a worker thread, as Kysely sees it: the statements are compiled on the
 * server's thread and run on the worker's own better-sqlite3 connection to the same file (WAL: the
 * server's connection reads meanwhile), so the event loop only waits for a message. The worker is
 * plain JavaScript needing only better-sqlite3 (evaluated from the string below), so it runs the
 * same from src/ under tsx and from the bundled dist/.
 *
 * Two kinds are built on it: the background writer (sqlite-writer.ts, `Database.writer`) and the
 * read-only readers (sqlite-reader.ts, `Database.reader`). A reader's worker opens the file
 * `readonly` and refuses every statement that is not a reader (as better-sqlite3 tells from the
 * prepared statement), but for its transaction's own BEGIN, COMMIT and ROLLBACK.
 *
 * A worker starts on its connection's first query and ends with `close`; while no query is in
 * flight it does not keep the process alive. If it dies, the queries in flight and the rest of an
 * open transaction fail (SQLite rolled it back) and the next query starts a new one.
 */
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import {
  type CompiledQuery,
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
import type { WriteGate } from './write-gate.ts';

const require = createRequire(import.meta.url);

/**
 * The worker: opens the file with the main connection's pragmas (db/index.ts; a reader: read-only,
 * with the busy timeout, WAL being the file's and set by the main connection) and runs what it is sent.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.module);
const readonly = workerData.readonly;
const db = new SQLite(workerData.file, { readonly });
if (!readonly) db.pragma('journal_mode = WAL');
db.pragma('busy_timeout = 5000');
if (!readonly) {
  db.pragma('foreign_keys = ON');
  db.pragma('synchronous = NORMAL');
  // the writer: checkpoints run here, outside the write gate: after a commit (at most every 200 ms)
  // and when the server's thread asks (index.ts), never inside a commit that the gate waits for
  db.pragma('wal_autocheckpoint = 0');
}
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
    if (!readonly && !db.inTransaction) checkpoint();
    return parentPort.postMessage({ id: m.id, rows: [] });
  }
  try {
    // SQLite may have rolled back by itself (SQLITE_FULL, SQLITE_IOERR): nothing left to roll back
    if (m.sql === 'rollback' && !db.inTransaction) return parentPort.postMessage({ id: m.id, rows: [] });
    const s = prepare(m.sql);
    if (readonly && !(s.reader && s.readonly) && !m.control)
      throw Object.assign(new Error('a SQLite reader connection runs statements that read only'), { code: 'WEFT_READER_WRITE' });
    const params = m.parameters.map((p) => (p instanceof Uint8Array ? Buffer.from(p.buffer, p.byteOffset, p.byteLength) : p));
    if (s.reader) return parentPort.postMessage({ id: m.id, rows: s.all(params) });
    const r = s.run(params);
    parentPort.postMessage({ id: m.id, changes: r.changes, insertId: r.lastInsertRowid });
    if (!readonly && m.sql === 'commit' && Date.now() - checkpointed >= 200) checkpoint();
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

export interface WorkerOptions {
  file: string;
  /** Opened `readonly`; statements that are not readers are refused (but the transaction's own). */
  readonly: boolean;
  /** The writer: a statement outside a transaction takes this gate (write-gate.ts). Null: none (a reader). */
  gate: WriteGate | null;
  /** In error messages: "the SQLite writer", "SQLite reader 1". */
  name: string;
  /** Called each time the worker thread starts (index.ts moves the checkpoints to the writer's). */
  started?: () => void;
}

/** One worker thread's connection as Kysely sees it: each query one message there and back. */
export class WorkerConnection implements DatabaseConnection {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, { resolve: (a: Answer) => void; reject: (e: Error) => void }>();
  private nextId = 0;
  /** A transaction is open on this connection. */
  inTransaction = false;
  /** The worker died during the open transaction: its remaining statements fail. */
  private lost = false;

  constructor(private readonly options: WorkerOptions) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    const gate = this.options.gate;
    if (this.inTransaction || !gate) return this.run<R>(query.sql, query.parameters);
    await gate.take();
    try {
      return await this.run<R>(query.sql, query.parameters);
    } finally {
      gate.release();
    }
  }

  // eslint-disable-next-line require-yield
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error(`${this.options.name} does not stream`);
  }

  /** `begin immediate` (the writer) or `begin` (a reader: a read transaction, its snapshot taken at its first read). */
  async begin(statement: 'begin immediate' | 'begin'): Promise<void> {
    await this.run(statement, [], true);
    this.inTransaction = true;
  }

  async end(how: 'commit' | 'rollback'): Promise<void> {
    if (how === 'rollback' && this.lost) {
      // SQLite rolled it back when the thread's connection closed
      this.inTransaction = false;
      this.lost = false;
      return;
    }
    await this.run(how, [], true);
    this.inTransaction = false;
  }

  /** Runs one statement on the worker; `control`: the transaction's own BEGIN, COMMIT or ROLLBACK. */
  async run<R>(text: string, parameters: readonly unknown[], control = false): Promise<QueryResult<R>> {
    if (this.lost) throw new Error(`${this.options.name} thread stopped during this transaction`);
    const answer = await this.send({ sql: text, parameters, control });
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
   * The writer: a passive WAL checkpoint on the worker's connection, outside the write gate
   * (writers go on meanwhile); skipped while a statement or a transaction is open there.
   */
  async checkpoint(): Promise<void> {
    if (this.inTransaction || this.lost || this.pending.size > 0) return;
    await this.send({ checkpoint: true });
  }

  private send(
    message: { sql: string; parameters: readonly unknown[]; control: boolean } | { checkpoint: true },
  ): Promise<Answer> {
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
      workerData: { file: this.options.file, readonly: this.options.readonly, module: require.resolve('better-sqlite3') },
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
      const err = new Error(`${this.options.name} thread stopped: ${why}`);
      for (const waiting of this.pending.values()) waiting.reject(err);
      this.pending.clear();
    };
    worker.on('error', (err) => gone(String(err)));
    worker.on('exit', (code) => gone(`exit ${code}`));
    this.worker = worker;
    this.options.started?.();
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

/** Kysely's SQLite adapter, compiler and introspector over a driver of worker connections. */
export abstract class WorkerDialect implements Dialect {
  abstract createDriver(): Driver;

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
