import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Kysely, Selectable } from 'kysely';
import { assertCanRemoveUpload, CONTRIBUTE, type RepoAccess, type RepoRef, requireRepo } from '../access/index.ts';
import { BlobTooLargeError, type StoredBlob } from '../blobs/store.ts';
import type { DB } from '../db/types.ts';
import type { UploadGroupsTable, UploadsTable } from '../db/tables/threads.ts';
import type { Deps } from '../deps.ts';
import { AppError, badRequest, notFound } from '../errors.ts';
import { actorOf, type EventKind } from '../events/service.ts';
import { command, type TxContext } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
import { repoScopes } from '../repos/view.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { FILENAME_MAX, type UploadGroupJson, type UploadJson } from './schemas.ts';

export type UploadRow = Selectable<UploadsTable>;
type GroupRow = Selectable<UploadGroupsTable>;
type PageArgs = { offset: number; limit: number };

const READ = { level: 'read' } as const;

export const payloadTooLarge = (max: number) =>
  new AppError(413, 'payload_too_large', `One upload may be at most ${max} bytes (MAX_UPLOAD_BYTES).`);
export const quotaExceeded = () =>
  new AppError(413, 'quota_exceeded', "The upload does not fit in the repo's max_disk_bytes (active uploads plus git data).");

// ---------------------------------------------------------------- names and types

/**
 * A stored filename: the part after the last `/` or `\` (no path tricks), without control
 * characters, trimmed. Empty, `.` and `..` are 400; so is a name longer than 255 characters.
 */
export function sanitizeFilename(raw: string): string {
  const base = raw.split(/[/\\]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const name = base.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '').trim();
  if (!name || name === '.' || name === '..') throw badRequest('filename must name a file (not empty, "." or "..").');
  if (name.length > FILENAME_MAX) throw badRequest(`filename must be at most ${FILENAME_MAX} characters.`);
  return name;
}

