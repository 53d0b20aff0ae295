import type { Viewer } from '../viewer.ts';

/**
 * A signed-out reader of the pages (README "Web interface": public repos are browsable signed out,
 * as anonymous git clone already is). It names no user, so every access decision gives it what it
 * gives a signed-in non-member: read on a public repo, nothing on a private one; its abilities
 * (abilities.ts) take no part. It never reaches the API (its routes still need a credential).
 */
export const ANONYMOUS_VIEWER: Viewer = Object.freeze({
  uuid: '00000000-0000-0000-0000-000000000000',
  username: '',
  isStaff: false,
  tokenUuid: '',
  scopes: Object.freeze(['read:repo']),
  twoFactor: true,
});

export const isAnonymous = (viewer: Pick<Viewer, 'uuid'>): boolean => viewer.uuid === ANONYMOUS_VIEWER.uuid;
