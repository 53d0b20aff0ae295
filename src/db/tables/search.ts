import type { Generated } from 'kysely';

/** Per repo, what its code index holds (migration 450, src/search). */
export interface SearchIndexStateTable {
  repo_uuid: string;
  branch: string | null;
  commit_sha: string | null;
  /** pending | indexing | ready | failed */
  state: string;
  files: number;
  bytes: number | string;
  error: string | null;
  /** while `indexing`: until when the indexing instance holds the repo (another may take over after) */
  lease_until: string | null;
  /** bumped by every request to index (a push, a default-branch change): the indexer loops until it saw the last one */
  generation: number;
  updated_at: string;
}

/** One indexed file of a repo's default branch (text, at most 1 MiB). */
export interface SearchCodeFilesTable {
  id: Generated<number>;
  repo_uuid: string;
  path: string;
  blob_sha: string;
  language: string | null;
  size: number;
  content: string;
}

/** A commit message of a repo's default branch. */
export interface SearchCommitsTable {
  id: Generated<number>;
  repo_uuid: string;
  sha: string;
  message: string;
  author_name: string;
  committed_at: string;
}

/** Text of a thread, pull, reply or review, kept by triggers (migration 450). */
export interface SearchDocsTable {
  id: Generated<number>;
  /** `threads:<uuid>`, `pulls:<uuid>`, `replies:<uuid>`, `reviews:<uuid>` */
  doc_key: string;
  /** the item it belongs to: thread | pull */
  kind: string;
  item_uuid: string;
  repo_uuid: string;
  title: string;
  body: string;
}

export interface SearchTables {
  search_index_state: SearchIndexStateTable;
  search_code_files: SearchCodeFilesTable;
  search_commits: SearchCommitsTable;
  search_docs: SearchDocsTable;
}
