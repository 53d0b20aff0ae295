import type { LogEvent } from 'kysely';

/** Statement kinds the query-time metric is labelled with (a bounded set, never SQL text). */
export type QueryKind = 'select' | 'insert' | 'update' | 'delete' | 'transaction' | 'other';

/** Which of a store's connections ran a query (db/database.ts): the main one, the background writer, a reader. */
export type QueryConnection = 'main' | 'writer' | 'reader';

/** Told of every query a database runs: its kind, seconds taken, whether it failed, and on which connection. */
export type QueryObserver = (kind: QueryKind, seconds: number, failed: boolean, connection: QueryConnection) => void;

const KINDS: Record<string, QueryKind> = {
  select: 'select',
  with: 'select',
  insert: 'insert',
  update: 'update',
  delete: 'delete',
  begin: 'transaction',
  commit: 'transaction',
  rollback: 'transaction',
  savepoint: 'transaction',
  release: 'transaction',
};

/** The statement's first keyword, mapped to a kind (`with ...` counts as a select). */
export function statementKind(text: string): QueryKind {
  const word = /^\s*\(?\s*([a-z]+)/i.exec(text)?.[1]?.toLowerCase();
  return (word && KINDS[word]) || 'other';
}

/**
 * Kysely's `log` hook, fanning each query's duration out to the observers (none unless metrics
 * are on: then the cost is one Set check per query, Kysely times queries either way).
 */
export function queryLogger(observers: Set<QueryObserver>, connection: QueryConnection = 'main'): (event: LogEvent) => void {
  return (event) => {
    if (observers.size === 0) return;
    const kind = statementKind(event.query.sql);
    for (const observe of observers) observe(kind, event.queryDurationMillis / 1000, event.level === 'error', connection);
  };
}
