import { randomUUID } from 'node:crypto';
import { type Selectable, sql } from 'kysely';
import { assertUnrestrictedCredential, requireOwnSshKey } from '../access/index.ts';
import { command } from '../core/command.ts';
import { decide, nothing } from '../core/targets.ts';
import { isUniqueViolation } from '../db/tx.ts';
import type { SshKeysTable } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { fingerprintTaken } from './deploy-keys.ts';
import { parsePublicKey } from './parse.ts';

type KeyRow = Selectable<SshKeysTable>;

export interface SshKeyJson {
  uuid: string;
  title: string;
  key_type: string;
  fingerprint: string;
  key: string;
  created_at: string;
  last_used_at: string | null;
}

export const sshKeyToJson = (row: KeyRow): SshKeyJson => ({
  uuid: row.uuid,
  title: row.title,
  key_type: row.key_type,
  fingerprint: row.fingerprint,
  key: row.public_key,
  created_at: row.created_at,
  last_used_at: row.last_used_at,
});

const duplicate = () => conflict('conflict', 'This key is already registered (by you or another user).');

/** Registers a key for the caller: 400 malformed or weak, 409 when anyone registered the same key material. */
export async function addSshKey(deps: Deps, viewer: Viewer, input: { title: string; key: string }): Promise<SshKeyJson> {
  assertUnrestrictedCredential(viewer, 'Adding an SSH key');
  const title = input.title.trim();
  if (!title) throw badRequest('title must not be blank.');
  const parsed = parsePublicKey(input.key);
  // the caller's own namespace: no target to lock, the key's uniqueness is the index's
  return command(deps, viewer, nothing, async (tx) => {
    // a deploy key of some repo (src/sshkeys/deploy-keys.ts) has the same key material too
    if (await fingerprintTaken(tx.db, parsed.fingerprint)) throw duplicate();
    const row: KeyRow = {
      uuid: randomUUID(),
      user_uuid: viewer.uuid,
      title,
      key_type: parsed.keyType,
      public_key: parsed.publicKey,
      fingerprint: parsed.fingerprint,
      created_at: nowIso(),
      last_used_at: null,
    };
    try {
      await tx.db.insertInto('ssh_keys').values(row).execute();
    } catch (err) {
      // two registrations of one key raced: the loser hits the unique fingerprint index
      if (isUniqueViolation(err)) throw duplicate();
      throw err;
    }
    await tx.emit({
      kind: 'ssh-key-added',
      scopes: [`user:${viewer.uuid}`],
      actor: actorOf(viewer),
      payload: { key_uuid: row.uuid, title, key_type: row.key_type, fingerprint: row.fingerprint },
    });
    return sshKeyToJson(row);
  });
}

/** The caller's keys, oldest first. */
export async function listSshKeys(deps: Deps, viewer: Viewer, page: { offset: number; limit: number }): Promise<SshKeyJson[]> {
  const rows = await deps.db
    .selectFrom('ssh_keys')
    .selectAll()
    .where('user_uuid', '=', viewer.uuid)
    .orderBy('created_at')
    .orderBy('uuid')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
  return rows.map(sshKeyToJson);
}

export async function getSshKey(deps: Deps, viewer: Viewer, uuid: string): Promise<SshKeyJson> {
  return sshKeyToJson(await requireOwnSshKey(deps.db, viewer, uuid));
}

/** Deletes one of the caller's keys; the SSH server refuses it from the next command on. */
export async function deleteSshKey(deps: Deps, viewer: Viewer, uuid: string): Promise<void> {
  const target = decide((db, v: Viewer) => requireOwnSshKey(db, v, uuid, 'update'));
  await command(deps, viewer, target, async (tx) => {
    const row = tx.access;
    const deleted = await tx.db.deleteFrom('ssh_keys').where('uuid', '=', uuid).executeTakeFirst();
    if (Number(deleted.numDeletedRows) === 0) throw notFound('SSH key');
    await tx.emit({
      kind: 'ssh-key-deleted',
      scopes: [`user:${viewer.uuid}`],
      actor: actorOf(viewer),
      payload: { key_uuid: row.uuid, title: row.title, key_type: row.key_type, fingerprint: row.fingerprint },
    });
  });
}

/** A registered key with its user, as the SSH server authenticates it. */
export interface KeyOwner {
  keyUuid: string;
  publicKey: string;
  lastUsedAt: string | null;
  viewer: Viewer;
}

/**
 * The key with this fingerprint and its user, or null when no such key is registered or its user
 * is deactivated (their keys stop working as their tokens do). The SSH server asks at sign-in and
 * again before every command, so a deleted key or a deactivated user is refused at once.
 */
export async function keyOwner(deps: Deps, by: { fingerprint: string } | { keyUuid: string }): Promise<KeyOwner | null> {
  let q = deps.db
    .selectFrom('ssh_keys as k')
    .innerJoin('users as u', 'u.uuid', 'k.user_uuid')
    .select(['k.uuid', 'k.public_key', 'k.last_used_at', 'u.uuid as user_uuid', 'u.username', 'u.is_staff', 'u.is_active'])
    .select([
      'u.has_two_factor',
      sql<number>`(select ss.require_two_factor from site_settings ss where ss.id = 1)`.as('site_two_factor'),
    ]);
  q = 'fingerprint' in by ? q.where('k.fingerprint', '=', by.fingerprint) : q.where('k.uuid', '=', by.keyUuid);
  const row = await q.executeTakeFirst();
  if (!row || row.is_active !== 1) return null;
  return {
    keyUuid: row.uuid,
    publicKey: row.public_key,
    lastUsedAt: row.last_used_at,
    // an SSH key carries its user's full access, as a session cookie does (no token scopes)
    viewer: {
      uuid: row.user_uuid,
      username: row.username,
      isStaff: row.is_staff === 1,
      tokenUuid: '',
      twoFactor: Number(row.has_two_factor) === 1,
      siteRequiresTwoFactor: Number(row.site_two_factor) === 1,
    },
  };
}

/** last_used_at of a key, kept to the minute (at most one write a minute per key). */
export async function touchSshKey(deps: Deps, owner: KeyOwner): Promise<void> {
  const now = Date.now();
  if (owner.lastUsedAt !== null && now - Date.parse(owner.lastUsedAt) < 60_000) return;
  await deps.db
    .updateTable('ssh_keys')
    .set({ last_used_at: new Date(now).toISOString() })
    .where('uuid', '=', owner.keyUuid)
    .execute();
}
