import pg from 'pg';
import type { Database } from '../db/index.ts';

/** Namespace of the PostgreSQL advisory locks that serialise git writes per repo. */
const REPO_LOCK_CLASS = 7_401_029;

const chains = new Map<string, Promise<void>>();

/**
 * Runs `fn` while holding the repo's git write lock: pushes and merges of one repo take turns,
 * so the quota check of a push sees every earlier push, and a size measured before and after
 * holds this write's objects alone (README "Quota accounting"). In process: a promise chain per
 * repo. On PostgreSQL also a session advisory lock, shared by every instance, held on a
 * connection of its own (never a pooled one: a lock held for a push's duration must not take the
 * connections that writes need); it goes with the connection, so a killed process frees it at once.
 */
export async function withRepoLock<T>(database: Pick<Database, 'pool'>, repoUuid: string, fn: () => Promise<T>): Promise<T> {
  const previous = chains.get(repoUuid) ?? Promise.resolve();
  let done!: () => void;
  const mine = new Promise<void>((resolve) => {
    done = resolve;
  });
  const tail = previous.then(() => mine);
  chains.set(repoUuid, tail);
  await previous;
  let client: pg.Client | null = null;
  try {
    if (database.pool) {
      client = new pg.Client(database.pool.options);
      client.on('error', () => undefined);
      await client.connect();
      await client.query('select pg_advisory_lock($1, hashtext($2))', [REPO_LOCK_CLASS, repoUuid]);
    }
    return await fn();
  } finally {
    if (client) await client.end().catch(() => undefined);
    done();
    if (chains.get(repoUuid) === tail) chains.delete(repoUuid);
  }
}

/**
 * Like `withRepoLock`, but gives up at once (returns `undefined`) when another holder has the
 * lock: for start-up recovery, which must not wait behind another instance's push (that push
 * handles what is left over itself).
 */
export async function tryWithRepoLock<T>(
  database: Pick<Database, 'pool'>,
  repoUuid: string,
  fn: () => Promise<T>,
): Promise<T | undefined> {
  if (chains.has(repoUuid)) return undefined;
  if (!database.pool) return withRepoLock(database, repoUuid, fn);
  const client = new pg.Client(database.pool.options);
  client.on('error', () => undefined);
  await client.connect();
  try {
    const res = await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1, hashtext($2)) as ok', [
      REPO_LOCK_CLASS,
      repoUuid,
    ]);
    if (!res.rows[0]?.ok) return undefined;
    // Held on this connection; the in-process chain keeps this instance's own writers behind it.
    return await withRepoLock({ pool: null }, repoUuid, fn);
  } finally {
    await client.end().catch(() => undefined);
  }
}
