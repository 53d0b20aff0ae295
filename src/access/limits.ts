/** Access to site settings, rate-limit rules and signup invites (README "Rate limits, site settings, signup invites, signup"). */
import type { Kysely, Selectable } from 'kysely';
import type { SignupInvitesTable, SiteSettingsTable } from '../db/tables/limits.ts';
import type { DB } from '../db/types.ts';
import { forbidden, notFound } from '../errors.ts';
import type { Viewer } from '../viewer.ts';

/** Site settings are read and written by staff only. */
export function assertCanManageSettings(viewer: Viewer): void {
  if (!viewer.isStaff) throw forbidden('Only staff can read or change site settings.');
}

/** Rate-limit rules are staff only (README "Rate limits, site settings, signup invites, signup"). */
export function assertCanManageRateLimits(viewer: Viewer): void {
  if (!viewer.isStaff) throw forbidden('Only staff can manage rate-limit rules.');
}

/**
 * Who may create a signup invite: staff always; with `signup_invite_creators` = `users`, also any
 * active user whose account is at least `minAgeMs` old at `nowMs`.
 */
export async function assertCanCreateInvite(
  db: Kysely<DB>,
  viewer: Viewer,
  settings: Selectable<SiteSettingsTable>,
  minAgeMs: number,
  nowMs: number,
): Promise<void> {
  if (viewer.isStaff) return;
  if (settings.signup_invite_creators !== 'users') throw forbidden('Only staff can create signup invites.');
  const user = await db
    .selectFrom('users')
    .select(['created_at', 'is_active'])
    .where('uuid', '=', viewer.uuid)
    .executeTakeFirst();
  if (!user || user.is_active !== 1) throw forbidden('Only active users can create signup invites.');
  if (Date.parse(user.created_at) + minAgeMs > nowMs) {
    throw forbidden(`Your account must be at least ${settings.signup_invite_min_account_age} old to create signup invites.`);
  }
}

/** Staff are exempt from the per-24-hours invite limit. */
export const inviteLimitApplies = (viewer: Viewer): boolean => !viewer.isStaff;

/** Staff see every invite; others their own; an invisible invite is 404. */
export function assertCanSeeInvite(viewer: Viewer, invite: Selectable<SignupInvitesTable>): void {
  if (!viewer.isStaff && invite.created_by_uuid !== viewer.uuid) throw notFound('Signup invite');
}

/** The creator or staff may change or delete an invite they can see. */
export const assertCanChangeInvite = assertCanSeeInvite;

/** Invite lists: staff see all; others only their own (null: no filter). */
export const inviteListOwnerFilter = (viewer: Viewer): string | null => (viewer.isStaff ? null : viewer.uuid);
