import type { Generated } from 'kysely';

/** Code review on lines (migration 410, src/pulls/comments-service.ts). */
export interface ReviewCommentsTable {
  uuid: string;
  pull_uuid: string;
  /** the review that collected it; null for a reply */
  review_uuid: string | null;
  author_uuid: string;
  path: string;
  /** RIGHT (the head's side) or LEFT (the merge base's) */
  side: string;
  /** the last line of the comment on the current diff (its original line while outdated) */
  line: number;
  start_line: number | null;
  start_side: string | null;
  original_line: number;
  original_start_line: number | null;
  /** the pull's head when the comment was made */
  commit_sha: string;
  /** the body of the diff hunk the comment points into, at commit_sha */
  hunk: string;
  /** the head `line` and `position_outdated` were computed for */
  anchored_head: string;
  position_outdated: Generated<number>;
  body: string;
  in_reply_to: string | null;
  /** the first comment of its conversation (its own uuid for a first comment) */
  thread_uuid: string;
  resolved: Generated<number>;
  resolved_by_uuid: string | null;
  pending: Generated<number>;
  created_at: string;
  updated_at: string;
}

export interface ReviewTables {
  review_comments: ReviewCommentsTable;
}
