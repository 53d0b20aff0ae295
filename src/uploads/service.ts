import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Kysely, Selectable } from 'kysely';
import {
  assertCanRemoveUpload,
  assertNotArchived,
  CONTRIBUTE,
  itemWrite,
  type RepoAccess,
  type RepoRef,
  requireRepo,
} from '../access/index.ts';
import { holdBlob, releaseBlobs } from '../blobs/lifetime.ts';
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

/** Bidirectional embedding, override and isolate controls: they make a name display as another. */
const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/;

/**
 * A stored filename: the part after the last `/` or `\` (no path tricks), without control
 * characters, trimmed. Empty, `.` and `..` are 400; so is a name longer than 255 characters, and
 * one with a bidirectional control character (U+202A–U+202E, U+2066–U+2069: `invoice\u202Efdp.exe`
 * would display as `invoiceexe.pdf`).
 */
export function sanitizeFilename(raw: string): string {
  if (BIDI_CONTROLS.test(raw)) {
    throw badRequest('filename must not contain bidirectional control characters (U+202A-U+202E, U+2066-U+2069).');
  }
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

/** A stored blob and the hold that keeps it until its upload row commits or is refused. */
export type HeldBlob = StoredBlob & { hold: string };

/**
 * Streams one file into the blob store under the plan's limits (413 beyond them). A hold on the
 * content is committed before its bytes are published (src/blobs/lifetime.ts): the caller ends
 * it by recording the upload or with `discardBlobs`.
 */
export async function streamToBlob(deps: Deps, content: Readable, plan: UploadPlan, usedBytes = 0): Promise<HeldBlob> {
  const free = Math.max(0, plan.freeBytes - usedBytes);
  const max = Math.min(plan.cap, free);
  let hold = '';
  try {
    const blob = await deps.blobs.put(content, {
      maxBytes: max,
      beforePublish: async (sha256) => {
        hold = await holdBlob(deps, sha256);
      },
    });
    return { ...blob, hold };
  } catch (err) {
    if (err instanceof BlobTooLargeError) throw plan.cap <= free ? payloadTooLarge(plan.cap) : quotaExceeded();
    throw err;
  }
}

/** Streams the request's files to the blob store under `plan`, handing each stored blob to `keep`. */
export type UploadReceiver = (plan: UploadPlan, keep: (blob: HeldBlob) => HeldBlob) => Promise<StoredFile[]>;

/**
 * POST {repo}/uploads, the whole flow: access and the group checked before any byte is read
 * (`planUpload`), the files streamed by `receive`, then the rows written by one command
 * (`recordUploads`: access decided again on locked rows, the quota taken). On any failure the
 * blobs this request stored are discarded (`discardBlobs`).
 */
export async function uploadFiles(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  groupUuid: string | undefined,
  receive: UploadReceiver,
): Promise<UploadJson[]> {
  const plan = await planUpload(deps, viewer, ref, groupUuid);
  const stored: HeldBlob[] = [];
  try {
    const files = await receive(plan, (blob) => {
      stored.push(blob);
      return blob;
    });
    return await recordUploads(deps, viewer, ref, files, groupUuid);
  } catch (err) {
    await discardBlobs(deps, stored);
    throw err;
  }
}

/**
 * After a refused or failed upload: drops its holds and deletes each blob nothing else references
 * (an identical upload in progress holds its own, so its bytes stay).
 */
export async function discardBlobs(deps: Deps, blobs: HeldBlob[]): Promise<void> {
  await releaseBlobs(deps, blobs);
}

export interface StoredFile {
  filename: string;
  contentType: string;
  blob: HeldBlob;
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
    // The rows reference the blobs now: their holds end in the same transaction.
    await tx.db
      .deleteFrom('blob_holds')
      .where(
        'id',
        'in',
        files.map((f) => f.blob.hold),
      )
      .execute();
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
 * with a delta. Removing a removed upload is 204 and changes nothing. Once that commits, the
 * content-addressed blob is deleted unless another active upload (or one in progress) shares it.
 */
export async function removeUpload(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<void> {
  const sha256 = await command(deps, viewer, onRepo(ref, itemWrite({ level: 'read', write: true })), async (tx) => {
    const access = tx.access;
    const row = await findUpload(tx.db, access.repo.uuid, uuid);
    assertCanRemoveUpload(access, viewer, row.created_by_uuid);
    assertNotArchived(access);
    if (row.status !== 'active') return null;
    const now = nowIso();
    const res = await tx.db
      .updateTable('uploads')
      .set({ status: 'removed', removed_at: now })
      .where('uuid', '=', row.uuid)
      .where('status', '=', 'active')
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) return null;
    const size = Number(row.size_bytes);
    await tx.db
      .updateTable('repos')
      .set((eb) => ({ disk_usage_bytes: eb('disk_usage_bytes', '-', size) }))
      .where('uuid', '=', access.repo.uuid)
      .execute();
    await emitUploadEvent(tx, viewer, access, 'upload-removed', { upload_uuid: row.uuid, filename: row.filename });
    return row.sha256;
  });
  if (sha256) await releaseBlobs(deps, [{ sha256 }]);
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
  await command(deps, viewer, onRepo(ref, itemWrite({ level: 'read', write: true })), async (tx) => {
    const access = tx.access;
    const group = await findGroup(tx.db, access.repo.uuid, uuid);
    assertCanRemoveUpload(access, viewer, group.created_by_uuid);
    assertNotArchived(access);
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
