/**
 * Git LFS (docs/lfs.md): the batch API's decisions, object upload (size and SHA-256 checked while
 * the bytes stream to the blob store), download, verify, and file locks. An object's bytes live
 * once in the blob store under its oid (its SHA-256); `lfs_objects` says which repos hold it, and
 * each repo holding it counts its size once in `disk_usage_bytes` (quota). Forks get their
 * source's rows when made (`copyLfsForFork`).
 */
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Kysely, Transaction } from 'kysely';
import { type GitAccess, gitRefusal, gitRepoAccess, gitScopeRefusal, levelAtLeast } from '../access/index.ts';
import { BlobTooLargeError } from '../blobs/store.ts';
import { holdBlob, releaseBlobs } from '../blobs/lifetime.ts';
import type { DB } from '../db/types.ts';
import { isUniqueViolation, withTransaction } from '../db/tx.ts';
import type { Deps } from '../deps.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { OID_RE } from './pointer.ts';
import { type LfsGrant, readLfsToken } from './token.ts';

/** An LFS refusal: git-lfs prints `message`. */
export class LfsError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export interface LfsAccess extends GitAccess {
  viewer: Viewer | null;
  kind: 'team' | 'user';
  owner: string;
}

/**
 * Who is asking and what they may do at a clone URL: the signed LFS token (`X-Weft-LFS-Token`,
 * from `git-lfs-authenticate` or a batch action) when sent, else the request's API token or
 * nothing (anonymous reads of public repos), decided as git over HTTP decides (`gitRefusal`).
 */
export async function lfsAccess(
  deps: Deps,
  requestViewer: Viewer | null,
  lfsToken: string | undefined,
  at: { kind: 'team' | 'user'; owner: string; repo: string },
  write: boolean,
): Promise<LfsAccess> {
  const slug = at.repo.endsWith('.git') ? at.repo.slice(0, -4) : at.repo;
  let viewer = requestViewer;
  let grant: LfsGrant | null = null;
  if (lfsToken !== undefined) {
    grant = readLfsToken(deps.secret, lfsToken);
    if (!grant) throw new LfsError(401, 'The LFS token is invalid or expired: run the command again.', challenge());
    const user = await deps.db
      .selectFrom('users')
      .select(['uuid', 'username', 'is_staff', 'is_active'])
      .where('uuid', '=', grant.user)
      .executeTakeFirst();
    if (!user || user.is_active !== 1) throw new LfsError(401, 'The LFS token is no longer valid.', challenge());
    viewer = { uuid: user.uuid, username: user.username, isStaff: user.is_staff === 1, tokenUuid: '' };
  } else {
    const scoped = gitScopeRefusal(viewer, write);
    if (scoped) throw new LfsError(scoped.status, scoped.detail, scoped.headers ?? {});
  }
  let access = await gitRepoAccess(deps.db, viewer, at.kind, at.owner, slug);
  if (access && grant) {
    // the token reaches its own repo only, and no further than it says
    const level = access.repo.uuid !== grant.repo ? 'none' : levelAtLeast(access.level, grant.level) ? grant.level : access.level;
    access = { ...access, level };
  }
  const refusal = gitRefusal(viewer, access, write);
  if (refusal) {
    throw new LfsError(
      refusal.status,
      refusal.detail,
      refusal.status === 401 ? { ...challenge(), ...(refusal.headers ?? {}) } : (refusal.headers ?? {}),
    );
  }
  return { ...access!, viewer, kind: at.kind, owner: at.owner };
}

const challenge = () => ({ 'lfs-authenticate': 'Basic realm="weft"', 'www-authenticate': 'Basic realm="weft"' });

// ---------------------------------------------------------------- objects

export interface BatchObject {
  oid: string;
  size: number;
}

export interface BatchRequest {
  operation: 'upload' | 'download';
  transfers?: string[];
  objects: BatchObject[];
  hash_algo?: string;
}

/** At most this many objects in one batch (git-lfs sends 100). */
export const MAX_BATCH_OBJECTS = 1000;

/** Checks a batch body's shape; a bad one is 422 as the LFS API says. */
export function parseBatch(body: unknown): BatchRequest {
  const b = body as Partial<BatchRequest> | null;
  if (!b || typeof b !== 'object') throw new LfsError(422, 'The batch request is not a JSON object.');
  if (b.operation !== 'upload' && b.operation !== 'download')
    throw new LfsError(422, 'operation must be "upload" or "download".');
  if (b.transfers !== undefined && (!Array.isArray(b.transfers) || !b.transfers.includes('basic')))
    throw new LfsError(422, 'Only the basic transfer is served.');
  if (b.hash_algo !== undefined && b.hash_algo !== 'sha256') throw new LfsError(409, 'Only the sha256 hash algorithm is served.');
  if (!Array.isArray(b.objects) || b.objects.length > MAX_BATCH_OBJECTS)
    throw new LfsError(422, `objects must be a list of at most ${MAX_BATCH_OBJECTS} objects.`);
  for (const o of b.objects) {
    if (!o || typeof o !== 'object' || typeof o.oid !== 'string' || !Number.isSafeInteger(o.size) || o.size < 0)
      throw new LfsError(422, 'Each object needs an oid and a size.');
  }
  return b as BatchRequest;
}

