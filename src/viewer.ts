import type { Selectable } from 'kysely';
import type { PullReadRow, RepoReadRow } from './db/rows.ts';
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
  /**
   * Whether the caller has a second factor (a confirmed TOTP, or a session started through a
   * source that satisfies it), read with the credential; absent (an internal caller): counts as
   * having one. access/two-factor.ts decides with it (docs/signin.md "Requiring it").
   */
  twoFactor?: boolean;
  /** The site setting `require_two_factor`, read with the credential; absent: off. */
  siteRequiresTwoFactor?: boolean;
}

/** The caller's own user record (without the password hash), read with the token. */
export type AuthenticatedUser = Omit<Selectable<UsersTable>, 'password_hash' | 'has_two_factor'>;

/** The caller's user record out of a credential lookup's row (a token's or a session's), its own columns only. */
export function authenticatedUserOf(row: AuthenticatedUser): AuthenticatedUser {
  return {
    uuid: row.uuid,
    username: row.username,
    display_name: row.display_name,
    email: row.email,
    is_staff: row.is_staff,
    is_active: row.is_active,
    ping_mentions: row.ping_mentions,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** A viewer's level on a repo (docs/behaviour.md "Teams and access"), lowest first. */
export type RepoLevel = 'none' | 'read' | 'write' | 'maintain' | 'owner';

/**
 * What a route declares it reads before its handler runs (`config.repo`): its repo, or its repo
 * and the pull its path names. The auth hook resolves it once per request (docs/architecture.md
 * "The read path").
 */
export type RouteRepoNeed = 'repo' | 'pull';

/** The repo (and pull number) a request's path names, parsed from its params. */
export interface RepoTarget {
  ref: RepoRef;
  /** the pull number, or null for the repo alone */
  number: number | null;
}

/** A repo the viewer may read, resolved once for the request: the row with its names and the viewer's level. */
export interface RepoContext {
  ref: RepoRef;
  repo: RepoReadRow;
  level: RepoLevel;
}

/** A `RepoContext` with the pull its path names. */
export interface PullContext extends RepoContext {
  pull: PullReadRow;
}

/**
 * Where a read service finds its repo: the context the request resolved, or (a page, an older
 * caller) the bare ref, resolved by the service (`repoContextOf`, access/repo-read.ts).
 */
export type RepoAt = RepoRef | RepoContext;

/** The outcome of resolving a request's repo: the context, or the 404 the route answers. */
export type RepoResolution = { context: RepoContext | PullContext; error?: undefined } | { context?: undefined; error: Error };

/**
 * Resolves a token secret to its caller, or null when it is unknown, expired or revoked; with a
 * `target` (the route's declared repo), the repo is resolved for that caller too, in the same
 * statement where the fast path allows (access/repo-read.ts).
 */
export type Authenticate = (
  secret: string,
  target?: RepoTarget,
) => Promise<{ viewer: Viewer; user: AuthenticatedUser; repo?: RepoResolution } | null>;

/** Resolves a route's declared repo for a viewer already authenticated (a session, or the fast path off). */
export type ResolveRepo = (viewer: Viewer, target: RepoTarget) => Promise<RepoResolution>;

/** A repo named by a path: the owner's kind and name as given, and the repo slug. */
export interface RepoRef {
  ownerKind: 'team' | 'user';
  /** team slug or username, as given in the path */
  ownerName: string;
  repoSlug: string;
}
