import type { Transaction } from 'kysely';
import { type TeamRole, requireMemberRemoval, requireTeam, requireTeamManager } from '../access/index.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { conflict, notFound } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { command, type TxContext } from '../core/command.ts';
import { decide } from '../core/targets.ts';
import { nowIso } from '../time.ts';
import { isUniqueViolation } from '../db/tx.ts';
import { findUserByUsername, requireActiveUser } from '../users/service.ts';
import type { Viewer } from '../viewer.ts';

export interface MemberJson {
  user_uuid: string;
  username: string;
  display_name: string;
  role: TeamRole;
  /** 'manual' (added by hand) or 'sync' (made by group sync, docs/signin.md "Group sync") */
  origin: 'manual' | 'sync';
  created_at: string;
}

function memberQuery(db: Transaction<DB> | Deps['db'], teamUuid: string) {
  return db
    .selectFrom('team_members as m')
    .innerJoin('users as u', 'u.uuid', 'm.user_uuid')
    .select(['m.user_uuid', 'u.username', 'u.display_name', 'm.role', 'm.origin', 'm.created_at'])
    .where('m.team_uuid', '=', teamUuid);
}

type MemberRow = {
  user_uuid: string;
  username: string;
  display_name: string;
  role: string;
  origin: string;
  created_at: string;
};

const toJson = (row: MemberRow): MemberJson => ({
  ...row,
  role: row.role as TeamRole,
  origin: row.origin === 'sync' ? 'sync' : 'manual',
});

async function findMember(db: Transaction<DB> | Deps['db'], teamUuid: string, username: string): Promise<MemberRow | undefined> {
  return memberQuery(db, teamUuid).where('u.username', '=', username.toLowerCase()).executeTakeFirst();
}

/**
 * Serialises membership changes of one team on PostgreSQL, so two concurrent demotions cannot
 * both pass the last-owner check (SQLite runs write transactions one at a time anyway).
 */
export async function lockTeam(tx: TxContext, teamUuid: string): Promise<void> {
  if (tx.dialect === 'postgres') {
    await tx.db.selectFrom('teams').select('uuid').where('uuid', '=', teamUuid).forUpdate().execute();
  }
}

