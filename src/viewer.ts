import type { Selectable } from 'kysely';
import type { UsersTable } from './db/types.ts';

/** Who is making a request: the authenticated user and the token they used. */
export interface Viewer {
  uuid: string;
  username: string;
  isStaff: boolean;
  tokenUuid: string;
  /**
   * The token's scopes (README "Scoped tokens"); absent or null: every scope (an unscoped token,
   * a session cookie, an SSH key). Checked once per request from src/http/route-scopes.ts.
   */
  scopes?: readonly string[] | null;
  /** The repo uuids the token is restricted to; absent or null: no restriction. Others are 404. */
  repos?: readonly string[] | null;
}

/** The caller's own user record (without the password hash), read with the token. */
export type AuthenticatedUser = Omit<Selectable<UsersTable>, 'password_hash'>;

/**
 * A repo (and pull) read a route will make as its caller: the token lookup may make it in the
 * same statement (access/repo-read.ts), and the route's own read then takes that row.
 */
export interface RepoReadHint {
  ref: RepoRef;
  /** the pull number, or null for the repo alone */
  number: number | null;
}

/** Resolves a token secret to its caller, or null when it is unknown, expired or revoked. */
export type Authenticate = (secret: string, hint?: RepoReadHint) => Promise<{ viewer: Viewer; user: AuthenticatedUser } | null>;

/** A repo named by a path: the owner's kind and name as given, and the repo slug. */
export interface RepoRef {
  ownerKind: 'team' | 'user';
  /** team slug or username, as given in the path */
  ownerName: string;
  repoSlug: string;
}
