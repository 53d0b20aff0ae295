/**
 * Runs and jobs (docs/ci.md "Runs"): a push, a pull event or a dispatch makes one run per
 * matching workflow of the commit, written in the transaction of the write that caused it; each
 * job instance (one per matrix combination) reports a commit status `{workflow} / {job}`.
 * Workflow files are read from git before the transaction (`plan…`), the rows are written in it
 * (`insertRuns`). Jobs whose needs are finished are queued or skipped as their `if` says
 * (`advanceRun`), and a run completes with its jobs.
 */
import { wakeAutoMerge } from '../pulls/auto-merge-state.ts';
import { randomUUID } from 'node:crypto';
import type { TxContext } from '../core/transaction.ts';
import type { Deps } from '../deps.ts';
import { actorOf } from '../events/service.ts';
import { codeReaders } from '../git/readers.ts';
import { parseTree } from '../git/objects.ts';
import { ZERO_SHA } from '../git/run.ts';
import { repoFullNames } from '../pulls/heads.ts';
import { nowIso } from '../time.ts';
import { ExpressionError, interpolateText, type Value } from './workflow/expr.ts';
import { formatError, type Job, type MatrixRow, type PullType, type Workflow } from './workflow/model.ts';
import { parseWorkflow, type ParseResult } from './workflow/parse.ts';
import {
  evaluateConcurrency,
  expandMatrix,
  jobInstanceName,
  jobOrder,
  type NeedResult,
  PlanError,
  shouldRunJob,
  statusContext,
} from './workflow/plan.ts';
import { matchesPull, matchesPush } from './workflow/triggers.ts';
import { emitJobCompleted, emitRunEvent } from './run-events.ts';
import { wakePollers } from './wake.ts';

export interface WorkflowFile {
  path: string;
  text: string;
}

const MAX_WORKFLOW_FILES = 50;

/**
 * The workflow files of a commit: `.weft/workflows/*.yml|yaml`, or `.github/workflows/` when the
 * commit has no `.weft/workflows/` (at most 50, by name).
 */
export async function readWorkflowFiles(deps: Deps, repoUuid: string, sha: string): Promise<WorkflowFile[]> {
  const readers = codeReaders(deps);
  const dir = readers.dirOf(repoUuid);
  if (!dir) return [];
  for (const folder of ['.weft/workflows', '.github/workflows']) {
    const tree = await readers.objects.one(dir, `${sha}:${folder}`).catch(() => null);
    if (!tree || tree.type !== 'tree') continue;
    const names = parseTree(tree.data)
      .filter((e) => e.type === 'file' && /\.ya?ml$/.test(e.name))
      .map((e) => ({ name: e.name, oid: e.oid }))
      .sort((a, b) => (a.name < b.name ? -1 : 1))
      .slice(0, MAX_WORKFLOW_FILES);
    const out: WorkflowFile[] = [];
    for (const n of names) {
      const blob = await readers.objects.one(dir, n.oid);
      if (blob) out.push({ path: `${folder}/${n.name}`, text: blob.data.toString('utf8') });
    }
    return out;
  }
  return [];
}

export type CiEvent = 'push' | 'pull_request' | 'workflow_dispatch' | 'schedule';

/** A run to write: its workflow (parsed or refused) and what started it. */
export interface RunPlan {
  path: string;
  parsed: ParseResult;
  event: CiEvent;
  ref: string;
  headSha: string;
  headBranch: string | null;
  pullNumber: number | null;
  actor: { uuid: string; username: string };
  /** a pull from a fork: no secrets, a read-only token */
  fork: boolean;
  /** waits for approval (a first-time contributor's pull) */
  waiting: boolean;
  inputs: Record<string, Value>;
  /** the event's payload as `weft.event` */
  payload: Record<string, Value>;
}

const changedPaths = async (deps: Deps, repoUuid: string, before: string | null, after: string) =>
  (await deps.git.filesBetween(repoUuid, before, after).catch(() => null))?.map((f) => f.path);

