import type { Kysely, Selectable } from 'kysely';
import type { RepoRef, RepoRow } from '../access/index.ts';
import { instanceLease, ownerIsGone } from '../db/instance-lease.ts';
import type { PullsTable } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { AppError, conflict, notFound } from '../errors.ts';
import { closeByKeywords } from '../references/service.ts';
import { type Closer, closeThreadRow, type ThreadRow } from '../threads/service.ts';
import { actorOf } from '../events/service.ts';
import { command, inTransaction } from '../core/command.ts';
import { onPull } from '../core/targets.ts';
import type { MergeStrategy } from '../git/store.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { ZERO_SHA } from '../git/run.ts';
import { syncedPullHead, syncPullHeads } from './heads.ts';
import { emitRefMoves } from './pushes.ts';
import { applyRefMoveCi, planRefMoveCi } from '../ci/ref-moves.ts';
import { pullProtectionStatus } from './protection-status.ts';
import { unresolvedConversations } from './comments-store.ts';
import { loadPullJson, type PullJson, type PullRow, pullEventPayload, pullScopes, requirePull } from './service.ts';

export interface MergeResultJson {
  pull: PullJson;
  merge_strategy: MergeStrategy;
  merge_commit_sha: string;
  merged_at: string;
  merged_by_username: string;
}

/** How often a running instance looks for claims whose owner is gone (another instance crashed). */
const RECOVERY_EVERY_MS = 30_000;

/**
 * Merges an open pull in three steps, so no database transaction stays open while git runs:
 * 1. claim: one transaction marks the pull merged with `merge_pending = 1` (a conditional update
 *    on `status = 'open'`: of two simultaneous merges exactly one claims it, the other sees
 *    409 pull_merged, and a concurrent close sees pull_merged too) and checks protection;
 * 2. git: the merge is computed in the bare repository; just before the target branch moves,
 *    the new tip is recorded on the claim (`merge_claim_sha`);
 * 3. finish: one transaction sets `merge_commit_sha`, clears the claim and emits `pull-merged`;
 *    on any git failure (conflict, not fast-forward, error) the claim is undone instead and the
 *    pull is open again, with the branch unmoved.
 * Before the claim, an open pull's head is brought into the target repo (a fork pull's kept
 * head, `refs/pull/N/head`) and checked: no head is 409 source_branch_missing, a head the target
 * already contains 409 nothing_to_merge, a head sharing no commit with the target 409
 * unrelated_histories, and nothing changes (README "Pulls from forks").
 * A claim left by a crash is recovered by `recoverMergeClaims`: each claim names the instance
 * that holds it (`merge_claim_instance`, whose lease is src/db/instance-lease.ts), and a claim
 * whose instance no longer holds its lease is finished or released at once.
 */
