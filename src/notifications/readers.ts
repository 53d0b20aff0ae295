import { type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import { repoLevelSql } from '../access/index.ts';
import type { DB } from '../db/types.ts';

/**
 * The users among `users` (active) who may read the repo now: the repo rule (access/repo-level.ts)
 * in SQL, 500 users a statement; `yielding`: back to the event loop between statements (the
 * fan-out's thousands of watchers on SQLite, whose driver holds the loop).
 */
export async function readersOf(db: Kysely<DB>, repoUuid: string, users: string[], yielding = false): Promise<Set<string>> {
  const out = new Set<string>();
  for (let i = 0; i < users.length; i += 500) {
    if (yielding && i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    const chunk = users.slice(i, i + 500);
    const level = levelOfU();
    const rows = await db
      .selectFrom('users as u')
      .innerJoin('repos as r', (j) => j.on('r.uuid', '=', repoUuid))
      .select('u.uuid')
      .where('u.uuid', 'in', chunk)
      .where('u.is_active', '=', 1)
      .where(sql<SqlBool>`${level} >= 1`)
      .execute();
    for (const r of rows) out.add(r.uuid);
  }
  return out;
}

/** The repo rule for the user `u` over the repo `r` (both aliases in the statement). */
const levelOfU = () =>
  repoLevelSql({
    repo: 'r',
    viewerUuid: sql.ref('u.uuid'),
    viewerStaff: sql.ref('u.is_staff'),
    role: sql`(select tm.role from team_members tm where tm.team_uuid = r.owner_uuid and tm.user_uuid = u.uuid)`,
    ownerActive: sql<SqlBool>`exists (select 1 from users ou where ou.uuid = r.owner_uuid and ou.is_active = 1)`,
  });

/**
 * The same rule as `readersOf` as a condition on a user column of a set-based statement (the
 * fan-out's watchers, written in SQL): the user is active and may read the repo now. The repo is
 * a uuid or a column of the statement (its aliases must not be `u` or `r`).
 *
 * A scalar subquery (the user's level, at most one row: two primary keys), not `EXISTS`:
 * PostgreSQL turns an `EXISTS` into a semi-join whose plan follows the statistics (stale ones
 * made the fan-out's `NOT EXISTS` scan a repo's every watcher per row); a scalar subquery stays a
 * per-row primary-key lookup on both databases, over the statement's own rows only.
 */
export function readableBy(repoUuid: string | RawBuilder<unknown>, user: RawBuilder<unknown>): RawBuilder<SqlBool> {
  return sql<SqlBool>`coalesce((select ${levelOfU()} from users u inner join repos r on r.uuid = ${repoUuid}
    where u.uuid = ${user} and u.is_active = 1), 0) >= 1`;
}
