/**
 * SQLite's write transactions in this process taken one at a time, waiting without holding the
 * event loop (docs/notifications.md "Bounded"). The server writes a SQLite file through two
 * connections: the main one (db/index.ts) and the background writer on a worker thread
 * (sqlite-writer.ts). Both begin their transactions with `BEGIN IMMEDIATE`; had the main one asked
 * SQLite for the write lock while the writer held it, better-sqlite3 would wait in SQLite's busy
 * handler, holding the server's thread for as long as the writer's transaction lasts (and, when
 * that transaction waits for its next statement from this very thread, until busy_timeout
 * gives up). So each transaction of either connection, and each write outside one, first takes
 * this gate (a FIFO of promises): while one holds it the others wait as promises, and SQLite's
 * busy wait is left for other processes (the CLI).
 */
import {
  type CompiledQuery,
  type DatabaseConnection,
  type QueryResult,
  type SqliteDatabase,
  SqliteDialect,
  SqliteDriver,
} from 'kysely';

/** Returns rows and writes nothing (see GatedConnection). */
export const isQuery = (statement: { reader: boolean; readonly: boolean }): boolean => statement.reader && statement.readonly;

export class WriteGate {
  private held = false;
  private readonly waiting: Array<() => void> = [];

  /** Resolves once the gate is this caller's; `release` hands it to the next one in line. */
  async take(): Promise<void> {
    if (!this.held) {
      this.held = true;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }
}

/**
 * The main connection as its driver hands it out: outside a transaction a statement that writes
 * takes the gate, since SQLite would otherwise make it wait, on this thread, for a writer
 * transaction that itself waits for this thread; queries go straight through (WAL: they wait for
 * nobody). A query is a statement that returns rows (better-sqlite3's `reader`) and writes nothing
 * (`readonly`): `reader` alone let an `UPDATE … RETURNING` past the gate, where it waited 5 s in
 * SQLite's busy handler holding this thread and failed SQLITE_BUSY; `readonly` alone would let
 * `BEGIN` and `COMMIT` past, which SQLite counts as read-only.
 */
class GatedConnection implements DatabaseConnection {
  inTransaction = false;

  constructor(
    readonly inner: DatabaseConnection,
    private readonly database: SqliteDatabase,
    private readonly gate: WriteGate,
  ) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (this.inTransaction || isQuery(this.database.prepare(query.sql) as unknown as { reader: boolean; readonly: boolean }))
      return this.inner.executeQuery<R>(query);
    await this.gate.take();
    try {
      return await this.inner.executeQuery<R>(query);
    } finally {
      this.gate.release();
    }
  }

  streamQuery<R>(query: CompiledQuery, chunkSize?: number): AsyncIterableIterator<QueryResult<R>> {
    // Kysely streams selects only
    return this.inner.streamQuery<R>(query, chunkSize);
  }
}

/**
 * Kysely's SQLite driver with each transaction inside the gate: taken before `BEGIN` (which the
 * main connection's `prepare` turns into `BEGIN IMMEDIATE`, fast-path.ts), given back after
 * `COMMIT` or `ROLLBACK`. A failed `COMMIT` keeps it: Kysely rolls back next, and that gives it back.
 */
class GatedSqliteDriver extends SqliteDriver {
  private connection: GatedConnection | null = null;

  constructor(
    private readonly database: SqliteDatabase,
    private readonly gate: WriteGate,
  ) {
    super({ database });
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const inner = await super.acquireConnection();
    if (this.connection?.inner !== inner) this.connection = new GatedConnection(inner, this.database, this.gate);
    return this.connection;
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const gated = connection as GatedConnection;
    await this.gate.take();
    try {
      await super.beginTransaction(gated.inner);
    } catch (err) {
      this.gate.release();
      throw err;
    }
    gated.inTransaction = true;
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const gated = connection as GatedConnection;
    await super.commitTransaction(gated.inner);
    gated.inTransaction = false;
    this.gate.release();
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const gated = connection as GatedConnection;
    try {
      await super.rollbackTransaction(gated.inner);
    } finally {
      gated.inTransaction = false;
      this.gate.release();
    }
  }
}

/** The main connection's dialect: Kysely's SQLite dialect whose writes take `gate` first. */
export class GatedSqliteDialect extends SqliteDialect {
  constructor(
    private readonly database: SqliteDatabase,
    private readonly gate: WriteGate,
  ) {
    super({ database });
  }

  override createDriver(): SqliteDriver {
    return new GatedSqliteDriver(this.database, this.gate);
  }
}
