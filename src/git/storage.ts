import type { RepoRow } from '../access.ts';
import type { Deps } from '../deps.ts';
import type { TxContext } from '../events/service.ts';

/** The git storage seams for repo lifecycle: where bare repositories get copied and removed. */

/**
 * Seam for the git storage adapter: the one place a fork gets its git content. It runs inside
 * the fork's transaction after both repo rows exist, so a failure here (thrown error) undoes the
 * whole fork: no fork row without its content. A later git issue copies the source's bare
 * repository to the fork's here (and may set `disk_usage_bytes` through `tx.db`). No git
 * storage exists yet, so it does nothing.
 */
export async function copyGitContentForFork(_deps: Deps, _tx: TxContext, _source: RepoRow, _fork: RepoRow): Promise<void> {
  // Intentionally empty until git storage lands.
}

/**
 * Seam for the git storage adapter: called once a repo's deletion has committed, so a later
 * git issue can remove the repo's bare repository in this one place. No git storage exists yet,
 * so it does nothing.
 */
export async function removeGitContentOfDeletedRepo(_deps: Deps, _repo: { uuid: string }): Promise<void> {
  // Intentionally empty until git storage lands.
}
