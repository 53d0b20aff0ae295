import type { Selectable } from 'kysely';
import type { RepoRow } from '../access.ts';
import type { PullsTable } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import type { TxContext } from '../events/service.ts';

export type MergeStrategy = 'merge' | 'squash' | 'rebase' | 'fast_forward';

export type MergeOutcome = { sha: string | null } | { conflictPaths: string[] };

/**
 * THE seam between merging a pull (a database state change) and git storage. It is called
 * inside the merge transaction after the pull has been claimed and its protection checked, so
 * at most one merge of a pull runs at a time, and a thrown error or a conflict rolls the claim
 * back. `deps` gives the storage location (config), `tx` the transaction (e.g. to update the
 * repo's `disk_usage_bytes`). Returns the resulting commit sha, `null` when the source branch has
 * no commits (decisions §5 "Branches": the pull is recorded as merged without a commit), or the
 * conflicting paths (the caller answers 409 merge_conflict with them).
 *
 * Git storage does not exist yet, so every source branch is still empty: the answer is
 * `{ sha: null }`. The git storage work replaces this body with a real
 * `git merge-tree --write-tree` merge of `pull.source_branch` into `pull.target_branch`
 * (the target created when it does not exist), using `strategy`.
 */
export async function mergeBranches(
  _deps: Deps,
  _tx: TxContext,
  _repo: RepoRow,
  _pull: Selectable<PullsTable>,
  _strategy: MergeStrategy,
): Promise<MergeOutcome> {
  return { sha: null };
}