const toBytes = (v: number | string | bigint) => Number(v);

async function heldOids(db: Kysely<DB>, repoUuid: string, oids: string[]): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const valid = oids.filter((o) => OID_RE.test(o));
  for (let i = 0; i < valid.length; i += 500) {
    const rows = await db
      .selectFrom('lfs_objects')
      .select(['oid', 'size'])
      .where('repo_uuid', '=', repoUuid)
      .where('oid', 'in', valid.slice(i, i + 500))
      .execute();
    for (const r of rows) found.set(r.oid, toBytes(r.size));
  }
  return found;
}

export interface BatchAnswer {
  transfer: 'basic';
  hash_algo: 'sha256';
  objects: Array<Record<string, unknown>>;
}

/**
 * POST …/info/lfs/objects/batch: for a download, an action for each object the repo holds (404
 * for the others); for an upload, nothing for objects it already holds, else an upload and a
 * verify action, or 413 for an object larger than the quota leaves.
 */
export async function batch(
  deps: Deps,
  access: LfsAccess,
  req: BatchRequest,
  href: (oid: string) => string,
  header: Record<string, string>,
  expiresIn: number,
): Promise<BatchAnswer> {
  const held = await heldOids(
    deps.db,
    access.repo.uuid,
    req.objects.map((o) => o.oid),
  );
  let left = await quotaLeft(deps.db, access.repo.uuid);
  const objects = req.objects.map((o) => {
    const base = { oid: o.oid, size: o.size };
    if (!OID_RE.test(o.oid)) return { ...base, error: { code: 422, message: 'The oid is not a SHA-256 in hex.' } };
    const size = held.get(o.oid);
    const action = (suffix = '') => ({ href: href(o.oid) + suffix, header, expires_in: expiresIn });
    if (req.operation === 'download') {
      if (size === undefined) return { ...base, error: { code: 404, message: 'The object does not exist in this repo.' } };
      return { oid: o.oid, size, authenticated: true, actions: { download: action() } };
    }
    if (size !== undefined) return { ...base, authenticated: true };
    if (o.size > left)
      return {
        ...base,
        error: { code: 413, message: `The object (${o.size} bytes) is larger than the ${left} bytes the repo quota leaves.` },
      };
    left -= o.size;
    return { ...base, authenticated: true, actions: { upload: action(), verify: action('/verify') } };
  });
  return { transfer: 'basic', hash_algo: 'sha256', objects };
}

async function quotaLeft(db: Kysely<DB>, repoUuid: string): Promise<number> {
  const r = await db
    .selectFrom('repos')
    .select(['disk_usage_bytes', 'max_disk_bytes'])
    .where('uuid', '=', repoUuid)
    .executeTakeFirstOrThrow();
  return Math.max(0, toBytes(r.max_disk_bytes) - toBytes(r.disk_usage_bytes));
}

/**
 * PUT …/info/lfs/objects/{oid}: streams the body to the blob store, refusing it (and keeping
 * nothing) when it is larger than the declared size or the quota left, or when its size or
 * SHA-256 is not the one named; then records the object for the repo and takes its size from the
 * quota, in one transaction.
 */
