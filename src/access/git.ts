/** Who may clone and push over smart HTTP (README "Git", "Smart HTTP"). */
import type { Kysely } from 'kysely';
import type { DB } from '../db/types.ts';
import { insufficientScopeChallenge, scopeGranted } from '../token-scopes.ts';
import type { Viewer } from '../viewer.ts';
import { type RepoLevel, type RepoRow, type TeamRow, levelAtLeast } from './levels.ts';
import { repoAccessLevel } from './repos.ts';
import { teamRole } from './levels.ts';
import { hasTwoFactor, siteTwoFactorRefusal, teamTwoFactorRefusal } from './two-factor.ts';
import type { AppError } from '../errors.ts';

export interface GitAccess {
  repo: RepoRow;
  team: TeamRow | null;
  level: RepoLevel;
  /** a member of a team that requires a second factor, without one (docs/signin.md "Requiring it") */
  twoFactor?: AppError | null;
}

/**
 * The repo at a clone URL and the caller's level on it; anonymous callers read public repos
 * (README "Git": public repos clone without credentials). Null when the owner or repo does
 * not exist (a deactivated user's repos do not exist for anyone but staff).
 */
export async function gitRepoAccess(
  db: Kysely<DB>,
  viewer: Viewer | null,
  kind: 'team' | 'user',
  ownerName: string,
  slug: string,
): Promise<GitAccess | null> {
  let ownerUuid: string;
  let team: TeamRow | null = null;
  if (kind === 'team') {
    const row = await db.selectFrom('teams').selectAll().where('slug', '=', ownerName.toLowerCase()).executeTakeFirst();
    if (!row) return null;
    team = row;
    ownerUuid = row.uuid;
  } else {
    const user = await db.selectFrom('users').selectAll().where('username', '=', ownerName.toLowerCase()).executeTakeFirst();
    if (!user || (user.is_active !== 1 && !viewer?.isStaff)) return null;
    ownerUuid = user.uuid;
  }
  const repo = await db
    .selectFrom('repos')
    .selectAll()
    .where('owner_kind', '=', kind)
    .where('owner_uuid', '=', ownerUuid)
    .where('slug', '=', slug.toLowerCase())
    .executeTakeFirst();
  if (!repo) return null;
  let level = await repoAccessLevel(db, viewer, repo);
  if (!viewer && repo.visibility === 'public' && repo.is_active === 1) level = 'read';
  const twoFactor =
    team && team.require_two_factor === 1 && !hasTwoFactor(viewer) && level !== 'none'
      ? teamTwoFactorRefusal(viewer, team, await teamRole(db, viewer, team.uuid))
      : null;
  return { repo, team, level, twoFactor };
}

export type GitRefusal = {
  status: 401 | 403 | 404;
  code: string;
  detail: string;
  headers?: Record<string, string>;
} | null;

/**
 * A scoped token (README "Scoped tokens") fetches with read:repo and pushes with write:repo:
 * without it, 403 insufficient_scope before the repo is looked up. Unscoped tokens and SSH keys
 * have every scope.
 */
export function gitScopeRefusal(viewer: Viewer | null, write: boolean): GitRefusal {
  const needed = write ? 'write:repo' : 'read:repo';
  if (!viewer || scopeGranted(viewer.scopes, needed)) return null;
  return {
    status: 403,
    code: 'insufficient_scope',
    detail: `This token lacks the scope ${needed} that ${write ? 'pushing' : 'fetching'} needs.`,
    headers: { 'www-authenticate': insufficientScopeChallenge(needed) },
  };
}

/**
 * Why a clone/fetch (`write` false) or a push (`write` true) is refused, or null when allowed:
 * 401 (with a Basic challenge) for callers without credentials who need them, 404 for callers
 * who cannot read, 403 for readers who push, and for pushes into an archived repo or an
 * inactive team.
 */
export function gitRefusal(viewer: Viewer | null, access: GitAccess | null, write: boolean): GitRefusal {
  const unauth = {
    status: 401 as const,
    code: 'unauthorized',
    detail: 'Credentials are required: use an API token as the password.',
  };
  if (!access || access.level === 'none') {
    return viewer ? { status: 404, code: 'not_found', detail: 'Repo not found.' } : unauth;
  }
  const twoFactor = siteTwoFactorRefusal(viewer) ?? access.twoFactor;
  if (twoFactor) return { status: 403, code: twoFactor.code, detail: twoFactor.detail };
  if (!write) return null;
  if (!viewer) return unauth;
  if (!levelAtLeast(access.level, 'write'))
    return { status: 403, code: 'forbidden', detail: 'Pushing needs write access to the repo.' };
  if (access.team && access.team.is_active !== 1) {
    return { status: 403, code: 'team_inactive', detail: 'The team is inactive: its repos are read-only.' };
  }
  if (access.repo.is_archived === 1) return { status: 403, code: 'repo_archived', detail: 'The repo is archived and read-only.' };
  return null;
}
