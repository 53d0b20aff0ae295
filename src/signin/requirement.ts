/**
 * Requiring a second factor (docs/signin.md "Requiring it"): a team's `require_two_factor` (team
 * owners) and the site's (staff). Reading a requirement lists who it affects (the members, or the
 * active users, without a second factor), so the person turning it on sees them first; the
 * refusals themselves are decided in access/two-factor.ts.
 */
import type { Static } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import { assertCanManageSettings, assertMayRequireTwoFactor, requireTeam, requireTeamSettingsChange } from '../access/index.ts';
import { command } from '../core/command.ts';
import { anyUser, decide } from '../core/targets.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import type { TwoFactorRequirement } from './schemas.ts';

export type RequirementJson = Static<typeof TwoFactorRequirement>;

/** At most this many affected people are named; `affected_count` counts them all. */
const NAMED = 500;

async function teamAffected(db: Kysely<DB>, teamUuid: string) {
  return db
    .selectFrom('team_members as m')
    .innerJoin('users as u', 'u.uuid', 'm.user_uuid')
    .select(['u.username', 'u.display_name', 'm.role'])
    .where('m.team_uuid', '=', teamUuid)
    .where('u.has_two_factor', '=', 0)
    .where('u.is_active', '=', 1)
    .orderBy('u.username')
    .execute();
}

async function siteAffected(db: Kysely<DB>) {
  const base = db.selectFrom('users as u').where('u.has_two_factor', '=', 0).where('u.is_active', '=', 1);
  const rows = await base.select(['u.username', 'u.display_name']).orderBy('u.username').limit(NAMED).execute();
  const count = await base.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow();
  return { affected: rows.map((r) => ({ ...r, role: null })), affected_count: Number(count.n) };
}

/** `GET /teams/{t}/two-factor-requirement` (team owners and staff). */
export async function getTeamRequirement(deps: Deps, viewer: Viewer, slug: string): Promise<RequirementJson> {
  const { team } = await requireTeam(deps.db, viewer, slug, 'owner', { twoFactorExempt: true });
  const affected = await teamAffected(deps.db, team.uuid);
  return { enabled: team.require_two_factor === 1, affected: affected.slice(0, NAMED), affected_count: affected.length };
}

/** `PUT /teams/{t}/two-factor-requirement {enabled}`: answers who it affects from now on. */
export async function setTeamRequirement(deps: Deps, viewer: Viewer, slug: string, enabled: boolean): Promise<RequirementJson> {
  return command(
    deps,
    viewer,
    decide(async (db, v: Viewer) => {
      const access = await requireTeamSettingsChange(db, v, slug, {});
      assertMayRequireTwoFactor(v, enabled);
      return access;
    }),
    async (tx) => {
      const { team } = tx.access;
      await tx.db
        .updateTable('teams')
        .set({ require_two_factor: enabled ? 1 : 0, updated_at: nowIso() })
        .where('uuid', '=', team.uuid)
        .execute();
      const affected = await teamAffected(tx.db, team.uuid);
      return { enabled, affected: affected.slice(0, NAMED), affected_count: affected.length };
    },
  );
}

/** `GET /admin/two-factor-requirement` (staff). */
export async function getSiteRequirement(deps: Deps, viewer: Viewer): Promise<RequirementJson> {
  assertCanManageSettings(viewer);
  const row = await deps.db
    .selectFrom('site_settings')
    .select('require_two_factor')
    .where('id', '=', 1)
    .executeTakeFirstOrThrow();
  return { enabled: row.require_two_factor === 1, ...(await siteAffected(deps.db)) };
}

/** `PUT /admin/two-factor-requirement {enabled}` (staff). */
export async function setSiteRequirement(deps: Deps, viewer: Viewer, enabled: boolean): Promise<RequirementJson> {
  assertCanManageSettings(viewer);
  assertMayRequireTwoFactor(viewer, enabled);
  return command(deps, viewer, anyUser, async (tx) => {
    await tx.db
      .updateTable('site_settings')
      .set({ require_two_factor: enabled ? 1 : 0, updated_at: nowIso() })
      .where('id', '=', 1)
      .execute();
    return { enabled, ...(await siteAffected(tx.db)) };
  });
}
