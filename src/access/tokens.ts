/** API token access: a user manages their own tokens; staff manage anyone's. */
import { forbidden } from '../errors.ts';
import type { Viewer } from '../viewer.ts';

/** Managing (creating, listing) another user's tokens is for staff (403 otherwise). */
export function assertCanManageTokensOf(viewer: Viewer, ownerUsername: string): void {
  if (ownerUsername !== viewer.username && !viewer.isStaff) throw forbidden("Only staff can manage another user's tokens.");
}

/** A token is visible to its owner and staff; to anyone else it does not exist (404). */
export function tokenVisibleTo(viewer: Viewer, token: { user_uuid: string }): boolean {
  return token.user_uuid === viewer.uuid || viewer.isStaff;
}
