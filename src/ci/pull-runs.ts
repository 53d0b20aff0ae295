/**
 * Runs for pull events (docs/ci.md "Pull requests"): `opened`, `synchronize` (its source branch
 * moved) and `reopened` start one run per matching workflow of the target repo, read at the pull's
 * head, written in the transaction of the change. A pull from another repo (a fork) gets no
 * secrets and a read-only token; one whose author has no write access to the target and no merged
 * pull there waits for approval (`POST {repo}/runs/{n}/approve`).
 */
import { levelAtLeast, type RepoRow, storedUserRepoLevel } from '../access/index.ts';
import type { TxContext } from '../core/transaction.ts';
import type { Deps } from '../deps.ts';
import { insertRuns, planPullRuns } from './runs.ts';
import type { PullType } from './workflow/model.ts';

/** Whether a pull author's runs wait for approval: no write access to the target and no merged pull there. */
async function firstTimeContributor(tx: TxContext, repoUuid: string, authorUuid: string): Promise<boolean> {
  const [user, repo] = await Promise.all([
    tx.db
      .selectFrom('users')
      .select(['uuid', 'username', 'is_staff', 'is_active'])
      .where('uuid', '=', authorUuid)
      .executeTakeFirst(),
    tx.db.selectFrom('repos').selectAll().where('uuid', '=', repoUuid).executeTakeFirst(),
  ]);
  if (!user || !repo) return true;
  if (levelAtLeast(await storedUserRepoLevel(tx.db, user, repo as RepoRow), 'write')) return false;
  const merged = await tx.db
    .selectFrom('pulls')
    .select('uuid')
    .where('repo_uuid', '=', repoUuid)
    .where('author_uuid', '=', authorUuid)
    .where('status', '=', 'merged')
    .limit(1)
    .executeTakeFirst();
  return !merged;
}

/** Writes the runs a pull event starts, in the event's transaction. */
export async function startPullRuns(
  deps: Deps,
  tx: TxContext,
  pullUuid: string,
  type: PullType,
  actor: { uuid: string; username: string },
  headSha?: string,
): Promise<void> {
  const pull = await tx.db
    .selectFrom('pulls')
    .select(['repo_uuid', 'number', 'source_repo_uuid', 'source_branch', 'target_branch', 'author_uuid', 'status'])
    .where('uuid', '=', pullUuid)
    .executeTakeFirst();
  if (!pull || pull.status !== 'open') return;
  const source = pull.source_repo_uuid ?? pull.repo_uuid;
  const head = headSha ?? (await deps.git.branchSha(source, pull.source_branch));
  if (!head) return;
  const base = await deps.git.branchSha(pull.repo_uuid, pull.target_branch);
  const fork = source !== pull.repo_uuid;
  const waiting = await firstTimeContributor(tx, pull.repo_uuid, pull.author_uuid);
  const plans = await planPullRuns(
    deps,
    pull.repo_uuid,
    { number: pull.number, base: pull.target_branch, head_sha: head, head_branch: pull.source_branch, base_sha: base },
    type,
    actor,
    { fork, waiting, sourceRepo: source },
  );
  if (plans.length) await insertRuns(deps, tx, pull.repo_uuid, plans);
}
