import type { Transaction } from 'kysely';
import type { DB } from '../db/types.ts';
import { notFound } from '../errors.ts';

/**
 * The next number of a repo's pulls or threads (docs/behaviour.md: numbers are per repo, unique
 * and gap-free). Bumping the counter locks the repo row, which serialises concurrent creations;
 * 404 when the repo was deleted after the caller's access check.
 */
export async function nextRepoNumber(db: Transaction<DB>, repoUuid: string, counter: 'pull_seq' | 'thread_seq'): Promise<number> {
  const row = await db
    .updateTable('repos')
    .set((eb) => ({ [counter]: eb(counter, '+', 1) }))
    .where('uuid', '=', repoUuid)
    .returning(counter)
    .executeTakeFirst();
  if (!row) throw notFound('Repo');
  return Number((row as Record<string, unknown>)[counter]);
}
