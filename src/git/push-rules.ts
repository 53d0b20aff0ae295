import type { Kysely } from 'kysely';
import type { DB } from '../db/types.ts';
import { globToRegExp, isGlobPattern } from './refname.ts';

/**
 * The repo's protected branch patterns as regular-expression sources, for the pre-receive hook:
 * the same matcher as `branchMatchesPattern` (exact names match only themselves).
 */
export async function protectedBranchRegExps(db: Kysely<DB>, repoUuid: string): Promise<string[]> {
  const rows = await db.selectFrom('protections').select('branch').where('repo_uuid', '=', repoUuid).execute();
  return rows.map((r) =>
    isGlobPattern(r.branch) ? globToRegExp(r.branch).source : `^${r.branch.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`,
  );
}
