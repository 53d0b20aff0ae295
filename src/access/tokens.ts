/** API token access: a user manages their own tokens; staff manage anyone's. */
import type { Kysely } from 'kysely';
import type { DB } from '../db/types.ts';
import { forbidden, notFound } from '../errors.ts';
import { type TokenScope, canonicalScopes, scopeGranted } from '../token-scopes.ts';
import type { Viewer } from '../viewer.ts';
import { checkAccess } from './check.ts';

/** Managing (creating, listing) another user's tokens is for staff (403 otherwise). */
export function assertCanManageTokensOf(viewer: Viewer, ownerUsername: string): void {
  if (ownerUsername !== viewer.username && !viewer.isStaff) throw forbidden("Only staff can manage another user's tokens.");
}

/** A token is visible to its owner and staff; to anyone else it does not exist (404). */
export function tokenVisibleTo(viewer: Viewer, token: { user_uuid: string }): boolean {
  return token.user_uuid === viewer.uuid || viewer.isStaff;
}

/**
 * The scopes and repos of a token the viewer creates (README "Scoped tokens"): a token never
 * reaches further than the one creating it. Absent values copy the caller's own restriction
 * (null for an unrestricted caller); naming a scope the caller lacks, or asking for no scope or
 * repo restriction while the caller has one, is 403; a repo the caller cannot read is 404.
 */
export async function tokenRestrictionFor(
  db: Kysely<DB>,
  viewer: Viewer,
  input: { scopes?: readonly string[] | null; repos?: readonly string[] | null },
): Promise<{ scopes: TokenScope[] | null; repos: string[] | null }> {
  const own = { scopes: viewer.scopes ?? null, repos: viewer.repos ?? null };
  let scopes: TokenScope[] | null = own.scopes === null ? null : canonicalScopes(own.scopes);
  if (input.scopes !== undefined) {
    if (input.scopes === null && own.scopes !== null) throw forbidden('A scoped token cannot create an unscoped token.');
    scopes = input.scopes === null ? null : canonicalScopes(input.scopes);
    const beyond = (scopes ?? []).filter((s) => !scopeGranted(own.scopes, s));
    if (beyond.length > 0) throw forbidden(`This token cannot grant scopes it lacks: ${beyond.join(', ')}.`);
  }
  let repos: string[] | null = own.repos === null ? null : [...own.repos];
  if (input.repos !== undefined) {
    if (input.repos === null && own.repos !== null) {
      throw forbidden('A token restricted to repos cannot create an unrestricted token.');
    }
    repos = input.repos === null ? null : [...new Set(input.repos.map((r) => r.toLowerCase()))];
    // every named repo must be readable by the caller (a restricted caller reads only its own)
    const readable = await checkAccess(db, viewer, 'repo.read', repos ?? []);
    if ((repos ?? []).some((uuid) => !readable.has(uuid))) throw notFound('Repo');
  }
  return { scopes, repos };
}
