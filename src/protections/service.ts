import { randomUUID } from 'node:crypto';
import { wakeAutoMerge } from '../pulls/auto-merge-state.ts';
import type { Kysely, Selectable } from 'kysely';
import { type RepoRef, type RepoRow, assertNotArchived, itemWrite, requireRepo } from '../access/index.ts';
import type { DB, ProtectionsTable } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import { actorOf, type EventKind } from '../events/service.ts';
import { command, type TxContext } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
import { isValidBranchPattern } from '../git/refname.ts';
import { repoScopes } from '../repos/view.ts';
import { nowIso } from '../time.ts';
import { isUniqueViolation } from '../db/tx.ts';
import { requireActiveUser } from '../users/service.ts';
import type { Viewer } from '../viewer.ts';

type ProtectionRow = Selectable<ProtectionsTable>;

export interface ProtectionJson {
  uuid: string;
  branch: string;
  required_approvals: number;
  required_status_contexts: string[];
  require_conversation_resolution: boolean;
  created_at: string;
  updated_at: string;
}

export interface ApproverJson {
  user_uuid: string;
  username: string;
  created_at: string;
}

export const protectionToJson = (row: ProtectionRow): ProtectionJson => ({
  uuid: row.uuid,
  branch: row.branch,
  required_approvals: row.required_approvals,
  required_status_contexts: requiredContexts(row),
  require_conversation_resolution: row.require_conversation_resolution === 1,
  created_at: row.created_at,
  updated_at: row.updated_at,
});

/** A protection's required status contexts (stored as a JSON array), sorted. */
export function requiredContexts(row: { required_status_contexts: string }): string[] {
  try {
    const list: unknown = JSON.parse(row.required_status_contexts);
    return Array.isArray(list) ? list.filter((c): c is string => typeof c === 'string').sort() : [];
  } catch {
    return [];
  }
}

/** Stored form of a list of contexts: distinct, sorted, JSON. */
const contextsText = (contexts: string[]) => JSON.stringify([...new Set(contexts)].sort());

// Reading protections needs read access; changing them (and their approvers) maintain level.
const READ = { level: 'read' } as const;
const MANAGE = { level: 'maintain', write: true } as const;

function checkPattern(branch: string): string {
  if (!isValidBranchPattern(branch)) {
    throw badRequest(
      'branch must be a branch name or a glob (`*`, `?`) of at most 255 characters, without white space, control characters, `..` or `~^:[\\`.',
    );
  }
  return branch;
}

const duplicateBranch = (branch: string) => conflict('conflict', `The repo already has a protection for "${branch}".`);

async function findProtection(db: Kysely<DB>, repo: RepoRow, uuid: string): Promise<ProtectionRow> {
  const row = await db
    .selectFrom('protections')
    .selectAll()
    .where('repo_uuid', '=', repo.uuid)
    .where('uuid', '=', uuid)
    .executeTakeFirst();
  if (!row) throw notFound('Protection');
  return row;
}

async function branchTaken(db: Kysely<DB>, repoUuid: string, branch: string, except?: string): Promise<boolean> {
  let q = db.selectFrom('protections').select('uuid').where('repo_uuid', '=', repoUuid).where('branch', '=', branch);
  if (except) q = q.where('uuid', '!=', except);
  return (await q.executeTakeFirst()) !== undefined;
}

async function emitProtectionEvent(
  deps: Deps,
  tx: TxContext,
  viewer: Viewer,
  repo: RepoRow,
  kind: EventKind,
  payload: Record<string, unknown>,
): Promise<void> {
  await tx.emit({ kind, scopes: repoScopes(repo), actor: actorOf(viewer), payload: { repo_uuid: repo.uuid, ...payload } });
  // docs/ci.md "Auto-merge": a protection eased may let a pull merge
  await wakeAutoMerge(deps, tx.db, { repoUuid: repo.uuid });
}

