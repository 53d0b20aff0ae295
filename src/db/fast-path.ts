/**
 * The fast read path, in one place (README "Performance"):
 *
 * - `compiledOnce`: hot queries built and compiled once, run as named prepared statements on
 *   PostgreSQL and straight on the connection on SQLite;
 * - `sqliteConnection`: SQLite statements cached per SQL text, rows built by `withRowBuilder`
 *   (row-builder.ts), and `BEGIN` rewritten to `BEGIN IMMEDIATE` (that last one is correctness,
 *   not speed: it stays on with the fast path off);
 * - the token lookup of a route that declares its repo reads the repo in the same statement
 *   (access/repo-read.ts `tokenWithRepoRead`; docs/architecture.md "The read path").
 *
 * `WEFT_FAST_PATH=off` (src/config.ts; set by the composition root) turns all of it off: each
 * query is built and run through Kysely, SQLite statements are prepared anew with better-sqlite3's
 * own rows, and the token lookup reads the token alone (the repo is then read by a statement of its
 * own). The answers are the same (test/fast-path.test.ts compares each fast path both ways); only
 * the cost differs.
 */
import type { Statement } from 'better-sqlite3';
import type SQLite from 'better-sqlite3';
import type { CompiledQuery, Kysely, SqliteDatabase } from 'kysely';
import type { Database } from './database.ts';
import { type QueryKind, statementKind } from './query-timing.ts';
import { withRowBuilder } from './row-builder.ts';
import { isQuery } from './write-gate.ts';
import type { DB } from './types.ts';

let enabled = true;

/** Turns the fast path on or off for this process (the composition root does, from `WEFT_FAST_PATH`). */
export function setFastPath(on: boolean): void {
  enabled = on;
}

export const fastPathOn = (): boolean => enabled;

let statementCount = 0;

/**
 * A placeholder where the query wants a number (a limit, an offset, a pull number): `build`
 * receives placeholder strings, and the value is bound as the number passed at run time.
 */
export const numberParam = (placeholder: string) => placeholder as unknown as number;

/** The run-time value for a `numberParam` slot (compiled queries take their parameters as strings). */
export const numberArg = (value: number): string => value as unknown as string;

/**
 * A query built and compiled once per database, then run with new parameter values.
 *
 * Building and compiling a Kysely query costs more than running it on SQLite, and on
 * PostgreSQL parsing and planning it costs a round of server work: on a hot path (the token
 * lookup of every authenticated request) that halves throughput. So the query is compiled once;
 * on PostgreSQL it runs as a named prepared statement (each pooled connection prepares it on
 * first use) on the store's hot pool (`Database.hotPool`), not behind the main pool's
 * transactions. It runs outside any transaction. `build` receives placeholder strings for the
 * parameters; every other value in the query stays as compiled.
 *
 * With the fast path off the query is built with the values and run through Kysely each time.
 */
export function compiledOnce<Row, Params extends string[]>(
  build: (db: Kysely<DB>, ...params: Params) => { compile(): CompiledQuery<Row> },
): (database: Database, ...params: Params) => Promise<Row[]> {
  const name = `weft_compiled_${++statementCount}`;
  const cache = new WeakMap<
    Database,
    {
      compiled: CompiledQuery<Row>;
      slots: Array<number | { value: unknown }>;
      kind: QueryKind;
      /** SQLite: the prepared statement, run directly on the connection */
      statement: Statement | null;
    }
  >();
  return async (database, ...params) => {
    if (!enabled) return (await database.db.executeQuery<Row>(build(database.db, ...params).compile())).rows;
    let entry = cache.get(database);
    if (!entry) {
      // NUL cannot occur in a real value (request input with NUL is refused), so no clash.
      const placeholders = params.map((_, i) => `\u0000param${i}\u0000`) as Params;
      const compiled = build(database.db, ...placeholders).compile();
      const slots = compiled.parameters.map((p) => {
        const i = placeholders.indexOf(p as string);
        return i >= 0 ? i : { value: p };
      });
      const statement = database.sqlite ? withRowBuilder(database.sqlite.prepare(compiled.sql)) : null;
      entry = {
        compiled,
        slots,
        kind: statementKind(compiled.sql),
        statement: statement && isQuery(statement) ? statement : null,
      };
      cache.set(database, entry);
    }
    const { kind } = entry;
    const parameters = entry.slots.map((slot) => (typeof slot === 'number' ? params[slot] : slot.value));
    const pool = database.hotPool ?? database.pool;
    if (pool) {
      // Outside Kysely, so timed here for the query-time metric (Kysely times the SQLite path).
      const started = database.queryObservers.size ? performance.now() : 0;
      let failed = true;
      try {
        const result = await pool.query({ name, text: entry.compiled.sql, values: parameters });
        failed = false;
        return result.rows as Row[];
      } finally {
        if (started) {
          const seconds = (performance.now() - started) / 1000;
          for (const observe of database.queryObservers) observe(kind, seconds, failed, 'main');
        }
      }
    }
    const statement = entry.statement;
    // SQLite: better-sqlite3 is synchronous, so while no transaction is open on the connection
    // (one is held across awaits by Kysely's connection lock) the statement runs right here,
    // without Kysely's driver, lock and promise chain per query. It reads committed data only,
    // as through Kysely. Inside another request's transaction, Kysely's path waits for its commit.
    if (statement && !database.sqlite!.inTransaction && !statement.busy) {
      const started = database.queryObservers.size ? performance.now() : 0;
      let failed = true;
      try {
        const rows = statement.all(parameters) as Row[];
        failed = false;
        return rows;
      } finally {
        if (started) {
          const seconds = (performance.now() - started) / 1000;
          for (const observe of database.queryObservers) observe(kind, seconds, failed, 'main');
        }
      }
    }
    const result = await database.db.executeQuery<Row>({ ...entry.compiled, parameters });
    return result.rows;
  };
}

/**
 * The SQLite connection Kysely runs on. Kysely prepares every query anew; on SQLite preparing
 * costs about as much as running a small query. Statements are reusable, so they are kept per
 * SQL text (parameters are bound apart, so the set of texts is small; the cache is bounded all
 * the same). A statement still being iterated (`busy`) is never handed out twice.
 *
 * One server process per SQLite file (plus short CLI runs): several instances need PostgreSQL.
 */
export function sqliteConnection(handle: SQLite.Database, max = 1000): SqliteDatabase {
  const cache = new Map<string, SQLite.Statement>();
  return {
    close: () => handle.close(),
    prepare(text: string) {
      // Kysely begins SQLite transactions with a deferred BEGIN. A transaction that reads and then
      // writes would fail with SQLITE_BUSY_SNAPSHOT if another process (the CLI, say) committed
      // in between; BEGIN IMMEDIATE takes the write lock up front and busy_timeout waits for it.
      if (text === 'begin') text = 'begin immediate';
      // SQLite rolls a transaction back by itself on some errors (SQLITE_FULL, SQLITE_IOERR,
      // SQLITE_NOMEM); Kysely's ROLLBACK after it would then fail with "cannot rollback - no
      // transaction is active" and hide the real error (a full disk must answer 507).
      if (text === 'rollback' && !handle.inTransaction) return handle.prepare('select 0 where 0');
      if (!enabled) return handle.prepare(text);
      const cached = cache.get(text);
      if (cached && !cached.busy) return cached;
      const statement = withRowBuilder(handle.prepare(text));
      if (!cached && cache.size >= max) cache.delete(cache.keys().next().value as string);
      cache.set(text, statement);
      return statement;
    },
  };
}
