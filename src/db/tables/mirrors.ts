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

/** A pull mirror's sync history (migration 610): one row per sync begun, the newest 50 kept. */
export interface MirrorSyncsTable {
  uuid: string;
  repo_uuid: string;
  /** import, timer or demand */
  trigger: string;
  /** a timed sync's due time (ISO 8601) */
  slot: string | null;
  /** hostname:pid of the process that ran it */
  instance: string;
  started_at: string;
  /** null: running, or cut short (the process died) */
  finished_at: string | null;
  error: string | null;
  refs_moved: number | null;
}

export interface MirrorsTables {
  repo_imports: RepoImportsTable;
  push_mirrors: PushMirrorsTable;
  mirror_syncs: MirrorSyncsTable;
}
