import { AsyncLocalStorage } from 'node:async_hooks';
import { type Kysely, PostgresAdapter, type Transaction } from 'kysely';
import type { DB } from './types.ts';

/** A connection or a transaction: every query helper takes this, so it runs in either. */
export type Db = Kysely<DB>;

interface OpenTransaction {
  root: Kysely<DB>;
  trx: Transaction<DB>;
  afterCommit: (() => void | Promise<void>)[];
}

const current = new AsyncLocalStorage<OpenTransaction>();

/** Second connections to a store (the SQLite background writer, sqlite-writer.ts), to its main one. */
const stores = new WeakMap<Kysely<DB>, Kysely<DB>>();

/**
 * Declares `other` a second connection to the store `main` connects to: a `withTransaction` on
 * either joins a transaction open on the other in the same async context, and `runAfterCommit`
 * and `currentTransaction` find it (one store, one transaction: a service called inside the
 * writer's transaction writes in it, and its after-commit steps wait for that commit).
 */
export function sameStore(other: Kysely<DB>, main: Kysely<DB>): void {
  stores.set(other, main);
}

const storeOf = (db: Kysely<DB>): Kysely<DB> => stores.get(db) ?? db;

/** The transaction open in this async context on `db`'s store, if any. */
function openOn(db: Kysely<DB>): OpenTransaction | undefined {
  const outer = current.getStore();
  return outer && storeOf(outer.root) === storeOf(db) ? outer : undefined;
}

/** What a library below the write pipeline needs of a write's transaction (the git store's disk usage). */
export interface InTransaction {
  db: Transaction<DB>;
}

export interface TxHandle {
  trx: Transaction<DB>;
  /** Runs `fn` once the outermost transaction has committed (never when it rolls back). */
  afterCommit(fn: () => void | Promise<void>): void;
  /** True when this call joined a transaction that an outer call opened. */
  nested: boolean;
}

/**
 * Runs `fn` in a transaction on `db`. A call made while another `withTransaction` on the same
 * database (or another connection to its store, `sameStore`) is open in the same async context
 * joins it instead of opening a second one, so a service that calls another service keeps one
 * transaction: its checks and writes commit or roll back together. After-commit callbacks run once the outermost transaction commits; a failing
 * callback is reported to `onAfterCommitError` and does not undo the commit.
 */
export async function withTransaction<T>(
  db: Kysely<DB>,
  fn: (tx: TxHandle) => Promise<T>,
  onAfterCommitError: (err: unknown) => void = () => {},
): Promise<T> {
  const outer = openOn(db);
  if (outer) {
    return fn({ trx: outer.trx, afterCommit: (cb) => outer.afterCommit.push(cb), nested: true });
  }
  const afterCommit: OpenTransaction['afterCommit'] = [];
  const result = await db
    .transaction()
    .execute((trx) =>
      current.run({ root: db, trx, afterCommit }, () => fn({ trx, afterCommit: (cb) => afterCommit.push(cb), nested: false })),
    );
  for (const cb of afterCommit) {
    try {
      await cb();
    } catch (err) {
      onAfterCommitError(err);
    }
  }
  return result;
}

/** The transaction open in this async context on `db`, if any (for helpers that may run in or out of one). */
export function currentTransaction(db: Kysely<DB>): Transaction<DB> | null {
  return openOn(db)?.trx ?? null;
}

/** Whether a database error is a unique-constraint violation (both dialects). */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Runs `fn` after the transaction open on `db` in this async context commits, or now when none is open. */
export function runAfterCommit(db: Kysely<DB>, fn: () => void | Promise<void>): void {
  const outer = openOn(db);
  if (outer) outer.afterCommit.push(fn);
  else void Promise.resolve().then(fn);
}

/** Whether `db` (a connection or a transaction) talks to PostgreSQL; row locks exist only there. */
export function isPostgres(db: Kysely<DB>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}

/**
 * Row-lock strength for an access check made inside a write transaction on PostgreSQL (SQLite
 * write transactions already run one at a time). READ COMMITTED reads do not wait for a
 * concurrent archive or member removal; a locking read does, and then sees its result:
 * - `update`: the row the write will change itself (a repo's counters, a team's settings);
 * - `share`: a row whose non-key columns the decision reads (a team's is_active);
 * - `key`: a row whose existence the decision needs (a membership): blocks its deletion only.
 */
export type RowLock = 'update' | 'share' | 'key';

/** Adds the row lock to a select on PostgreSQL; a no-op on SQLite or when `lock` is undefined. */
export function withRowLock<Q extends LockableQuery<Q>>(db: Kysely<DB>, query: Q, lock: RowLock | undefined): Q {
  if (!lock || !isPostgres(db)) return query;
  if (lock === 'update') return query.forNoKeyUpdate();
  if (lock === 'share') return query.forShare();
  return query.forKeyShare();
}

interface LockableQuery<Q> {
  forNoKeyUpdate(): Q;
  forShare(): Q;
  forKeyShare(): Q;
}
