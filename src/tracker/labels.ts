/**
 * Labels of a repo or of a team (README "Issue tracker"): a team's labels are usable in every repo
 * of the team, so a repo label may not take a name a team label of its team holds, nor the reverse
 * (409 conflict). Read access lists; maintain level (a team's owners for team labels) writes.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import {
  assertCanWriteRepoLabels,
  assertNotArchived,
  itemWrite,
  type RepoRef,
  repoContextOf,
  requireTeam,
  type TeamRow,
} from '../access/index.ts';
import { command } from '../core/command.ts';
import { decide, onRepo } from '../core/targets.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, forbidden, notFound } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { repoScopes } from '../repos/view.ts';
import { nowIso } from '../time.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import { type LabelRow, usableLabels } from './items.ts';

export interface LabelJson {
  uuid: string;
  name: string;
  color: string;
  description: string;
  scope: 'repo' | 'team';
  created_at: string;
}
export interface LabelInput {
  name?: string;
  color?: string;
  description?: string;
}
type PageArgs = { offset: number; limit: number };

export const labelToJson = (l: LabelRow): LabelJson => ({
  uuid: l.uuid,
  name: l.name,
  color: l.color,
  description: l.description,
  scope: l.team_uuid !== null ? 'team' : 'repo',
  created_at: l.created_at,
});

function cleanName(raw: string): string {
  const name = raw.trim();
  if (name.length < 1 || name.length > 50) throw badRequest('name must be 1-50 characters.');
  if (name.includes(',')) throw badRequest('name must not contain a comma.');
  return name;
}
function cleanColor(raw: string): string {
  if (!/^[0-9a-fA-F]{6}$/.test(raw)) throw badRequest('color must be 6 hex digits, without #.');
  return raw.toLowerCase();
}
function cleanDescription(raw: string): string {
  if (raw.length > 200) throw badRequest('description must be at most 200 characters.');
  return raw;
}

type Owner =
  | { kind: 'repo'; repo: { uuid: string; owner_kind: string; owner_uuid: string; is_archived?: number } }
  | { kind: 'team'; team: TeamRow };

/** 409 when the name is taken in the owner's scope or across the repo/team boundary. */
async function assertNameFree(db: Kysely<DB>, owner: Owner, key: string, except: string | null): Promise<void> {
  let q =
    owner.kind === 'repo'
      ? usableLabels(db, owner.repo).where('name_key', '=', key)
      : db
          .selectFrom('labels')
          .selectAll()
          .where('name_key', '=', key)
          .where((eb) =>
            eb.or([
              eb('team_uuid', '=', owner.team.uuid),
              eb(
                'repo_uuid',
                'in',
                eb.selectFrom('repos').select('uuid').where('owner_kind', '=', 'team').where('owner_uuid', '=', owner.team.uuid),
              ),
            ]),
          );
  if (except !== null) q = q.where('uuid', '!=', except);
  const clash = await q.executeTakeFirst();
  if (clash) {
    const where = clash.team_uuid !== null ? 'a team label' : 'a repo label';
    throw conflict('conflict', `The name ${JSON.stringify(clash.name)} is already ${where} here.`);
  }
}

const ownerScopes = (owner: Owner) => (owner.kind === 'repo' ? repoScopes(owner.repo) : [`team:${owner.team.uuid}`]);
const ownerPayload = (owner: Owner) => (owner.kind === 'repo' ? { repo_uuid: owner.repo.uuid } : { team_uuid: owner.team.uuid });

async function findLabel(db: Kysely<DB>, owner: Owner, name: string): Promise<LabelRow> {
  const key = name.trim().toLowerCase();
  const row =
    owner.kind === 'repo'
      ? await usableLabels(db, owner.repo).where('name_key', '=', key).executeTakeFirst()
      : await db
          .selectFrom('labels')
          .selectAll()
          .where('team_uuid', '=', owner.team.uuid)
          .where('name_key', '=', key)
          .executeTakeFirst();
  if (!row) throw notFound('Label');
  return row;
}

/**
 * The repo's or team's target for a label write (repo: maintain; team: owner), locked. With `item`
 * (a write to a label that may not exist), an archived repo passes here and the write calls
 * `assertNotArchived` once the label is found, so a missing label is 404 before 403 repo_archived.
 */
const labelTarget = (where: { repo: RepoRef } | { team: string }, item = false) =>
  'repo' in where
    ? {
        resolve: async (db: Parameters<ReturnType<typeof onRepo>['resolve']>[0], viewer: Viewer): Promise<Owner> => {
          const need = { level: 'read' as const, write: true };
          const access = await onRepo(where.repo, item ? itemWrite(need) : need).resolve(db, viewer);
          assertCanWriteRepoLabels(access);
          return { kind: 'repo', repo: access.repo };
        },
      }
    : decide(async (db, viewer): Promise<Owner> => {
        const { team } = await requireTeam(db, viewer, where.team, 'owner', { lock: 'update' });
        if (team.is_active !== 1 && !viewer.isStaff) throw forbidden('The team is inactive.', 'team_inactive');
        return { kind: 'team', team };
      });

