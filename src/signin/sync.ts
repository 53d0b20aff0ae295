/**
 * Group sync (docs/signin.md "Group sync"): rules on a team map a group of a sign-in source (OIDC
 * `groups_claim`, LDAP `group_filter`) to a team role. At every sign-in through the source the
 * user joins each team with a matching rule at the highest matching role; a membership sync made
 * is lowered or removed when no rule matches any more; manual memberships are never touched; the
 * last owner is kept. Changes are the ordinary member events, with the user as the actor.
 */
import { randomUUID } from 'node:crypto';
import { type Static, Type } from '@sinclair/typebox';
import { TEAM_ROLES, type TeamRole, requireTeam, requireTeamManager, roleAtLeast } from '../access/index.ts';
import { command } from '../core/command.ts';
import { anyUser, decide } from '../core/targets.ts';
import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../errors.ts';
import { lockTeam, ownerCount } from '../teams/members-service.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import type { Source } from './types.ts';

export const SyncRule = Type.Object(
  {
    uuid: Type.String(),
    source: Type.String({ description: 'the sign-in source, by name' }),
    group: Type.String(),
    role: Type.Union(TEAM_ROLES.map((r) => Type.Literal(r))),
    created_at: Type.String(),
  },
  { additionalProperties: false, title: 'SyncRule' },
);
export const CreateSyncRuleBody = Type.Object(
  {
    source: Type.String({ minLength: 1, maxLength: 100 }),
    group: Type.String({ minLength: 1, maxLength: 500 }),
    role: Type.Union(TEAM_ROLES.map((r) => Type.Literal(r))),
  },
  { additionalProperties: false },
);
type RuleJson = Static<typeof SyncRule>;

export async function listSyncRules(deps: Deps, viewer: Viewer, slug: string): Promise<RuleJson[]> {
  const { team } = await requireTeam(deps.db, viewer, slug, 'owner');
  const rows = await deps.db
    .selectFrom('team_sync_rules as r')
    .innerJoin('auth_sources as s', 's.uuid', 'r.source_uuid')
    .select(['r.uuid', 's.name as source', 'r.group_name as group', 'r.role', 'r.created_at'])
    .where('r.team_uuid', '=', team.uuid)
    .orderBy('r.created_at')
    .orderBy('r.uuid')
    .execute();
  return rows.map((r) => ({ ...r, role: r.role as TeamRole }));
}

export async function createSyncRule(
  deps: Deps,
  viewer: Viewer,
  slug: string,
  input: { source: string; group: string; role: TeamRole },
): Promise<RuleJson> {
  return command(
    deps,
    viewer,
    decide((db, v: Viewer) => requireTeamManager(db, v, slug)),
    async (tx) => {
      const source = await tx.db
        .selectFrom('auth_sources')
        .select(['uuid', 'name'])
        .where('name', '=', input.source)
        .executeTakeFirst();
      if (!source) throw badRequest(`There is no sign-in source named "${input.source}".`);
      const group = input.group.trim();
      if (!group) throw badRequest('group must not be blank.');
      const row = {
        uuid: randomUUID(),
        team_uuid: tx.access.team.uuid,
        source_uuid: source.uuid,
        group_name: group,
        role: input.role,
        created_at: nowIso(),
      };
      const same = await tx.db
        .selectFrom('team_sync_rules')
        .select('uuid')
        .where('team_uuid', '=', row.team_uuid)
        .where('source_uuid', '=', row.source_uuid)
        .where('group_name', '=', group)
        .where('role', '=', input.role)
        .executeTakeFirst();
      if (same) throw badRequest('The team has this rule already.');
      await tx.db.insertInto('team_sync_rules').values(row).execute();
      return { uuid: row.uuid, source: source.name, group, role: input.role, created_at: row.created_at };
    },
  );
}

export async function deleteSyncRule(deps: Deps, viewer: Viewer, slug: string, uuid: string): Promise<void> {
  await command(
    deps,
    viewer,
    decide((db, v: Viewer) => requireTeamManager(db, v, slug)),
    async (tx) => {
      const gone = await tx.db
        .deleteFrom('team_sync_rules')
        .where('uuid', '=', uuid)
        .where('team_uuid', '=', tx.access.team.uuid)
        .executeTakeFirst();
      if (Number(gone.numDeletedRows) === 0) throw notFound('Sync rule');
    },
  );
}

/** Applies the rules of `source` to a user who just signed in through it with these groups. */
export async function applyGroupSync(
  deps: Deps,
  source: Source,
  user: { uuid: string; username: string },
  groups: string[],
): Promise<void> {
  const rules = await deps.db
    .selectFrom('team_sync_rules as r')
    .innerJoin('teams as t', 't.uuid', 'r.team_uuid')
    .select(['r.team_uuid', 'r.group_name', 'r.role', 't.slug', 't.created_at as team_created_at'])
    .where('r.source_uuid', '=', source.row.uuid)
    .execute();
  if (rules.length === 0) return;
  const have = new Set(groups);
  const teams = new Map<string, { slug: string; created_at: string; role: TeamRole | null }>();
  for (const r of rules) {
    const entry = teams.get(r.team_uuid) ?? { slug: r.slug, created_at: r.team_created_at, role: null };
    const role = r.role as TeamRole;
    if (have.has(r.group_name) && (entry.role === null || !roleAtLeast(entry.role, role))) entry.role = role;
    teams.set(r.team_uuid, entry);
  }
  const viewer: Viewer = { uuid: user.uuid, username: user.username, isStaff: false, tokenUuid: '' };
  const actor = { uuid: user.uuid, username: user.username };
  await command(deps, viewer, anyUser, async (tx) => {
    for (const [teamUuid, want] of teams) {
      await lockTeam(tx, teamUuid);
      const member = await tx.db
        .selectFrom('team_members')
        .select(['role', 'origin'])
        .where('team_uuid', '=', teamUuid)
        .where('user_uuid', '=', user.uuid)
        .executeTakeFirst();
      const base = { team_uuid: teamUuid, team_slug: want.slug, user_uuid: user.uuid, username: user.username };
      const scopes = [`team:${teamUuid}`, `user:${user.uuid}`];
      if (!member) {
        if (want.role === null) continue;
        await tx.db
          .insertInto('team_members')
          .values({
            team_uuid: teamUuid,
            user_uuid: user.uuid,
            role: want.role,
            created_at: nowIso(),
            team_created_at: want.created_at,
            origin: 'sync',
          })
          .execute();
        await tx.emit({ kind: 'member-added', scopes, actor, payload: { ...base, role: want.role } });
        continue;
      }
      // a membership added by hand is never touched; nor is a team's last owner removed or lowered
      if (member.origin !== 'sync' || member.role === want.role) continue;
      if (member.role === 'owner' && (await ownerCount(tx, teamUuid)) <= 1) continue;
      const where = tx.db.updateTable('team_members').where('team_uuid', '=', teamUuid).where('user_uuid', '=', user.uuid);
      if (want.role === null) {
        await tx.db.deleteFrom('team_members').where('team_uuid', '=', teamUuid).where('user_uuid', '=', user.uuid).execute();
        await tx.emit({ kind: 'member-removed', scopes, actor, payload: { ...base, role: member.role, left: false } });
      } else {
        await where.set({ role: want.role }).execute();
        await tx.emit({
          kind: 'member-updated',
          scopes,
          actor,
          payload: { ...base, role: want.role, previous_role: member.role },
        });
      }
    }
  });
}