/** The runs a push's ref moves start (read before the push's transaction). */
export async function planPushRuns(
  deps: Deps,
  repoUuid: string,
  moves: Array<{ ref: string; before: string; after: string }>,
  pusher: { uuid: string; username: string },
): Promise<RunPlan[]> {
  const plans: RunPlan[] = [];
  for (const m of moves) {
    if (m.after === ZERO_SHA) continue;
    if (!m.ref.startsWith('refs/heads/') && !m.ref.startsWith('refs/tags/')) continue;
    const files = await readWorkflowFiles(deps, repoUuid, m.after);
    if (files.length === 0) continue;
    const changed =
      m.before === ZERO_SHA || m.ref.startsWith('refs/tags/') ? undefined : await changedPaths(deps, repoUuid, m.before, m.after);
    for (const f of files) {
      const parsed = parseWorkflow(f.path, f.text);
      // a refused file makes a failed run only when it could have been meant for this event
      if (parsed.ok ? !matchesPush(parsed.workflow, m.ref, changed) : !/\bpush\b/.test(f.text)) continue;
      const branch = m.ref.startsWith('refs/heads/') ? m.ref.slice(11) : null;
      plans.push({
        path: f.path,
        parsed,
        event: 'push',
        ref: m.ref,
        headSha: m.after,
        headBranch: branch,
        pullNumber: null,
        actor: pusher,
        fork: false,
        waiting: false,
        inputs: {},
        payload: { ref: m.ref, before: m.before, after: m.after },
      });
    }
  }
  return plans;
}

/** The runs a pull event starts: the target repo's workflows at the pull's head commit. */
export async function planPullRuns(
  deps: Deps,
  repoUuid: string,
  pull: { number: number; base: string; head_sha: string; head_branch: string; base_sha: string | null },
  type: PullType,
  actor: { uuid: string; username: string },
  opts: { fork: boolean; waiting: boolean; sourceRepo?: string },
): Promise<RunPlan[]> {
  // a fork's head is in its own repo until the target keeps it: the same commit, the same files
  const at = opts.sourceRepo ?? repoUuid;
  const files = await readWorkflowFiles(deps, at, pull.head_sha);
  if (files.length === 0) return [];
  const changed = pull.base_sha ? await changedPaths(deps, at, pull.base_sha, pull.head_sha) : undefined;
  const plans: RunPlan[] = [];
  for (const f of files) {
    const parsed = parseWorkflow(f.path, f.text);
    if (parsed.ok ? !matchesPull(parsed.workflow, type, pull.base, changed) : !/\bpull_request\b/.test(f.text)) continue;
    plans.push({
      path: f.path,
      parsed,
      event: 'pull_request',
      ref: `refs/pull/${pull.number}/head`,
      headSha: pull.head_sha,
      headBranch: pull.head_branch,
      pullNumber: pull.number,
      actor,
      fork: opts.fork,
      waiting: opts.waiting,
      inputs: {},
      payload: { action: type, number: pull.number, pull_request: { number: pull.number, base: { ref: pull.base } } },
    });
  }
  return plans;
}

interface RepoFacts {
  uuid: string;
  owner_kind: string;
  owner_uuid: string;
  full_name: string;
}

async function repoFacts(tx: TxContext, repoUuid: string): Promise<RepoFacts | null> {
  const row = await tx.db
    .selectFrom('repos')
    .select(['uuid', 'owner_kind', 'owner_uuid'])
    .where('uuid', '=', repoUuid)
    .executeTakeFirst();
  if (!row) return null;
  const full = (await repoFullNames(tx.db, [repoUuid])).get(repoUuid) ?? repoUuid;
  return { ...row, full_name: full };
}

export const repoScopesOf = (r: { uuid: string; owner_kind: string; owner_uuid: string }) => [
  `repo:${r.uuid}`,
  `${r.owner_kind === 'team' ? 'team' : 'user'}:${r.owner_uuid}`,
];

/** The job's page, the target of its status. */
export const jobUrl = (deps: Deps, fullName: string, number: number, jobUuid: string) =>
  `${deps.config.publicUrl.replace(/\/$/, '')}/${fullName}/runs/${number}/jobs/${jobUuid}`;

