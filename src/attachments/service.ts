import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { assertCanAttach, assertCanDetach, type RepoAccess, type RepoRef, repoContextOf } from '../access/index.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { command, type TxContext } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
import { findPull } from '../pulls/service.ts';
import { repoScopes } from '../repos/view.ts';
import { findReply, findThread, readOnly } from '../threads/service.ts';
import { nowIso } from '../time.ts';
import { findGroup, findUpload, uploadToJson } from '../uploads/service.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import type { AttachInput, AttachmentJson, GroupAttachmentJson, TargetKind } from './schemas.ts';

/** Where an attach path points: `number` is the thread or pull number. */
export type TargetRef =
  | { kind: 'thread'; number: number }
  | { kind: 'reply'; number: number; replyNumber: number }
  | { kind: 'pull'; number: number }
  | { kind: 'review'; number: number; reviewUuid: string };

interface Target {
  kind: TargetKind;
  uuid: string;
  /** the event scopes beyond the repo's */
  scopes: string[];
  /** why it refuses new attachments (409 target_read_only), or null */
  readOnly: Error | null;
}

const READ = { level: 'read' } as const;
type PageArgs = { offset: number; limit: number };

/**
 * Resolves the target (404 when missing). Read-only (docs/behaviour.md "Threads, replies, uploads and attachments"): a
 * removed thread, reply (or its thread) or review, and a merged pull (and its reviews); a closed
 * pull still accepts attachments.
 */
async function resolveTarget(db: Kysely<DB>, repoUuid: string, ref: TargetRef): Promise<Target> {
  if (ref.kind === 'thread' || ref.kind === 'reply') {
    const thread = await findThread(db, repoUuid, ref.number);
    if (ref.kind === 'thread') {
      return {
        kind: 'thread',
        uuid: thread.uuid,
        scopes: [`thread:${thread.uuid}`],
        readOnly: thread.removed_at ? readOnly('thread') : null,
      };
    }
    const reply = await findReply(db, thread.uuid, ref.replyNumber);
    return {
      kind: 'reply',
      uuid: reply.uuid,
      scopes: [`thread:${thread.uuid}`, `reply:${reply.uuid}`],
      readOnly: thread.removed_at ? readOnly('thread') : reply.removed_at ? readOnly('reply') : null,
    };
  }
  const pull = await findPull(db, repoUuid, ref.number);
  const merged = pull.status === 'merged' ? conflict('target_read_only', 'The pull is merged and read-only.') : null;
  if (ref.kind === 'pull') return { kind: 'pull', uuid: pull.uuid, scopes: [`pull:${pull.uuid}`], readOnly: merged };
  const review = await db
    .selectFrom('reviews')
    .selectAll()
    .where('pull_uuid', '=', pull.uuid)
    .where('uuid', '=', ref.reviewUuid)
    .executeTakeFirst();
  if (!review) throw notFound('Review');
  return {
    kind: 'review',
    uuid: review.uuid,
    scopes: [`pull:${pull.uuid}`, `review:${review.uuid}`],
    readOnly: review.removed_at ? readOnly('review') : merged,
  };
}

function attachmentsWithUploads(db: Kysely<DB>) {
  return db
    .selectFrom('attachments as a')
    .innerJoin('users as c', 'c.uuid', 'a.created_by_uuid')
    .innerJoin('uploads as u', 'u.uuid', 'a.upload_uuid')
    .innerJoin('users as uc', 'uc.uuid', 'u.created_by_uuid')
    .select([
      'a.uuid',
      'a.upload_uuid',
      'a.group_uuid',
      'a.target_kind',
      'a.target_uuid',
      'a.created_at',
      'a.created_by_uuid',
      'c.username as created_by_username',
      'u.repo_uuid as u_repo_uuid',
      'u.group_uuid as u_group_uuid',
      'u.filename as u_filename',
      'u.content_type as u_content_type',
      'u.size_bytes as u_size_bytes',
      'u.sha256 as u_sha256',
      'u.status as u_status',
      'u.created_at as u_created_at',
      'u.removed_at as u_removed_at',
      'u.created_by_uuid as u_created_by_uuid',
      'uc.username as u_created_by_username',
    ]);
}

type AttachmentRow = Awaited<ReturnType<ReturnType<typeof attachmentsWithUploads>['executeTakeFirstOrThrow']>>;

function attachmentToJson(row: AttachmentRow): AttachmentJson {
  return {
    uuid: row.uuid,
    upload_uuid: row.upload_uuid,
    group_uuid: row.group_uuid,
    target_kind: row.target_kind as TargetKind,
    target_uuid: row.target_uuid,
    created_at: row.created_at,
    created_by_username: row.created_by_username,
    upload: uploadToJson({
      uuid: row.upload_uuid,
      repo_uuid: row.u_repo_uuid,
      group_uuid: row.u_group_uuid,
      filename: row.u_filename,
      content_type: row.u_content_type,
      size_bytes: row.u_size_bytes,
      sha256: row.u_sha256,
      status: row.u_status,
      created_at: row.u_created_at,
      removed_at: row.u_removed_at,
      created_by_uuid: row.u_created_by_uuid,
      created_by_username: row.u_created_by_username,
    }),
  };
}

async function emitAttachment(
  tx: TxContext,
  viewer: Viewer,
  access: RepoAccess,
  target: Target,
  kind: 'attachment-created' | 'attachment-deleted',
  a: { uuid: string; upload_uuid: string; group_uuid: string | null },
) {
  await tx.emit({
    kind,
    scopes: [...repoScopes(access.repo), ...target.scopes],
    actor: actorOf(viewer),
    payload: {
      repo_uuid: access.repo.uuid,
      attachment_uuid: a.uuid,
      upload_uuid: a.upload_uuid,
      group_uuid: a.group_uuid,
      target_kind: target.kind,
      target_uuid: target.uuid,
    },
  });
}