export async function mergePull(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  strategy: MergeStrategy = 'merge',
): Promise<MergeResultJson> {
  // A first look (404/403 early, and the pull's uuid to recover a stale claim of it); the claim
  // below decides again on locked rows, so a member removal or an archive racing the merge
  // either waits for the claim or refuses it.
  const { access, pull } = await requirePull(deps, viewer, ref, number, { level: 'write', write: true });
  await recoverMergeClaims(deps, pull.uuid);
  // Only an open pull: a closed or merged one gets its 409 from the claim below.
  const head = pull.status === 'open' ? await mergeableHead(deps, access.repo, pull) : null;
  const lease = instanceLease(deps);
  await lease.hold();
  let mergedAt = '';
  let repo!: RepoRow;
  const claimed = await command(deps, viewer, onPull(ref, number, { level: 'write', write: true }), async (tx) => {
    repo = tx.access.access.repo;
    // README "Issue tracker": a draft is not merged (the pull row is locked: a concurrent "ready" waits)
    if (tx.access.pull.draft === 1 && tx.access.pull.status === 'open') {
      throw conflict('pull_is_draft', 'The pull is a draft: mark it ready for review before merging.');
    }
    // The claiming UPDATE waits on the pull's row lock (a review being submitted holds it), so
    // the merge time is read only once it holds that lock: never earlier than a review it counts.
    const res = await tx.db
      .updateTable('pulls')
      .set({
        status: 'merged',
        merged_by_uuid: viewer.uuid,
        merge_strategy: strategy,
        merge_pending: 1,
        merge_claim_sha: null,
        merge_claim_instance: lease.id,
      })
      .where('uuid', '=', pull.uuid)
      .where('status', '=', 'open')
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1) {
      mergedAt = nowIso();
      await tx.db
        .updateTable('pulls')
        .set({ merged_at: mergedAt, closed_at: mergedAt, updated_at: mergedAt, merge_claimed_at: mergedAt })
        .where('uuid', '=', pull.uuid)
        .execute();
    } else {
      const now = await tx.db.selectFrom('pulls').select('status').where('uuid', '=', pull.uuid).executeTakeFirst();
      if (!now) throw notFound('Pull');
      if (now.status === 'closed') throw conflict('pull_closed', 'The pull is closed: reopen it before merging.');
      throw conflict('pull_merged', 'The pull is already merged.');
    }
    const current = await tx.db.selectFrom('pulls').selectAll().where('uuid', '=', pull.uuid).executeTakeFirstOrThrow();
    const protection = await pullProtectionStatus(tx.db, repo, current, head);
    if (!protection.approvals_satisfied) {
      throw conflict(
        'protection_unsatisfied',
        `Branch protection "${protection.branch_pattern}" needs ${protection.required_approvals} approval(s); ` +
          `it has ${protection.approved_by.length}.`,
      );
    }
    // approvals first: a pull short of both is protection_unsatisfied
    const failing = protection.status_checks.filter((c) => c.state !== 'success');
    if (failing.length > 0) {
      throw conflict(
        'checks_unsatisfied',
        `Required status checks are not success on ${head}: ${failing.map((c) => `${c.context} (${c.state})`).join(', ')}.`,
      );
    }
    // README "Code review": a protection may need every conversation resolved
    if (protection.require_conversation_resolution) {
      const open = await unresolvedConversations(tx.db, pull.uuid);
      if (open > 0) {
        throw conflict(
          'conversations_unresolved',
          `${open} review conversation(s) are not resolved: resolve them before merging.`,
        );
      }
    }
    return current;
  });

  let sha: string;
  let tips: MergeTips;
  try {
    // reopened between the look above and the claim: look now
    const source = head ?? (await mergeableHead(deps, repo, claimed));
    const people = await deps.db
      .selectFrom('users')
      .select(['uuid', 'username', 'display_name', 'email'])
      .where('uuid', 'in', [viewer.uuid, claimed.author_uuid])
      .execute();
    const person = (uuid: string) => {
      const u = people.find((p) => p.uuid === uuid);
      return { name: u?.display_name || u?.username || 'weft', email: u?.email || 'weft@localhost' };
    };
    const outcome = await deps.git.merge({
      repo,
      pull: claimed,
      strategy,
      source,
      merger: person(viewer.uuid),
      author: person(claimed.author_uuid),
      beforeMove: async (next, before) => {
        await deps.db
          .updateTable('pulls')
          .set({ merge_claim_sha: next, merge_claim_before: before, merge_claim_head: source })
          .where('uuid', '=', pull.uuid)
          .execute();
        await testHold('before-move');
      },
    });
    if ('conflictPaths' in outcome) {
      throw conflict('merge_conflict', 'The source branch does not merge cleanly into the target branch.', outcome.conflictPaths);
    }
    if ('notFastForward' in outcome) {
      throw conflict('not_fast_forward', 'The target branch is not an ancestor of the source branch: it cannot fast-forward.');
    }
    if ('nothingToMerge' in outcome) throw nothingToMerge();
    if ('unrelatedHistories' in outcome) throw unrelatedHistories();
    if ('busy' in outcome) {
      throw conflict('target_moved', 'The target branch kept moving during the merge: try again.');
    }
    sha = outcome.sha;
    tips = { before: outcome.before ?? null, head: source, forced: false };
    await testHold('after-move');
  } catch (err) {
    await releaseClaim(deps, pull.uuid);
    throw err;
  }
  return finishMerge(deps, pull.uuid, sha, viewer, strategy, mergedAt, tips);
}

const nothingToMerge = () =>
  conflict('nothing_to_merge', 'The source has no commit that the target branch lacks: merging would land nothing.');

