import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { assertNotArchived, itemWrite, type RepoRef, type RepoRow, requireRepo } from '../access/index.ts';
import { command, type TxContext } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
import { isUniqueViolation } from '../db/tx.ts';
import type { DB, DeployKeysTable } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { repoScopes } from '../repos/view.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { parsePublicKey } from './parse.ts';

/**
 * Deploy keys (README "Deploy keys"): an SSH key a repo's maintainers add to that repo alone. Git
 * over SSH with it reaches that repo and no other, fetch only unless `read_only` is false; a push
 * with it is recorded as made by the maintainer who added the key. One key material is either a
 * user's key or one repo's deploy key, never both (409 conflict).
 */
type DeployKeyRow = Selectable<DeployKeysTable>;

export interface DeployKeyJson {
  uuid: string;
  title: string;
  key_type: string;
  fingerprint: string;
  key: string;
  read_only: boolean;
  created_at: string;
  created_by_username: string;
  last_used_at: string | null;
}

const MANAGE = { level: 'maintain', write: true } as const;

const toJson = (row: DeployKeyRow, createdBy: string): DeployKeyJson => ({
  uuid: row.uuid,
  title: row.title,
  key_type: row.key_type,
  fingerprint: row.fingerprint,
  key: row.public_key,
  read_only: row.read_only === 1,
  created_at: row.created_at,
  created_by_username: createdBy,
  last_used_at: row.last_used_at,
});

const duplicate = () => conflict('conflict', 'This key is already registered (as a user key or as a deploy key of a repo).');

/** Whether a user key or a deploy key already has this key material. */
export async function fingerprintTaken(db: Kysely<DB>, fingerprint: string): Promise<boolean> {
  const user = await db.selectFrom('ssh_keys').select('uuid').where('fingerprint', '=', fingerprint).executeTakeFirst();
  if (user) return true;
  const deploy = await db.selectFrom('deploy_keys').select('uuid').where('fingerprint', '=', fingerprint).executeTakeFirst();
  return deploy !== undefined;
}

function emitKeyEvent(
  tx: Pick<TxContext, 'emit'>,
  kind: 'deploy-key-added' | 'deploy-key-deleted',
  viewer: Viewer,
  repo: RepoRow,
  row: DeployKeyRow,
) {
  return tx.emit({
    kind,
    scopes: repoScopes(repo),
    actor: actorOf(viewer),
    payload: {
      repo_uuid: repo.uuid,
      key_uuid: row.uuid,
      title: row.title,
      key_type: row.key_type,
      fingerprint: row.fingerprint,
      read_only: row.read_only === 1,
    },
  });
}

/** POST {repo}/keys: maintain level; 400 malformed or weak key, 409 when the key material is registered anywhere. */
export async function addDeployKey(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  input: { title: string; key: string; read_only?: boolean },
): Promise<DeployKeyJson> {
  const title = input.title.trim();
  if (!title) throw badRequest('title must not be blank.');
  const parsed = parsePublicKey(input.key);
  return command(deps, viewer, onRepo(ref, MANAGE), async (tx) => {
    const { repo } = tx.access;
    if (await fingerprintTaken(tx.db, parsed.fingerprint)) throw duplicate();
    const row: DeployKeyRow = {
      uuid: randomUUID(),
      repo_uuid: repo.uuid,
      title,
      key_type: parsed.keyType,
      public_key: parsed.publicKey,
      fingerprint: parsed.fingerprint,
      read_only: input.read_only === false ? 0 : 1,
      created_by_uuid: viewer.uuid,
      created_at: nowIso(),
      last_used_at: null,
    };
    try {
      await tx.db.insertInto('deploy_keys').values(row).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw duplicate();
      throw err;
    }
    await emitKeyEvent(tx, 'deploy-key-added', viewer, repo, row);
    return toJson(row, viewer.username);
  });
}

