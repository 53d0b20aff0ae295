import type { Selectable } from 'kysely';
import type { RepoRow } from '../db/rows.ts';
import type { PullsTable } from '../db/types.ts';
import type { InTransaction } from '../db/tx.ts';

export type MergeStrategy = 'merge' | 'squash' | 'rebase' | 'fast_forward';

/**
 * The new target tip, the conflicting paths, a refused fast-forward, `nothingToMerge` when the
 * source has no commit the target lacks (README "Pulls from forks"), `unrelatedHistories` when
 * source and target share no commit, or `busy` when the target kept moving.
 */
export type MergeOutcome =
  | { sha: string; before?: string | null }
  | { conflictPaths: string[] }
  | { notFastForward: true }
  | { nothingToMerge: true }
  | { unrelatedHistories: true }
  | { busy: true };

export interface CommitInfo {
  sha: string;
  message: string;
  author_name: string;
  author_email: string;
  authored_at: string;
}

export interface FileChange {
  path: string;
  status: 'added' | 'modified' | 'deleted' | 'renamed';
  additions: number;
  deletions: number;
}

export interface MergeRequest {
  repo: RepoRow;
  pull: Selectable<PullsTable>;
  strategy: MergeStrategy;
  /** the source commit to merge, present in the repo's objects (the branch tip, or the pull's kept head) */
  source: string;
  /** committer of every new commit, and author of a merge commit */
  merger: { name: string; email: string };
  /** the pull's author: author of a squash commit */
  author: { name: string; email: string };
  /** called with the new tip and the tip it replaces (null: a new branch) just before the target branch moves (the caller records them) */
  beforeMove?: (sha: string, before: string | null) => Promise<void>;
}

/**
 * Everything Weft asks of git storage, in one interface on `Deps` (`deps.git`). Services call
 * only this; the implementation (`bare-store.ts`) owns every git command.
 */
export interface GitStore {
  /** Called inside the repo-creating transaction, after the row exists: a throw undoes the creation. */
  create(tx: InTransaction, repo: RepoRow): Promise<void>;
  /** Called once a repo's deletion has committed; its forks get their own objects first. */
  remove(repo: { uuid: string }): Promise<void>;
  /** Gives a new fork its content; inside the fork's transaction, after both rows exist. */
  copyForFork(tx: InTransaction, source: RepoRow, fork: RepoRow): Promise<void>;
  /**
   * Merges a pull's source branch into its target, outside any transaction (the pull is claimed
   * first). Nothing moves unless the whole merge succeeds; the target moves with `update-ref`
   * against its old value, so a concurrent push is never overwritten.
   */
  merge(req: MergeRequest): Promise<MergeOutcome>;
  /** A branch's tip, or null when it does not exist. */
  branchSha(uuid: string, branch: string): Promise<string | null>;
  /** The commit a full ref (`refs/pull/3/head`) names, or null when it does not exist. */
  refSha(uuid: string, ref: string): Promise<string | null>;
  /**
   * Brings a pull's kept head (`refs/pull/{number}/head` in the target repo) to the tip of its
   * source branch, fetching the objects the target lacks from the source repo; a missing source
   * repo or branch leaves the kept head as it is. Returns the kept head (null when there is none).
   */
  syncPullHead(target: string, number: number, source: string, branch: string): Promise<string | null>;
  /**
   * Brings commit `sha` of repo `source` (and what it needs) into the objects of `target`, without
   * a ref (a read across a fork network: compare with a fork's head). True when `target` holds it.
   */
  borrowCommit(target: string, source: string, sha: string): Promise<boolean>;
  /** Whether the repo holds commit `sha` (a full sha). */
  hasCommit(uuid: string, sha: string): Promise<boolean>;
  /** Whether commit `sha` is `tip` or one of its ancestors. */
  contains(uuid: string, tip: string, sha: string): Promise<boolean>;
  /** Whether commits `a` and `b` have a common ancestor (false for unrelated histories). */
  sharesHistory(uuid: string, a: string, b: string): Promise<boolean>;
  /** Every ref under `prefix` (default `refs/heads/`), sorted by name. */
  refs(uuid: string, prefix?: string): Promise<{ ref: string; sha: string }[]>;
  /** Commits of `head` not in `base`, oldest first. */
  commitsBetween(uuid: string, base: string | null, head: string): Promise<CommitInfo[]>;
  /** Files changed on `head` since its merge base with `base`, sorted by path. */
  filesBetween(uuid: string, base: string | null, head: string): Promise<FileChange[]>;
  /** Points HEAD at the default branch. */
  setHead(uuid: string, branch: string): Promise<void>;
}

/**
 * The store while repositories hold no git data: every branch is empty (a merge has nothing to
 * merge), and there is nothing to create, copy or remove.
 */
export class EmptyGitStore implements GitStore {
  async create(): Promise<void> {}
  async remove(): Promise<void> {}
  async copyForFork(): Promise<void> {}
  async merge(): Promise<MergeOutcome> {
    return { nothingToMerge: true };
  }
  async branchSha(): Promise<string | null> {
    return null;
  }
  async refSha(): Promise<string | null> {
    return null;
  }
  async syncPullHead(): Promise<string | null> {
    return null;
  }
  async contains(): Promise<boolean> {
    return false;
  }
  async hasCommit(): Promise<boolean> {
    return false;
  }
  async sharesHistory(): Promise<boolean> {
    return false;
  }
  async borrowCommit(): Promise<boolean> {
    return false;
  }
  async refs(): Promise<{ ref: string; sha: string }[]> {
    return [];
  }
  async commitsBetween(): Promise<CommitInfo[]> {
    return [];
  }
  async filesBetween(): Promise<FileChange[]> {
    return [];
  }
  async setHead(): Promise<void> {}
}