const MEDIA_TYPE = /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;\s*[\w!#$&^.+-]+=("[^"\\\r\n]*"|[\w!#$&^.+-]+))*$/;

/** The stored Content-Type: the one sent when well formed, else application/octet-stream. */
export function cleanContentType(raw: string | undefined): string {
  const value = (raw ?? '').trim();
  if (!value || value.length > 255 || !MEDIA_TYPE.test(value)) return 'application/octet-stream';
  return value.toLowerCase().startsWith('multipart/') ? 'application/octet-stream' : value;
}

// ---------------------------------------------------------------- rows to JSON

type UploadWithNames = UploadRow & { created_by_username: string };

function uploadsWithNames(db: Kysely<DB>) {
  return db
    .selectFrom('uploads as u')
    .innerJoin('users as c', 'c.uuid', 'u.created_by_uuid')
    .selectAll('u')
    .select('c.username as created_by_username');
}

export function uploadToJson(row: UploadWithNames): UploadJson {
  return {
    uuid: row.uuid,
    repo_uuid: row.repo_uuid,
    filename: row.filename,
    content_type: row.content_type,
    size_bytes: Number(row.size_bytes),
    sha256: row.sha256,
    status: row.status as 'active' | 'removed',
    group_uuid: row.group_uuid,
    created_at: row.created_at,
    created_by_username: row.created_by_username,
    removed_at: row.removed_at,
  };
}

async function loadGroupJson(db: Kysely<DB>, group: GroupRow): Promise<UploadGroupJson> {
  const creator = await db
    .selectFrom('users')
    .select('username')
    .where('uuid', '=', group.created_by_uuid)
    .executeTakeFirstOrThrow();
  const members = await uploadsWithNames(db)
    .where('u.group_uuid', '=', group.uuid)
    .where('u.status', '=', 'active')
    .orderBy('u.created_at')
    .orderBy('u.uuid')
    .execute();
  return {
    uuid: group.uuid,
    repo_uuid: group.repo_uuid,
    name: group.name,
    created_at: group.created_at,
    created_by_username: creator.username,
    uploads: members.map(uploadToJson),
  };
}

/** The upload with this uuid in the repo (removed ones included); 404 otherwise. */
export async function findUpload(db: Kysely<DB>, repoUuid: string, uuid: string): Promise<UploadRow> {
  const row = await db
    .selectFrom('uploads')
    .selectAll()
    .where('repo_uuid', '=', repoUuid)
    .where('uuid', '=', uuid)
    .executeTakeFirst();
  if (!row) throw notFound('Upload');
  return row;
}

/** A group of the repo that is not deleted; another repo's group is 404. */
export async function findGroup(db: Kysely<DB>, repoUuid: string, uuid: string): Promise<GroupRow> {
  const row = await db
    .selectFrom('upload_groups')
    .selectAll()
    .where('repo_uuid', '=', repoUuid)
    .where('uuid', '=', uuid)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
  if (!row) throw notFound('Upload group');
  return row;
}

const emitUploadEvent = (tx: TxContext, viewer: Viewer, access: RepoAccess, kind: EventKind, payload: Record<string, unknown>) =>
  tx.emit({
    kind,
    scopes: repoScopes(access.repo),
    actor: actorOf(viewer),
    payload: { repo_uuid: access.repo.uuid, ...payload },
  });

// ---------------------------------------------------------------- uploading

export interface UploadPlan {
  /** bytes one file may have before the stream is refused */
  maxBytes: number;
  /** the free quota when the plan was made (the insert re-checks it) */
  freeBytes: number;
  cap: number;
}

/** Checks access and the group before any byte is read; returns the streaming limits. */
export async function planUpload(deps: Deps, viewer: Viewer, ref: RepoRef, groupUuid: string | undefined): Promise<UploadPlan> {
  const access = await requireRepo(deps.db, viewer, ref, CONTRIBUTE);
  if (groupUuid !== undefined) await findGroup(deps.db, access.repo.uuid, groupUuid);
  const freeBytes = Math.max(0, Number(access.repo.max_disk_bytes) - Number(access.repo.disk_usage_bytes));
  const cap = deps.config.maxUploadBytes;
  return { maxBytes: Math.min(cap, freeBytes), freeBytes, cap };
}

/** Streams one file into the blob store under the plan's limits (413 beyond them). */
export async function streamToBlob(deps: Deps, content: Readable, plan: UploadPlan, usedBytes = 0): Promise<StoredBlob> {
  const free = Math.max(0, plan.freeBytes - usedBytes);
  const max = Math.min(plan.cap, free);
  try {
    return await deps.blobs.put(content, { maxBytes: max });
  } catch (err) {
    if (err instanceof BlobTooLargeError) throw plan.cap <= free ? payloadTooLarge(plan.cap) : quotaExceeded();
    throw err;
  }
}

/** Removes stored blobs that no upload row refers to (after a refused or failed upload). */
export async function discardBlobs(deps: Deps, blobs: StoredBlob[]): Promise<void> {
  for (const blob of blobs) {
    const used = await deps.db.selectFrom('uploads').select('uuid').where('sha256', '=', blob.sha256).executeTakeFirst();
    if (!used) await deps.blobs.delete(blob.sha256).catch(() => undefined);
  }
}

export interface StoredFile {
  filename: string;
  contentType: string;
  blob: StoredBlob;
}

/**
 * Writes the upload rows once every blob is complete, in one transaction: access and the group
 * re-checked, the quota taken with a conditional delta on `repos.disk_usage_bytes` (so
 * concurrent uploads cannot overshoot it). On failure the caller discards the blobs.
 */
export async function recordUploads(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  files: StoredFile[],
  groupUuid: string | undefined,
): Promise<UploadJson[]> {
  return command(deps, viewer, onRepo(ref, CONTRIBUTE), async (tx) => {
    const access = tx.access;
    if (groupUuid !== undefined) await findGroup(tx.db, access.repo.uuid, groupUuid);
    const total = files.reduce((n, f) => n + f.blob.size, 0);
    const taken = await tx.db
      .updateTable('repos')
      .set((eb) => ({ disk_usage_bytes: eb('disk_usage_bytes', '+', total) }))
      .where('uuid', '=', access.repo.uuid)
      .where((eb) => eb(eb('disk_usage_bytes', '+', total), '<=', eb.ref('max_disk_bytes')))
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) === 0) throw quotaExceeded();
    const out: UploadJson[] = [];
    const now = nowIso();
    for (const file of files) {
      const row: UploadRow = {
        uuid: randomUUID(),
        repo_uuid: access.repo.uuid,
        group_uuid: groupUuid ?? null,
        filename: file.filename,
        content_type: file.contentType,
        size_bytes: file.blob.size,
        sha256: file.blob.sha256,
        status: 'active',
        created_by_uuid: viewer.uuid,
        created_at: now,
        removed_at: null,
      };
      await tx.db.insertInto('uploads').values(row).execute();
      const json = uploadToJson({ ...row, created_by_username: viewer.username });
      await emitUploadEvent(tx, viewer, access, 'upload-created', {
        upload_uuid: row.uuid,
        filename: row.filename,
        size_bytes: row.size_bytes,
        group_uuid: row.group_uuid,
      });
      out.push(json);
    }
    return out;
  });
}

