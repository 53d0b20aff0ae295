/**
 * Issue tracker access (README "Issue tracker"): who may close, reopen, lock, label, assign and
 * schedule threads and pulls, and who writes labels and milestones. On top of `requireRepo`.
 */
import { forbidden } from '../errors.ts';
import type { Viewer } from '../viewer.ts';
import { levelAtLeast } from './levels.ts';
import type { RepoAccess } from './repos.ts';

/** Labels, assignees, milestone, lock and another's thread state: write access. */
export function assertCanTriage(access: RepoAccess): void {
  if (!levelAtLeast(access.level, 'write')) {
    throw forbidden('Labels, assignees, milestones, locks and the state of others\u2019 threads need write access.');
  }
}

/** A thread's state: its author, or write access. */
export function assertCanChangeState(access: RepoAccess, viewer: Viewer, authorUuid: string): void {
  if (authorUuid !== viewer.uuid) assertCanTriage(access);
}

/** A locked thread takes replies from write access only (403 thread_locked). */
export function assertMayReply(access: RepoAccess, thread: { locked: number }): void {
  if (thread.locked === 1 && !levelAtLeast(access.level, 'write')) {
    throw forbidden('The thread is locked: only those with write access can reply.', 'thread_locked');
  }
}

/** A repo's labels: maintain level. */
export function assertCanWriteRepoLabels(access: RepoAccess): void {
  if (!levelAtLeast(access.level, 'maintain')) throw forbidden('Writing labels needs maintain access to the repo.');
}

/** A pull's draft flag and review requests: its author, or write access. */
export function assertCanEditPullMeta(access: RepoAccess, viewer: Viewer, authorUuid: string): void {
  if (authorUuid !== viewer.uuid && !levelAtLeast(access.level, 'write')) {
    throw forbidden('Only the pull author or write access can change this.');
  }
}
