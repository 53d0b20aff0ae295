/**
 * `schedule` triggers (docs/ci.md "Schedules"): the workflows of a repo's default branch with
 * `on.schedule` have a row in `ci_schedules`, written in the transaction of the push that moved
 * the default branch (a workflow removed, or no longer scheduled, loses its row). Each row's next
 * slot is a job of the job queue, due at that slot and keyed by it (`ci-schedule:{repo}:{path}:
 * {slot}`), and its handler queues the following slot in the same transaction as the run it
 * writes, so a schedule keeps going through restarts. A slot makes one run across instances: the
 * handler takes the slot with an update conditional on `next_at` still being that slot, in the
 * run's transaction; a stale job (its schedule changed or went) finds another `next_at` and does
 * nothing. Runs are at least `CI_SCHEDULE_MIN_INTERVAL_SECONDS` apart; slots missed while no
 * server ran are not made up, the first due one runs once.
 */
import { inTransaction, type TxContext } from '../core/transaction.ts';
import type { Deps } from '../deps.ts';
import { ZERO_SHA } from '../git/run.ts';
import { nowIso } from '../time.ts';
import { insertRuns, readWorkflowFiles } from './runs.ts';
import { parseWorkflow } from './workflow/parse.ts';
import { cronFiresAt, nextCronTime } from './workflow/triggers.ts';

export const JOB_CI_SCHEDULE = 'ci-schedule';

type Person = { uuid: string; username: string };

/** The scheduled workflows of the default branch after a push (null: the push left it alone). */
export interface SchedulePlan {
  workflows: Array<{ path: string; crons: string[] }>;
  pusher: Person;
}

/** The scheduled workflows of a commit: parsed files with `on.schedule` (refused files have none). */
async function scheduledWorkflows(deps: Deps, repoUuid: string, sha: string) {
  const out: Array<{ path: string; crons: string[] }> = [];
  for (const f of await readWorkflowFiles(deps, repoUuid, sha)) {
    const parsed = parseWorkflow(f.path, f.text);
    if (parsed.ok && parsed.workflow.on.schedule?.length)
      out.push({ path: f.path, crons: parsed.workflow.on.schedule.map((s) => s.cron) });
  }
  return out;
}

/** Read before a push's transaction: the default branch's scheduled workflows, when the push moved it. */
export async function planSchedules(
  deps: Deps,
  repoUuid: string,
  moves: Array<{ ref: string; after: string }>,
  pusher: Person,
): Promise<SchedulePlan | null> {
  const repo = await deps.db.selectFrom('repos').select('default_branch').where('uuid', '=', repoUuid).executeTakeFirst();
  if (!repo) return null;
  const move = moves.find((m) => m.ref === `refs/heads/${repo.default_branch}`);
  if (!move) return null;
  const workflows = move.after === ZERO_SHA ? [] : await scheduledWorkflows(deps, repoUuid, move.after);
  return { workflows, pusher };
}

/**
 * The slot after `after` (ms, exclusive) of the crons, at least `minMs` after the previous run's
 * slot; null when the crons never fire.
 */
export function followingSlot(crons: string[], after: number, lastSlot: number | null, minMs: number): number | null {
  const from = lastSlot === null ? after : Math.max(after, lastSlot + minMs - 1);
  return nextCronTime(crons, new Date(from))?.getTime() ?? null;
}

const jobKey = (repoUuid: string, path: string, slot: string) => `${JOB_CI_SCHEDULE}:${repoUuid}:${path}:${slot}`;

async function queueSlot(deps: Deps, tx: TxContext, repoUuid: string, path: string, slot: string): Promise<void> {
  await deps.jobs.enqueue(tx.db, {
    kind: JOB_CI_SCHEDULE,
    payload: { repo_uuid: repoUuid, path, slot },
    runAt: slot,
    dedupeKey: jobKey(repoUuid, path, slot),
  });
}

const minMs = (deps: Deps) => deps.config.ciScheduleMinIntervalSeconds * 1000;

/**
 * In the push's transaction: the rows follow the plan. An unchanged schedule keeps its slot and
 * actor; a new or changed one starts from now, with the pusher as its actor.
 */
export async function applySchedules(deps: Deps, tx: TxContext, repoUuid: string, plan: SchedulePlan | null): Promise<void> {
  if (!plan) return;
  const rows = await tx.db.selectFrom('ci_schedules').selectAll().where('repo_uuid', '=', repoUuid).execute();
  const keep = new Set(plan.workflows.map((w) => w.path));
  const gone = rows.filter((r) => !keep.has(r.workflow_path)).map((r) => r.workflow_path);
  if (gone.length)
    await tx.db.deleteFrom('ci_schedules').where('repo_uuid', '=', repoUuid).where('workflow_path', 'in', gone).execute();
  const now = deps.clock.now().getTime();
  for (const wf of plan.workflows) {
    const crons = JSON.stringify(wf.crons);
    const row = rows.find((r) => r.workflow_path === wf.path);
    if (row && row.crons === crons) continue;
    const last = row?.last_slot ? Date.parse(row.last_slot) : null;
    const next = followingSlot(wf.crons, now, last, minMs(deps));
    const nextAt = next === null ? null : new Date(next).toISOString();
    const values = { crons, actor_uuid: plan.pusher.uuid, next_at: nextAt, updated_at: nowIso() };
    if (row)
      await tx.db
        .updateTable('ci_schedules')
        .set(values)
        .where('repo_uuid', '=', repoUuid)
        .where('workflow_path', '=', wf.path)
        .execute();
    else
      await tx.db
        .insertInto('ci_schedules')
        .values({ repo_uuid: repoUuid, workflow_path: wf.path, last_slot: null, ...values })
        .execute();
    if (nextAt) await queueSlot(deps, tx, repoUuid, wf.path, nextAt);
  }
}

