import type { RepoRef } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { conflict, notFound } from '../errors.ts';
import { actorOf, inTransaction } from '../events/service.ts';
import type { MergeStrategy } from '../git/store.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { pullProtectionStatus } from './protection-status.ts';
import { loadPullJson, type PullJson, pullEventPayload, pullScopes, requirePull } from './pulls-service.ts';

export interface MergeResultJson {
  pull: PullJson;
  merge_strategy: MergeStrategy;
  merge_commit_sha: string | null;
  merged_at: string;
  merged_by_username: string;
}

/**
 * Merges an open pull. Everything happens in one transaction: the pull is claimed with a
 * conditional update (`status = 'open'`), so of two simultaneous merges exactly one claims it
 * and the other sees `merged` (409 pull_merged); a failed protection check or a conflicting git
 * merge rolls the claim back.
 */
export async function mergePull(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  strategy: MergeStrategy = 'merge',
): Promise<MergeResultJson> {
  return inTransaction(deps, async (tx) => {
    const { access, pull } = await requirePull(deps, viewer, ref, number, { level: 'write', write: true });
    const mergedAt = nowIso();
    const claimed = await tx.db
      .updateTable('pulls')
      .set({
        status: 'merged',
        merged_at: mergedAt,
        closed_at: mergedAt,
        updated_at: mergedAt,
        merged_by_uuid: viewer.uuid,
        merge_strategy: strategy,
      })
      .where('uuid', '=', pull.uuid)
      .where('status', '=', 'open')
      .executeTakeFirst();
    if (Number(claimed.numUpdatedRows) !== 1) {
      const now = await tx.db.selectFrom('pulls').select('status').where('uuid', '=', pull.uuid).executeTakeFirst();
      if (!now) throw notFound('Pull');
      if (now.status === 'closed') throw conflict('pull_closed', 'The pull is closed: reopen it before merging.');
      throw conflict('pull_merged', 'The pull is already merged.');
    }
    const current = await tx.db.selectFrom('pulls').selectAll().where('uuid', '=', pull.uuid).executeTakeFirstOrThrow();
    const protection = await pullProtectionStatus(tx.db, access.repo, current);
    if (!protection.satisfied) {
      throw conflict(
        'protection_unsatisfied',
        `Branch protection "${protection.branch_pattern}" needs ${protection.required_approvals} approval(s); ` +
          `it has ${protection.approved_by.length}.`,
      );
    }
    const outcome = await deps.git.merge(tx, access.repo, current, strategy);
    if ('conflictPaths' in outcome) {
      throw conflict('merge_conflict', 'The source branch does not merge cleanly into the target branch.', outcome.conflictPaths);
    }
    if (outcome.sha !== null) {
      await tx.db.updateTable('pulls').set({ merge_commit_sha: outcome.sha }).where('uuid', '=', pull.uuid).execute();
    }
    const json = await loadPullJson(tx.db, pull.uuid);
    await tx.emit({
      kind: 'pull-merged',
      scopes: pullScopes(json),
      actor: actorOf(viewer),
      payload: {
        ...pullEventPayload(json),
        merge_strategy: strategy,
        merge_commit_sha: json.merge_commit_sha,
        merged_by_username: viewer.username,
      },
    });
    return {
      pull: json,
      merge_strategy: strategy,
      merge_commit_sha: json.merge_commit_sha,
      merged_at: mergedAt,
      merged_by_username: viewer.username,
    };
  });
}
