/** Review comments (README "Code review"): who edits, deletes and resolves them, and who applies suggestions. */
import { forbidden } from '../errors.ts';
import type { Viewer } from '../viewer.ts';
import { levelAtLeast, type RepoLevel } from './levels.ts';
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
 * Suggestions are applied with write access to the source branch: write access to this repo for
 * a pull whose branch is in it; for a pull from another repo (a fork), `source` is the viewer's
 * level on that repo, which must be write or more, and the repo not archived.
 */
export function assertCanApplySuggestions(access: RepoAccess, source: SourceAccess | null): void {
  const refusal = applyRefusal(access, source);
  if (refusal) throw forbidden(refusal);
}

/** Whether the viewer may apply suggestions (the page's Apply button), as `assertCanApplySuggestions` decides. */
export function mayApplySuggestions(access: Pick<RepoAccess, 'level'>, source: SourceAccess | null): boolean {
  return applyRefusal(access, source) === null;
}

/** The viewer's level on a pull's source repo (another repo than the pull's) and whether that repo is archived. */
export interface SourceAccess {
  level: RepoLevel;
  archived: boolean;
}

function applyRefusal(access: Pick<RepoAccess, 'level'>, source: SourceAccess | null): string | null {
  if (source === null) {
    return levelAtLeast(access.level, 'write') ? null : 'Applying a suggestion needs write access to the source branch.';
  }
  if (!levelAtLeast(source.level, 'write')) {
    return "Applying a suggestion needs write access to the source branch, which is in the pull's source repo.";
  }
  return source.archived ? "The pull's source repo is archived: its branch cannot change." : null;
}
