/**
 * The CI jobs behind a pull's status checks (docs/ci.md "Pages"): a job's status carries its page
 * as `target_url` (`…/runs/{number}/jobs/{uuid}`), so the pull page shows the job's own state and
 * duration and links to its page in this repo.
 */
import type { Kysely } from 'kysely';
import type { DB } from '../db/types.ts';

export interface CheckJob {
  uuid: string;
  run_number: number;
  status: string;
  conclusion: string | null;
  started_at: string | null;
  completed_at: string | null;
}

/** The job uuid a CI status's `target_url` names, or null. */
export function jobOfTargetUrl(url: string | null | undefined): { number: number; uuid: string } | null {
  const m = url ? /\/runs\/(\d+)\/jobs\/([0-9a-f-]{36})$/.exec(url) : null;
  return m ? { number: Number(m[1]), uuid: m[2]! } : null;
}

/** The jobs of `repoUuid` among `uuids`, by uuid (one statement; none when there are no uuids). */
export async function checkJobs(db: Kysely<DB>, repoUuid: string, uuids: string[]): Promise<Map<string, CheckJob>> {
  if (!uuids.length) return new Map();
  const rows = await db
    .selectFrom('ci_jobs')
    .innerJoin('ci_runs', 'ci_runs.uuid', 'ci_jobs.run_uuid')
    .select([
      'ci_jobs.uuid',
      'ci_runs.number as run_number',
      'ci_jobs.status',
      'ci_jobs.conclusion',
      'ci_jobs.started_at',
      'ci_jobs.completed_at',
    ])
    .where('ci_jobs.repo_uuid', '=', repoUuid)
    .where('ci_jobs.uuid', 'in', uuids)
    .execute();
  return new Map(rows.map((r) => [r.uuid, r]));
}
