/**
 * Thread, reply, upload and attachment access (docs/behaviour.md "Threads, replies, uploads and attachments"): who may write, edit, remove and
 * detach. Repo visibility itself is `requireRepo` (repos.ts); these decide on top of it.
 */
import type { Viewer } from '../viewer.ts';
import { forbidden } from '../errors.ts';
import { levelAtLeast } from './levels.ts';
import type { RepoAccess } from './repos.ts';
import { assertTeamActive } from './teams.ts';

/** Opening threads and replying needs read access (as on Gitea issues); archived repos refuse. */
export const DISCUSS = { level: 'read', write: true } as const;
/** Uploading, creating upload groups and attaching need write access; archived repos refuse. */
export const CONTRIBUTE = { level: 'write', write: true } as const;

/** Editing or removing a thread or reply: its author, or maintain level. */
export function assertCanEditPost(access: RepoAccess, viewer: Viewer, authorUuid: string): void {
  if (authorUuid === viewer.uuid || levelAtLeast(access.level, 'maintain')) return;
  throw forbidden('Only the author or a maintainer can change this.');
}

/** Ticking a task of a thread's text on its page: the author, or write access (docs/web.md "Markdown"). */
export function assertCanTickTask(access: RepoAccess, viewer: Viewer, authorUuid: string): void {
  if (authorUuid === viewer.uuid || levelAtLeast(access.level, 'write')) return;
  throw forbidden('Only the author or someone with write access can tick its tasks.');
}

/** Removing an upload or an upload group: its creator, or maintain level. */
export function assertCanRemoveUpload(access: RepoAccess, viewer: Viewer, creatorUuid: string): void {
  if (creatorUuid === viewer.uuid || levelAtLeast(access.level, 'maintain')) return;
  throw forbidden('Only the uploader or a maintainer can remove this.');
}

/**
 * Attaching (docs/behaviour.md "Threads, replies, uploads and attachments"): write access; an archived repo is 403 repo_archived, an
 * inactive team 403 team_inactive. Checked after the target is found (404 before 403).
 */
export function assertCanAttach(access: RepoAccess): void {
  if (!levelAtLeast(access.level, 'write')) throw forbidden('Attaching needs write access to the repo.');
  assertTeamActive(access.owner.team);
  if (access.repo.is_archived === 1) throw forbidden('The repo is archived and read-only.', 'repo_archived');
}

/**
 * Detaching: write access, or the attachment's creator at any level that can still see the repo
 * (docs/behaviour.md "Threads, replies, uploads and attachments"). An archived repo refuses it like any other change.
 */
export function assertCanDetach(access: RepoAccess, viewer: Viewer, creatorUuid: string): void {
  if (creatorUuid !== viewer.uuid && !levelAtLeast(access.level, 'write')) {
    throw forbidden('Detaching needs write access to the repo, or to be the one who attached it.');
  }
  assertTeamActive(access.owner.team);
  if (access.repo.is_archived === 1) throw forbidden('The repo is archived and read-only.', 'repo_archived');
}
