/**
 * The background side of CI on one instance: a sweep that fails the jobs of lost runners even
 * when no runner polls (a poll sweeps too), and the hourly removal of runs past their retention.
 * Every instance sweeps; `finishJob` is conditional, so
 * a job is failed once. At start it queues the pending slot of each `schedule` (src/ci/schedule.ts).
 */
import { inTransaction } from '../core/transaction.ts';
import type { Deps } from '../deps.ts';
import { RUNNER_LOST_MS, sweepLostRunners } from './runs.ts';
import { queuePendingSlots } from './schedule.ts';

const timers = new WeakMap<object, NodeJS.Timeout[]>();

/**
 * Deletes the runs completed more than `days` ago (`RUN_RETENTION_DAYS`, src/config.ts) with their jobs and log chunks, a batch at a
 * time; answers how many runs went. Idempotent, so every instance may run it.
 */
export async function pruneRuns(deps: Deps, now = Date.now(), days = deps.config.runRetentionDays): Promise<number> {
  const cutoff = new Date(now - days * 86_400_000).toISOString();
  let total = 0;
  for (;;) {
    const gone = await inTransaction(deps, async (tx) => {
      const runs = (
        await tx.db
          .selectFrom('ci_runs')
          .select('uuid')
          .where('status', '=', 'completed')
          .where('completed_at', '<', cutoff)
          .limit(100)
          .execute()
      ).map((r) => r.uuid);
      if (runs.length === 0) return 0;
      const jobs = tx.db.selectFrom('ci_jobs').select('uuid').where('run_uuid', 'in', runs);
      await tx.db.deleteFrom('ci_log_chunks').where('job_uuid', 'in', jobs).execute();
      await tx.db.deleteFrom('ci_jobs').where('run_uuid', 'in', runs).execute();
      await tx.db.deleteFrom('ci_runs').where('uuid', 'in', runs).execute();
      return runs.length;
    });
    total += gone;
    if (gone < 100) return total;
  }
}

export function startCiBackground(deps: Deps): void {
  const sweep = () =>
    void inTransaction(deps, (tx) => sweepLostRunners(deps, tx)).catch((err) =>
      console.error('weft: the CI runner sweep failed', err),
    );
  const timer = setInterval(sweep, Math.min(5000, Math.max(250, RUNNER_LOST_MS / 4)));
  timer.unref();
  const prune = () => void pruneRuns(deps).catch((err) => console.error('weft: pruning CI runs failed', err));
  const hourly = setInterval(prune, 3600_000);
  hourly.unref();
  timers.set(deps, [timer, hourly]);
  // each schedule's pending slot is a queued job; queued again (deduplicated) in case one was lost
  void queuePendingSlots(deps).catch((err) => console.error('weft: queueing CI schedules failed', err));
}

export function stopCiBackground(deps: Deps): void {
  for (const t of timers.get(deps) ?? []) clearInterval(t);
  timers.delete(deps);
}