/** A commit status written by CI (creator: the run's actor), with its `status-created` event. */
export async function ciStatus(
  deps: Deps,
  tx: TxContext,
  repo: RepoFacts,
  sha: string,
  state: 'pending' | 'success' | 'failure' | 'error',
  context: string,
  description: string,
  targetUrl: string | null,
  creator: { uuid: string; username: string },
): Promise<void> {
  const row = {
    uuid: randomUUID(),
    repo_uuid: repo.uuid,
    sha,
    state,
    context,
    description: description.slice(0, 1000),
    target_url: targetUrl,
    creator_uuid: creator.uuid,
    created_at: nowIso(),
  };
  await tx.db.insertInto('commit_statuses').values(row).execute();
  const branches = (await deps.git.refs(repo.uuid, 'refs/heads/').catch(() => []))
    .filter((r) => r.sha === sha)
    .map((r) => r.ref.slice('refs/heads/'.length));
  await tx.emit({
    kind: 'status-created',
    scopes: repoScopesOf(repo),
    actor: actorOf(creator),
    payload: {
      repo_uuid: repo.uuid,
      status: {
        uuid: row.uuid,
        sha,
        state,
        context,
        description: row.description,
        target_url: targetUrl,
        creator: { uuid: creator.uuid, username: creator.username },
        created_at: row.created_at,
      },
      branches,
    },
  });
  // docs/ci.md "Auto-merge": a job ending in success may be what a pull waits for
  if (state === 'success') await wakeAutoMerge(deps, tx.db, { repoUuid: repo.uuid });
}

