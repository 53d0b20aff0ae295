import type { Kysely, Selectable } from 'kysely';
import { approvalCounts, pullContextOf, type RepoRow } from '../access/index.ts';
import type { DB, ProtectionsTable } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { branchMatchesPattern, isGlobPattern } from '../git/refname.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import { requiredContexts } from '../protections/service.ts';
import { latestStatuses } from '../statuses/service.ts';
import { pullHeadSha } from './heads.ts';
import type { PullRow } from './service.ts';

type ProtectionRow = Selectable<ProtectionsTable>;

export interface PullProtectionJson {
  protected: boolean;
  branch_pattern: string | null;
  required_approvals: number;
  approvers: string[];
  approved_by: string[];
  required_status_contexts: string[];
  status_checks: Array<{ context: string; state: string }>;
  /** merges need every review conversation resolved (README "Code review") */
  require_conversation_resolution: boolean;
  /** the approvals alone are enough (the merge tells protection_unsatisfied from checks_unsatisfied) */
  approvals_satisfied: boolean;
  satisfied: boolean;
}

export const PROTECTION_MATCHING_RULES =
  "The protection that applies is the one whose `branch` matches the pull's target branch. " +
  'A `branch` without `*` or `?` matches only that exact name. In a glob, `*` matches any run of characters ' +
  'except `/`, `**` matches any run including `/`, and `?` matches one character except `/`; the glob must ' +
  'match the whole branch name. An exact name beats every glob; among several matching globs the most specific ' +
  'wins: the one with the most literal (non-wildcard) characters, ties broken by the earliest created. ' +
  'Approvals: the latest non-removed review of each user counts when it is `approved`. When the protection has ' +
  'approvers, only listed users count (read access is enough); otherwise any user with write access to the repo ' +
  '(staff included) other than the pull author. Access is evaluated at the time of the request, not of the review: ' +
  'an approval stops counting when its author loses the access it needs (demoted, removed from the team, taken off ' +
  'the approver list) or is deactivated, and counts again if that access returns. Protections are read at request ' +
  'time too, so editing or deleting a protection or its approvers changes the status of open pulls at once. ' +
  '`satisfied` is `approved_by.length >= required_approvals` and every context of `required_status_contexts` `success` ' +
  "on the pull's head (`status_checks`, sorted by context: the latest status of each required context on `head_sha`, " +
  '`missing` when none was reported; a new push moves head_sha, so earlier results stop counting); an unprotected pull ' +
  'is always satisfied.';

const literalLength = (pattern: string) => pattern.replace(/[*?]/g, '').length;

/** The protection that governs `branch` among a repo's protections (rules in PROTECTION_MATCHING_RULES). */
export function matchProtection(protections: ProtectionRow[], branch: string): ProtectionRow | null {
  const exact = protections.find((p) => p.branch === branch);
  if (exact) return exact;
  const globs = protections
    .filter((p) => isGlobPattern(p.branch) && branchMatchesPattern(p.branch, branch))
    .sort(
      (a, b) =>
        literalLength(b.branch) - literalLength(a.branch) ||
        a.created_at.localeCompare(b.created_at) ||
        a.uuid.localeCompare(b.uuid),
    );
  return globs[0] ?? null;
}

/**
 * The protection status of a pull, read through `db` (pass the transaction when inside one:
 * on SQLite a query on the outer handle would wait for the transaction forever).
 */
export async function pullProtectionStatus(
  db: Kysely<DB>,
  repo: RepoRow,
  pull: PullRow,
  /** the pull's head now (`pullHeadSha`): the commit whose statuses count */
  headSha: string | null,
): Promise<PullProtectionJson> {
  const protections = await db.selectFrom('protections').selectAll().where('repo_uuid', '=', repo.uuid).execute();
  const protection = matchProtection(protections, pull.target_branch);
  if (!protection) {
    return {
      protected: false,
      branch_pattern: null,
      required_approvals: 0,
      approvers: [],
      approved_by: [],
      required_status_contexts: [],
      status_checks: [],
      require_conversation_resolution: false,
      approvals_satisfied: true,
      satisfied: true,
    };
  }
  // one statement more than approvals alone: the latest status of each required context
  const contexts = requiredContexts(protection);
  const reported = headSha === null ? [] : await latestStatuses(db, repo.uuid, headSha, contexts);
  const stateOf = new Map(reported.map((st) => [st.context, st.state as string]));
  const checks = contexts.map((context) => ({ context, state: stateOf.get(context) ?? 'missing' }));
  const approverRows = await db
    .selectFrom('protection_approvers as pa')
    .innerJoin('users as u', 'u.uuid', 'pa.user_uuid')
    .select(['u.uuid', 'u.username'])
    .where('pa.protection_uuid', '=', protection.uuid)
    .orderBy('pa.created_at')
    .orderBy('u.username')
    .execute();
  const approverUuids = new Set(approverRows.map((r) => r.uuid));

  const reviews = await db
    .selectFrom('reviews as r')
    .innerJoin('users as u', 'u.uuid', 'r.author_uuid')
    .select(['r.author_uuid', 'r.status', 'r.seq', 'u.username', 'u.is_staff', 'u.is_active'])
    .where('r.pull_uuid', '=', pull.uuid)
    .where('r.removed_at', 'is', null)
    .where('r.status', '<>', 'pending')
    .orderBy('r.seq')
    .orderBy('r.created_at')
    .orderBy('r.uuid')
    .execute();
  const latest = new Map<string, (typeof reviews)[number]>();
  for (const review of reviews) {
    // re-inserting keeps the map in order of each user's latest review
    latest.delete(review.author_uuid);
    latest.set(review.author_uuid, review);
  }

  const approvedBy: string[] = [];
  for (const review of latest.values()) {
    if (review.status !== 'approved' || review.author_uuid === pull.author_uuid) continue;
    const reviewer = {
      uuid: review.author_uuid,
      username: review.username,
      is_staff: review.is_staff,
      is_active: review.is_active,
    };
    if (!(await approvalCounts(db, reviewer, repo, approverUuids))) continue;
    approvedBy.push(review.username);
  }
  return {
    protected: true,
    branch_pattern: protection.branch,
    required_approvals: protection.required_approvals,
    approvers: approverRows.map((r) => r.username),
    approved_by: approvedBy,
    required_status_contexts: contexts,
    status_checks: checks,
    require_conversation_resolution: protection.require_conversation_resolution === 1,
    approvals_satisfied: approvedBy.length >= protection.required_approvals,
    satisfied: approvedBy.length >= protection.required_approvals && checks.every((c) => c.state === 'success'),
  };
}

/** GET .../pulls/{n}/protection: read access to the repo. */
export async function getPullProtection(deps: Deps, viewer: Viewer, at: RepoAt, number: number): Promise<PullProtectionJson> {
  const { repo, pull } = await pullContextOf(deps.database, viewer, at, number);
  const { approvals_satisfied: _, ...status } = await pullProtectionStatus(deps.db, repo, pull, await pullHeadSha(deps, pull));
  return status as PullProtectionJson;
}
