import type { Static } from '@sinclair/typebox';
import type { Deps } from '../deps.ts';
import { conflict, forbidden, notFound } from '../errors.ts';
import { command } from '../core/command.ts';
import { nothing } from '../core/targets.ts';
import { readSettings } from '../settings/service.ts';
import { type UserJson, createUser, userToJson } from '../users/service.ts';
import type { CreatedToken } from '../tokens/service.ts';
import type { SignupBody } from './schemas.ts';
import { inviteStatus } from './service.ts';

/**
 * POST /signup (README "Rate limits, site settings, signup invites, signup"). In one transaction: the settings and the invite are checked, the
 * user and a token are created, and the invite is marked accepted by a conditional update
 * ("still not accepted"), so of two signups racing for one invite exactly one commits; the other
 * is 409 invite_used. Two signups racing for one username: the unique index makes the second 409
 * username_taken. Any failure rolls everything back.
 */
export async function signup(deps: Deps, input: Static<typeof SignupBody>): Promise<{ user: UserJson; token: CreatedToken }>;
/** The web's signup (src/web/signup-pages.ts) makes no API token: the page starts a session instead. */
export async function signup(
  deps: Deps,
  input: Static<typeof SignupBody>,
  opts: { token: false },
): Promise<{ user: UserJson; token: CreatedToken | null }>;
export async function signup(
  deps: Deps,
  input: Static<typeof SignupBody>,
  opts: { token?: boolean } = {},
): Promise<{ user: UserJson; token: CreatedToken | null }> {
  // no caller: the rules are the site's settings and the invite, decided below
  return command(deps, null, nothing, async (tx) => {
    const settings = await readSettings(tx.db);
    if (settings.signups_enabled !== 1) throw forbidden('Signups are disabled on this site.', 'signups_disabled');
    const inviteUuid = input.invite_uuid?.trim() || null;
    if (settings.signups_require_invite === 1 && inviteUuid === null) {
      throw forbidden('Signing up needs an invite: pass invite_uuid.', 'invite_required');
    }
    const nowMs = deps.clock.now().getTime();
    if (inviteUuid !== null) {
      const invite = await tx.db
        .selectFrom('signup_invites')
        .selectAll()
        .where('uuid', '=', inviteUuid.toLowerCase())
        .executeTakeFirst();
      if (!invite) throw notFound('Signup invite');
      if (invite.email !== null && invite.email.toLowerCase() !== input.email.trim().toLowerCase()) {
        throw forbidden('This invite is for another email address.', 'invite_email_mismatch');
      }
      const status = inviteStatus(invite, nowMs);
      if (status === 'accepted') throw conflict('invite_used', 'This invite has already been used.');
      if (status === 'expired') throw conflict('invite_expired', 'This invite has expired.');
    }
    const { user, token } = await createUser(deps, null, input, opts.token === false ? undefined : { name: 'signup' });
    if (inviteUuid !== null) {
      const res = await tx.db
        .updateTable('signup_invites')
        .set({
          accepted_at: new Date(nowMs).toISOString(),
          accepted_by_uuid: user.uuid,
          updated_at: new Date(nowMs).toISOString(),
        })
        .where('uuid', '=', inviteUuid.toLowerCase())
        .where('accepted_at', 'is', null)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) throw conflict('invite_used', 'This invite has already been used.');
      const invite = await tx.db
        .selectFrom('signup_invites')
        .select('created_by_uuid')
        .where('uuid', '=', inviteUuid.toLowerCase())
        .executeTakeFirstOrThrow();
      await tx.emit({
        kind: 'invite-accepted',
        scopes: [`user:${invite.created_by_uuid}`, `user:${user.uuid}`],
        actor: { uuid: user.uuid, username: user.username },
        payload: { invite_uuid: inviteUuid.toLowerCase(), user_uuid: user.uuid, username: user.username },
      });
    }
    const viewer = { uuid: user.uuid, username: user.username, isStaff: false, tokenUuid: token?.uuid ?? '' };
    return { user: userToJson(user, viewer), token };
  });
}
