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
}
