/**
 * THE rule of a viewer's level on a repo (docs/behaviour.md "Teams and access"), written once in
 * SQL (`repoLevelSql`) and once in TypeScript (`repoLevelFrom`, its only mirror, for facts
 * already read). Lists (`repoReadableBy`), the hot reads of access/repo-read.ts and
 * `repoUuidReadable` compute the level in SQL; `requireRepo` and `namespaceReadFilter` apply
 * `repoLevelFrom`. test/repo-level.test.ts compares the two over every combination of viewer
 * (staff, owner user, each team role, no role, deactivated), owner kind, visibility, repo and
 * team activity, on both databases.
 *
 * - staff: owner everywhere;
 * - the user owner of a user repo: owner; a member of the owning team: the level of the role
 *   (owner → owner, maintainer → maintain, member → write, reader → read);
 * - anyone else signed in: read on a public repo, unless its owner is a deactivated user;
 * - a deactivated repo (`is_active = 0`) is hidden (none) from everyone below maintain;
 * - no viewer: none. (An inactive team changes no read level: it refuses writes, `requireRepo`.)
 */
import { type Expression, type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Viewer } from '../viewer.ts';
import { type RepoLevel, type RepoRow, type TeamRole, levelAtLeast } from './levels.ts';

const ROLE_LEVEL: Record<TeamRole, RepoLevel> = { owner: 'owner', maintainer: 'maintain', member: 'write', reader: 'read' };

/** The levels by rank, as `repoLevelSql` returns them (0 none … 4 owner). */
export const LEVEL_BY_RANK: readonly RepoLevel[] = ['none', 'read', 'write', 'maintain', 'owner'];

/**
 * The rule from facts already read: the viewer's role in the owning team (null for a user repo
 * or a non-member) and whether a user owner is active. The TypeScript mirror of `repoLevelSql`.
 */
export function repoLevelFrom(
  viewer: Viewer | null,
  repo: Pick<RepoRow, 'owner_kind' | 'owner_uuid' | 'visibility' | 'is_active'>,
  role: TeamRole | null,
  ownerUserActive: boolean,
): RepoLevel {
  if (viewer?.isStaff) return 'owner';
  let level: RepoLevel = 'none';
  if (viewer && repo.owner_kind === 'user' && repo.owner_uuid === viewer.uuid) level = 'owner';
  if (viewer && repo.owner_kind === 'team' && role !== null) level = ROLE_LEVEL[role];
  if (level === 'none' && viewer && repo.visibility === 'public') {
    // A deactivated user's repos are absent for everyone but staff (as the user is: resolveOwner).
    if (repo.owner_kind === 'user' && !ownerUserActive) return 'none';
    level = 'read';
  }
  // A deactivated repo is hidden from everyone below maintain level.
  if (repo.is_active !== 1 && !levelAtLeast(level, 'maintain')) return 'none';
  return level;
}

/** What `repoLevelSql` reads: SQL expressions, so a statement may feed it columns or parameters. */
export interface RepoLevelInputs {
  /** the repos table's alias in the statement */
  repo: string;
  /** the viewer's uuid (a parameter or a column) */
  viewerUuid: Expression<unknown>;
  /** 1 when the viewer is staff, else 0 (a parameter, a column or a literal) */
  viewerStaff: Expression<unknown>;
  /** the viewer's role in the owning team, null when none (a joined column or a subquery) */
  role: Expression<unknown>;
  /** whether the owner user is active (true for team repos is fine: it is read only for user repos) */
  ownerActive: Expression<SqlBool>;
}

/** The viewer's level on a repo as its rank (0 none, 1 read, 2 write, 3 maintain, 4 owner): the SQL of the rule. */
export function repoLevelSql(i: RepoLevelInputs): RawBuilder<number> {
  const col = (c: string) => sql.ref(`${i.repo}.${c}`);
  const base = sql<number>`(case
    when ${col('owner_kind')} = 'user' and ${col('owner_uuid')} = ${i.viewerUuid} then 4
    when ${col('owner_kind')} = 'team' and ${i.role} is not null then
      (case ${i.role} when 'owner' then 4 when 'maintainer' then 3 when 'member' then 2 when 'reader' then 1 else 0 end)
    when ${col('visibility')} = 'public' and (${col('owner_kind')} = 'team' or ${i.ownerActive}) then 1
    else 0 end)`;
  return sql<number>`(case
    when ${i.viewerStaff} = 1 then 4
    when ${col('is_active')} = 1 then ${base}
    when ${base} >= 3 then ${base}
    else 0 end)`;
}

/**
 * `repoLevelSql` for a statement over `repos` (unaliased, or `alias`) and a known viewer: the
 * role and the owner's activity as subqueries.
 */
export function repoLevelOf(viewer: Viewer, alias = 'repos'): RawBuilder<number> {
  const owner = sql.ref(`${alias}.owner_uuid`);
  return repoLevelSql({
    repo: alias,
    viewerUuid: sql`${viewer.uuid}`,
    viewerStaff: sql.lit(viewer.isStaff ? 1 : 0),
    role: sql`(select tm.role from team_members tm where tm.team_uuid = ${owner} and tm.user_uuid = ${viewer.uuid})`,
    ownerActive: sql<SqlBool>`exists (select 1 from users ou where ou.uuid = ${owner} and ou.is_active = 1)`,
  });
}

/** Lists that page over only the repos a viewer may read: `repoLevelSql` ≥ read, over `repos` (unaliased). */
export function repoReadableBy(viewer: Viewer | null): Expression<SqlBool> {
  if (!viewer) return sql<SqlBool>`1 = 0`;
  if (viewer.isStaff) return sql<SqlBool>`1 = 1`;
  return sql<SqlBool>`${repoLevelOf(viewer)} >= 1`;
}