async function readOwner(deps: Deps, viewer: Viewer, where: { repo: RepoAt } | { team: string }): Promise<Owner> {
  if ('repo' in where) return { kind: 'repo', repo: (await repoContextOf(deps.database, viewer, where.repo)).repo };
  return { kind: 'team', team: (await requireTeam(deps.db, viewer, where.team)).team };
}

export async function listLabels(deps: Deps, viewer: Viewer, where: { repo: RepoAt } | { team: string }, page: PageArgs) {
  const owner = await readOwner(deps, viewer, where);
  const q =
    owner.kind === 'repo'
      ? usableLabels(deps.db, owner.repo)
      : deps.db.selectFrom('labels').selectAll().where('team_uuid', '=', owner.team.uuid);
  const rows = await q.orderBy('name_key').orderBy('uuid').offset(page.offset).limit(page.limit).execute();
  return rows.map(labelToJson);
}

export async function getLabel(deps: Deps, viewer: Viewer, where: { repo: RepoAt } | { team: string }, name: string) {
  return labelToJson(await findLabel(deps.db, await readOwner(deps, viewer, where), name));
}

export async function createLabel(
  deps: Deps,
  viewer: Viewer,
  where: { repo: RepoRef } | { team: string },
  input: Required<Pick<LabelInput, 'name' | 'color'>> & LabelInput,
): Promise<LabelJson> {
  const name = cleanName(input.name);
  const color = cleanColor(input.color);
  const description = cleanDescription(input.description ?? '');
  return command(deps, viewer, labelTarget(where), async (tx) => {
    const owner = tx.access;
    await assertNameFree(tx.db, owner, name.toLowerCase(), null);
    const now = nowIso();
    const row: LabelRow = {
      uuid: randomUUID(),
      repo_uuid: owner.kind === 'repo' ? owner.repo.uuid : null,
      team_uuid: owner.kind === 'team' ? owner.team.uuid : null,
      name,
      name_key: name.toLowerCase(),
      color,
      description,
      created_at: now,
      updated_at: now,
    };
    await tx.db.insertInto('labels').values(row).execute();
    const json = labelToJson(row);
    await tx.emit({
      kind: 'label-created',
      scopes: ownerScopes(owner),
      actor: actorOf(viewer),
      payload: { ...ownerPayload(owner), label: json },
    });
    return json;
  });
}

function assertOwnLabel(owner: Owner, row: LabelRow): void {
  if (owner.kind === 'repo' && row.repo_uuid !== owner.repo.uuid) {
    throw forbidden('This is a team label: change it under /teams/{team}/labels.');
  }
}

export async function updateLabel(
  deps: Deps,
  viewer: Viewer,
  where: { repo: RepoRef } | { team: string },
  name: string,
  input: LabelInput,
): Promise<LabelJson> {
  const next = {
    ...(input.name !== undefined ? { name: cleanName(input.name) } : {}),
    ...(input.color !== undefined ? { color: cleanColor(input.color) } : {}),
    ...(input.description !== undefined ? { description: cleanDescription(input.description) } : {}),
  };
  return command(deps, viewer, labelTarget(where, true), async (tx) => {
    const owner = tx.access;
    const row = await findLabel(tx.db, owner, name);
    if (owner.kind === 'repo') assertNotArchived({ repo: { is_archived: owner.repo.is_archived ?? 0 } });
    assertOwnLabel(owner, row);
    if (next.name !== undefined && next.name.toLowerCase() !== row.name_key)
      await assertNameFree(tx.db, owner, next.name.toLowerCase(), row.uuid);
    const changed = (Object.keys(next) as Array<keyof typeof next>).filter((k) => next[k] !== row[k]);
    if (changed.length === 0) return labelToJson(row);
    const updated = { ...row, ...next, name_key: (next.name ?? row.name).toLowerCase(), updated_at: nowIso() };
    await tx.db
      .updateTable('labels')
      .set({
        name: updated.name,
        name_key: updated.name_key,
        color: updated.color,
        description: updated.description,
        updated_at: updated.updated_at,
      })
      .where('uuid', '=', row.uuid)
      .execute();
    const json = labelToJson(updated);
    await tx.emit({
      kind: 'label-updated',
      scopes: ownerScopes(owner),
      actor: actorOf(viewer),
      payload: {
        ...ownerPayload(owner),
        label: json,
        changed,
        ...(next.name !== undefined && next.name !== row.name ? { from: row.name } : {}),
      },
    });
    return json;
  });
}

export async function deleteLabel(
  deps: Deps,
  viewer: Viewer,
  where: { repo: RepoRef } | { team: string },
  name: string,
): Promise<void> {
  await command(deps, viewer, labelTarget(where, true), async (tx) => {
    const owner = tx.access;
    const row = await findLabel(tx.db, owner, name);
    if (owner.kind === 'repo') assertNotArchived({ repo: { is_archived: owner.repo.is_archived ?? 0 } });
    assertOwnLabel(owner, row);
    // item_labels rows go with it (on delete cascade): off every thread and pull
    await tx.db.deleteFrom('item_labels').where('label_uuid', '=', row.uuid).execute();
    await tx.db.deleteFrom('labels').where('uuid', '=', row.uuid).execute();
    await tx.emit({
      kind: 'label-deleted',
      scopes: ownerScopes(owner),
      actor: actorOf(viewer),
      payload: { ...ownerPayload(owner), label: labelToJson(row) },
    });
  });
}