export async function ownerCount(tx: TxContext, teamUuid: string): Promise<number> {
  const row = await tx.db
    .selectFrom('team_members')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('team_uuid', '=', teamUuid)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

const lastOwner = () => conflict('last_owner', 'A team must keep at least one owner: add another owner first.');

export async function listMembers(
  deps: Deps,
  viewer: Viewer,
  teamSlug: string,
  page: { offset: number; limit: number },
): Promise<MemberJson[]> {
  const { team } = await requireTeam(deps.db, viewer, teamSlug);
  // The page's keys from team_members_list_idx (index entries only), then their rows with
  // names: a deep page skips index entries, never user rows (README "Performance").
  const keys = deps.db
    .selectFrom('team_members')
    .select('user_uuid')
    .where('team_uuid', '=', team.uuid)
    .orderBy('created_at')
    .orderBy('user_uuid')
    .offset(page.offset)
    .limit(page.limit);
  const rows = await memberQuery(deps.db, team.uuid)
    .where('m.user_uuid', 'in', keys)
    .orderBy('m.created_at')
    .orderBy('m.user_uuid')
    .execute();
  return rows.map(toJson);
}

export async function getMember(deps: Deps, viewer: Viewer, teamSlug: string, username: string): Promise<MemberJson> {
  const { team } = await requireTeam(deps.db, viewer, teamSlug);
  const row = await findMember(deps.db, team.uuid, username);
  if (!row) throw notFound('Member');
  return toJson(row);
}

export async function addMember(
  deps: Deps,
  viewer: Viewer,
  teamSlug: string,
  input: { username: string; role: TeamRole },
): Promise<MemberJson> {
  let already = () => conflict('already_member', `${input.username.trim()} is already a member of the team.`);
  try {
    return await command(
      deps,
      viewer,
      decide((db, v: Viewer) => requireTeamManager(db, v, teamSlug)),
      async (tx) => {
        const { team } = tx.access;
        const user = await requireActiveUser(tx.db, input.username.trim());
        already = () => conflict('already_member', `${user.username} is already a member of the team.`);
        await lockTeam(tx, team.uuid);
        const existing = await tx.db
          .selectFrom('team_members')
          .select('role')
          .where('team_uuid', '=', team.uuid)
          .where('user_uuid', '=', user.uuid)
          .executeTakeFirst();
        if (existing) throw already();
        const created_at = nowIso();
        await tx.db
          .insertInto('team_members')
          .values({ team_uuid: team.uuid, user_uuid: user.uuid, role: input.role, created_at, team_created_at: team.created_at })
          .execute();
        await tx.emit({
          kind: 'member-added',
          scopes: [`team:${team.uuid}`, `user:${user.uuid}`],
          actor: actorOf(viewer),
          payload: {
            team_uuid: team.uuid,
            team_slug: team.slug,
            user_uuid: user.uuid,
            username: user.username,
            role: input.role,
          },
        });
        return {
          user_uuid: user.uuid,
          username: user.username,
          display_name: user.display_name,
          role: input.role,
          origin: 'manual' as const,
          created_at,
        };
      },
    );
  } catch (err) {
    if (isUniqueViolation(err)) throw already();
    throw err;
  }
}

export async function updateMember(
  deps: Deps,
  viewer: Viewer,
  teamSlug: string,
  username: string,
  input: { role: TeamRole },
): Promise<MemberJson> {
  return command(
    deps,
    viewer,
    decide((db, v: Viewer) => requireTeamManager(db, v, teamSlug)),
    async (tx) => {
      const { team } = tx.access;
      await lockTeam(tx, team.uuid);
      const member = await findMember(tx.db, team.uuid, username);
      if (!member) throw notFound('Member');
      if (member.role === input.role) return toJson(member);
      if (member.role === 'owner' && (await ownerCount(tx, team.uuid)) <= 1) throw lastOwner();
      await tx.db
        .updateTable('team_members')
        .set({ role: input.role })
        .where('team_uuid', '=', team.uuid)
        .where('user_uuid', '=', member.user_uuid)
        .execute();
      await tx.emit({
        kind: 'member-updated',
        scopes: [`team:${team.uuid}`, `user:${member.user_uuid}`],
        actor: actorOf(viewer),
        payload: {
          team_uuid: team.uuid,
          team_slug: team.slug,
          user_uuid: member.user_uuid,
          username: member.username,
          role: input.role,
          previous_role: member.role,
        },
      });
      return toJson({ ...member, role: input.role });
    },
  );
}

export async function removeMember(deps: Deps, viewer: Viewer, teamSlug: string, username: string): Promise<void> {
  const removal = decide(async (db, v: Viewer) => {
    const target = await findUserByUsername(db, username);
    return requireMemberRemoval(db, v, teamSlug, target?.uuid ?? null);
  });
  await command(deps, viewer, removal, async (tx) => {
    const { team } = tx.access;
    await lockTeam(tx, team.uuid);
    const member = await findMember(tx.db, team.uuid, username);
    if (!member) throw notFound('Member');
    if (member.role === 'owner' && (await ownerCount(tx, team.uuid)) <= 1) throw lastOwner();
    await tx.db.deleteFrom('team_members').where('team_uuid', '=', team.uuid).where('user_uuid', '=', member.user_uuid).execute();
    await tx.emit({
      kind: 'member-removed',
      scopes: [`team:${team.uuid}`, `user:${member.user_uuid}`],
      actor: actorOf(viewer),
      payload: {
        team_uuid: team.uuid,
        team_slug: team.slug,
        user_uuid: member.user_uuid,
        username: member.username,
        role: member.role,
        left: member.user_uuid === viewer.uuid,
      },
    });
  });
}
