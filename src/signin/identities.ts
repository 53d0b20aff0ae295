import { randomUUID } from 'node:crypto';
import { applyGroupSync } from './sync.ts';
import type { Kysely } from 'kysely';
import { command } from '../core/command.ts';
import { anyUser } from '../core/targets.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { AppError, conflict, notFound } from '../errors.ts';
import { nowIso } from '../time.ts';
import { type UserRow, createUser, findUserByUuid } from '../users/service.ts';
import type { Viewer } from '../viewer.ts';
import type { Source } from './types.ts';

/**
 * Identities of sign-in sources (docs/signin.md): `(source, subject)` names one user. The first
 * sign-in of an identity creates a user when the source may (`auto_create_users`); an existing
 * user with the same email is never linked silently (they link it from Security settings, signed
 * in with their password).
 */
export interface ExternalProfile {
  subject: string;
  username: string;
  email: string;
  /** false when the provider says the email is not verified */
  emailVerified: boolean;
  displayName: string;
  groups: string[];
}

export type ExternalOutcome =
  { kind: 'user'; user: UserRow; created: boolean } | { kind: 'email_taken' } | { kind: 'no_account' } | { kind: 'inactive' };

async function identityUser(db: Kysely<DB>, sourceUuid: string, subject: string): Promise<UserRow | null> {
  const row = await db
    .selectFrom('user_identities as i')
    .innerJoin('users as u', 'u.uuid', 'i.user_uuid')
    .selectAll('u')
    .where('i.source_uuid', '=', sourceUuid)
    .where('i.subject', '=', subject)
    .executeTakeFirst();
  return row ?? null;
}

/** A username from a claim: lowercased, characters outside the username rule dropped. */
export function usernameFrom(raw: string, fallback: string): string {
  const cleaned = raw
    .toLowerCase()
    .replace(/@.*$/, '')
    .replace(/[^a-z0-9_-]/g, '')
    .replace(/^[-_]+/, '')
    .slice(0, 35);
  return cleaned || fallback;
}

/** Resolves a directory sign-in to a user: the linked one, a new one, or why neither. */
export async function resolveExternal(deps: Deps, source: Source, profile: ExternalProfile): Promise<ExternalOutcome> {
  const linked = await identityUser(deps.db, source.row.uuid, profile.subject);
  if (linked) {
    if (linked.is_active !== 1) return { kind: 'inactive' };
    await deps.db
      .updateTable('user_identities')
      .set({ last_used_at: nowIso() })
      .where('source_uuid', '=', source.row.uuid)
      .where('subject', '=', profile.subject)
      .execute();
    await applyGroupSync(deps, source, linked, profile.groups);
    return { kind: 'user', user: linked, created: false };
  }
  const email = profile.email.trim();
  if (email) {
    const same = await deps.db
      .selectFrom('users')
      .select('uuid')
      .where((eb) => eb(eb.fn('lower', ['email']), '=', email.toLowerCase()))
      .executeTakeFirst();
    if (same) return { kind: 'email_taken' };
  }
  if (source.row.auto_create_users !== 1) return { kind: 'no_account' };
  // no verified email: a placeholder address that reaches nobody (the user can change it)
  const address = email && profile.emailVerified ? email : `${randomUUID()}@users.noreply.invalid`;
  const base = usernameFrom(
    profile.username,
    `user-${
      profile.subject
        .replace(/[^a-z0-9]/gi, '')
        .slice(0, 8)
        .toLowerCase() || 'x'
    }`,
  );
  for (let i = 1; i <= 50; i++) {
    const username = i === 1 ? base : `${base}-${i}`;
    try {
      const { user } = await createUser(deps, null, {
        username,
        email: address,
        display_name: profile.displayName.slice(0, 255),
      });
      await deps.db
        .insertInto('user_identities')
        .values({
          uuid: randomUUID(),
          user_uuid: user.uuid,
          source_uuid: source.row.uuid,
          subject: profile.subject,
          created_at: nowIso(),
          last_used_at: nowIso(),
        })
        .execute();
      await applyGroupSync(deps, source, user, profile.groups);
      return { kind: 'user', user, created: true };
    } catch (err) {
      if (err instanceof AppError && err.code === 'username_taken') continue;
      if (err instanceof AppError && err.code === 'email_taken') return { kind: 'email_taken' };
      throw err;
    }
  }
  return { kind: 'no_account' };
}

/** Links an identity to the signed-in user (from Security settings): 409 when it is another user's. */
export async function linkIdentity(deps: Deps, viewer: Viewer, source: Source, subject: string): Promise<void> {
  await command(deps, viewer, anyUser, async (tx) => {
    const other = await identityUser(tx.db, source.row.uuid, subject);
    if (other && other.uuid !== viewer.uuid) {
      throw conflict('identity_linked', `This ${source.row.display_name} identity is linked to another account.`);
    }
    if (other) return;
    await tx.db
      .insertInto('user_identities')
      .values({
        uuid: randomUUID(),
        user_uuid: viewer.uuid,
        source_uuid: source.row.uuid,
        subject,
        created_at: nowIso(),
        last_used_at: null,
      })
      .execute();
  });
}

export interface IdentityJson {
  uuid: string;
  source: string;
  display_name: string;
  subject: string;
  created_at: string;
  last_used_at: string | null;
}

export async function listIdentities(deps: Deps, viewer: Viewer): Promise<IdentityJson[]> {
  const rows = await deps.db
    .selectFrom('user_identities as i')
    .innerJoin('auth_sources as s', 's.uuid', 'i.source_uuid')
    .select(['i.uuid', 's.name as source', 's.display_name', 'i.subject', 'i.created_at', 'i.last_used_at'])
    .where('i.user_uuid', '=', viewer.uuid)
    .orderBy('i.created_at')
    .execute();
  return rows;
}

/** Removes a linked identity, unless it is the last way to sign in (no password, no other identity). */
export async function unlinkIdentity(deps: Deps, viewer: Viewer, uuid: string): Promise<void> {
  await command(deps, viewer, anyUser, async (tx) => {
    const row = await tx.db
      .selectFrom('user_identities')
      .selectAll()
      .where('uuid', '=', uuid)
      .where('user_uuid', '=', viewer.uuid)
      .executeTakeFirst();
    if (!row) throw notFound('Linked identity');
    const user = await findUserByUuid(tx.db, viewer.uuid);
    const others = await tx.db
      .selectFrom('user_identities')
      .select('uuid')
      .where('user_uuid', '=', viewer.uuid)
      .where('uuid', '!=', uuid)
      .execute();
    if (!user?.password_hash && others.length === 0) {
      throw conflict('last_sign_in', 'This is your only way to sign in: set a password or link another identity first.');
    }
    await tx.db.deleteFrom('user_identities').where('uuid', '=', uuid).execute();
  });
}