// ---------------------------------------------------------------- reading and removing

export async function listUploads(deps: Deps, viewer: Viewer, ref: RepoRef, page: PageArgs): Promise<UploadJson[]> {
  const { repo } = await requireRepo(deps.db, viewer, ref, READ);
  // The page's keys from uploads_repo_list_idx (index entries only), then their rows with names.
  const keys = deps.db
    .selectFrom('uploads')
    .select('uuid')
    .where('repo_uuid', '=', repo.uuid)
    .where('status', '=', 'active')
    .orderBy('created_at')
    .orderBy('uuid')
    .offset(page.offset)
    .limit(page.limit);
  const rows = await uploadsWithNames(deps.db).where('u.uuid', 'in', keys).orderBy('u.created_at').orderBy('u.uuid').execute();
  return rows.map(uploadToJson);
}

export async function getUpload(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<UploadJson> {
  const { repo } = await requireRepo(deps.db, viewer, ref, READ);
  const row = await findUpload(deps.db, repo.uuid, uuid);
  return uploadToJson(await uploadsWithNames(deps.db).where('u.uuid', '=', row.uuid).executeTakeFirstOrThrow());
}

/** The upload to serve; a removed one is 410. */
export async function uploadForDownload(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<UploadRow> {
  const { repo } = await requireRepo(deps.db, viewer, ref, READ);
  const row = await findUpload(deps.db, repo.uuid, uuid);
  if (row.status !== 'active') throw new AppError(410, 'gone', 'The upload was removed; its content is no longer served.');
  return row;
}

/**
 * Sets `status: removed` (the uploader or maintain level) and gives its bytes back to the quota
 * with a delta. Removing a removed upload is 204 and changes nothing. The content-addressed
 * blob is kept (another upload may share it).
 */
export async function removeUpload(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<void> {
  await command(deps, viewer, onRepo(ref, { level: 'read', write: true }), async (tx) => {
    const access = tx.access;
    const row = await findUpload(tx.db, access.repo.uuid, uuid);
    assertCanRemoveUpload(access, viewer, row.created_by_uuid);
    if (row.status !== 'active') return;
    const now = nowIso();
    const res = await tx.db
      .updateTable('uploads')
      .set({ status: 'removed', removed_at: now })
      .where('uuid', '=', row.uuid)
      .where('status', '=', 'active')
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) return;
    const size = Number(row.size_bytes);
    await tx.db
      .updateTable('repos')
      .set((eb) => ({ disk_usage_bytes: eb('disk_usage_bytes', '-', size) }))
      .where('uuid', '=', access.repo.uuid)
      .execute();
    await emitUploadEvent(tx, viewer, access, 'upload-removed', { upload_uuid: row.uuid, filename: row.filename });
  });
}

// ---------------------------------------------------------------- groups

export async function createGroup(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  name: string | null | undefined,
): Promise<UploadGroupJson> {
  return command(deps, viewer, onRepo(ref, CONTRIBUTE), async (tx) => {
    const access = tx.access;
    const row: GroupRow = {
      uuid: randomUUID(),
      repo_uuid: access.repo.uuid,
      name: name?.trim() || null,
      created_by_uuid: viewer.uuid,
      created_at: nowIso(),
      removed_at: null,
    };
    await tx.db.insertInto('upload_groups').values(row).execute();
    await emitUploadEvent(tx, viewer, access, 'upload-group-created', { group_uuid: row.uuid, name: row.name });
    return loadGroupJson(tx.db, row);
  });
}

export async function getGroup(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<UploadGroupJson> {
  const { repo } = await requireRepo(deps.db, viewer, ref, READ);
  return loadGroupJson(deps.db, await findGroup(deps.db, repo.uuid, uuid));
}

/**
 * Deletes the group record (the creator or maintain level); its uploads stay, and attachments
 * made from it are untouched. A deleted group is 404 from then on.
 */
export async function deleteGroup(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<void> {
  await command(deps, viewer, onRepo(ref, { level: 'read', write: true }), async (tx) => {
    const access = tx.access;
    const group = await findGroup(tx.db, access.repo.uuid, uuid);
    assertCanRemoveUpload(access, viewer, group.created_by_uuid);
    const res = await tx.db
      .updateTable('upload_groups')
      .set({ removed_at: nowIso() })
      .where('uuid', '=', group.uuid)
      .where('removed_at', 'is', null)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) throw notFound('Upload group');
    await emitUploadEvent(tx, viewer, access, 'upload-group-deleted', { group_uuid: group.uuid });
  });
}
