import type { Selectable } from 'kysely';
import type { PullsTable, ReposTable } from '../db/types.ts';

export type MergeStrategy = 'merge' | 'squash' | 'rebase' | 'fast_forward';

export type MergeOutcome = { sha: string | null } | { conflictPaths: string[] };

/**
 * THE seam between merging a pull (a database state change) and git storage. It is called
 * inside the merge transaction after the pull has been claimed, so at most one merge of a pull
 * runs at a time. Returns the resulting commit sha, `null` when the source branch has no
 * commits (decisions §5 "Branches": the pull is recorded as merged without a commit), or the
 * conflicting paths.
 *
 * Git storage does not exist yet, so every source branch is still empty: the answer is
 * `{ sha: null }`. The git storage work replaces this body with a real
 * `git merge-tree --write-tree` merge of `pull.source_branch` into `pull.target_branch`.
 */
export async function mergeBranches(
  _repo: Selectable<ReposTable>,
  _pull: Selectable<PullsTable>,
  _strategy: MergeStrategy,
): Promise<MergeOutcome> {
  return { sha: null };
}
