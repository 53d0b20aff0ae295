import { type Kysely, sql } from 'kysely';
import * as m001 from './migrations/001_foundation.ts';
import * as m002 from './migrations/002_teams_repos_pulls.ts';
import * as m005 from './migrations/005_review_seq.ts';
import * as m006 from './migrations/006_jobs.ts';
import * as m010 from './migrations/010_threads_uploads.ts';
import * as m020 from './migrations/020_limits_settings_invites.ts';
import * as m030 from './migrations/030_timers.ts';
import * as m040 from './migrations/040_git.ts';
import * as m080 from './migrations/080_list_indexes.ts';
import * as m085 from './migrations/085_more_list_indexes.ts';
import * as m090 from './migrations/090_event_scope_kind.ts';
import * as m091 from './migrations/091_team_activity_index.ts';
import * as m092 from './migrations/092_actor_activity_index.ts';
import * as m093 from './migrations/093_member_team_order.ts';
import * as m094 from './migrations/094_pull_page_keys.ts';
import * as m110 from './migrations/110_pull_source_repo.ts';
import * as m120 from './migrations/120_commit_statuses.ts';
import * as m140 from './migrations/140_webhooks.ts';
import * as m150 from './migrations/150_token_scopes_ssh_keys.ts';
import * as m160 from './migrations/160_sessions_tickets.ts';
import * as m170 from './migrations/170_storage_lifetimes.ts';
import * as m180 from './migrations/180_owner_limits.ts';
import * as m181 from './migrations/181_unique_email.ts';
import * as m200 from './migrations/200_hook_request_bodies.ts';
import * as m310 from './migrations/310_tracker.ts';
import * as m311 from './migrations/311_references.ts';
import * as m320 from './migrations/320_default_login_limits.ts';
import * as m330 from './migrations/330_hook_skipped_and_secrets.ts';
import * as m340 from './migrations/340_deploy_keys.ts';
import * as m341 from './migrations/341_merge_claim_tips.ts';
import * as m400 from './migrations/400_thread_terms.ts';
import * as m410 from './migrations/410_review_comments.ts';
import * as m420 from './migrations/420_signin.ts';
import * as m430 from './migrations/430_ci.ts';
import * as m440 from './migrations/440_notifications.ts';
import * as m441 from './migrations/441_notification_mail.ts';
import * as m450 from './migrations/450_search.ts';
import * as m460 from './migrations/460_lfs.ts';
import * as m461 from './migrations/461_releases.ts';
import * as m470 from './migrations/470_thread_reply_count.ts';
import * as m490 from './migrations/490_two_factor_required.ts';
import * as m491 from './migrations/491_team_sync.ts';
import * as m500 from './migrations/500_ci_secrets.ts';
import * as m530 from './migrations/530_mirrors.ts';
import * as m540 from './migrations/540_search_underscores.ts';
import * as m541 from './migrations/541_inbound_mail_seen.ts';
import * as m560 from './migrations/560_passkeys.ts';
import * as m590 from './migrations/590_notification_chunks.ts';
import * as m610 from './migrations/610_mirror_syncs.ts';
import * as m620 from './migrations/620_ci_schedules.ts';
import * as m630 from './migrations/630_auto_merge.ts';
import * as m670 from './migrations/670_notification_bulk.ts';
import * as m710 from './migrations/710_search_titles.ts';
import * as m740 from './migrations/740_pull_lists.ts';
import * as m750 from './migrations/750_notification_indexes.ts';
import * as m770 from './migrations/770_watch_activity.ts';
import type { Dialect, MigrationContext } from './dialect.ts';

export type { MigrationContext } from './dialect.ts';

interface Migration {
  name: string;
  up(db: Kysely<unknown>, ctx: MigrationContext): Promise<void>;
}

