/**
 * Git housekeeping of a repo (README "Git maintenance"): after a push or a merge moves refs, a job
 * `git-maintenance` is queued for the repo (at most one queued per repo, due GIT_MAINTENANCE_DELAY_MS
 * later, so a burst of pushes costs one run). It runs through the job queue, so one instance at a
 * time, and under the repo's git write lock, so never beside a push or a merge of that repo:
 * - `git pack-refs --all --prune`: the refs a push wrote as loose files go into `packed-refs`, so
 *   the next push reads one file instead of thousands (a push then costs O(changed refs));
 * - `git maintenance run --task=loose-objects`: loose objects go into a pack. Nothing is pruned
 *   (forks borrow objects through alternates), so no object any repo may need is removed.
 * The object store's change in size moves `disk_usage_bytes` by its delta, as every git write does.
 */
import type { Deps } from '../deps.ts';
import type { DB } from '../db/types.ts';
import type { Kysely } from 'kysely';
import { addDiskUsage, BareGitStore } from './bare-store.ts';
import { withRepoLock } from './repo-lock.ts';
import { git } from './run.ts';

export const JOB_GIT_MAINTENANCE = 'git-maintenance';

/** Packs the repo's refs and loose objects under its git write lock. */
export async function maintainRepo(deps: Deps, repoUuid: string): Promise<void> {
  const store = deps.git;
  if (!(store instanceof BareGitStore) || !store.exists(repoUuid)) return;
  await withRepoLock(deps.database, repoUuid, async () => {
    if (!store.exists(repoUuid)) return;
    const dir = store.pathOf(repoUuid);
    const before = await store.size(repoUuid);
    await git(dir, ['pack-refs', '--all', '--prune'], { timeoutMs: 600_000 });
    await git(dir, ['-c', 'maintenance.auto=false', 'maintenance', 'run', '--task=loose-objects'], { timeoutMs: 3_600_000 });
    await addDiskUsage({ db: deps.db }, repoUuid, (await store.size(repoUuid)) - before);
  });
}

/** Queues the repo's maintenance (one queued job per repo), with `db` (the caller's transaction when one is open). */
export async function scheduleMaintenance(deps: Deps, db: Kysely<DB>, repoUuid: string): Promise<void> {
  const runAt = new Date(deps.clock.now().getTime() + deps.config.gitMaintenanceDelayMs).toISOString();
  await deps.jobs.enqueue(db, {
    kind: JOB_GIT_MAINTENANCE,
    payload: { repo_uuid: repoUuid },
    runAt,
    dedupeKey: `${JOB_GIT_MAINTENANCE}:${repoUuid}`,
  });
}

/** Registers the job's handler (once per instance). */
export function registerGitMaintenance(deps: Deps): void {
  deps.jobs.register(JOB_GIT_MAINTENANCE, async (payload) => maintainRepo(deps, String(payload.repo_uuid)));
}
