/** Git LFS (migration 460): the objects each repo holds and the file locks. */

export interface LfsObjectsTable {
  repo_uuid: string;
  /** the object's SHA-256 (hex), also its address in the blob store */
  oid: string;
  size: number;
  created_at: string;
}

export interface LfsLocksTable {
  uuid: string;
  repo_uuid: string;
  path: string;
  owner_uuid: string;
  locked_at: string;
}

export interface LfsTables {
  lfs_objects: LfsObjectsTable;
  lfs_locks: LfsLocksTable;
}
