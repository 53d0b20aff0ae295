import type { Generated } from 'kysely';

export interface JobsTable {
  id: Generated<number>;
  kind: string;
  /** JSON text. */
  payload: string;
  /** Unique when set: enqueueing a key that is already queued does nothing. */
  dedupe_key: string | null;
  run_at: string;
  /** A worker holds the job until then; past it, another worker may take it over (crash recovery). */
  locked_until: string | null;
  attempts: number;
  last_error: string | null;
  /** Set when the job gave up after its last attempt; it is kept for inspection, never run again. */
  failed_at: string | null;
  created_at: string;
}

export interface JobsTables {
  jobs: JobsTable;
}
