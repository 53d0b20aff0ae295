/** User access: who may see, create and change accounts. */
import type { Kysely } from 'kysely';
import type { DB } from '../db/types.ts';
import { forbidden, notFound } from '../errors.ts';
import type { Viewer } from '../viewer.ts';

/** A user's e-mail address is shown to the user themself and to staff only. */
export function canSeeEmail(viewer: Viewer | null, userUuid: string): boolean {
  return viewer !== null && (viewer.isStaff || viewer.uuid === userUuid);
}

/** Accounts are created by staff; `null` is the server itself (bootstrap, CLI). */
export function assertCanCreateUsers(actor: Viewer | null): void {
  if (actor && !actor.isStaff) throw forbidden('Only staff can create users.');
}

/** Only staff list every account. */
export function assertCanListUsers(viewer: Viewer): void {
  if (!viewer.isStaff) throw forbidden('Only staff can list users.');
}

/** A deactivated user is hidden (404) from everyone but staff. */
export function assertUserVisible<T extends { is_active: number }>(viewer: Viewer | null, row: T | undefined): T {
  if (!row || (row.is_active !== 1 && !viewer?.isStaff)) throw notFound('User');
  return row;
}

/**
 * A user changes their own account, staff anyone's; only staff change `is_staff` and
 * `is_active` (403 otherwise).
 */
export function assertCanEditUser(
  viewer: Viewer,
  targetUuid: string,
  changes: { is_staff?: unknown; is_active?: unknown; password?: unknown },
): void {
  if (!viewer.isStaff && viewer.uuid !== targetUuid) throw forbidden('You can only change your own account.');
  if (!viewer.isStaff && (changes.is_staff !== undefined || changes.is_active !== undefined)) {
    throw forbidden('Only staff can change is_staff or is_active.');
  }
  if (changes.password !== undefined) assertUnrestrictedCredential(viewer, 'Setting a password');
}

/**
 * README "Scoped tokens": a password (a login makes an unrestricted token) and an SSH key (git
 * over SSH is unrestricted) each give their holder a user's whole access, so only a credential
 * that has it already may set one: a token without scopes or repos, or a web session. Otherwise a
 * restricted token could turn itself into an unrestricted one. 403, before anything changes.
 */
export function assertUnrestrictedCredential(viewer: Viewer, what: string): void {
  if (!viewer.scopes && !viewer.repos) return;
  throw forbidden(
    `${what} needs a token without scopes or repos (or a web session): it would give more access than this token has.`,
  );
}

/**
 * README "User ping": the target's `ping_mentions` decides who may ping them: `disabled` refuses
 * everyone (403 ping_mentions_disabled), `team_only` refuses anyone who shares no team with them
 * (403 ping_mentions_team_only); pinging oneself counts as sharing a team.
 */
export async function assertCanPing(
  db: Kysely<DB>,
  viewer: Viewer,
  target: { uuid: string; ping_mentions: string },
): Promise<void> {
  if (target.ping_mentions === 'disabled') {
    throw forbidden('This user does not accept pings.', 'ping_mentions_disabled');
  }
  if (target.ping_mentions === 'team_only' && viewer.uuid !== target.uuid) {
    const shared = await db
      .selectFrom('team_members as a')
      .innerJoin('team_members as b', 'b.team_uuid', 'a.team_uuid')
      .select('a.team_uuid')
      .where('a.user_uuid', '=', viewer.uuid)
      .where('b.user_uuid', '=', target.uuid)
      .limit(1)
      .executeTakeFirst();
    if (!shared)
      throw forbidden('This user accepts pings only from members of a team they belong to.', 'ping_mentions_team_only');
  }
}
