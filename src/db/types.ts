import type { ColumnType, Generated } from 'kysely';

/**
 * Table types. Both dialects store timestamps as ISO 8601 UTC text (one format, sortable as
 * text) and booleans as 0/1 integers (better-sqlite3 cannot bind JS booleans), so one set of
 * queries serves SQLite and PostgreSQL.
 */
export type { Bool01 } from './tables/bool.ts';
import type { Bool01 } from './tables/bool.ts';
import type { CiTables } from './tables/ci.ts';

export interface UsersTable {
  uuid: string;
  username: string;
  display_name: string;
  email: string;
  is_staff: Bool01;
  is_active: Bool01;
  ping_mentions: string;
  password_hash: string | null;
  created_at: string;
  updated_at: string;
  /** 1 while the user has an active second factor (migration 490, kept by signin/two-factor.ts) */
  has_two_factor: Generated<Bool01>;
}

export interface ApiTokensTable {
  uuid: string;
  user_uuid: string;
  name: string;
  token_hash: string;
  expires_at: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** JSON array of token scopes, null = every scope (migration 150) */
  scopes: string | null;
  /** JSON array of repo uuids the token is restricted to, null = unrestricted (migration 150) */
  repos: string | null;
}

/** A registered SSH public key (migration 150). */
/** A repo's deploy key (README "Deploy keys"); its fingerprint is in no `ssh_keys` row. */
export interface DeployKeysTable {
  uuid: string;
  repo_uuid: string;
  title: string;
  key_type: string;
  public_key: string;
  fingerprint: string;
  /** 1: fetch only; 0: push too */
  read_only: number;
  created_by_uuid: string;
  created_at: string;
  last_used_at: string | null;
}

export interface SshKeysTable {
  uuid: string;
  user_uuid: string;
  title: string;
  /** the OpenSSH key type name: ssh-ed25519, ecdsa-sha2-nistp256, ssh-rsa, ... */
  key_type: string;
  /** `type base64`, without the comment */
  public_key: string;
  /** SHA256:… of the key blob, as ssh-keygen -lf prints it; unique */
  fingerprint: string;
  created_at: string;
  last_used_at: string | null;
}

export interface EventsTable {
  id: Generated<number>;
  kind: string;
  scopes: string; // JSON array, for output; event_scopes is the index
  actor_uuid: string | null;
  actor_username: string | null;
  payload: string; // JSON object
  created_at: string;
}

export interface EventScopesTable {
  event_id: number;
  scope: string;
  /** the event's kind, beside the scope for kind-filtered pages (migration 090) */
  kind: string | null;
}

export interface TeamsTable {
  uuid: string;
  name: string;
  slug: string;
  is_active: Bool01;
  created_at: string;
  updated_at: string;
  /** members need a second factor to reach the team and its repos (migration 490) */
  require_two_factor: Generated<Bool01>;
}

export interface TeamMembersTable {
  team_uuid: string;
  user_uuid: string;
  role: string;
  created_at: string;
  /** the team's created_at, copied (it never changes): the caller's team list order (migration 093) */
  team_created_at: string;
  /** "manual" or "sync" (made by group sync, which changes only these; migration 491) */
  origin: Generated<string>;
}

export interface ReposTable {
  uuid: string;
  owner_kind: string; // 'team' | 'user'
  owner_uuid: string;
  name: string;
  slug: string;
  description: string | null;
  about: string;
  visibility: string;
  default_branch: string;
  public_repo_pull_policy: string;
  max_disk_bytes: number;
  disk_usage_bytes: number;
  is_active: Bool01;
  is_archived: Bool01;
  fork_of_uuid: string | null;
  /** null, or `import` / `mirror` for a repo brought in from a URL (migration 530, docs/bring-in.md) */
  source_kind: ColumnType<string | null, string | null | undefined, string | null>;
  pull_seq: number;
  thread_seq: number;
  created_by_uuid: string;
  created_at: string;
  updated_at: string;
}

export interface ForksTable {
  uuid: string;
  source_repo_uuid: string;
  repo_uuid: string;
  created_by_uuid: string;
  created_at: string;
}

