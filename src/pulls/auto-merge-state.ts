/**
 * The state side of auto-merge (docs/ci.md "Auto-merge"), a leaf module so the writes that may
 * satisfy a pull (statuses, reviews, protections, CI) can enqueue its job without importing the
 * merge: who turned it on (`autoMergesOf`), the job that tries (`wakeAutoMerge`), turning it off
 * with its event (`turnOffAutoMerge`). The attempt and the routes' rules are in auto-merge.ts.
 */
import type { Kysely } from 'kysely';
import type { TxContext } from '../core/tx-context.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import type { EventActor } from '../events/service.ts';
import type { MergeStrategy } from '../git/store.ts';

export const JOB_AUTO_MERGE = 'auto-merge';

export interface AutoMergeJson {
  enabled_by: { uuid: string; username: string };
  merge_strategy: MergeStrategy;
  enabled_at: string;
}

export type AutoMergeOffReason = 'turned_off' | 'closed' | 'access_lost' | 'conflict' | 'merge_refused';

/** The auto-merge of each of these pulls that has it on. */
export async function autoMergesOf(db: Kysely<DB>, pullUuids: string[]): Promise<Map<string, AutoMergeJson>> {
  if (pullUuids.length === 0) return new Map();
  const rows = await db
    .selectFrom('pull_auto_merges as a')
    .innerJoin('users as u', 'u.uuid', 'a.enabled_by_uuid')
    .select(['a.pull_uuid', 'a.merge_strategy', 'a.enabled_at', 'u.uuid', 'u.username'])
    .where('a.pull_uuid', 'in', pullUuids)
    .execute();
  return new Map(
    rows.map((r) => [
      r.pull_uuid,
      {
        enabled_by: { uuid: r.uuid, username: r.username },
        merge_strategy: r.merge_strategy as MergeStrategy,
        enabled_at: r.enabled_at,
      },
    ]),
  );
}

/**
 * Enqueues an attempt for each pull with auto-merge on, of a repo (a status or a protection
 * changed) or one pull (an approval), with `db` (the transaction of that change).
 */
export async function wakeAutoMerge(deps: Deps, db: Kysely<DB>, by: { repoUuid: string } | { pullUuid: string }): Promise<void> {
  let q = db.selectFrom('pull_auto_merges').select('pull_uuid');
  q = 'repoUuid' in by ? q.where('repo_uuid', '=', by.repoUuid) : q.where('pull_uuid', '=', by.pullUuid);
  for (const r of await q.execute()) {
    await deps.jobs.enqueue(db, { kind: JOB_AUTO_MERGE, payload: { pull_uuid: r.pull_uuid } });
  }
}

/**
 * Turns auto-merge off inside a transaction, with its event; nothing when it is not on (or, with
 * `enabledAt`, when it was turned on again since). Returns whether it was on.
 */
export async function turnOffAutoMerge(
  tx: TxContext,
  pullUuid: string,
  reason: AutoMergeOffReason,
  actor: EventActor | null,
  /** the pull event's scopes and payload (pulls/service.ts `pullScopes`, `pullEventPayload`) */
  shape: { scopes: string[]; payload: Record<string, unknown> },
  opts: { code?: string; enabledAt?: string } = {},
): Promise<boolean> {
  const [on] = await autoMergesOf(tx.db, [pullUuid]).then((m) => [...m.values()]);
  if (!on || (opts.enabledAt !== undefined && on.enabled_at !== opts.enabledAt)) return false;
  const res = await tx.db
    .deleteFrom('pull_auto_merges')
    .where('pull_uuid', '=', pullUuid)
    .where('enabled_at', '=', on.enabled_at)
    .executeTakeFirst();
  if (Number(res.numDeletedRows) !== 1) return false;
  await tx.emit({
    kind: 'auto-merge-disabled',
    scopes: shape.scopes,
    actor,
    payload: {
      ...shape.payload,
      merge_strategy: on.merge_strategy,
      enabled_by: on.enabled_by,
      reason,
      code: opts.code ?? null,
    },
  });
  return true;
}
