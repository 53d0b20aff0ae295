/**
 * What a moved branch or tag starts in CI, as a push does (docs/ci.md "Workflow files",
 * "Schedules"): one run per workflow whose `on.push` filters match, and the default branch's
 * schedules recomputed. A `git push` (code/pushes.ts), a merge through the API or the pages
 * (pulls/merge.ts), an applied suggestion (pulls/comments-service.ts) and a release's new tag
 * (releases/service.ts) all go through here: the workflow files are read first (`planRefMoveCi`,
 * outside the transaction where the caller can), and the runs and schedules are written in the
 * transaction that records the move (`applyRefMoveCi`).
 */
import type { TxContext } from '../core/transaction.ts';
import type { Deps } from '../deps.ts';
import { insertRuns, planPushRuns, type RunPlan } from './runs.ts';
import { applySchedules, planSchedules, type SchedulePlan } from './schedule.ts';

export interface RefMoveCi {
  runs: RunPlan[];
  schedules: SchedulePlan | null;
}

/** Reads the workflows of each moved ref's new tip and the default branch's schedules. */
export async function planRefMoveCi(
  deps: Deps,
  repoUuid: string,
  moves: Array<{ ref: string; before: string; after: string }>,
  actor: { uuid: string; username: string },
): Promise<RefMoveCi> {
  if (moves.length === 0) return { runs: [], schedules: null };
  const runs = await planPushRuns(deps, repoUuid, moves, actor);
  // only a branch can be the default branch (and tags-only moves read no table: a release plans
  // inside its transaction)
  const branches = moves.filter((m) => m.ref.startsWith('refs/heads/'));
  return { runs, schedules: branches.length ? await planSchedules(deps, repoUuid, branches, actor) : null };
}

/** Writes the planned runs and schedules in the move's own transaction. */
export async function applyRefMoveCi(deps: Deps, tx: TxContext, repoUuid: string, plan: RefMoveCi): Promise<void> {
  await insertRuns(deps, tx, repoUuid, plan.runs);
  await applySchedules(deps, tx, repoUuid, plan.schedules);
}
