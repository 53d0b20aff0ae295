import { type Kysely, sql } from 'kysely';

/**
 * Indexes for the lists migration 080 left without one in their order (README "Performance"):
 * each holds the list's equality filters, then its sort keys in the list's own directions with
 * the tie breaker, so a page reads about per_page index entries and a deep `page` skips index
 * entries instead of sorting the rows. Both dialects take the same statements (expression and
 * descending index columns included). Superseded indexes (a prefix of a new one) are dropped.
 */
const INDEXES: Array<[name: string, table: string, columns: string]> = [
  // invites: staff see all, others their own; sorted by created_at, expires_at or email, either way
  ['signup_invites_created_idx', 'signup_invites', 'created_at, uuid'],
  ['signup_invites_creator_list_idx', 'signup_invites', 'created_by_uuid, created_at, uuid'],
  ['signup_invites_expires_idx', 'signup_invites', 'expires_at, created_at, uuid'],
  ['signup_invites_creator_expires_idx', 'signup_invites', 'created_by_uuid, expires_at, created_at, uuid'],
  ['signup_invites_email_idx', 'signup_invites', `(coalesce(lower(email), '')), created_at, uuid`],
  ['signup_invites_creator_email_idx', 'signup_invites', `created_by_uuid, (coalesce(lower(email), '')), created_at, uuid`],
  // a user's tokens: descending orders keep the ascending uuid tie breaker; never-used tokens last
  ['api_tokens_user_created_desc_idx', 'api_tokens', 'user_uuid, created_at desc, uuid'],
  ['api_tokens_user_name_desc_idx', 'api_tokens', 'user_uuid, name desc, uuid'],
  [
    'api_tokens_user_last_used_idx',
    'api_tokens',
    'user_uuid, (case when last_used_at is null then 1 else 0 end), last_used_at, uuid',
  ],
  [
    'api_tokens_user_last_used_desc_idx',
    'api_tokens',
    'user_uuid, (case when last_used_at is null then 1 else 0 end), last_used_at desc, uuid',
  ],
  // a namespace's timers filtered by status
  ['timers_owner_status_list_idx', 'timers', 'scope, owner_uuid, status, created_at, uuid'],
  // the lists that leave removed rows out: `removed_at is null` is an index equality
  // (uuid last: the page's keys are read from the index alone)
  ['threads_repo_list_idx', 'threads', 'repo_uuid, removed_at, number, uuid'],
  ['replies_thread_list_idx', 'replies', 'thread_uuid, removed_at, number, uuid'],
  ['reviews_pull_live_idx', 'reviews', 'pull_uuid, removed_at, seq, created_at, uuid'],
];

/** Superseded: a prefix of one above. */
const DROPPED = ['signup_invites_creator_idx'];

export async function up(db: Kysely<unknown>): Promise<void> {
  for (const [name, table, columns] of INDEXES) await sql.raw(`create index ${name} on ${table} (${columns})`).execute(db);
  for (const name of DROPPED) await db.schema.dropIndex(name).execute();
}
