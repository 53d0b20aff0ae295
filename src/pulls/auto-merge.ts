/**
 * Auto-merge (docs/ci.md "Auto-merge"): `PUT {repo}/pulls/{n}/auto-merge` records who turned it
 * on and with which strategy; the server then merges the pull as that user as soon as its
 * approvals and required checks are satisfied. What may satisfy them (a status, which a CI job
 * writes when it ends; an approving review; a protection change) enqueues an `auto-merge` job
 * for each pull with auto-merge on in the same transaction (the job queue is the outbox: the job
 * exists exactly when the change committed). The job is claimed by one worker of one instance
 * at a time, and the merge itself is the ordinary merge (src/pulls/merge.ts), whose claim lets
 * exactly one merge through across instances; several jobs for one pull are therefore harmless,
 * and none is deduplicated away, so a trigger committed while a job runs is never lost.
 *
 * Auto-merge goes off with an `auto-merge-disabled` event saying why: `turned_off` (DELETE),
 * `closed`, `access_lost` (the user can no longer merge: removed, demoted, deactivated),
 * `conflict`, or `merge_refused` with the refusal `code`. A merge of the pull removes it too.
 */
import { assertNotArchived, itemWrite, type RepoRef, requireRepo } from '../access/index.ts';
import { command } from '../core/command.ts';
import { onPull } from '../core/targets.ts';
import { inTransaction, type TxContext } from '../core/transaction.ts';
import type { Deps } from '../deps.ts';
import { AppError, conflict } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import type { MergeStrategy } from '../git/store.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { pullHeadSha } from './heads.ts';
import { mergePull } from './merge.ts';
import { pullProtectionStatus } from './protection-status.ts';
import { loadPullJson, pullEventPayload, pullScopes } from './service.ts';
import { type AutoMergeOffReason, autoMergesOf, JOB_AUTO_MERGE, turnOffAutoMerge } from './auto-merge-state.ts';

export { type AutoMergeJson, autoMergesOf } from './auto-merge-state.ts';

/** The pull event's scopes and payload as they stand in `tx`. */
const shapeOf = async (tx: TxContext, pullUuid: string) => {
  const json = await loadPullJson(tx.db, pullUuid);
  return { scopes: pullScopes(json), payload: pullEventPayload(json) };
};

const WRITE = itemWrite({ level: 'write' as const, write: true });

/**
 * PUT {repo}/pulls/{n}/auto-merge: write access (reader 403, outsider 404; archived 403
 * repo_archived after the 404s); an open pull that is not a draft (409 pull_merged, pull_closed,
 * pull_is_draft). Turning it on again replaces who and how. The first attempt runs at once, so
 * a pull that is mergeable already is merged before the answer.
 */
export async function enableAutoMerge(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  strategy: MergeStrategy = 'merge',
): Promise<string> {
  const pullUuid = await command(deps, viewer, onPull(ref, number, WRITE), async (tx) => {
    assertNotArchived(tx.access.access);
    const pull = tx.access.pull;
    if (pull.status === 'merged') throw conflict('pull_merged', 'The pull is already merged.');
    if (pull.status === 'closed') throw conflict('pull_closed', 'The pull is closed: reopen it before turning auto-merge on.');
    if (pull.draft === 1) {
      throw conflict('pull_is_draft', 'The pull is a draft: mark it ready for review before turning auto-merge on.');
    }
    const [current] = [...(await autoMergesOf(tx.db, [pull.uuid])).values()];
    if (current && current.enabled_by.uuid === viewer.uuid && current.merge_strategy === strategy) return pull.uuid;
    await tx.db.deleteFrom('pull_auto_merges').where('pull_uuid', '=', pull.uuid).execute();
    const enabledAt = nowIso();
    await tx.db
      .insertInto('pull_auto_merges')
      .values({
        pull_uuid: pull.uuid,
        repo_uuid: pull.repo_uuid,
        enabled_by_uuid: viewer.uuid,
        merge_strategy: strategy,
        enabled_at: enabledAt,
      })
      .execute();
    const json = await loadPullJson(tx.db, pull.uuid);
    await tx.emit({
      kind: 'auto-merge-enabled',
      scopes: pullScopes(json),
      actor: actorOf(viewer),
      payload: {
        ...pullEventPayload(json),
        merge_strategy: strategy,
        enabled_by: { uuid: viewer.uuid, username: viewer.username },
        enabled_at: enabledAt,
      },
    });
    return pull.uuid;
  });
  await runAutoMerge(deps, pullUuid);
  return pullUuid;
}

