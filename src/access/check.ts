/**
 * The one entry point for "which of these may the viewer read": `checkAccess(db, viewer,
 * permission, ids)` answers the allowed subset, in ONE statement per call whatever the number of
 * ids (Immich's access.repository.ts). Lists, feeds, event scopes and pages ask once for a set,
 * never per row. Every repo-bound permission is the repo rule's SQL (`repoReadableBy`,
 * repo-level.ts) joined from the thing to its repo, so a reader of a permission is found by
 * grepping its name here.
 */
import { type Kysely, sql } from 'kysely';
import type { DB } from '../db/types.ts';
import type { Viewer } from '../viewer.ts';
import { repoReadableBy } from './repo-level.ts';
import { noteDecision } from './decisions.ts';

export type Permission = 'repo.read' | 'pull.read' | 'review.read' | 'thread.read' | 'reply.read' | 'team.read' | 'user.read';

/** The ids among `ids` the viewer holds `permission` on (absent, unknown or unreadable ids are left out). */
export async function checkAccess(
  db: Kysely<DB>,
  viewer: Viewer | null,
  permission: Permission,
  ids: Iterable<string>,
): Promise<Set<string>> {
  const wanted = [...new Set(ids)];
  if (wanted.length === 0 || !viewer) return new Set();
  noteDecision('check');
  const rows = await accessQuery(db, viewer, permission, wanted).execute();
  return new Set(rows.map((r) => r.id));
}

/** Whether the viewer holds `permission` on one id: `checkAccess` of a set of one. */
export async function hasAccess(db: Kysely<DB>, viewer: Viewer | null, permission: Permission, id: string): Promise<boolean> {
  return (await checkAccess(db, viewer, permission, [id])).has(id);
}

function accessQuery(db: Kysely<DB>, viewer: Viewer, permission: Permission, ids: string[]) {
  const readable = repoReadableBy(viewer);
  switch (permission) {
    case 'repo.read':
      return db.selectFrom('repos').select('repos.uuid as id').where('repos.uuid', 'in', ids).where(readable);
    case 'pull.read':
      return db
        .selectFrom('pulls as p')
        .innerJoin('repos', 'repos.uuid', 'p.repo_uuid')
        .select('p.uuid as id')
        .where('p.uuid', 'in', ids)
        .where(readable);
    case 'review.read':
      return db
        .selectFrom('reviews as rv')
        .innerJoin('pulls as p', 'p.uuid', 'rv.pull_uuid')
        .innerJoin('repos', 'repos.uuid', 'p.repo_uuid')
        .select('rv.uuid as id')
        .where('rv.uuid', 'in', ids)
        .where(readable);
    case 'thread.read':
      return db
        .selectFrom('threads as t')
        .innerJoin('repos', 'repos.uuid', 't.repo_uuid')
        .select('t.uuid as id')
        .where('t.uuid', 'in', ids)
        .where(readable);
    case 'reply.read':
      return db
        .selectFrom('replies as rp')
        .innerJoin('threads as t', 't.uuid', 'rp.thread_uuid')
        .innerJoin('repos', 'repos.uuid', 't.repo_uuid')
        .select('rp.uuid as id')
        .where('rp.uuid', 'in', ids)
        .where(readable);
    case 'team.read':
      // a team is read by its members, whatever the role; staff read every team
      return db
        .selectFrom('teams as tm')
        .select('tm.uuid as id')
        .where('tm.uuid', 'in', ids)
        .where(
          viewer.isStaff
            ? sql<boolean>`1 = 1`
            : sql<boolean>`exists (select 1 from team_members m where m.team_uuid = tm.uuid and m.user_uuid = ${viewer.uuid})`,
        );
    case 'user.read':
      // a user scope is its user's own (staff read every one)
      return db
        .selectFrom('users as u')
        .select('u.uuid as id')
        .where('u.uuid', 'in', ids)
        .where(viewer.isStaff ? sql<boolean>`1 = 1` : sql<boolean>`u.uuid = ${viewer.uuid}`);
  }
}
