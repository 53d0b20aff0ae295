import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import type { Dialect } from '../db/index.ts';

/** One batch of rows of a table, as plain JSON values. */
export type Row = Record<string, unknown>;

/** A consistent, read-only view of the database, open for the time of one backup. */
export interface Snapshot {
  dialect: Dialect;
  /** every table, parents (referenced by foreign keys) before children */
  tables: string[];
  /** the applied migrations, by name */
  migrations: string[];
  rows(table: string): AsyncIterable<Row[]>;
}

const BATCH = 500;
const ident = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/**
 * The tables a backup holds: all but the search index (docs/search.md), which is derived data —
 * its text part is refilled by the database's own triggers as the restore inserts threads, pulls,
 * replies and reviews, and its code part by `weft reindex` (the restore says so). SQLite's FTS5
 * shadow tables could not be written back anyway.
 */
const kept = (table: string): boolean => !table.startsWith('search_');

/** Orders tables so that each comes after the tables it references (cycles keep their order). */
export function parentsFirst(tables: string[], edges: { tbl: string; parent: string }[]): string[] {
  const parents = new Map<string, Set<string>>(tables.map((t) => [t, new Set()]));
  for (const e of edges) if (e.tbl !== e.parent && parents.has(e.parent)) parents.get(e.tbl)?.add(e.parent);
  const out: string[] = [];
  const placed = new Set<string>();
  const visiting = new Set<string>();
  const visit = (t: string) => {
    if (placed.has(t) || visiting.has(t)) return;
    visiting.add(t);
    for (const p of [...(parents.get(t) ?? [])].sort()) visit(p);
    visiting.delete(t);
    placed.add(t);
    out.push(t);
  };
  for (const t of [...tables].sort()) visit(t);
  return out;
}

export function sqliteFileOf(url: string | null, dataDir: string): string | null {
  if (url === null) return join(dataDir, 'weft.sqlite');
  return url.startsWith('sqlite:') ? url.slice('sqlite:'.length) : null;
}

/**
 * Runs `use` on a snapshot of the database. SQLite: an online backup (better-sqlite3's
 * `.backup()`, all pages in one step, so one read transaction) into `tmpFile`, read from there.
 * PostgreSQL: one REPEATABLE READ, READ ONLY transaction on one connection, read by cursors.
 */
export async function withSnapshot<T>(
  url: string | null,
  dataDir: string,
  tmpFile: string,
  use: (snap: Snapshot) => Promise<T>,
): Promise<T> {
  const file = sqliteFileOf(url, dataDir);
  if (file !== null) {
    const live = new SQLite(file, { readonly: true, fileMustExist: true });
    try {
      live.pragma('busy_timeout = 5000');
      await live.backup(tmpFile, { progress: () => 0x7fffffff });
    } finally {
      live.close();
    }
    const copy = new SQLite(tmpFile, { readonly: true });
    try {
      const names = (
        copy.prepare(`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`).all() as {
          name: string;
        }[]
      )
        .map((r) => r.name)
        .filter(kept);
      const edges = copy
        .prepare(
          `select m.name as tbl, p."table" as parent from sqlite_master m join pragma_foreign_key_list(m.name) p where m.type = 'table'`,
        )
        .all() as { tbl: string; parent: string }[];
      const migrations = names.includes('weft_migrations')
        ? (copy.prepare('select name from weft_migrations order by name').all() as { name: string }[]).map((r) => r.name)
        : [];
      return await use({
        dialect: 'sqlite',
        tables: parentsFirst(names, edges),
        migrations,
        async *rows(table) {
          let batch: Row[] = [];
          for (const row of copy.prepare(`select * from ${ident(table)}`).iterate() as IterableIterator<Row>) {
            batch.push(row);
            if (batch.length >= BATCH) {
              yield batch;
              batch = [];
            }
          }
          if (batch.length) yield batch;
        },
      });
    } finally {
      copy.close();
    }
  }
  pg.types.setTypeParser(20, (v) => Number(v));
  const client = new pg.Client({ connectionString: url!, application_name: 'weft-backup' });
  await client.connect();
  try {
    await client.query('begin isolation level repeatable read read only');
    const names = (
      await client.query<{ name: string }>(
        `select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`,
      )
    ).rows
      .map((r) => r.name)
      .filter(kept);
    const edges = (
      await client.query<{ tbl: string; parent: string }>(
        `select tc.table_name as tbl, ccu.table_name as parent
           from information_schema.table_constraints tc
           join information_schema.constraint_column_usage ccu
             on tc.constraint_name = ccu.constraint_name and tc.constraint_schema = ccu.constraint_schema
          where tc.constraint_type = 'FOREIGN KEY' and tc.table_schema = current_schema()`,
      )
    ).rows;
    const migrations = names.includes('weft_migrations')
      ? (await client.query<{ name: string }>('select name from weft_migrations order by name')).rows.map((r) => r.name)
      : [];
    const result = await use({
      dialect: 'postgres',
      tables: parentsFirst(names, edges),
      migrations,
      async *rows(table) {
        await client.query(`declare weft_backup_rows no scroll cursor for select * from ${ident(table)}`);
        try {
          for (;;) {
            const { rows } = await client.query<Row>(`fetch ${BATCH} from weft_backup_rows`);
            if (rows.length === 0) break;
            yield rows;
          }
        } finally {
          await client.query('close weft_backup_rows');
        }
      },
    });
    await client.query('commit');
    return result;
  } finally {
    await client.end();
  }
}