/**
 * Inserts the attachments that do not exist yet (the unique (target, upload) key decides, so two
 * concurrent attaches of one group create each attachment once) and returns the uuids created.
 */
async function insertNew(
  tx: TxContext,
  viewer: Viewer,
  repoUuid: string,
  target: Target,
  uploads: string[],
  groupUuid: string | null,
): Promise<Array<{ uuid: string; upload_uuid: string; group_uuid: string | null }>> {
  const now = nowIso();
  const created = [];
  for (const uploadUuid of uploads) {
    const row = {
      uuid: randomUUID(),
      repo_uuid: repoUuid,
      upload_uuid: uploadUuid,
      group_uuid: groupUuid,
      target_kind: target.kind,
      target_uuid: target.uuid,
      created_by_uuid: viewer.uuid,
      created_at: now,
    };
    const inserted = await tx.db
      .insertInto('attachments')
      .values(row)
      .onConflict((oc) => oc.columns(['target_kind', 'target_uuid', 'upload_uuid']).doNothing())
      .returning('uuid')
      .executeTakeFirst();
    if (inserted) created.push(row);
  }
  return created;
}

const duplicate = () => conflict('duplicate_attachment', 'That upload is already attached to this target.');

export async function attach(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  targetRef: TargetRef,
  input: AttachInput,
): Promise<{ single: AttachmentJson } | { group: GroupAttachmentJson }> {
  if ((input.upload_uuid === undefined) === (input.group_uuid === undefined)) {
    throw badRequest('Send exactly one of upload_uuid and group_uuid.');
  }
  return command(deps, viewer, onRepo(ref, READ), async (tx) => {
    const access = tx.access;
    const target = await resolveTarget(tx.db, access.repo.uuid, targetRef);
    if (input.upload_uuid !== undefined) {
      const upload = await findUpload(tx.db, access.repo.uuid, input.upload_uuid);
      assertCanAttach(access);
      if (target.readOnly) throw target.readOnly;
      if (upload.status !== 'active') throw conflict('upload_removed', 'The upload was removed; it cannot be attached.');
      const [created] = await insertNew(tx, viewer, access.repo.uuid, target, [upload.uuid], null);
      if (!created) throw duplicate();
      await emitAttachment(tx, viewer, access, target, 'attachment-created', created);
      return {
        single: attachmentToJson(
          await attachmentsWithUploads(tx.db).where('a.uuid', '=', created.uuid).executeTakeFirstOrThrow(),
        ),
      };
    }
    const group = await findGroup(tx.db, access.repo.uuid, input.group_uuid!);
    assertCanAttach(access);
    if (target.readOnly) throw target.readOnly;
    // The snapshot: the members active now; later group changes never touch these attachments.
    const members = await tx.db
      .selectFrom('uploads')
      .select('uuid')
      .where('group_uuid', '=', group.uuid)
      .where('repo_uuid', '=', access.repo.uuid)
      .where('status', '=', 'active')
      .orderBy('created_at')
      .orderBy('uuid')
      .execute();
    if (members.length === 0) throw conflict('group_empty', 'The upload group has no active upload to attach.');
    const created = await insertNew(
      tx,
      viewer,
      access.repo.uuid,
      target,
      members.map((m) => m.uuid),
      group.uuid,
    );
    if (created.length === 0) throw duplicate();
    for (const a of created) await emitAttachment(tx, viewer, access, target, 'attachment-created', a);
    const rows = await attachmentsWithUploads(tx.db)
      .where(
        'a.uuid',
        'in',
        created.map((a) => a.uuid),
      )
      .orderBy('a.created_at')
      .execute();
    const order = new Map(created.map((a, i) => [a.uuid, i]));
    rows.sort((x, y) => order.get(x.uuid)! - order.get(y.uuid)!);
    return { group: { group_uuid: group.uuid, attachments: rows.map(attachmentToJson) } };
  });
}

export async function listAttachments(
  deps: Deps,
  viewer: Viewer,
  at: RepoAt,
  targetRef: TargetRef,
  page: PageArgs,
): Promise<AttachmentJson[]> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const target = await resolveTarget(deps.db, repo.uuid, targetRef);
  const rows = await attachmentsWithUploads(deps.db)
    .where('a.target_kind', '=', target.kind)
    .where('a.target_uuid', '=', target.uuid)
    .orderBy('a.created_at')
    .orderBy('a.uuid')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
  return rows.map(attachmentToJson);
}

/** Detaching stays possible after the upload or target is removed and after a merge. */
export async function detach(deps: Deps, viewer: Viewer, ref: RepoRef, targetRef: TargetRef, uploadUuid: string): Promise<void> {
  await command(deps, viewer, onRepo(ref, READ), async (tx) => {
    const access = tx.access;
    const target = await resolveTarget(tx.db, access.repo.uuid, targetRef);
    const row = await tx.db
      .selectFrom('attachments')
      .selectAll()
      .where('target_kind', '=', target.kind)
      .where('target_uuid', '=', target.uuid)
      .where('upload_uuid', '=', uploadUuid)
      .executeTakeFirst();
    if (!row) throw notFound('Attachment');
    assertCanDetach(access, viewer, row.created_by_uuid);
    const res = await tx.db.deleteFrom('attachments').where('uuid', '=', row.uuid).executeTakeFirst();
    if (Number(res.numDeletedRows) === 0) throw notFound('Attachment');
    await emitAttachment(tx, viewer, access, target, 'attachment-deleted', row);
  });
}
