import type { TxContext } from '../core/command.ts';
import { actorOf } from '../events/service.ts';
import { ZERO_SHA } from '../git/run.ts';
import { isCrossRepo, type PullHeadFields } from './heads.ts';
import { loadPullJson, pullEventPayload, pullScopes } from './service.ts';

/**
 * A push's effect on pulls, inside the transaction that records it (`branch-pushed`): the open
 * pulls whose source branch it moved. Each such pull from another repo (a fork) gets
 * `pull-updated` in its target repo's scope, with the new `head_sha`; the caller then brings
 * every returned pull's kept head up to date (`syncPullHeads`), once the transaction commits.
 * A deleted source branch moves nothing: the kept head stays.
 */
export async function pullsMovedByPush(
  tx: TxContext,
  repoUuid: string,
  updates: Array<{ before: string; after: string; ref: string }>,
  pusher: { uuid: string; username: string },
): Promise<PullHeadFields[]> {
  const moved = new Map<string, { before: string; after: string }>();
  for (const u of updates) {
    if (!u.ref.startsWith('refs/heads/') || u.after === ZERO_SHA) continue;
    moved.set(u.ref.slice('refs/heads/'.length), { before: u.before, after: u.after });
  }
  if (moved.size === 0) return [];
  const pulls = await tx.db
    .selectFrom('pulls')
    .select(['uuid', 'repo_uuid', 'source_repo_uuid', 'number', 'source_branch'])
    .where('source_repo_uuid', '=', repoUuid)
    .where('source_branch', 'in', [...moved.keys()])
    .where('status', '=', 'open')
    .orderBy('repo_uuid')
    .orderBy('number')
    .execute();
  for (const pull of pulls) {
    if (!isCrossRepo(pull)) continue;
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
