import type { Static } from '@sinclair/typebox';
import type { Kysely, Selectable } from 'kysely';
import { assertCanManageSettings } from '../access/index.ts';
import type { SiteSettingsTable } from '../db/tables/limits.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { command } from '../core/command.ts';
import { decide } from '../core/targets.ts';
import type { Viewer } from '../viewer.ts';
import { normalizeAllowList } from '../hooks/allow-list.ts';
import { parseDuration } from './duration.ts';
import type { SiteSettings, UpdateSiteSettingsBody } from './schemas.ts';

export type SettingsRow = Selectable<SiteSettingsTable>;
export type SettingsJson = Static<typeof SiteSettings>;

export const settingsToJson = (row: SettingsRow): SettingsJson => ({
  rate_limits_enabled: row.rate_limits_enabled === 1,
  signup_invite_creators: row.signup_invite_creators as SettingsJson['signup_invite_creators'],
  signup_invite_max_per_24h: row.signup_invite_max_per_24h,
  signup_invite_min_account_age: row.signup_invite_min_account_age,
  signups_enabled: row.signups_enabled === 1,
  signups_require_invite: row.signups_require_invite === 1,
  max_timers_per_owner: row.max_timers_per_owner,
  max_reply_versions: row.max_reply_versions,
  webhook_allowed_hosts: JSON.parse(row.webhook_allowed_hosts) as string[],
});

/** The settings as stored now (read on every use, so every instance sees a change at once). */
export async function readSettings(db: Kysely<DB>): Promise<SettingsRow> {
  return db.selectFrom('site_settings').selectAll().where('id', '=', 1).executeTakeFirstOrThrow();
}

/** The minimum account age in milliseconds (stored values always parse; 7 days if not). */
export const minAccountAgeMs = (row: SettingsRow): number => parseDuration(row.signup_invite_min_account_age) ?? 7 * 86_400_000;

export async function getSettings(deps: Deps, viewer: Viewer): Promise<SettingsJson> {
  assertCanManageSettings(viewer);
  return settingsToJson(await readSettings(deps.db));
}

export async function updateSettings(
  deps: Deps,
  viewer: Viewer,
  input: Static<typeof UpdateSiteSettingsBody>,
): Promise<SettingsJson> {
  assertCanManageSettings(viewer);
  if (input.signup_invite_min_account_age !== undefined && parseDuration(input.signup_invite_min_account_age) === null) {
    throw badRequest(
      'signup_invite_min_account_age must be a duration such as 7d, 12h or 1d12h (units w, d, h, m, s, largest first; at most 3650 days).',
    );
  }
  const allowedHosts = input.webhook_allowed_hosts === undefined ? undefined : normalizeAllowList(input.webhook_allowed_hosts);
  return command(
    deps,
    viewer,
    decide(async (_db, v: Viewer) => assertCanManageSettings(v)),
    async (tx) => {
      const changes: Partial<SettingsRow> = {};
      if (input.rate_limits_enabled !== undefined) changes.rate_limits_enabled = input.rate_limits_enabled ? 1 : 0;
      if (input.signup_invite_creators !== undefined) changes.signup_invite_creators = input.signup_invite_creators;
      if (input.signup_invite_max_per_24h !== undefined) changes.signup_invite_max_per_24h = input.signup_invite_max_per_24h;
      if (input.signup_invite_min_account_age !== undefined)
        changes.signup_invite_min_account_age = input.signup_invite_min_account_age;
      if (input.signups_enabled !== undefined) changes.signups_enabled = input.signups_enabled ? 1 : 0;
      if (input.signups_require_invite !== undefined) changes.signups_require_invite = input.signups_require_invite ? 1 : 0;
      if (input.max_timers_per_owner !== undefined) changes.max_timers_per_owner = input.max_timers_per_owner;
      if (input.max_reply_versions !== undefined) changes.max_reply_versions = input.max_reply_versions;
      if (allowedHosts !== undefined) changes.webhook_allowed_hosts = JSON.stringify(allowedHosts);
      if (Object.keys(changes).length === 0) return settingsToJson(await readSettings(tx.db));
      await tx.db
        .updateTable('site_settings')
        .set({ ...changes, updated_at: deps.clock.now().toISOString() })
        .where('id', '=', 1)
        .execute();
      const after = settingsToJson(await readSettings(tx.db));
      await tx.emit({
        kind: 'settings-updated',
        scopes: [`user:${viewer.uuid}`],
        actor: actorOf(viewer),
        payload: { changed: Object.keys(input), settings: after },
      });
      return after;
    },
  );
}
