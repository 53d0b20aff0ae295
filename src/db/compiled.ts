import type { Statement } from 'better-sqlite3';
import type { CompiledQuery, Kysely } from 'kysely';
import type { Database } from './index.ts';
import { type QueryKind, statementKind } from './query-timing.ts';
import { withRowBuilder } from './row-builder.ts';
import type { DB } from './types.ts';

let statementCount = 0;

/**
 * A placeholder where the query wants a number (a limit, an offset, a pull number): `build`
 * receives placeholder strings, and the value is bound as the number passed at run time.
 */
export const numberParam = (placeholder: string) => placeholder as unknown as number;

/**
 * A query built and compiled once per database, then run with new parameter values.
 *
 * Building and compiling a Kysely query costs more than running it on SQLite, and on
 * PostgreSQL parsing and planning it costs a round of server work: on a hot path (the token
 * lookup of every authenticated request) that halves throughput. So the query is compiled once;
 * on PostgreSQL it runs as a named prepared statement (each pooled connection prepares it on
 * first use). It runs outside any transaction. `build` receives placeholder strings for the
 * parameters; every other value in the query stays as compiled.
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
      entry = { compiled, slots, kind: statementKind(compiled.sql), statement: statement?.reader ? statement : null };
      cache.set(database, entry);
    }
    const { kind } = entry;
    const parameters = entry.slots.map((slot) => (typeof slot === 'number' ? params[slot] : slot.value));
    if (database.pool) {
      // Outside Kysely, so timed here for the query-time metric (Kysely times the SQLite path).
      const started = database.queryObservers.size ? performance.now() : 0;
      let failed = true;
      try {
        const result = await database.pool.query({ name, text: entry.compiled.sql, values: parameters });
        failed = false;
        return result.rows as Row[];
      } finally {
        if (started) {
          const seconds = (performance.now() - started) / 1000;
          for (const observe of database.queryObservers) observe(kind, seconds, failed);
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
          for (const observe of database.queryObservers) observe(kind, seconds, failed);
        }
      }
    }
    const result = await database.db.executeQuery<Row>({ ...entry.compiled, parameters });
    return result.rows;
  };
}
