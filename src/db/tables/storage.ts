/** Storage lifetimes (migration 170): blob holds and recorded pushes. */

/**
 * A pending reference to a blob, written (and committed) before an upload's bytes are published
 * at their content address and deleted when the upload row commits or is refused: a blob is
 * deleted only while no active upload names it and no hold does (src/blobs/lifetime.ts).
 */
export interface BlobHoldsTable {
  id: string;
  sha256: string;
  created_at: string;
}

/**
 * Pushes whose events and usage delta have committed, kept only until their marker file is gone,
 * so a marker left by a crash after the commit is never recorded twice (src/code/pushes.ts).
 */
export interface GitPushRecordsTable {
  push_id: string;
  repo_uuid: string;
  created_at: string;
}

export interface StorageTables {
  blob_holds: BlobHoldsTable;
  git_push_records: GitPushRecordsTable;
}
