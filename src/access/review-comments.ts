/** Review comments (README "Code review"): who edits, deletes and resolves them, and who applies suggestions. */
import { forbidden } from '../errors.ts';
import type { Viewer } from '../viewer.ts';
import { levelAtLeast } from './levels.ts';
import type { RepoAccess } from './repos.ts';

/** A comment is edited by its author only. */
export function assertCanEditComment(viewer: Viewer, comment: { author_uuid: string }): void {
  if (comment.author_uuid !== viewer.uuid) throw forbidden('Only the author of a comment can edit it.');
}

/** A comment is deleted by its author or at maintain level. */
export function assertCanDeleteComment(viewer: Viewer, access: RepoAccess, comment: { author_uuid: string }): void {
  if (comment.author_uuid !== viewer.uuid && !levelAtLeast(access.level, 'maintain')) {
    throw forbidden('Only the author of a comment or a maintainer can delete it.');
  }
}

/** A conversation is resolved (or unresolved) by the pull's author, its first comment's author, or write access. */
export function assertCanResolve(
  viewer: Viewer,
  access: RepoAccess,
  pull: { author_uuid: string },
  first: { author_uuid: string },
): void {
  if (pull.author_uuid === viewer.uuid || first.author_uuid === viewer.uuid) return;
  if (!levelAtLeast(access.level, 'write')) {
    throw forbidden("Only the pull's author, the conversation's author or write access can resolve a conversation.");
  }
}

/**
 * Suggestions are applied with write access to the source branch: write access to the repo, for
 * a pull whose branch is in this repo (a pull from another repo is refused here).
 */
export function assertCanApplySuggestions(access: RepoAccess, crossRepo: boolean): void {
  if (!levelAtLeast(access.level, 'write')) throw forbidden('Applying a suggestion needs write access to the source branch.');
  if (crossRepo) throw forbidden("Applying a suggestion needs write access to the source branch, which is another repo's.");
}
