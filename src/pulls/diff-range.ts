import type { Deps } from '../deps.ts';
import { type DiffFile, diffTrees } from '../git/diff.ts';
import { mergeBase } from '../git/history.ts';
import { type CodeReaders, codeReaders } from '../git/readers.ts';
import { EMPTY_TREE } from '../git/resolve.ts';
import { type PullHeadFields, pullHeadForReading } from './heads.ts';

export interface PullRange {
  readers: CodeReaders;
  dir: string;
  /** the merge base of the target and the head (the empty tree when they share none) */
  from: string;
  head: string;
}

export interface RangePull extends PullHeadFields {
  target_branch: string;
  status: string;
  merge_commit_sha: string | null;
  merged_head_sha: string | null;
  merged_base_sha: string | null;
}

/**
 * The commits a pull's diff runs between: from the merge base of its target and its head to its
 * head. An open or closed pull reads its head and target now; a merged pull keeps the head it
 * merged and the target tip it merged into (recorded by the merge), so its diff stays after the
 * merge. A pull merged before those were recorded reads from the merge commit's first parent.
 * Null when there is no head (or no git storage).
 */
export async function pullRange(deps: Deps, repoUuid: string, pull: RangePull): Promise<PullRange | null> {
  const readers = codeReaders(deps);
  const dir = readers.dirOf(repoUuid);
  if (!dir) return null;
  let head: string | null;
  let base: string | null;
  if (pull.status === 'merged' && pull.merged_head_sha) {
    head = pull.merged_head_sha;
    base = pull.merged_base_sha;
  } else if (pull.status === 'merged' && pull.merge_commit_sha) {
    head = await pullHeadForReading(deps, pull);
    base = `${pull.merge_commit_sha}^1`;
  } else {
    head = await pullHeadForReading(deps, pull);
    base = head === null ? null : await deps.git.branchSha(repoUuid, pull.target_branch);
  }
  if (head === null) return null;
  const from = base === null ? EMPTY_TREE : ((await mergeBase(readers.limits, dir, base, head).catch(() => null)) ?? EMPTY_TREE);
  return { readers, dir, from, head };
}

/** The files changed from commit `sha` to the pull's head (its diff's range): "changes since your last review". */
export async function filesSince(deps: Deps, repoUuid: string, pull: RangePull, sha: string): Promise<DiffFile[] | null> {
  const range = await pullRange(deps, repoUuid, pull);
  if (!range) return null;
  return (await diffTrees(range.readers.limits, range.dir, sha, range.head, { pool: range.readers })).files;
}
