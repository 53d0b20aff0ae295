import type { Generated } from 'kysely';

/** CI (migration 430, docs/ci.md). JSON columns hold text. */
export interface CiRunsTable {
  uuid: string;
  repo_uuid: string;
  number: number;
  workflow_path: string;
  workflow_name: string;
  /** push | pull_request | workflow_dispatch | schedule */
  event: string;
  ref: string;
  head_sha: string;
  head_branch: string | null;
  pull_number: number | null;
  actor_uuid: string;
  /** waiting | queued | in_progress | completed */
  status: string;
  conclusion: string | null;
  attempt: number;
  /** 1: a pull from a fork (no secrets, a read-only token) */
  fork: number;
  inputs: string;
  /** the parsed workflow (model.ts `Workflow`) the jobs run from; null for a file that was refused */
  workflow_json: string | null;
  /** why the run failed at once (startup_failure): file:line: key: reason lines */
  error: string | null;
  concurrency_group: string | null;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
}

export interface CiJobsTable {
  id: Generated<number>;
  uuid: string;
  run_uuid: string;
  repo_uuid: string;
  attempt: number;
  job_key: string;
  name: string;
  context: string;
  matrix: string | null;
  needs: string;
  runs_on: string;
  /** waiting (for needs or approval) | queued | in_progress | completed */
  status: string;
  conclusion: string | null;
  runner_uuid: string | null;
  runner_name: string | null;
  timeout_minutes: number;
  /** the job token (an api_tokens row restricted to the repo), revoked when the job ends */
  token_uuid: string | null;
  /** bytes of log stored (the next upload's offset) */
  log_bytes: Generated<number>;
  outputs: string;
  steps: string;
  created_at: string;
  started_at: string | null;
  completed_at: string | null;
}

export interface CiLogChunksTable {
  job_uuid: string;
  start_offset: number;
  data: string;
  created_at: string;
}

export interface CiRunnersTable {
  uuid: string;
  name: string;
  labels: string;
  /** repo | team | site */
  scope: string;
  scope_uuid: string | null;
  secret_hash: string;
  version: string;
  capacity: number;
  last_seen_at: string;
  created_by_uuid: string;
  created_at: string;
}

export interface CiRegistrationTokensTable {
  token_hash: string;
  scope: string;
  scope_uuid: string | null;
  created_by_uuid: string;
  expires_at: string;
  used_at: string | null;
  created_at: string;
}

/** A CI secret (value sealed, purpose `ci-secret`) or variable (plain) of a repo or a team (migration 500). */
export interface CiNamedValueTable {
  uuid: string;
  /** repo | team */
  scope: string;
  scope_uuid: string;
  name: string;
  value: string;
  created_at: string;
  updated_at: string;
}

/** A workflow's `schedule` on the default branch (migration 620, src/ci/schedule.ts). */
export interface CiSchedulesTable {
  repo_uuid: string;
  workflow_path: string;
  /** JSON list of cron texts */
  crons: string;
  actor_uuid: string;
  next_at: string | null;
  last_slot: string | null;
  updated_at: string;
}

/** Auto-merge of a pull (migration 630, docs/ci.md "Auto-merge"). */
export interface PullAutoMergesTable {
  pull_uuid: string;
  repo_uuid: string;
  enabled_by_uuid: string;
  merge_strategy: string;
  enabled_at: string;
}

export interface CiTables {
  ci_schedules: CiSchedulesTable;
  pull_auto_merges: PullAutoMergesTable;
  ci_secrets: CiNamedValueTable;
  ci_variables: CiNamedValueTable;
  ci_runs: CiRunsTable;
  ci_jobs: CiJobsTable;
  ci_runners: CiRunnersTable;
  ci_log_chunks: CiLogChunksTable;
  ci_registration_tokens: CiRegistrationTokensTable;
}