export async function listProtections(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  page: { offset: number; limit: number },
): Promise<ProtectionJson[]> {
  const { repo } = await requireRepo(deps.db, viewer, ref, READ);
  // The page's keys from protections_repo_list_idx (index entries only), then their rows: a
  // deep page skips index entries, never rows (README "Performance").
  const keys = deps.db
    .selectFrom('protections')
    .select('uuid')
    .where('repo_uuid', '=', repo.uuid)
    .orderBy('created_at')
    .orderBy('uuid')
    .offset(page.offset)
    .limit(page.limit);
  const rows = await deps.db
    .selectFrom('protections')
    .selectAll()
    .where('uuid', 'in', keys)
    .orderBy('created_at')
    .orderBy('uuid')
    .execute();
  return rows.map(protectionToJson);
}

export async function createProtection(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  input: {
    branch: string;
    required_approvals?: number;
    required_status_contexts?: string[];
    require_conversation_resolution?: boolean;
  },
): Promise<ProtectionJson> {
  return command(deps, viewer, onRepo(ref, MANAGE), async (tx) => {
    const { repo } = tx.access;
    const branch = checkPattern(input.branch);
    if (await branchTaken(tx.db, repo.uuid, branch)) throw duplicateBranch(branch);
    const now = nowIso();
    const row: ProtectionRow = {
      uuid: randomUUID(),
      repo_uuid: repo.uuid,
      branch,
      required_approvals: input.required_approvals ?? 1,
      required_status_contexts: contextsText(input.required_status_contexts ?? []),
      require_conversation_resolution: input.require_conversation_resolution ? 1 : 0,
      created_at: now,
      updated_at: now,
    };
    try {
      await tx.db.insertInto('protections').values(row).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicateBranch(branch);
      throw err;
    }
    await emitProtectionEvent(deps, tx, viewer, repo, 'protection-created', {
      protection_uuid: row.uuid,
      branch,
      required_approvals: row.required_approvals,
      required_status_contexts: requiredContexts(row),
    });
    return protectionToJson(row);
  });
}