export interface ProtectionsTable {
  uuid: string;
  repo_uuid: string;
  branch: string;
  required_approvals: number;
  /** JSON array of the status contexts a merge needs as success (migration 120) */
  required_status_contexts: Generated<string>;
  /** merges need every conversation resolved (migration 410) */
  require_conversation_resolution: Generated<number>;
  created_at: string;
  updated_at: string;
}

export interface ProtectionApproversTable {
  protection_uuid: string;
  user_uuid: string;
  created_at: string;
}

export interface PullsTable {
  uuid: string;
  repo_uuid: string;
  number: number;
  title: string;
  body: string;
  source_branch: string;
  target_branch: string;
  status: string; // open | closed | merged
  author_uuid: string;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  merged_at: string | null;
  merged_by_uuid: string | null;
  merge_commit_sha: string | null;
  merge_strategy: string | null;
  /** counter for reviews.seq (migration 005) */
  review_seq: number;
  /** 1 while a merge holds the claim and git runs (migration 040, src/pulls/merge.ts) */
  merge_pending: Generated<number>;
  merge_claimed_at: string | null;
  /** the tip the pending merge is about to write: crash recovery compares it with the branch */
  merge_claim_sha: string | null;
  /** the target's tip the claimed merge moves from (null: a new branch) */
  merge_claim_before: string | null;
  /** the head the claimed merge lands */
  merge_claim_head: string | null;
  /** the repo the source branch lives in: this repo, or one of its fork network (migration 110) */
  source_repo_uuid: string | null;
  /** the instance holding the pending merge (migration 170): recovered once its lease is gone */
  merge_claim_instance: string | null;
  /** the issue tracker (migration 310) */
  draft: Generated<number>;
  milestone_uuid: string | null;
  /** the head and the target tip a merge landed (migration 410): the pull's diff after merge */
  merged_head_sha: Generated<string | null>;
  merged_base_sha: Generated<string | null>;
  /** the reviews not removed, pending ones included: what `sort=replies` orders by (migration 740) */
  review_count: Generated<number>;
}

export interface CommitStatusesTable {
  id: Generated<number>;
  uuid: string;
  repo_uuid: string;
  sha: string;
  state: string;
  context: string;
  description: string | null;
  target_url: string | null;
  creator_uuid: string;
  created_at: string;
}

export interface ReviewsTable {
  uuid: string;
  pull_uuid: string;
  author_uuid: string;
  status: string;
  body: string;
  created_at: string;
  removed_at: string | null;
  /** per-pull order of submission (migration 005) */
  seq: number;
  /** the pull's head when it was submitted (migration 410) */
  commit_sha: Generated<string | null>;
}

import type { HooksTables } from './tables/hooks.ts';
import type { SigninTables } from './tables/signin.ts';
import type { JobsTables } from './tables/jobs.ts';
import type { LimitsTables } from './tables/limits.ts';
import type { TimersTables } from './tables/timers.ts';
import type { ThreadsTables } from './tables/threads.ts';
import type { SessionsTables } from './tables/sessions.ts';
import type { NotificationsTables } from './tables/notifications.ts';
import type { StorageTables } from './tables/storage.ts';
import type { SearchTables } from './tables/search.ts';
import type { LfsTables } from './tables/lfs.ts';
import type { ReleasesTables } from './tables/releases.ts';
import type { MirrorsTables } from './tables/mirrors.ts';
import type { ReviewTables } from './tables/reviews.ts';

/**
 * Every table. Domains added after the first ones declare their tables in `db/tables/<domain>.ts`
 * as one `XTables` interface and list it here.
 */
export interface DB
  extends
    JobsTables,
    LimitsTables,
    TimersTables,
    ThreadsTables,
    HooksTables,
    StorageTables,
    SessionsTables,
    SearchTables,
    NotificationsTables,
    LfsTables,
    ReleasesTables,
    MirrorsTables,
    SigninTables,
    ReviewTables,
    CiTables {
  users: UsersTable;
  api_tokens: ApiTokensTable;
  events: EventsTable;
  event_scopes: EventScopesTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  repos: ReposTable;
  forks: ForksTable;
  protections: ProtectionsTable;
  protection_approvers: ProtectionApproversTable;
  pulls: PullsTable;
  reviews: ReviewsTable;
  ssh_keys: SshKeysTable;
  deploy_keys: DeployKeysTable;
  commit_statuses: CommitStatusesTable;
}
