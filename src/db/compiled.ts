import type { CompiledQuery, Kysely } from 'kysely';
import type { DB } from './types.ts';

/**
 * A query built and compiled once per database, then run with new parameter values.
 *
 * Building and compiling a Kysely query costs more than running it on SQLite: on a hot path
 * (the token lookup of every authenticated request) that halves throughput. `build` receives
 * placeholder strings for the parameters; every other value in the query stays as compiled.
 */
export function compiledOnce<Row, Params extends string[]>(
  build: (db: Kysely<DB>, ...params: Params) => { compile(): CompiledQuery<Row> },
): (db: Kysely<DB>, ...params: Params) => Promise<Row[]> {
  const cache = new WeakMap<Kysely<DB>, { compiled: CompiledQuery<Row>; slots: Array<number | { value: unknown }> }>();
  return async (db, ...params) => {
    let entry = cache.get(db);
    if (!entry) {
      // NUL cannot occur in a real value (request input with NUL is refused), so no clash.
      const placeholders = params.map((_, i) => `\u0000param${i}\u0000`) as Params;
      const compiled = build(db, ...placeholders).compile();
      const slots = compiled.parameters.map((p) => {
        const i = placeholders.indexOf(p as string);
        return i >= 0 ? i : { value: p };
      });
      entry = { compiled, slots };
      cache.set(db, entry);
    }
    const parameters = entry.slots.map((slot) => (typeof slot === 'number' ? params[slot] : slot.value));
    const result = await db.executeQuery<Row>({ ...entry.compiled, parameters });
    return result.rows;
  };
}
