import type { Generated } from 'kysely';
export interface ThreadsTable {
  uuid: string;
  repo_uuid: string;
  /** per repo, from repos.thread_seq */
  number: number;
  title: string;
  body: string;
  author_uuid: string;
  /** counter for replies.number */
  reply_seq: number;
  created_at: string;
  updated_at: string;
  removed_at: string | null;
  /** the issue tracker (migration 310): open | closed */
  state: Generated<string>;
  /** completed | not_planned | duplicate; null while open */
  state_reason: string | null;
  closed_at: string | null;
  closed_by_uuid: string | null;
  closed_by_pull_number: number | null;
  closed_by_commit_sha: string | null;
  locked: Generated<number>;
  milestone_uuid: string | null;
  /** replies not removed, kept by reply creation and removal (migration 470) */
  reply_count: Generated<number>;
}

export interface RepliesTable {
  uuid: string;
  thread_uuid: string;
  number: number;
  author_uuid: string;
  body: string;
  kind: string;
  status: string;
  /** JSON array of {kind, target} */
  links: string;
  /** the current version (1 at creation) */
  version: number;
  created_at: string;
  updated_at: string;
  removed_at: string | null;
}

/** A full snapshot of a reply at each version (1 = as created). */
export interface ReplyVersionsTable {
  reply_uuid: string;
  version: number;
  body: string;
  kind: string;
  status: string;
  links: string;
  editor_uuid: string;
  created_at: string;
}

export interface UploadGroupsTable {
  uuid: string;
  repo_uuid: string;
  name: string | null;
  created_by_uuid: string;
  created_at: string;
  removed_at: string | null;
}

export interface UploadsTable {
  uuid: string;
  repo_uuid: string;
  group_uuid: string | null;
  filename: string;
  content_type: string;
  size_bytes: number;
  sha256: string;
  status: string; // active | removed
  created_by_uuid: string;
  created_at: string;
  removed_at: string | null;
}

export interface AttachmentsTable {
  uuid: string;
  repo_uuid: string;
  upload_uuid: string;
  group_uuid: string | null;
  target_kind: string; // thread | reply | pull | review
  target_uuid: string;
  created_by_uuid: string;
  created_at: string;
}

export interface ThreadsTables {
  threads: ThreadsTable;
  replies: RepliesTable;
  reply_versions: ReplyVersionsTable;
  upload_groups: UploadGroupsTable;
  uploads: UploadsTable;
  attachments: AttachmentsTable;
  labels: LabelsTable;
  milestones: MilestonesTable;
  item_labels: ItemLabelsTable;
  item_assignees: ItemAssigneesTable;
  review_requests: ReviewRequestsTable;
  item_references: ItemReferencesTable;
  thread_terms: ThreadTermsTable;
  pull_terms: PullTermsTable;
}

/** The words and @-mentions of a thread and its replies, by source (migration 400). */
export interface ThreadTermsTable {
  repo_uuid: string;
  term: string;
  thread_uuid: string;
  source_uuid: string;
}

/** The words and @-mentions of a pull (title and body) and its submitted reviews, by source (migration 740). */
export interface PullTermsTable {
  repo_uuid: string;
  term: string;
  pull_uuid: string;
  source_uuid: string;
}

/** One `referenced` entry per (source, target) (migration 311). */
export interface ItemReferencesTable {
  source_key: string;
  target_uuid: string;
  created_at: string;
}

/** A repo's or a team's label (migration 310): exactly one of repo_uuid and team_uuid is set. */
export interface LabelsTable {
  uuid: string;
  repo_uuid: string | null;
  team_uuid: string | null;
  name: string;
  /** lower-cased name: unique per repo or team */
  name_key: string;
  color: string;
  description: string;
  created_at: string;
  updated_at: string;
}

export interface MilestonesTable {
  uuid: string;
  repo_uuid: string;
  number: number;
  title: string;
  title_key: string;
  description: string;
  due_on: string | null;
  state: string;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
}

/** A label on a thread or a pull (item_uuid is the thread's or pull's uuid). */
export interface ItemLabelsTable {
  item_uuid: string;
  label_uuid: string;
  created_at: string;
}

export interface ItemAssigneesTable {
  item_uuid: string;
  user_uuid: string;
  created_at: string;
}

export interface ReviewRequestsTable {
  pull_uuid: string;
  user_uuid: string;
  created_at: string;
}