/** The `weft`/`github` context of a run. */
export function runContext(
  run: { uuid: string; number: number; event: string; ref: string; head_sha: string; attempt: number },
  fullName: string,
  actor: string,
  payload: Record<string, Value>,
): Record<string, Value> {
  const refName = run.ref.replace(/^refs\/(heads|tags)\//, '');
  return {
    event_name: run.event,
    ref: run.ref,
    ref_name: refName,
    sha: run.head_sha,
    repository: fullName,
    actor,
    run_id: run.uuid,
    run_number: run.number,
    run_attempt: run.attempt,
    event: payload,
  };
}

const STATUS_OF: Record<string, 'success' | 'failure' | 'error'> = {
  success: 'success',
  skipped: 'success',
  failure: 'failure',
  timed_out: 'failure',
  startup_failure: 'failure',
  cancelled: 'error',
};

/** Writes the runs of `plans` (in the transaction of the write that caused them). */
export async function insertRuns(deps: Deps, tx: TxContext, repoUuid: string, plans: RunPlan[]): Promise<string[]> {
  if (plans.length === 0) return [];
  const repo = await repoFacts(tx, repoUuid);
  if (!repo) return [];
  const uuids: string[] = [];
  for (const plan of plans) uuids.push(await insertRun(deps, tx, repo, plan));
  tx.afterCommit(wakePollers);
  return uuids;
}

async function nextRunNumber(tx: TxContext, repoUuid: string): Promise<number> {
  const row = await tx.db
    .selectFrom('ci_runs')
    .select((eb) => eb.fn.max('number').as('n'))
    .where('repo_uuid', '=', repoUuid)
    .executeTakeFirst();
  return Number(row?.n ?? 0) + 1;
}

async function insertRun(deps: Deps, tx: TxContext, repo: RepoFacts, plan: RunPlan): Promise<string> {
  const now = nowIso();
  const number = await nextRunNumber(tx, repo.uuid);
  const uuid = randomUUID();
  const wf = plan.parsed.ok ? plan.parsed.workflow : null;
  const base = {
    uuid,
    repo_uuid: repo.uuid,
    number,
    workflow_path: plan.path,
    workflow_name: wf?.name ?? plan.path,
    event: plan.event,
    ref: plan.ref,
    head_sha: plan.headSha,
    head_branch: plan.headBranch,
    pull_number: plan.pullNumber,
    actor_uuid: plan.actor.uuid,
    attempt: 1,
    fork: plan.fork ? 1 : 0,
    inputs: JSON.stringify(plan.inputs),
    workflow_json: wf ? JSON.stringify(wf) : null,
    created_at: now,
  };
  const ctx = {
    contexts: {
      weft: runContext({ ...base, event: plan.event }, repo.full_name, plan.actor.username, plan.payload),
      github: runContext({ ...base, event: plan.event }, repo.full_name, plan.actor.username, plan.payload),
      inputs: plan.inputs,
      vars: {},
      env: {},
    },
  };
  let error: string | null = plan.parsed.ok ? null : plan.parsed.errors.map(formatError).join('\n');
  let group: { group: string; cancel: boolean } | null = null;
  const instances: Array<{ job: Job; matrix: MatrixRow | null; name: string; runsOn: string[] }> = [];
  if (wf) {
    try {
      group = evaluateConcurrency(wf.concurrency, ctx);
      for (const job of jobOrder(wf.jobs)) {
        const rows: Array<MatrixRow | null> = job.strategy ? expandMatrix(job.strategy) : [null];
        for (const matrix of rows) {
          const c = { contexts: { ...ctx.contexts, matrix: matrix ?? {} } };
          const runsOn = job.runsOn.map((l) => interpolateText(l, c));
          instances.push({ job, matrix, name: jobInstanceName(job, matrix, c), runsOn });
        }
      }
    } catch (e) {
      if (!(e instanceof PlanError) && !(e instanceof ExpressionError)) throw e;
      error = `${plan.path}: ${(e as Error).message}`;
    }
  }
  if (error !== null) {
    await tx.db
      .insertInto('ci_runs')
      .values({ ...base, status: 'completed', conclusion: 'startup_failure', error, started_at: now, completed_at: now })
      .execute();
    const url = `${deps.config.publicUrl.replace(/\/$/, '')}/${repo.full_name}/runs/${number}`;
    await ciStatus(deps, tx, repo, plan.headSha, 'failure', statusContext(base.workflow_name, 'startup'), error, url, plan.actor);
    await emitRunEvent(tx, 'run-created', uuid);
    await emitRunEvent(tx, 'run-completed', uuid);
    return uuid;
  }
  const status = plan.waiting ? 'waiting' : 'queued';
  await tx.db
    .insertInto('ci_runs')
    .values({
      ...base,
      status,
      conclusion: null,
      error: null,
      concurrency_group: group?.group ?? null,
      started_at: null,
      completed_at: null,
    })
    .execute();
  if (group?.cancel) await cancelGroup(deps, tx, repo, group.group, uuid);
  for (const inst of instances) {
    const jobUuid = randomUUID();
    const context = statusContext(base.workflow_name, inst.name);
    await tx.db
      .insertInto('ci_jobs')
      .values({
        uuid: jobUuid,
        run_uuid: uuid,
        repo_uuid: repo.uuid,
        attempt: 1,
        job_key: inst.job.id,
        name: inst.name,
        context,
        matrix: inst.matrix ? JSON.stringify(inst.matrix) : null,
        needs: JSON.stringify(inst.job.needs),
        runs_on: JSON.stringify(inst.runsOn),
        status: 'waiting',
        conclusion: null,
        runner_uuid: null,
        runner_name: null,
        timeout_minutes: inst.job.timeoutMinutes,
        outputs: '{}',
        steps: JSON.stringify(
          inst.job.steps.map((s) => ({ number: s.number, name: stepName(s), status: 'queued', conclusion: null })),
        ),
        created_at: now,
        started_at: null,
        completed_at: null,
      })
      .execute();
    await ciStatus(
      deps,
      tx,
      repo,
      plan.headSha,
      'pending',
      context,
      plan.waiting ? 'Waiting for approval' : 'Queued',
      jobUrl(deps, repo.full_name, number, jobUuid),
      plan.actor,
    );
  }
  await emitRunEvent(tx, 'run-created', uuid);
  if (!plan.waiting) await advanceRun(deps, tx, uuid);
  return uuid;
}

export const stepName = (s: { name?: string; run?: string; uses?: string; number: number }) =>
  s.name ??
  (s.run !== undefined
    ? `Run ${s.run.split('\n')[0]?.slice(0, 80)}`
    : s.uses !== undefined
      ? `Run ${s.uses}`
      : `Step ${s.number}`);

/** Cancels the other unfinished runs of a concurrency group (`cancel-in-progress: true`). */
async function cancelGroup(deps: Deps, tx: TxContext, repo: RepoFacts, group: string, except: string): Promise<void> {
  const others = await tx.db
    .selectFrom('ci_runs')
    .select('uuid')
    .where('repo_uuid', '=', repo.uuid)
    .where('concurrency_group', '=', group)
    .where('status', '!=', 'completed')
    .where('uuid', '!=', except)
    .execute();
  for (const o of others) await cancelRun(deps, tx, o.uuid);
}

interface JobRow {
  uuid: string;
  job_key: string;
  status: string;
  conclusion: string | null;
  outputs: string;
  needs: string;
  context: string;
  matrix: string | null;
}

/**
 * Moves a run on: each waiting job whose needs have all completed is queued (its `if` holds) or
 * completed as skipped; when every job has completed, the run completes with a conclusion.
 */
export async function advanceRun(deps: Deps, tx: TxContext, runUuid: string): Promise<void> {
  const run = await tx.db.selectFrom('ci_runs').selectAll().where('uuid', '=', runUuid).executeTakeFirst();
  if (!run || run.status === 'completed' || run.status === 'waiting' || !run.workflow_json) return;
  const wf = JSON.parse(run.workflow_json) as Workflow;
  const repo = await repoFacts(tx, run.repo_uuid);
  if (!repo) return;
  const actor = (await tx.db
    .selectFrom('users')
    .select(['uuid', 'username'])
    .where('uuid', '=', run.actor_uuid)
    .executeTakeFirst()) ?? {
    uuid: run.actor_uuid,
    username: '',
  };
  const runCancelled = run.conclusion === 'cancelled';
  for (let pass = 0; pass < 100; pass++) {
    const jobs: JobRow[] = await tx.db
      .selectFrom('ci_jobs')
      .select(['uuid', 'job_key', 'status', 'conclusion', 'outputs', 'needs', 'context', 'matrix'])
      .where('run_uuid', '=', runUuid)
      .where('attempt', '=', run.attempt)
      .orderBy('id')
      .execute();
    const byKey = new Map<string, JobRow[]>();
    for (const j of jobs) byKey.set(j.job_key, [...(byKey.get(j.job_key) ?? []), j]);
    const resultOf = (key: string): NeedResult | null => {
      const group = byKey.get(key) ?? [];
      if (group.some((j) => j.status !== 'completed')) return null;
      const cs = group.map((j) => j.conclusion);
      const result = cs.includes('cancelled')
        ? 'cancelled'
        : cs.some((c) => c === 'failure' || c === 'timed_out' || c === 'startup_failure')
          ? 'failure'
          : cs.every((c) => c === 'skipped')
            ? 'skipped'
            : 'success';
      const outputs: Record<string, string> = {};
      for (const j of group) Object.assign(outputs, JSON.parse(j.outputs) as Record<string, string>);
      return { result, outputs };
    };
    let changed = false;
    for (const j of jobs) {
      if (j.status !== 'waiting') continue;
      const needIds = JSON.parse(j.needs) as string[];
      const needs: Record<string, NeedResult> = {};
      let ready = true;
      for (const n of needIds) {
        const r = resultOf(n);
        if (!r) ready = false;
        else needs[n] = r;
      }
      if (!ready) continue;
      const def = wf.jobs.find((d) => d.id === j.job_key);
      const c = {
        contexts: {
          weft: runContext(run, repo.full_name, actor.username, {}),
          github: runContext(run, repo.full_name, actor.username, {}),
          inputs: JSON.parse(run.inputs) as Record<string, Value>,
          vars: {},
          env: {},
          matrix: j.matrix ? (JSON.parse(j.matrix) as Record<string, Value>) : {},
        },
      };
      let runIt: boolean;
      try {
        runIt = def ? shouldRunJob(def, needs, runCancelled, c) : false;
      } catch {
        runIt = false;
      }
      changed = true;
      if (runIt) {
        await tx.db
          .updateTable('ci_jobs')
          .set({ status: 'queued' })
          .where('uuid', '=', j.uuid)
          .where('status', '=', 'waiting')
          .execute();
      } else {
        const now = nowIso();
        await tx.db
          .updateTable('ci_jobs')
          .set({ status: 'completed', conclusion: 'skipped', started_at: now, completed_at: now })
          .where('uuid', '=', j.uuid)
          .execute();
        await emitJobCompleted(tx, j.uuid);
        await ciStatus(
          deps,
          tx,
          repo,
          run.head_sha,
          'success',
          j.context,
          'Skipped',
          jobUrl(deps, repo.full_name, run.number, j.uuid),
          actor,
        );
      }
    }
    if (changed) continue;
    if (jobs.every((j) => j.status === 'completed')) {
      const cs = jobs.map((j) => j.conclusion);
      const conclusion =
        runCancelled || cs.includes('cancelled')
          ? 'cancelled'
          : cs.some((c) => c === 'failure' || c === 'timed_out' || c === 'startup_failure')
            ? 'failure'
            : 'success';
      const done = await tx.db
        .updateTable('ci_runs')
        .set({ status: 'completed', conclusion, completed_at: nowIso() })
        .where('uuid', '=', runUuid)
        .where('status', '!=', 'completed')
        .executeTakeFirst();
      if (Number(done.numUpdatedRows) > 0) await emitRunEvent(tx, 'run-completed', runUuid);
    }
    return;
  }
}

/** Cancels a run: its queued and waiting jobs complete as cancelled; running ones are told by the runner protocol. */
export async function cancelRun(deps: Deps, tx: TxContext, runUuid: string): Promise<void> {
  const run = await tx.db.selectFrom('ci_runs').selectAll().where('uuid', '=', runUuid).executeTakeFirst();
  if (!run || run.status === 'completed') return;
  await tx.db.updateTable('ci_runs').set({ conclusion: 'cancelled' }).where('uuid', '=', runUuid).execute();
  const repo = await repoFacts(tx, run.repo_uuid);
  if (!repo) return;
  const actor = { uuid: run.actor_uuid, username: '' };
  const open = await tx.db
    .selectFrom('ci_jobs')
    .select(['uuid', 'context', 'status'])
    .where('run_uuid', '=', runUuid)
    .where('status', 'in', ['waiting', 'queued'])
    .execute();
  const now = nowIso();
  for (const j of open) {
    await tx.db
      .updateTable('ci_jobs')
      .set({ status: 'completed', conclusion: 'cancelled', completed_at: now })
      .where('uuid', '=', j.uuid)
      .where('status', 'in', ['waiting', 'queued'])
      .execute();
    await emitJobCompleted(tx, j.uuid);
    await ciStatus(
      deps,
      tx,
      repo,
      run.head_sha,
      'error',
      j.context,
      'Cancelled',
      jobUrl(deps, repo.full_name, run.number, j.uuid),
      actor,
    );
  }
  if (run.status === 'waiting')
    await tx.db.updateTable('ci_runs').set({ status: 'queued' }).where('uuid', '=', runUuid).execute();
  await advanceRun(deps, tx, runUuid);
  tx.afterCommit(wakePollers);
}

/**
 * The live signal that a job's log grew (`size`: its length now) or that the job completed: sent
 * to the repo's streams that asked for `kind=job-log`, not stored (docs/ci.md "Pages").
 */
export const jobLogSignal = (repoUuid: string, jobUuid: string, data: { size?: number; completed?: boolean }) => ({
  scope: `repo:${repoUuid}`,
  kind: 'job-log',
  key: jobUuid,
  data: { job_uuid: jobUuid, ...data },
});

export type JobConclusion = 'success' | 'failure' | 'cancelled' | 'timed_out' | 'startup_failure';

/**
 * Records a job's end (reported by its runner, or decided by the server: runner lost, removed,
 * cancelled): its status, its commit status, fail-fast of its matrix siblings, then the run moves on.
 */
export async function finishJob(
  deps: Deps,
  tx: TxContext,
  jobUuid: string,
  conclusion: JobConclusion,
  outputs: Record<string, string> = {},
  description?: string,
): Promise<boolean> {
  const job = await tx.db.selectFrom('ci_jobs').selectAll().where('uuid', '=', jobUuid).executeTakeFirst();
  if (!job || job.status === 'completed') return false;
  const now = nowIso();
  const res = await tx.db
    .updateTable('ci_jobs')
    .set({
      status: 'completed',
      conclusion,
      outputs: JSON.stringify(outputs),
      completed_at: now,
      started_at: job.started_at ?? now,
    })
    .where('uuid', '=', jobUuid)
    .where('status', '!=', 'completed')
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) return false;
  await emitJobCompleted(tx, jobUuid);
  tx.afterCommit(() => deps.bus.signal(jobLogSignal(job.repo_uuid, jobUuid, { completed: true })));
  // the job token ends with the job
  if (job.token_uuid) await tx.db.updateTable('api_tokens').set({ revoked_at: now }).where('uuid', '=', job.token_uuid).execute();
  const run = await tx.db.selectFrom('ci_runs').selectAll().where('uuid', '=', job.run_uuid).executeTakeFirstOrThrow();
  const repo = await repoFacts(tx, run.repo_uuid);
  if (!repo) return true;
  const actor = { uuid: run.actor_uuid, username: '' };
  await ciStatus(
    deps,
    tx,
    repo,
    run.head_sha,
    STATUS_OF[conclusion] ?? 'failure',
    job.context,
    description ?? conclusionText(conclusion),
    jobUrl(deps, repo.full_name, run.number, job.uuid),
    actor,
  );
  // fail-fast: a failed matrix job cancels its siblings that have not started
  if (conclusion !== 'success' && job.matrix && run.workflow_json) {
    const def = (JSON.parse(run.workflow_json) as Workflow).jobs.find((d) => d.id === job.job_key);
    if (def?.strategy?.failFast !== false) {
      const siblings = await tx.db
        .selectFrom('ci_jobs')
        .select(['uuid', 'context'])
        .where('run_uuid', '=', run.uuid)
        .where('job_key', '=', job.job_key)
        .where('attempt', '=', job.attempt)
        .where('status', 'in', ['waiting', 'queued'])
        .execute();
      for (const s of siblings) {
        await tx.db
          .updateTable('ci_jobs')
          .set({ status: 'completed', conclusion: 'cancelled', completed_at: now })
          .where('uuid', '=', s.uuid)
          .execute();
        await emitJobCompleted(tx, s.uuid);
        await ciStatus(
          deps,
          tx,
          repo,
          run.head_sha,
          'error',
          s.context,
          'Cancelled (fail-fast)',
          jobUrl(deps, repo.full_name, run.number, s.uuid),
          actor,
        );
      }
    }
  }
  await advanceRun(deps, tx, run.uuid);
  tx.afterCommit(wakePollers);
  return true;
}