export async function uploadObject(
  deps: Deps,
  access: LfsAccess,
  oid: string,
  declaredSize: number | null,
  body: Readable,
): Promise<void> {
  if (!OID_RE.test(oid)) throw new LfsError(422, 'The oid is not a SHA-256 in hex.');
  const repoUuid = access.repo.uuid;
  const already = await deps.db
    .selectFrom('lfs_objects')
    .select('oid')
    .where('repo_uuid', '=', repoUuid)
    .where('oid', '=', oid)
    .executeTakeFirst();
  if (already) {
    body.resume();
    return;
  }
  const left = await quotaLeft(deps.db, repoUuid);
  if (declaredSize !== null && declaredSize > left)
    throw new LfsError(413, `The object (${declaredSize} bytes) is larger than the ${left} bytes the repo quota leaves.`);
  const max = declaredSize === null ? left : Math.min(declaredSize, left);
  let hold = '';
  let stored: { sha256: string; size: number };
  try {
    stored = await deps.blobs.put(body, {
      maxBytes: max,
      beforePublish: async (sha256) => {
        // refused before the bytes are published: a wrong hash never reaches the store
        if (sha256 !== oid) throw new LfsError(422, `The content's SHA-256 is ${sha256}, not the oid ${oid}.`);
        hold = await holdBlob(deps, sha256);
      },
    });
  } catch (err) {
    if (err instanceof BlobTooLargeError)
      throw declaredSize !== null && max === declaredSize
        ? new LfsError(422, `The content is larger than the ${declaredSize} bytes declared.`)
        : new LfsError(413, `The object is larger than the ${left} bytes the repo quota leaves.`);
    throw err;
  }
  try {
    if (declaredSize !== null && stored.size !== declaredSize)
      throw new LfsError(422, `The content has ${stored.size} bytes, not the ${declaredSize} declared.`);
    await withTransaction(deps.db, async ({ trx }) => {
      const inserted = await insertObject(trx, repoUuid, oid, stored.size);
      if (inserted) {
        const taken = await trx
          .updateTable('repos')
          .set((eb) => ({ disk_usage_bytes: eb('disk_usage_bytes', '+', stored.size) }))
          .where('uuid', '=', repoUuid)
          .where((eb) => eb(eb('disk_usage_bytes', '+', stored.size), '<=', eb.ref('max_disk_bytes')))
          .executeTakeFirst();
        if (Number(taken.numUpdatedRows) === 0) throw new LfsError(413, 'The object is larger than the repo quota leaves.');
      }
      await trx.deleteFrom('blob_holds').where('id', '=', hold).execute();
    });
  } catch (err) {
    await releaseBlobs(deps, [{ sha256: stored.sha256, hold }]);
    throw err;
  }
}

/** Inserts the repo's row for an object; false when it was there already (a concurrent upload of the same object). */
async function insertObject(trx: Transaction<DB>, repoUuid: string, oid: string, size: number): Promise<boolean> {
  const exists = await trx
    .selectFrom('lfs_objects')
    .select('oid')
    .where('repo_uuid', '=', repoUuid)
    .where('oid', '=', oid)
    .executeTakeFirst();
  if (exists) return false;
  try {
    await trx.insertInto('lfs_objects').values({ repo_uuid: repoUuid, oid, size, created_at: nowIso() }).execute();
  } catch (err) {
    if (isUniqueViolation(err)) return false;
    throw err;
  }
  return true;
}

/** The size of an object the repo holds, or null. */
export async function heldObject(db: Kysely<DB>, repoUuid: string, oid: string): Promise<number | null> {
  if (!OID_RE.test(oid)) return null;
  const row = await db
    .selectFrom('lfs_objects')
    .select('size')
    .where('repo_uuid', '=', repoUuid)
    .where('oid', '=', oid)
    .executeTakeFirst();
  return row ? toBytes(row.size) : null;
}

/** POST …/objects/{oid}/verify: 200 when the repo holds the object with that size, else 404 / 422. */
export async function verifyObject(deps: Deps, access: LfsAccess, body: unknown): Promise<void> {
  const b = body as { oid?: unknown; size?: unknown } | null;
  if (!b || typeof b.oid !== 'string' || typeof b.size !== 'number') throw new LfsError(422, 'verify needs an oid and a size.');
  const size = await heldObject(deps.db, access.repo.uuid, b.oid);
  if (size === null) throw new LfsError(404, 'The object was not uploaded.');
  if (size !== b.size) throw new LfsError(422, `The object has ${size} bytes, not ${b.size}.`);
}

/**
 * A fork starts with every object of its source (the bytes are shared in the blob store), their
 * sizes added to its usage once: called in the fork's creating transaction.
 */
export async function copyLfsForFork(trx: Kysely<DB>, sourceUuid: string, forkUuid: string): Promise<void> {
  const rows = await trx.selectFrom('lfs_objects').select(['oid', 'size']).where('repo_uuid', '=', sourceUuid).execute();
  if (rows.length === 0) return;
  const now = nowIso();
  let total = 0;
  for (let i = 0; i < rows.length; i += 200) {
    const part = rows.slice(i, i + 200);
    await trx
      .insertInto('lfs_objects')
      .values(part.map((r) => ({ repo_uuid: forkUuid, oid: r.oid, size: toBytes(r.size), created_at: now })))
      .execute();
    total += part.reduce((n, r) => n + toBytes(r.size), 0);
  }
  await trx
    .updateTable('repos')
    .set((eb) => ({ disk_usage_bytes: eb('disk_usage_bytes', '+', total) }))
    .where('uuid', '=', forkUuid)
    .execute();
}

// ---------------------------------------------------------------- locks

export interface LockJson {
  id: string;
  path: string;
  locked_at: string;
  owner: { name: string };
}