const unrelatedHistories = () =>
  conflict('unrelated_histories', 'The source and target branches share no commit: they have no base to merge from.');

/**
 * The pull's head as a commit of the target repo (synced first), when merging it would land
 * something: 409 source_branch_missing when there is no head, 409 nothing_to_merge when the
 * target branch already contains it, 409 unrelated_histories when the two share no commit.
 */
async function mergeableHead(deps: Deps, repo: RepoRow, pull: PullRow): Promise<string> {
  const head = await syncedPullHead(deps, pull);
  if (head === null) {
    throw conflict('source_branch_missing', `The source branch "${pull.source_branch}" does not exist: push it before merging.`);
  }
  const target = await deps.git.branchSha(repo.uuid, pull.target_branch);
  if (target !== null && (await deps.git.contains(repo.uuid, target, head))) throw nothingToMerge();
  if (target !== null && !(await deps.git.sharesHistory(repo.uuid, target, head))) throw unrelatedHistories();
  return head;
}

/** What a merge moved: the target's tip before it (null: a new branch) and the head it landed. */
interface MergeTips {
  before: string | null;
  head: string | null;
  forced: boolean;
}

async function finishMerge(
  deps: Deps,
  pullUuid: string,
  sha: string,
  merger: { uuid: string; username: string },
  strategy: MergeStrategy,
  mergedAt: string,
  tips: MergeTips,
): Promise<MergeResultJson> {
  // the target branch moved as by a push: its `on.push` workflows run, its schedules are recomputed
  const target = await deps.db
    .selectFrom('pulls')
    .select(['repo_uuid', 'target_branch'])
    .where('uuid', '=', pullUuid)
    .executeTakeFirstOrThrow();
  const move = {
    ref: `refs/heads/${target.target_branch}`,
    before: tips.before ?? ZERO_SHA,
    after: sha,
    forced: tips.forced,
  };
  const ci = await planRefMoveCi(deps, target.repo_uuid, [move], merger);
  const { result, pulls } = await inTransaction(deps, async (tx) => {
    const res = await tx.db
      .updateTable('pulls')
      .set({
        merge_commit_sha: sha,
        // the pull's diff after the merge runs from the merge base of these two
        merged_head_sha: tips.head,
        merged_base_sha: tips.before,
        merge_pending: 0,
        merge_claimed_at: null,
        merge_claim_sha: null,
        merge_claim_instance: null,
        merge_claim_before: null,
        merge_claim_head: null,
      })
      .where('uuid', '=', pullUuid)
      .where('merge_pending', '=', 1)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) throw new AppError(409, 'pull_merged', 'The pull is already merged.');
    // a merged pull has no auto-merge (docs/ci.md "Auto-merge")
    await tx.db.deleteFrom('pull_auto_merges').where('pull_uuid', '=', pullUuid).execute();
    const json = await loadPullJson(tx.db, pullUuid);
    // the target branch moved as by a push: branch-pushed, and pull-updated for pulls from it
    const moved = await emitRefMoves(deps, tx, json.repo_uuid, [move], merger);
    await applyRefMoveCi(deps, tx, json.repo_uuid, ci);
    await tx.emit({
      kind: 'pull-merged',
      scopes: pullScopes(json),
      actor: actorOf(merger),
      payload: {
        ...pullEventPayload(json),
        head_sha: tips.head,
        base_sha: tips.before,
        merge_strategy: strategy,
        merge_commit_sha: json.merge_commit_sha,
        merged_by_username: merger.username,
      },
    });
    // README "Issue tracker": a pull merged into its repo's default branch closes what its keywords name
    const repo = await tx.db.selectFrom('repos').selectAll().where('uuid', '=', json.repo_uuid).executeTakeFirst();
    if (repo && json.target_branch === repo.default_branch) {
      const messages = (await deps.git.commitsBetween(repo.uuid, `${sha}^`, sha).catch(() => []))
        .slice(-250)
        .map((c) => c.message);
      const text = [json.title, json.body, ...messages].join('\n');
      await closeByKeywords(tx, merger, repo, text, { pull_number: json.number }, (tx2, scopes, thread, closer) =>
        closeThreadRow(tx2, scopes, thread as ThreadRow, 'completed', closer as Closer, merger),
      );
    }
    return {
      pulls: moved,
      result: {
        pull: json,
        merge_strategy: strategy,
        merge_commit_sha: sha,
        merged_at: mergedAt,
        merged_by_username: merger.username,
      },
    };
  });
  await syncPullHeads(deps, pulls);
  return result;
}

