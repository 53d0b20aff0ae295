import type { Kysely } from 'kysely';

/**
 * Every list that can grow reads its page through an index in the list's own order (README
 * "Performance"): the index holds the list's filter columns, then its sort keys with the tie
 * breaker, so a page reads about per_page entries and a deep `page` skips index entries, never
 * sorts or scans the table. Indexes whose columns are a prefix of a new one are dropped.
 */
const INDEXES: Array<[name: string, table: string, columns: string[]]> = [
  // is_active last: a member's view (active repos) filters on the index entries while it skips
  ['repos_owner_list_idx', 'repos', ['owner_kind', 'owner_uuid', 'created_at', 'uuid', 'is_active']],
  // an outsider's view of a namespace: its public, active repos
  ['repos_owner_public_list_idx', 'repos', ['owner_kind', 'owner_uuid', 'visibility', 'is_active', 'created_at', 'uuid']],
  ['teams_list_idx', 'teams', ['created_at', 'uuid']],
  ['team_members_list_idx', 'team_members', ['team_uuid', 'created_at', 'user_uuid']],
  ['users_list_idx', 'users', ['created_at', 'uuid']],
  ['api_tokens_user_created_idx', 'api_tokens', ['user_uuid', 'created_at', 'uuid']],
  ['api_tokens_user_name_idx', 'api_tokens', ['user_uuid', 'name', 'uuid']],
  ['pulls_repo_status_idx', 'pulls', ['repo_uuid', 'status', 'number']],
  ['reviews_pull_list_idx', 'reviews', ['pull_uuid', 'seq', 'created_at', 'uuid']],
  ['protections_repo_list_idx', 'protections', ['repo_uuid', 'created_at', 'uuid']],
  ['protection_approvers_list_idx', 'protection_approvers', ['protection_uuid', 'created_at', 'user_uuid']],
  ['forks_source_list_idx', 'forks', ['source_repo_uuid', 'created_at', 'uuid']],
  ['uploads_repo_list_idx', 'uploads', ['repo_uuid', 'status', 'created_at', 'uuid']],
  ['attachments_target_list_idx', 'attachments', ['target_kind', 'target_uuid', 'created_at', 'uuid']],
  ['timers_owner_list_idx', 'timers', ['scope', 'owner_uuid', 'created_at', 'uuid']],
  ['rate_limit_rules_list_idx', 'rate_limit_rules', ['created_at', 'uuid']],
];

/** Superseded: each is a prefix of one above. */
const DROPPED = ['uploads_repo_idx', 'timers_owner_idx', 'forks_source_idx', 'reviews_pull_idx'];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [name, table, columns] of INDEXES) await db.schema.createIndex(name).on(table).columns(columns).execute();
  for (const name of DROPPED) await db.schema.dropIndex(name).execute();
}
