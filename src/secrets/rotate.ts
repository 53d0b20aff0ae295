import { sql } from 'kysely';
import type { Deps } from '../deps.ts';
import { SEALED_COLUMNS, type SealedColumn } from './columns.ts';

export interface RotationSummary {
  /** values re-sealed with the current key */
  resealed: number;
  /** values already sealed with the current key */
  current: number;
}

/**
 * Re-seals every value of `columns` that is not sealed with the current key (one row at a time,
 * each a compare-and-set on the old text, so it can run beside a serving instance and be repeated
 * after a crash). Values that do not open with any known key are an error naming the row.
 */
export async function resealAll(deps: Deps, columns: SealedColumn[] = SEALED_COLUMNS): Promise<RotationSummary> {
  const summary: RotationSummary = { resealed: 0, current: 0 };
  for (const c of columns) {
    const rows = await sql<{
      k: string | number;
      v: string;
    }>`select ${sql.ref(c.key)} as k, ${sql.ref(c.column)} as v from ${sql.table(c.table)} where ${sql.ref(c.column)} is not null`.execute(
      deps.db,
    );
    for (const row of rows.rows) {
      if (deps.secret.isCurrent(row.v)) {
        summary.current++;
        continue;
      }
      let plain: Buffer;
      try {
        plain = deps.secret.openBytes(c.purpose, row.v);
      } catch (err) {
        throw new Error(`${c.table}.${c.column} of ${c.key} ${row.k}: ${(err as Error).message}`);
      }
      const next = deps.secret.seal(c.purpose, plain);
      await sql`update ${sql.table(c.table)} set ${sql.ref(c.column)} = ${next} where ${sql.ref(c.key)} = ${row.k} and ${sql.ref(c.column)} = ${row.v}`.execute(
        deps.db,
      );
      summary.resealed++;
    }
  }
  return summary;
}