const conclusionText = (c: string) =>
  ({
    success: 'Succeeded',
    failure: 'Failed',
    cancelled: 'Cancelled',
    timed_out: 'Timed out',
    startup_failure: 'Failed to start',
  })[c] ?? c;

export interface RunnerRow {
  uuid: string;
  name: string;
  labels: string;
  scope: string;
  scope_uuid: string | null;
}

/**
 * Claims up to `max` queued jobs for a runner: jobs of repos its scope covers whose `runs-on`
 * labels are all among its labels, oldest first. On PostgreSQL the candidates are read
 * `FOR UPDATE SKIP LOCKED`, so two instances never hand out one job; on SQLite the transaction
 * holds the single writer lock. The update is conditional (`status = 'queued'`) either way.
 */
export async function claimJobs(deps: Deps, tx: TxContext, runner: RunnerRow, max: number): Promise<string[]> {
  if (max <= 0) return [];
  const labels = new Set((JSON.parse(runner.labels) as string[]).map((l) => l.toLowerCase()));
  let q = tx.db
    .selectFrom('ci_jobs as j')
    .select(['j.id', 'j.uuid', 'j.runs_on', 'j.run_uuid', 'j.repo_uuid'])
    .where('j.status', '=', 'queued')
    .orderBy('j.id')
    .limit(50);
  if (runner.scope === 'repo') q = q.where('j.repo_uuid', '=', runner.scope_uuid ?? '');
  else if (runner.scope === 'team')
    q = q.where('j.repo_uuid', 'in', (eb) =>
      eb
        .selectFrom('repos')
        .select('uuid')
        .where('owner_kind', '=', 'team')
        .where('owner_uuid', '=', runner.scope_uuid ?? ''),
    );
  if (tx.dialect === 'postgres') q = q.forUpdate('j').skipLocked();
  const candidates = await q.execute();
  const claimed: string[] = [];
  const now = nowIso();
  for (const c of candidates) {
    if (claimed.length >= max) break;
    const want = JSON.parse(c.runs_on) as string[];
    if (!want.every((l) => labels.has(l.toLowerCase()))) continue;
    const res = await tx.db
      .updateTable('ci_jobs')
      .set({ status: 'in_progress', runner_uuid: runner.uuid, runner_name: runner.name, started_at: now })
      .where('id', '=', c.id)
      .where('status', '=', 'queued')
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) continue;
    claimed.push(c.uuid);
    await tx.db
      .updateTable('ci_runs')
      .set({ status: 'in_progress', started_at: now })
      .where('uuid', '=', c.run_uuid)
      .where('status', '=', 'queued')
      .execute();
  }
  return claimed;
}