/** Every migration, in order. Never edit a shipped one: add the next file. */
const MIGRATIONS: Migration[] = [
  { name: '001_foundation', up: m001.up },
  { name: '002_teams_repos_pulls', up: m002.up },
  { name: '005_review_seq', up: m005.up },
  { name: '006_jobs', up: m006.up },
  { name: '010_threads_uploads', up: m010.up },
  { name: '020_limits_settings_invites', up: m020.up },
  { name: '030_timers', up: m030.up },
  { name: '040_git', up: m040.up },
  { name: '080_list_indexes', up: m080.up },
  { name: '085_more_list_indexes', up: m085.up },
  { name: '090_event_scope_kind', up: m090.up },
  { name: '091_team_activity_index', up: m091.up },
  { name: '092_actor_activity_index', up: m092.up },
  { name: '093_member_team_order', up: m093.up },
  { name: '094_pull_page_keys', up: m094.up },
  { name: '110_pull_source_repo', up: m110.up },
  { name: '120_commit_statuses', up: m120.up },
  { name: '140_webhooks', up: m140.up },
  { name: '150_token_scopes_ssh_keys', up: m150.up },
  { name: '160_sessions_tickets', up: m160.up },
  { name: '170_storage_lifetimes', up: m170.up },
  { name: '180_owner_limits', up: m180.up },
  { name: '181_unique_email', up: m181.up },
  { name: '200_hook_request_bodies', up: m200.up },
  { name: '310_tracker', up: m310.up },
  { name: '311_references', up: m311.up },
  { name: '320_default_login_limits', up: m320.up },
  { name: '330_hook_skipped_and_secrets', up: m330.up },
  { name: '340_deploy_keys', up: m340.up },
  { name: '341_merge_claim_tips', up: m341.up },
  { name: '400_thread_terms', up: m400.up },
  { name: '410_review_comments', up: m410.up },
  { name: '420_signin', up: m420.up },
  { name: '430_ci', up: m430.up },
  { name: '440_notifications', up: m440.up },
  { name: '441_notification_mail', up: m441.up },
  { name: '450_search', up: m450.up },
  { name: '460_lfs', up: m460.up },
  { name: '461_releases', up: m461.up },
  { name: '470_thread_reply_count', up: m470.up },
  { name: '490_two_factor_required', up: m490.up },
  { name: '491_team_sync', up: m491.up },
  { name: '500_ci_secrets', up: m500.up },
  { name: '530_mirrors', up: m530.up },
  { name: '540_search_underscores', up: m540.up },
  { name: '541_inbound_mail_seen', up: m541.up },
  { name: '560_passkeys', up: m560.up },
  { name: '590_notification_chunks', up: m590.up },
  { name: '610_mirror_syncs', up: m610.up },
  { name: '620_ci_schedules', up: m620.up },
  { name: '630_auto_merge', up: m630.up },
  { name: '670_notification_bulk', up: m670.up },
  { name: '710_search_titles', up: m710.up },
  { name: '740_pull_lists', up: m740.up },
  { name: '750_notification_indexes', up: m750.up },
  { name: '770_watch_activity', up: m770.up },
];

const MIGRATION_LOCK_KEY = 7_401_001;

/**
 * Applies the pending migrations, each in its own transaction. On PostgreSQL a session advisory
 * lock makes concurrent starts of several instances take turns instead of racing.
 */
export async function migrateToLatest(db: Kysely<unknown>, dialect: Dialect): Promise<string[]> {
  const applied: string[] = [];
  await db.connection().execute(async (conn) => {
    if (dialect === 'postgres') await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`.execute(conn);
    try {
      await conn.schema
        .createTable('weft_migrations')
        .ifNotExists()
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('applied_at', 'text', (c) => c.notNull())
        .execute();
      const done = new Set((await sql<{ name: string }>`select name from weft_migrations`.execute(conn)).rows.map((r) => r.name));
      for (const migration of MIGRATIONS) {
        if (done.has(migration.name)) continue;
        await conn.transaction().execute(async (trx) => {
          await migration.up(trx, { dialect });
          await sql`insert into weft_migrations (name, applied_at) values (${migration.name}, ${new Date().toISOString()})`.execute(
            trx,
          );
        });
        applied.push(migration.name);
      }
    } finally {
      if (dialect === 'postgres') await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(conn);
    }
  });
  return applied;
}