export async function getProtection(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<ProtectionJson> {
  const { repo } = await requireRepo(deps.db, viewer, ref, READ);
  return protectionToJson(await findProtection(deps.db, repo, uuid));
}

export async function updateProtection(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  uuid: string,
  input: {
    branch?: string;
    required_approvals?: number;
    required_status_contexts?: string[];
    require_conversation_resolution?: boolean;
  },
): Promise<ProtectionJson> {
  return command(deps, viewer, onRepo(ref, itemWrite(MANAGE)), async (tx) => {
    const { repo } = tx.access;
    const row = await findProtection(tx.db, repo, uuid);
    assertNotArchived(tx.access);
    const changes: Partial<ProtectionRow> = {};
    if (input.branch !== undefined && input.branch !== row.branch) {
      const branch = checkPattern(input.branch);
      if (await branchTaken(tx.db, repo.uuid, branch, row.uuid)) throw duplicateBranch(branch);
      changes.branch = branch;
    }
    if (input.required_approvals !== undefined && input.required_approvals !== row.required_approvals) {
      changes.required_approvals = input.required_approvals;
    }
    if (input.required_status_contexts !== undefined) {
      const text = contextsText(input.required_status_contexts);
      if (text !== contextsText(requiredContexts(row))) changes.required_status_contexts = text;
    }
    if (input.require_conversation_resolution !== undefined) {
      const flag = input.require_conversation_resolution ? 1 : 0;
      if (flag !== row.require_conversation_resolution) changes.require_conversation_resolution = flag;
    }
    if (Object.keys(changes).length === 0) return protectionToJson(row);
    const updated = { ...row, ...changes, updated_at: nowIso() };
    try {
      await tx.db
        .updateTable('protections')
        .set({ ...changes, updated_at: updated.updated_at })
        .where('uuid', '=', row.uuid)
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicateBranch(String(changes.branch));
      throw err;
    }
    await emitProtectionEvent(deps, tx, viewer, repo, 'protection-updated', {
      protection_uuid: row.uuid,
      branch: updated.branch,
      required_approvals: updated.required_approvals,
      required_status_contexts: requiredContexts(updated),
      fields: Object.keys(changes),
    });
    return protectionToJson(updated);
  });
}

export async function deleteProtection(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<void> {
  await command(deps, viewer, onRepo(ref, itemWrite(MANAGE)), async (tx) => {
    const { repo } = tx.access;
    const row = await findProtection(tx.db, repo, uuid);
    assertNotArchived(tx.access);
    await tx.db.deleteFrom('protections').where('uuid', '=', row.uuid).execute();
    await emitProtectionEvent(deps, tx, viewer, repo, 'protection-deleted', { protection_uuid: row.uuid, branch: row.branch });
  });
}

export async function listApprovers(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  uuid: string,
  page: { offset: number; limit: number },
): Promise<ApproverJson[]> {
  const { repo } = await requireRepo(deps.db, viewer, ref, READ);
  const protection = await findProtection(deps.db, repo, uuid);
  // The page's keys from protection_approvers_list_idx (index entries only), then their rows
  // with names: a deep page skips index entries, never user rows (README "Performance").
  const keys = deps.db
    .selectFrom('protection_approvers')
    .select('user_uuid')
    .where('protection_uuid', '=', protection.uuid)
    .orderBy('created_at')
    .orderBy('user_uuid')
    .offset(page.offset)
    .limit(page.limit);
  return deps.db
    .selectFrom('protection_approvers as a')
    .innerJoin('users as u', 'u.uuid', 'a.user_uuid')
    .select(['a.user_uuid', 'u.username', 'a.created_at'])
    .where('a.protection_uuid', '=', protection.uuid)
    .where('a.user_uuid', 'in', keys)
    .orderBy('a.created_at')
    .orderBy('a.user_uuid')
    .execute();
}

export async function addApprover(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  uuid: string,
  username: string,
): Promise<ApproverJson> {
  return command(deps, viewer, onRepo(ref, itemWrite(MANAGE)), async (tx) => {
    const { repo } = tx.access;
    const protection = await findProtection(tx.db, repo, uuid);
    assertNotArchived(tx.access);
    const user = await requireActiveUser(tx.db, username.trim());
    const already = () => conflict('conflict', `${user.username} is already an approver of this protection.`);
    const existing = await tx.db
      .selectFrom('protection_approvers')
      .select('user_uuid')
      .where('protection_uuid', '=', protection.uuid)
      .where('user_uuid', '=', user.uuid)
      .executeTakeFirst();
    if (existing) throw already();
    const row = { protection_uuid: protection.uuid, user_uuid: user.uuid, created_at: nowIso() };
    try {
      await tx.db.insertInto('protection_approvers').values(row).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw already();
      throw err;
    }
    await emitProtectionEvent(deps, tx, viewer, repo, 'protection-approver-added', {
      protection_uuid: protection.uuid,
      branch: protection.branch,
      user_uuid: user.uuid,
      username: user.username,
    });
    return { user_uuid: user.uuid, username: user.username, created_at: row.created_at };
  });
}

export async function removeApprover(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string, userUuid: string): Promise<void> {
  await command(deps, viewer, onRepo(ref, itemWrite(MANAGE)), async (tx) => {
    const { repo } = tx.access;
    const protection = await findProtection(tx.db, repo, uuid);
    const listed = await tx.db
      .selectFrom('protection_approvers as a')
      .innerJoin('users as u', 'u.uuid', 'a.user_uuid')
      .select(['a.user_uuid', 'u.username'])
      .where('a.protection_uuid', '=', protection.uuid)
      .where('a.user_uuid', '=', userUuid)
      .executeTakeFirst();
    if (!listed) throw notFound('Approver');
    assertNotArchived(tx.access);
    await tx.db
      .deleteFrom('protection_approvers')
      .where('protection_uuid', '=', protection.uuid)
      .where('user_uuid', '=', userUuid)
      .execute();
    await emitProtectionEvent(deps, tx, viewer, repo, 'protection-approver-removed', {
      protection_uuid: protection.uuid,
      branch: protection.branch,
      user_uuid: listed.user_uuid,
      username: listed.username,
    });
  });
}