/** Undoes a claim: the pull is open again, as before the merge began. */
async function releaseClaim(deps: Deps, pullUuid: string): Promise<void> {
  await deps.db
    .updateTable('pulls')
    .set({
      status: 'open',
      merged_at: null,
      closed_at: null,
      merged_by_uuid: null,
      merge_strategy: null,
      merge_pending: 0,
      merge_claimed_at: null,
      merge_claim_sha: null,
      merge_claim_instance: null,
      merge_claim_before: null,
      merge_claim_head: null,
    })
    .where('uuid', '=', pullUuid)
    .where('merge_pending', '=', 1)
    .execute();
}

/**
 * Recovers the merge claims (all of them, or one pull's) whose instance no longer holds its
 * lease: when the recorded tip is on the target branch the merge happened, so it is finished
 * (with its event); otherwise nothing moved and the pull is open again. The pull record then
 * agrees with the branch. A running instance's claims are left alone. Returns how many were recovered.
 */
export async function recoverMergeClaims(deps: Deps, pullUuid?: string): Promise<number> {
  let q = deps.db.selectFrom('pulls').selectAll().where('merge_pending', '=', 1);
  if (pullUuid) q = q.where('uuid', '=', pullUuid);
  const stale: Selectable<PullsTable>[] = [];
  for (const p of await q.execute()) {
    if (await ownerIsGone(deps.db as Kysely<unknown>, deps.dialect, p.merge_claim_instance)) stale.push(p);
  }
  for (const p of stale) {
    const tip = await deps.git.branchSha(p.repo_uuid, p.target_branch);
    const landed = p.merge_claim_sha !== null && tip !== null && (await deps.git.contains(p.repo_uuid, tip, p.merge_claim_sha));
    if (!landed) {
      await releaseClaim(deps, p.uuid);
      continue;
    }
    const merger = await deps.db
      .selectFrom('users')
      .select(['uuid', 'username'])
      .where('uuid', '=', p.merged_by_uuid!)
      .executeTakeFirst();
    await finishMerge(
      deps,
      p.uuid,
      p.merge_claim_sha!,
      merger ?? { uuid: p.merged_by_uuid!, username: '' },
      (p.merge_strategy ?? 'merge') as MergeStrategy,
      p.merged_at!,
      { before: p.merge_claim_before, head: p.merge_claim_head, forced: false },
    ).catch(() => undefined);
  }
  return stale.length;
}

/**
 * Tests only: `WEFT_TEST_MERGE_HOLD=before-move|after-move` holds a merge there (the claim's tip
 * recorded, the branch not yet moved; or moved but not yet finished), so a test can kill the process.
 */
async function testHold(stage: 'before-move' | 'after-move'): Promise<void> {
  if (process.env.WEFT_TEST_MERGE_HOLD !== stage) return;
  process.stderr.write(`weft-test: holding a merge (${stage})\n`);
  await new Promise((r) => setTimeout(r, 600_000));
}

const recoveryTimers = new WeakMap<Deps, NodeJS.Timeout>();

/**
 * Start-up: takes this instance's lease, recovers every claim whose owner is gone at once, then
 * looks again every 30 s (for instances that crash while this one runs).
 */
export async function startMergeRecovery(deps: Deps): Promise<void> {
  await instanceLease(deps).hold();
  const run = () => recoverMergeClaims(deps).catch((err) => console.error('weft: recovering merge claims failed:', err));
  await run();
  const timer = setInterval(() => void run(), RECOVERY_EVERY_MS);
  timer.unref();
  recoveryTimers.set(deps, timer);
}

/** Shutdown: stops looking and gives the lease up (this instance's claims were finished or released by then). */
export async function stopMergeRecovery(deps: Deps): Promise<void> {
  clearInterval(recoveryTimers.get(deps));
  recoveryTimers.delete(deps);
  await instanceLease(deps).release();
}
