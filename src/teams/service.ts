import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { type TeamRow, assertCanListAllTeams, requireTeam, requireTeamSettingsChange } from '../access/index.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { command } from '../core/command.ts';
import { anyUser, decide } from '../core/targets.ts';
import { isReserved, nameRuleError, normalizeName, suggestName } from '../names.ts';
import { nowIso } from '../time.ts';
import { isUniqueViolation } from '../db/tx.ts';
import type { Viewer } from '../viewer.ts';

export interface TeamJson {
  uuid: string;
  name: string;
  slug: string;
  is_active: boolean;
  created_at: string;
  updated_at: string;
}

export function teamToJson(row: TeamRow): TeamJson {
  return {
    uuid: row.uuid,
    name: row.name,
    slug: row.slug,
    is_active: row.is_active === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

const slugTaken = (slug: string) => conflict('slug_taken', `The team slug "${slug}" is not available.`);

function cleanTeamName(raw: string): string {
  const name = raw.trim();
  if (!name) throw badRequest('name must not be blank.');
  return name;
}

export async function isTeamSlugTaken(db: Kysely<DB>, slug: string): Promise<boolean> {
  if (isReserved('team slug', slug)) return true;
  return (await db.selectFrom('teams').select('uuid').where('slug', '=', slug).executeTakeFirst()) !== undefined;
}

/** Any authenticated user may create a team and becomes its owner. */
export async function createTeam(deps: Deps, viewer: Viewer, input: { name: string; slug: string }): Promise<TeamRow> {
  const name = cleanTeamName(input.name);
  const slug = normalizeName('team slug', input.slug);
  if (isReserved('team slug', slug)) throw slugTaken(slug);
  try {
    return await command(deps, viewer, anyUser, async (tx) => {
      if (await isTeamSlugTaken(tx.db, slug)) throw slugTaken(slug);
      const now = nowIso();
      const row: TeamRow = {
        uuid: randomUUID(),
        name,
        slug,
        is_active: 1,
        created_at: now,
        updated_at: now,
        require_two_factor: 0,
      };
      await tx.db.insertInto('teams').values(row).execute();
      await tx.db
        .insertInto('team_members')
        .values({ team_uuid: row.uuid, user_uuid: viewer.uuid, role: 'owner', created_at: now, team_created_at: row.created_at })
        .execute();
      await tx.emit({
        kind: 'team-created',
        scopes: [`team:${row.uuid}`, `user:${viewer.uuid}`],
        actor: actorOf(viewer),
        payload: { team_uuid: row.uuid, slug, name },
      });
      return row;
    });
  } catch (err) {
    // Two creators raced for the same slug: the loser's insert hits the unique index.
    if (isUniqueViolation(err)) throw slugTaken(slug);
    throw err;
  }
}

export async function listTeams(
  deps: Deps,
  viewer: Viewer,
  opts: { all?: boolean; offset: number; limit: number },
): Promise<TeamRow[]> {
  // The page's keys first, from an index in the list's order (index entries only), then those
  // teams: a deep page skips index entries, never team rows (README "Performance"). Every team:
  // teams_list_idx. The caller's teams: their member rows carry the team's created_at
  // (team_members_user_team_order_idx, migration 093), so no sort of all the caller's teams.
  if (opts.all) assertCanListAllTeams(viewer);
  const keys = opts.all
    ? deps.db.selectFrom('teams').select('uuid').orderBy('created_at').orderBy('uuid').offset(opts.offset).limit(opts.limit)
    : deps.db
        .selectFrom('team_members')
        .select('team_uuid as uuid')
        .where('user_uuid', '=', viewer.uuid)
        .orderBy('team_created_at')
        .orderBy('team_uuid')
        .offset(opts.offset)
        .limit(opts.limit);
  return deps.db.selectFrom('teams').selectAll().where('uuid', 'in', keys).orderBy('created_at').orderBy('uuid').execute();
}

export async function getTeam(deps: Deps, viewer: Viewer, slug: string): Promise<TeamRow> {
  return (await requireTeam(deps.db, viewer, slug)).team;
}

export interface UpdateTeamInput {
  name: string;
  slug: string;
  is_active?: boolean;
}

export async function updateTeam(deps: Deps, viewer: Viewer, teamSlug: string, input: UpdateTeamInput): Promise<TeamRow> {
  const name = cleanTeamName(input.name);
  const slug = normalizeName('team slug', input.slug);
  try {
    return await command(
      deps,
      viewer,
      decide((db, v: Viewer) => requireTeamSettingsChange(db, v, teamSlug, input)),
      async (tx) => {
        const { team } = tx.access;
        if (slug !== team.slug && isReserved('team slug', slug)) throw slugTaken(slug);
        const changes: Partial<TeamRow> = {};
        if (name !== team.name) changes.name = name;
        if (slug !== team.slug) changes.slug = slug;
        if (input.is_active !== undefined && (input.is_active ? 1 : 0) !== team.is_active)
          changes.is_active = input.is_active ? 1 : 0;
        if (Object.keys(changes).length === 0) return team;
        if (changes.slug !== undefined && (await isTeamSlugTaken(tx.db, slug))) throw slugTaken(slug);
        const updated: TeamRow = { ...team, ...changes, updated_at: nowIso() };
        await tx.db
          .updateTable('teams')
          .set({ ...changes, updated_at: updated.updated_at })
          .where('uuid', '=', team.uuid)
          .execute();
        await tx.emit({
          kind: 'team-updated',
          scopes: [`team:${team.uuid}`],
          actor: actorOf(viewer),
          payload: {
            team_uuid: team.uuid,
            slug: updated.slug,
            name: updated.name,
            is_active: updated.is_active === 1,
            fields: Object.keys(changes),
            ...(changes.slug !== undefined ? { previous_slug: team.slug } : {}),
          },
        });
        return updated;
      },
    );
  } catch (err) {
    if (isUniqueViolation(err)) throw slugTaken(slug);
    throw err;
  }
}

export async function checkTeamSlug(deps: Deps, raw: string): Promise<{ available: boolean; suggestion: string | null }> {
  const slug = raw.trim().toLowerCase();
  const problem = nameRuleError('team slug', slug);
  if (problem) throw badRequest(problem);
  if (!(await isTeamSlugTaken(deps.db, slug))) return { available: true, suggestion: null };
  return { available: false, suggestion: await suggestName('team slug', slug, (c) => isTeamSlugTaken(deps.db, c)) };
}
