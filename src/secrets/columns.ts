/**
 * Every column that holds a value sealed with the server secret (src/secrets/server-secret.ts),
 * with the purpose it was sealed for. `weft rotate-secret-key` re-seals exactly these, so a domain
 * that stores a sealed value adds its column here (and nowhere else).
 */
export interface SealedColumn {
  table: string;
  /** the table's primary key column */
  key: string;
  column: string;
  /** the additional authenticated data the value was sealed with */
  purpose: string;
}

export const SEALED_COLUMNS: SealedColumn[] = [];