/** DELETE {repo}/pulls/{n}/auto-merge: write access, as PUT; a pull without auto-merge is a no-op. */
export async function disableAutoMerge(deps: Deps, viewer: Viewer, ref: RepoRef, number: number): Promise<void> {
  await command(deps, viewer, onPull(ref, number, WRITE), async (tx) => {
    assertNotArchived(tx.access.access);
    await turnOffAutoMerge(tx, tx.access.pull.uuid, 'turned_off', actorOf(viewer), await shapeOf(tx, tx.access.pull.uuid));
  });
}

/** Refusals of a merge that only mean "not yet": auto-merge stays on and waits for the next trigger. */
const NOT_YET = new Set(['protection_unsatisfied', 'checks_unsatisfied', 'conversations_unresolved', 'pull_is_draft']);

export type AutoMergeOutcome = 'merged' | 'waiting' | 'off' | 'none';

/**
 * One attempt (the job's handler, and the PUT's first try): merges the pull as the user who
 * turned auto-merge on when its protection is satisfied, or turns auto-merge off when it can
 * never merge as it stands. `target_moved` is thrown, so the job is retried.
 */
export async function runAutoMerge(deps: Deps, pullUuid: string): Promise<AutoMergeOutcome> {
  const row = await deps.db
    .selectFrom('pull_auto_merges as a')
    .innerJoin('pulls as p', 'p.uuid', 'a.pull_uuid')
    .innerJoin('users as u', 'u.uuid', 'a.enabled_by_uuid')
    .innerJoin('repos as r', 'r.uuid', 'p.repo_uuid')
    .leftJoin('teams as t', (j) => j.onRef('t.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'team'))
    .leftJoin('users as o', (j) => j.onRef('o.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'user'))
    .select([
      'a.merge_strategy',
      'a.enabled_at',
      'p.number',
      'p.status',
      'p.draft',
      'p.merge_pending',
      'u.uuid as user_uuid',
      'u.username',
      'u.is_staff',
      'u.is_active',
      'r.owner_kind',
      'r.slug',
      't.slug as team_slug',
      'o.username as owner_username',
    ])
    .where('a.pull_uuid', '=', pullUuid)
    .executeTakeFirst();
  if (!row) return 'none';
  const off = (reason: AutoMergeOffReason, code?: string) =>
    inTransaction(deps, async (tx) =>
      turnOffAutoMerge(tx, pullUuid, reason, null, await shapeOf(tx, pullUuid), { code, enabledAt: row.enabled_at }),
    ).then(() => 'off' as const);
  if (row.status === 'merged' || row.merge_pending === 1) return 'none';
  if (row.status === 'closed') return off('closed');
  if (row.is_active !== 1) return off('access_lost');
  const viewer: Viewer = { uuid: row.user_uuid, username: row.username, isStaff: row.is_staff === 1, tokenUuid: '' };
  const ref: RepoRef = {
    ownerKind: row.owner_kind === 'team' ? 'team' : 'user',
    ownerName: (row.owner_kind === 'team' ? row.team_slug : row.owner_username) ?? '',
    repoSlug: row.slug,
  };
  // their access checked again now (README "Auto-merge")
  let repo;
  try {
    repo = (await requireRepo(deps.db, viewer, ref, { level: 'write' })).repo;
  } catch (err) {
    if (err instanceof AppError && (err.status === 403 || err.status === 404)) return off('access_lost');
    throw err;
  }
  if (row.draft === 1) return 'waiting';
  // a cheap look first: most triggers come before the pull is ready
  const pull = await deps.db.selectFrom('pulls').selectAll().where('uuid', '=', pullUuid).executeTakeFirstOrThrow();
  const status = await pullProtectionStatus(deps.db, repo, pull, await pullHeadSha(deps, pull));
  if (!status.satisfied) return 'waiting';
  try {
    await mergePull(deps, viewer, ref, row.number, row.merge_strategy as MergeStrategy);
    return 'merged';
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    if (NOT_YET.has(err.code)) return 'waiting';
    if (err.code === 'pull_merged') return 'none';
    if (err.code === 'pull_closed') return off('closed');
    if (err.code === 'target_moved') throw err;
    if (err.code === 'merge_conflict') return off('conflict');
    if (err.code === 'forbidden' || err.code === 'not_found') return off('access_lost');
    return off('merge_refused', err.code);
  }
}

/** Registers the job's handler (the composition root). */
export function registerAutoMerge(deps: Deps): void {
  deps.jobs.register(JOB_AUTO_MERGE, async (payload) => {
    await runAutoMerge(deps, String(payload.pull_uuid));
  });
}
