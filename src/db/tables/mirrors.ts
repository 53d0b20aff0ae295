/** Imports, pull mirrors and push mirrors (migration 530); `credentials` is sealed. */

export interface RepoImportsTable {
  repo_uuid: string;
  url: string;
  credentials: string | null;
  /** importing, done or failed */
  status: string;
  error: string | null;
  progress: string | null;
  mirror: number;
  interval_seconds: number;
  last_sync_at: string | null;
  last_error: string | null;
  created_by_uuid: string;
  created_at: string;
  updated_at: string;
}

export interface PushMirrorsTable {
  uuid: string;
  repo_uuid: string;
  url: string;
  credentials: string | null;
  sync_on_push: number;
  last_sync_at: string | null;
  last_error: string | null;
  created_at: string;
}

export interface MirrorsTables {
  repo_imports: RepoImportsTable;
  push_mirrors: PushMirrorsTable;
}
