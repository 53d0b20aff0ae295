import type { Statement } from 'better-sqlite3';

/**
 * Rows of a SQLite reader statement as plain objects, built faster than better-sqlite3 builds
 * them. better-sqlite3 makes each row object by setting one named property per column from
 * native code; a wide row (the hot read of GET {repo}/pulls/{n} has 62 columns) then costs more
 * in property definition than the query costs in SQLite, and the objects it makes are slow to
 * read. Read as arrays (`raw`), each row goes through one object literal generated from the
 * statement's column names: the same keys in the same order, the later of two equal names
 * winning as before, and one hidden class per statement. Measured on the pull read: 18 µs a row
 * as better-sqlite3 builds it, 11 µs this way (bench/README.md "Where the time goes").
 */
export type RowBuilder = (values: unknown[]) => Record<string, unknown>;

/** The literal builder for these column names; null when a name could not be a plain key. */
export function rowBuilder(columns: readonly string[]): RowBuilder | null {
  // `__proto__` in a literal sets the prototype: leave such a statement to better-sqlite3
  if (columns.some((c) => c === '__proto__')) return null;
  const body = `return {${columns.map((c, i) => `${JSON.stringify(c)}: v[${i}]`).join(', ')}};`;
  return new Function('v', body) as RowBuilder;
}

/**
 * A reader statement that answers `all` and `iterate` with objects built by `rowBuilder`, and
 * otherwise behaves as the statement (Kysely's SQLite driver calls `reader`, `all`, `run` and
 * `iterate`; the statement cache reads `busy`). Writers and statements whose columns cannot be
 * built so are returned as they are.
 */
export function withRowBuilder(statement: Statement): Statement {
  if (!statement.reader) return statement;
  const build = rowBuilder(statement.columns().map((c) => c.name));
  if (!build) return statement;
  statement.raw(true);
  return {
    reader: true,
    get busy() {
      return statement.busy;
    },
    source: statement.source,
    all: (...params: unknown[]) => (statement.all(...params) as unknown[][]).map(build),
    get: (...params: unknown[]) => {
      const values = statement.get(...params) as unknown[] | undefined;
      return values === undefined ? undefined : build(values);
    },
    run: (...params: unknown[]) => statement.run(...params),
    *iterate(...params: unknown[]) {
      for (const values of statement.iterate(...params) as IterableIterator<unknown[]>) yield build(values);
    },
  } as unknown as Statement;
}