/** GET {repo}/keys: maintain level; oldest first. */
export async function listDeployKeys(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  page: { offset: number; limit: number },
): Promise<DeployKeyJson[]> {
  const { repo } = await requireRepo(deps.db, viewer, ref, { level: 'maintain' });
  const rows = await deps.db
    .selectFrom('deploy_keys as k')
    .innerJoin('users as u', 'u.uuid', 'k.created_by_uuid')
    .selectAll('k')
    .select('u.username as created_by_username')
    .where('k.repo_uuid', '=', repo.uuid)
    .orderBy('k.created_at')
    .orderBy('k.uuid')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
  return rows.map((r) => toJson(r, r.created_by_username));
}

async function findKey(db: Kysely<DB>, repoUuid: string, uuid: string) {
  const row = await db
    .selectFrom('deploy_keys as k')
    .innerJoin('users as u', 'u.uuid', 'k.created_by_uuid')
    .selectAll('k')
    .select('u.username as created_by_username')
    .where('k.repo_uuid', '=', repoUuid)
    .where('k.uuid', '=', uuid)
    .executeTakeFirst();
  if (!row) throw notFound('Deploy key');
  return row;
}

/** GET {repo}/keys/{uuid}: maintain level. */
export async function getDeployKey(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<DeployKeyJson> {
  const { repo } = await requireRepo(deps.db, viewer, ref, { level: 'maintain' });
  const row = await findKey(deps.db, repo.uuid, uuid);
  return toJson(row, row.created_by_username);
}

/** DELETE {repo}/keys/{uuid}: maintain level; the SSH server refuses the key from its next command on. */
export async function deleteDeployKey(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<void> {
  await command(deps, viewer, onRepo(ref, itemWrite(MANAGE)), async (tx) => {
    const { repo } = tx.access;
    const row = await findKey(tx.db, repo.uuid, uuid);
    assertNotArchived(tx.access);
    const deleted = await tx.db.deleteFrom('deploy_keys').where('uuid', '=', uuid).executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) throw notFound('Deploy key');
    await emitKeyEvent(tx, 'deploy-key-deleted', viewer, repo, row);
  });
}

/** A deploy key as the SSH server authenticates it: its repo, whether it may push, and who added it. */
export interface DeployKeyGrant {
  keyUuid: string;
  publicKey: string;
  lastUsedAt: string | null;
  repoUuid: string;
  readOnly: boolean;
  /** the maintainer who added the key: pushes are recorded as theirs */
  viewer: Viewer;
}

/** The deploy key with this fingerprint (or uuid), or null. */
export async function deployKeyGrant(
  deps: Deps,
  by: { fingerprint: string } | { keyUuid: string },
): Promise<DeployKeyGrant | null> {
  let q = deps.db
    .selectFrom('deploy_keys as k')
    .innerJoin('users as u', 'u.uuid', 'k.created_by_uuid')
    .select(['k.uuid', 'k.public_key', 'k.last_used_at', 'k.repo_uuid', 'k.read_only', 'u.uuid as user_uuid', 'u.username']);
  q = 'fingerprint' in by ? q.where('k.fingerprint', '=', by.fingerprint) : q.where('k.uuid', '=', by.keyUuid);
  const row = await q.executeTakeFirst();
  if (!row) return null;
  return {
    keyUuid: row.uuid,
    publicKey: row.public_key,
    lastUsedAt: row.last_used_at,
    repoUuid: row.repo_uuid,
    readOnly: row.read_only === 1,
    viewer: { uuid: row.user_uuid, username: row.username, isStaff: false, tokenUuid: '', repos: [row.repo_uuid] },
  };
}

/** last_used_at of a deploy key, kept to the minute. */
export async function touchDeployKey(deps: Deps, grant: DeployKeyGrant): Promise<void> {
  const now = Date.now();
  if (grant.lastUsedAt !== null && now - Date.parse(grant.lastUsedAt) < 60_000) return;
  await deps.db
    .updateTable('deploy_keys')
    .set({ last_used_at: new Date(now).toISOString() })
    .where('uuid', '=', grant.keyUuid)
    .execute();
}
