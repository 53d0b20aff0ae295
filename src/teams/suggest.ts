import { type Expression, type SqlBool, sql } from 'kysely';
import { teamVisibleTo } from '../access/index.ts';
import { startsWithText } from '../db/like.ts';
import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../errors.ts';
import type { Viewer } from '../viewer.ts';

export const SUGGEST_LIMIT = 10;

export interface SuggestedUserJson {
  uuid: string;
  username: string;
  display_name: string;
}

/**
 * docs/behaviour.md "Teams and access": at most 10 active users whose username or display name starts with `name`
 * (case-insensitive) or whose email equals `email` (whole address, case-insensitive); emails
 * are never returned. `team_slug` narrows to that team's members and needs the team to be
 * visible to the caller (its members and staff): otherwise, as for an unknown team, 404.
 */
export async function suggestUsers(
  deps: Deps,
  viewer: Viewer | null,
  q: { name?: string; email?: string; team_slug?: string },
): Promise<SuggestedUserJson[]> {
  const name = q.name?.trim();
  const email = q.email?.trim().toLowerCase();
  if (!name && !email) throw badRequest('Give a name prefix or an email address to suggest users.');
  let teamUuid: string | null = null;
  if (q.team_slug !== undefined) {
    const team = await deps.db
      .selectFrom('teams')
      .selectAll()
      .where('slug', '=', q.team_slug.trim().toLowerCase())
      .executeTakeFirst();
    if (!team || !(await teamVisibleTo(deps.db, viewer, team))) throw notFound('Team');
    teamUuid = team.uuid;
  }
  let query = deps.db
    .selectFrom('users as u')
    .select(['u.uuid', 'u.username', 'u.display_name'])
    .where('u.is_active', '=', 1)
    .where((eb) => {
      // The LIKE expressions are used as conditions directly: SQLite cannot bind a JS boolean.
      const any: Expression<SqlBool>[] = [];
      if (name) any.push(startsWithText('u.username', name), startsWithText('u.display_name', name));
      if (email) any.push(eb(sql<string>`lower(${sql.ref('u.email')})`, '=', email));
      return eb.or(any);
    });
  if (teamUuid !== null) {
    const team = teamUuid;
    query = query.where('u.uuid', 'in', (eb) => eb.selectFrom('team_members').select('user_uuid').where('team_uuid', '=', team));
  }
  return query.orderBy('u.username').orderBy('u.uuid').limit(SUGGEST_LIMIT).execute();
}