async function lockRows(db: Kysely<DB>, repoUuid: string) {
  return db
    .selectFrom('lfs_locks as l')
    .innerJoin('users as u', 'u.uuid', 'l.owner_uuid')
    .select(['l.uuid', 'l.path', 'l.locked_at', 'l.owner_uuid', 'u.username'])
    .where('l.repo_uuid', '=', repoUuid)
    .orderBy('l.path')
    .orderBy('l.uuid');
}

const lockJson = (r: { uuid: string; path: string; locked_at: string; username: string }): LockJson => ({
  id: r.uuid,
  path: r.path,
  locked_at: r.locked_at,
  owner: { name: r.username },
});

function requireUser(access: LfsAccess): Viewer {
  if (!access.viewer) throw new LfsError(401, 'Locks need credentials.', challenge());
  return access.viewer;
}

/** POST …/locks: locks a path (write access); 409 with the existing lock when it is taken. */
export async function createLock(deps: Deps, access: LfsAccess, body: unknown): Promise<LockJson> {
  const viewer = requireUser(access);
  const path = (body as { path?: unknown } | null)?.path;
  if (typeof path !== 'string' || path === '' || path.length > 4096 || path.includes('\0'))
    throw new LfsError(422, 'path must name a file.');
  const row = { uuid: randomUUID(), repo_uuid: access.repo.uuid, path, owner_uuid: viewer.uuid, locked_at: nowIso() };
  try {
    await deps.db.insertInto('lfs_locks').values(row).execute();
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    const held = await (await lockRows(deps.db, access.repo.uuid)).where('l.path', '=', path).executeTakeFirst();
    throw new LfsError(409, 'The path is already locked.', {}, held ? { lock: lockJson(held) } : {});
  }
  return lockJson({ ...row, username: viewer.username });
}

/** GET …/locks?path=&id=&cursor=&limit=: the repo's locks by path (read access). */
export async function listLocks(
  deps: Deps,
  access: LfsAccess,
  q: { path?: string; id?: string; cursor?: string; limit?: string },
): Promise<{ locks: LockJson[]; next_cursor?: string }> {
  const limit = Math.min(Math.max(Number(q.limit) || 100, 1), 1000);
  let query = await lockRows(deps.db, access.repo.uuid);
  if (q.path) query = query.where('l.path', '=', q.path);
  if (q.id) query = query.where('l.uuid', '=', q.id);
  if (q.cursor) query = query.where('l.path', '>=', q.cursor);
  const rows = await query.limit(limit + 1).execute();
  const out: { locks: LockJson[]; next_cursor?: string } = { locks: rows.slice(0, limit).map(lockJson) };
  if (rows.length > limit) out.next_cursor = rows[limit]!.path;
  return out;
}

/** POST …/locks/verify: the repo's locks split into the caller's and the others' (write access). */
export async function verifyLocks(
  deps: Deps,
  access: LfsAccess,
  body: unknown,
): Promise<{ ours: LockJson[]; theirs: LockJson[]; next_cursor?: string }> {
  const viewer = requireUser(access);
  const b = (body ?? {}) as { cursor?: unknown; limit?: unknown };
  const limit = Math.min(Math.max(Number(b.limit) || 100, 1), 1000);
  let query = await lockRows(deps.db, access.repo.uuid);
  if (typeof b.cursor === 'string' && b.cursor) query = query.where('l.path', '>=', b.cursor);
  const rows = await query.limit(limit + 1).execute();
  const page = rows.slice(0, limit);
  const out: { ours: LockJson[]; theirs: LockJson[]; next_cursor?: string } = {
    ours: page.filter((r) => r.owner_uuid === viewer.uuid).map(lockJson),
    theirs: page.filter((r) => r.owner_uuid !== viewer.uuid).map(lockJson),
  };
  if (rows.length > limit) out.next_cursor = rows[limit]!.path;
  return out;
}

/** POST …/locks/{id}/unlock: the lock's owner, or with `force` maintain access, removes it. */
export async function unlock(deps: Deps, access: LfsAccess, id: string, body: unknown): Promise<LockJson> {
  const viewer = requireUser(access);
  const force = (body as { force?: unknown } | null)?.force === true;
  const row = await (await lockRows(deps.db, access.repo.uuid)).where('l.uuid', '=', id).executeTakeFirst();
  if (!row) throw new LfsError(404, 'No such lock.');
  if (row.owner_uuid !== viewer.uuid) {
    if (!force) throw new LfsError(403, `The lock belongs to ${row.username}: unlock with --force (maintain access).`);
    if (!levelAtLeast(access.level, 'maintain')) throw new LfsError(403, "Removing another user's lock needs maintain access.");
  }
  await deps.db.deleteFrom('lfs_locks').where('uuid', '=', id).execute();
  return lockJson(row);
}