/** The run's actor: the user whose push set the schedule, else (gone or inactive) a user repo's owner. */
async function actorOf(deps: Deps, actorUuid: string, repo: { owner_kind: string; owner_uuid: string }): Promise<Person | null> {
  for (const uuid of [actorUuid, repo.owner_kind === 'user' ? repo.owner_uuid : null]) {
    if (!uuid) continue;
    const u = await deps.db
      .selectFrom('users')
      .select(['uuid', 'username', 'is_active'])
      .where('uuid', '=', uuid)
      .executeTakeFirst();
    if (u && Number(u.is_active) === 1) return { uuid: u.uuid, username: u.username };
  }
  return null;
}

/**
 * The job of one slot: reads the workflow at the default branch's tip now, and when it still has
 * that schedule, takes the slot (conditional on `next_at`) and writes the run and the next slot's
 * job in one transaction. A workflow gone from the default branch loses its row; a changed
 * schedule (a write that is not a push) starts again from now.
 */
export async function fireSchedule(deps: Deps, repoUuid: string, path: string, slot: string): Promise<string | null> {
  const row = await deps.db
    .selectFrom('ci_schedules')
    .selectAll()
    .where('repo_uuid', '=', repoUuid)
    .where('workflow_path', '=', path)
    .executeTakeFirst();
  if (!row || row.next_at !== slot) return null;
  const drop = () =>
    deps.db.deleteFrom('ci_schedules').where('repo_uuid', '=', repoUuid).where('workflow_path', '=', path).execute();
  const repo = await deps.db
    .selectFrom('repos')
    .select(['default_branch', 'owner_kind', 'owner_uuid', 'is_archived'])
    .where('uuid', '=', repoUuid)
    .executeTakeFirst();
  const sha = repo ? await deps.git.branchSha(repoUuid, repo.default_branch).catch(() => null) : null;
  const file = sha ? (await readWorkflowFiles(deps, repoUuid, sha)).find((f) => f.path === path) : undefined;
  const parsed = file ? parseWorkflow(file.path, file.text) : null;
  if (!repo || !sha || !parsed?.ok || !parsed.workflow.on.schedule?.length) {
    await drop();
    return null;
  }
  const crons = parsed.workflow.on.schedule.map((s) => s.cron);
  const now = deps.clock.now().getTime();
  const slotMs = Date.parse(slot);
  const cron = crons.find((c) => cronFiresAt(c, slotMs));
  const actor = await actorOf(deps, row.actor_uuid, repo);
  // an archived repo or one whose actor is gone runs nothing, but its schedule goes on
  const runs = cron !== undefined && actor !== null && Number(repo.is_archived) !== 1;
  const next = runs ? followingSlot(crons, now, slotMs, minMs(deps)) : followingSlot(crons, now, null, 0);
  const nextAt = next === null ? null : new Date(next).toISOString();
  return inTransaction(deps, async (tx) => {
    const taken = await tx.db
      .updateTable('ci_schedules')
      .set({
        next_at: nextAt,
        crons: JSON.stringify(crons),
        ...(runs ? { last_slot: slot } : {}),
        updated_at: nowIso(),
      })
      .where('repo_uuid', '=', repoUuid)
      .where('workflow_path', '=', path)
      .where('next_at', '=', slot)
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) === 0) return null;
    if (nextAt) await queueSlot(deps, tx, repoUuid, path, nextAt);
    if (!runs || !actor || cron === undefined) return null;
    const ref = `refs/heads/${repo.default_branch}`;
    const [uuid] = await insertRuns(deps, tx, repoUuid, [
      {
        path,
        parsed,
        event: 'schedule',
        ref,
        headSha: sha,
        headBranch: repo.default_branch,
        pullNumber: null,
        actor,
        fork: false,
        waiting: false,
        inputs: {},
        payload: { schedule: cron, ref },
      },
    ]);
    return uuid ?? null;
  });
}

/** Registers the job; at start, queues each schedule's pending slot (a no-op when it is queued). */
export function registerSchedules(deps: Deps): void {
  deps.jobs.register(JOB_CI_SCHEDULE, async (payload) => {
    await fireSchedule(deps, String(payload.repo_uuid), String(payload.path), String(payload.slot));
  });
}

export async function queuePendingSlots(deps: Deps): Promise<void> {
  const rows = await deps.db.selectFrom('ci_schedules').select(['repo_uuid', 'workflow_path', 'next_at']).execute();
  for (const r of rows) {
    if (!r.next_at) continue;
    await inTransaction(deps, (tx) => queueSlot(deps, tx, r.repo_uuid, r.workflow_path, r.next_at as string));
  }
}
