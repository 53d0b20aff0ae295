/** Roles and levels: the ranks every access decision compares. */
import type { Kysely } from 'kysely';
import { type RowLock, withRowLock } from '../db/tx.ts';
import type { DB } from '../db/types.ts';
import type { RepoLevel, Viewer } from '../viewer.ts';
import { noteDecision } from './decisions.ts';

export type { RepoRow, TeamRow, UserRow } from '../db/rows.ts';

export const TEAM_ROLES = ['owner', 'maintainer', 'member', 'reader'] as const;
export type TeamRole = (typeof TEAM_ROLES)[number];
const ROLE_RANK: Record<TeamRole, number> = { reader: 1, member: 2, maintainer: 3, owner: 4 };

export type { RepoLevel } from '../viewer.ts';
const LEVEL_RANK: Record<RepoLevel, number> = { none: 0, read: 1, write: 2, maintain: 3, owner: 4 };

export const roleAtLeast = (role: TeamRole | null, min: TeamRole): boolean => role !== null && ROLE_RANK[role] >= ROLE_RANK[min];
export const levelAtLeast = (level: RepoLevel, min: RepoLevel): boolean => LEVEL_RANK[level] >= LEVEL_RANK[min];

/**
 * The viewer's role in a team, or null. With `lock` (a write's check, inside its transaction)
 * the membership row is read with a key-share lock on PostgreSQL: a concurrent removal of the
 * member waits for the write, or the write sees the removal (see `RowLock` in db/tx.ts).
 */
export async function teamRole(
  db: Kysely<DB>,
  viewer: Viewer | null,
  teamUuid: string,
  lock?: RowLock,
): Promise<TeamRole | null> {
  if (!viewer) return null;
  noteDecision('team-role');
  const query = db
    .selectFrom('team_members')
    .select('role')
    .where('team_uuid', '=', teamUuid)
    .where('user_uuid', '=', viewer.uuid);
  const row = await withRowLock(db, query, lock ? 'key' : undefined).executeTakeFirst();
  return (row?.role as TeamRole | undefined) ?? null;
}
