import type { Selectable } from 'kysely';
import type { RepoRow } from '../access/index.ts';
import type { PullsTable } from '../db/types.ts';
import type { TxContext } from '../events/service.ts';

export type MergeStrategy = 'merge' | 'squash' | 'rebase' | 'fast_forward';

export type MergeOutcome = { sha: string | null } | { conflictPaths: string[] };

/**
 * Everything Weft asks of git storage, in one interface on `Deps` (`deps.git`). Services call
 * only this; the implementation owns every git command.
 */
export interface GitStore {
  /** Called inside the repo-creating transaction, after the row exists: a throw undoes the creation. */
  create(tx: TxContext, repo: RepoRow): Promise<void>;
  /** Called once a repo's deletion has committed. */
  remove(repo: { uuid: string }): Promise<void>;
  /** Gives a new fork its content; inside the fork's transaction, after both rows exist. */
  copyForFork(tx: TxContext, source: RepoRow, fork: RepoRow): Promise<void>;
  /**
   * Merges a pull's source branch into its target. Called inside the merge transaction after the
   * pull has been claimed and its protection checked. Returns the resulting commit sha, `null`
   * when the source branch has no commits (docs/behaviour.md "Protections, pulls and reviews"), or the conflicting paths.
   */
  merge(tx: TxContext, repo: RepoRow, pull: Selectable<PullsTable>, strategy: MergeStrategy): Promise<MergeOutcome>;
}

/**
 * The store while repositories hold no git data: every branch is empty, so a merge records the
 * pull as merged with no commit, and there is nothing to create, copy or remove.
 */
export class EmptyGitStore implements GitStore {
  async create(): Promise<void> {}
  async remove(): Promise<void> {}
  async copyForFork(): Promise<void> {}
  async merge(): Promise<MergeOutcome> {
    return { sha: null };
  }
}
