import { forbidden } from '../errors.ts';
import type { Viewer } from '../viewer.ts';

/** Sign-in sources (docs/signin.md) are staff's: 403 to everyone else. */
export function assertCanManageAuthSources(viewer: Viewer): void {
  if (!viewer.isStaff) throw forbidden('Only staff can manage sign-in sources.');
}