/** 60 s (§ "Runners"); `WEFT_TEST_RUNNER_LOST_MS` shortens it for the tests that kill a runner. */
export const RUNNER_LOST_MS = Number(process.env.WEFT_TEST_RUNNER_LOST_MS || 60_000);

/**
 * Fails the running jobs of runners silent for 60 s (`runner_lost`, with a notice at the end of
 * their log); answers their uuids. Run by every poll and by each instance's sweep (background.ts):
 * `finishJob` is conditional, so two instances sweeping at once fail a job once.
 */
export async function sweepLostRunners(deps: Deps, tx: TxContext, now = Date.now()): Promise<string[]> {
  const cutoff = new Date(now - RUNNER_LOST_MS).toISOString();
  const lost = await tx.db
    .selectFrom('ci_jobs as j')
    .leftJoin('ci_runners as r', 'r.uuid', 'j.runner_uuid')
    .select(['j.uuid', 'j.runner_name'])
    .where('j.status', '=', 'in_progress')
    .where((eb) => eb.or([eb('r.uuid', 'is', null), eb('r.last_seen_at', '<', cutoff)]))
    .execute();
  const out: string[] = [];
  for (const j of lost) {
    if (!(await finishJob(deps, tx, j.uuid, 'failure', {}, 'runner_lost'))) continue;
    // read after finishJob's update: this transaction holds the row, no upload slips in between
    const { log_bytes: at } = await tx.db
      .selectFrom('ci_jobs')
      .select('log_bytes')
      .where('uuid', '=', j.uuid)
      .executeTakeFirstOrThrow();
    const text = `${nowIso()} [weft] runner_lost: the runner ${j.runner_name ?? ''} stopped reporting for ${Math.round(RUNNER_LOST_MS / 1000)} s\n`;
    await tx.db
      .insertInto('ci_log_chunks')
      .values({ job_uuid: j.uuid, start_offset: at, data: text, created_at: nowIso() })
      .execute();
    await tx.db
      .updateTable('ci_jobs')
      .set({ log_bytes: at + Buffer.byteLength(text) })
      .where('uuid', '=', j.uuid)
      .execute();
    out.push(j.uuid);
  }
  return out;
}
