import { startPullRuns } from '../ci/pull-runs.ts';
import type { TxContext } from '../core/command.ts';
import type { Deps } from '../deps.ts';
import { actorOf } from '../events/service.ts';
import { scheduleMaintenance } from '../git/maintenance.ts';
import { scheduleSearchIndex } from '../search/service.ts';
import { ZERO_SHA } from '../git/run.ts';
import { type PullHeadFields, repoFullNames } from './heads.ts';
import { loadPullJson, pullEventPayload, pullScopes } from './service.ts';

/** One ref a push, a merge or the API moved: `before`/`after` are ZERO_SHA for a created/deleted ref. */
export interface RefMove {
  ref: string;
  before: string;
  after: string;
  /** `before` is not an ancestor of `after` (a force push); false for a created or deleted ref */
  forced: boolean;
}

/** Whether moving a ref from `before` to `after` drops commits (read before the transaction). */
export async function isForced(deps: Deps, repoUuid: string, before: string, after: string): Promise<boolean> {
  if (before === ZERO_SHA || after === ZERO_SHA || before === after) return false;
  return !(await deps.git.contains(repoUuid, after, before));
}

/**
 * Every ref move's events (README "Events a CI can build from"), in the transaction that records
 * it: `branch-pushed` with `before`, `after`, `forced` and the repo `{uuid, full_name}` for each
 * move, then `pull-updated` (`synchronized`) for each open pull whose head moved, and the repo's
 * git maintenance queued (src/git/maintenance.ts). Answers those pulls: the caller brings their
 * kept heads up to date once the transaction commits.
 */
export async function emitRefMoves(
  deps: Deps,
  tx: TxContext,
  repoUuid: string,
  moves: RefMove[],
  pusher: { uuid: string; username: string },
): Promise<PullHeadFields[]> {
  if (moves.length === 0) return [];
  // the refs it wrote loose get packed soon after (one queued job per repo)
  await scheduleMaintenance(deps, tx.db, repoUuid);
  // the code search index follows the default branch (docs/search.md)
  const repoRow = await tx.db.selectFrom('repos').select('default_branch').where('uuid', '=', repoUuid).executeTakeFirst();
  if (repoRow && moves.some((m) => m.ref === `refs/heads/${repoRow.default_branch}`))
    await scheduleSearchIndex(deps, tx.db, repoUuid);
  const fullName = (await repoFullNames(tx.db, [repoUuid])).get(repoUuid) ?? null;
  for (const m of moves) {
    await tx.emit({
      kind: 'branch-pushed',
      scopes: [`repo:${repoUuid}`],
      actor: actorOf(pusher),
      payload: {
        repo_uuid: repoUuid,
        repo: { uuid: repoUuid, full_name: fullName },
        ref: m.ref,
        before: m.before,
        after: m.after,
        forced: m.forced,
        pusher: { uuid: pusher.uuid, username: pusher.username },
      },
    });
  }
  const pulls = await pullsMovedByPush(tx, repoUuid, moves, pusher);
  // their runs (docs/ci.md "Pull requests"), at the new head
  for (const p of pulls) {
    const move = moves.find((m) => m.ref === `refs/heads/${p.source_branch}`);
    await startPullRuns(deps, tx, p.uuid, 'synchronize', pusher, move?.after);
  }
  return pulls;
}

/**
 * A push's effect on pulls, inside the transaction that records it (`branch-pushed`): the open
 * pulls whose source branch it moved. Each such pull (of this repo or, from a fork, of another)
 * gets `pull-updated` in its target repo's scope, with the new `head_sha`; the caller then brings
 * every returned pull's kept head up to date (`syncPullHeads`), once the transaction commits.
 * A deleted source branch moves nothing: the kept head stays.
 */
export async function pullsMovedByPush(
  tx: TxContext,
  repoUuid: string,
  updates: Array<{ before: string; after: string; ref: string }>,
  pusher: { uuid: string; username: string },
): Promise<Array<PullHeadFields & { uuid: string }>> {
  const moved = new Map<string, { before: string; after: string }>();
  for (const u of updates) {
    if (!u.ref.startsWith('refs/heads/') || u.after === ZERO_SHA) continue;
    moved.set(u.ref.slice('refs/heads/'.length), { before: u.before, after: u.after });
  }
  if (moved.size === 0) return [];
  const pulls = await tx.db
    .selectFrom('pulls')
    .select(['uuid', 'repo_uuid', 'source_repo_uuid', 'number', 'source_branch'])
    .where((eb) =>
      eb.or([
        eb('source_repo_uuid', '=', repoUuid),
        eb.and([eb('source_repo_uuid', 'is', null), eb('repo_uuid', '=', repoUuid)]),
      ]),
    )
    .where('source_branch', 'in', [...moved.keys()])
    .where('status', '=', 'open')
    .orderBy('repo_uuid')
    .orderBy('number')
    .execute();
  for (const pull of pulls) {
    const { before, after } = moved.get(pull.source_branch)!;
    const json = await loadPullJson(tx.db, pull.uuid);
    await tx.emit({
      kind: 'pull-updated',
      scopes: pullScopes(json),
      actor: actorOf(pusher),
      payload: {
        ...pullEventPayload(json),
        action: 'synchronized',
        changed: ['head_sha'],
        head_sha: after,
        before: before === ZERO_SHA ? null : before,
      },
    });
  }
  return pulls;
}
