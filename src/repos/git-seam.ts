import type { Deps } from '../deps.ts';

/**
 * Seam for the git storage adapter: called once a repo's deletion has committed, so a later
 * git issue can remove the repo's bare repository in this one place. No git storage exists yet,
 * so it does nothing.
 */
export async function removeGitContentOfDeletedRepo(_deps: Deps, _repo: { uuid: string }): Promise<void> {
  // Intentionally empty until git storage lands.
}
