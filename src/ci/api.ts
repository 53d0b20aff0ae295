/**
 * The runs API (docs/ci.md "API"): runs and jobs of a repo, a job's log (byte ranges), and the
 * writes on a run: cancel, rerun (a new attempt, all jobs or the failed ones), approve (a run
 * waiting for a first-time contributor), and dispatch (`workflow_dispatch` with inputs).
 * Reading needs read access to the repo; the writes need write access.
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { assertNotArchived, itemWrite, type RepoRef, requireRepo } from '../access/index.ts';
import { commitOf, openRepo } from '../code/service.ts';
import { command } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { AppError, badRequest, notFound } from '../errors.ts';
import { repoFullNames } from '../pulls/heads.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { parseWorkflow } from './workflow/parse.ts';
import { DispatchError, dispatchInputs } from './workflow/triggers.ts';
import { emitRunEvent, type RunRow, runJson } from './run-events.ts';
import { advanceRun, cancelRun, ciStatus, insertRuns, jobUrl, readWorkflowFiles } from './runs.ts';
import { wakePollers } from './wake.ts';

export interface RunsQuery {
  workflow?: string;
  branch?: string;
  event?: string;
  status?: string;
  head_sha?: string;
  actor?: string;
}

const conflict = (detail: string) => new AppError(409, 'conflict', detail);

async function actorsOf(db: Kysely<DB>, uuids: string[]) {
  const rows = uuids.length
    ? await db
        .selectFrom('users')
        .select(['uuid', 'username'])
        .where('uuid', 'in', [...new Set(uuids)])
        .execute()
    : [];
  const map = new Map(rows.map((r) => [r.uuid, r]));
  return (uuid: string) => map.get(uuid) ?? { uuid, username: '' };
}

/** GET {repo}/runs: newest first, filtered. */
export async function listRuns(deps: Deps, viewer: Viewer, ref: RepoRef, q: RunsQuery, page: { offset: number; limit: number }) {
  const { repo } = await requireRepo(deps.db, viewer, ref, { level: 'read' });
  let query = deps.db.selectFrom('ci_runs').selectAll().where('repo_uuid', '=', repo.uuid);
  if (q.workflow !== undefined)
    query = query.where((eb) =>
      eb.or([eb('workflow_path', '=', q.workflow!), eb('workflow_path', 'like', `%/${q.workflow!.replace(/[%_\\]/g, '')}`)]),
    );
  if (q.branch !== undefined) query = query.where('head_branch', '=', q.branch);
  if (q.event !== undefined) query = query.where('event', '=', q.event);
  if (q.head_sha !== undefined) query = query.where('head_sha', '=', q.head_sha.toLowerCase());
  if (q.status !== undefined) {
    // a status or a conclusion, as GitHub's filter takes either
    const s = q.status;
    query = query.where((eb) => eb.or([eb('status', '=', s), eb('conclusion', '=', s)]));
  }
  if (q.actor !== undefined) {
    const user = await deps.db
      .selectFrom('users')
      .select('uuid')
      .where('username', '=', q.actor.toLowerCase())
      .executeTakeFirst();
    query = query.where('actor_uuid', '=', user?.uuid ?? '-');
  }
  const rows = await query.orderBy('number', 'desc').offset(page.offset).limit(page.limit).execute();
  const actor = await actorsOf(
    deps.db,
    rows.map((r) => r.actor_uuid),
  );
  return rows.map((r) => runJson(r, actor(r.actor_uuid)));
}

async function runOf(db: Kysely<DB>, repoUuid: string, number: number) {
  const run = await db
    .selectFrom('ci_runs')
    .selectAll()
    .where('repo_uuid', '=', repoUuid)
    .where('number', '=', number)
    .executeTakeFirst();
  if (!run) throw notFound('Run');
  return run;
}

type JobRow = Awaited<ReturnType<typeof jobRows>>[number];
const jobRows = (db: Kysely<DB>, runUuid: string, attempt: number) =>
  db.selectFrom('ci_jobs').selectAll().where('run_uuid', '=', runUuid).where('attempt', '=', attempt).orderBy('id').execute();

const jobSummary = (j: JobRow) => ({
  uuid: j.uuid,
  name: j.name,
  matrix: j.matrix ? (JSON.parse(j.matrix) as Record<string, unknown>) : null,
  status: j.status,
  conclusion: j.conclusion,
  runner_name: j.runner_name,
  started_at: j.started_at,
  completed_at: j.completed_at,
});

const jobJson = (j: JobRow) => ({
  ...jobSummary(j),
  attempt: j.attempt,
  log_bytes: j.log_bytes,
  steps: (JSON.parse(j.steps) as Array<Record<string, unknown>>).map((s) => ({
    number: s.number as number,
    name: s.name as string,
    status: s.status as string,
    conclusion: (s.conclusion as string | null) ?? null,
    started_at: (s.started_at as string | null) ?? null,
    completed_at: (s.completed_at as string | null) ?? null,
  })),
});

async function fullRun(db: Kysely<DB>, run: RunRow & { error?: string | null }) {
  const actor = await actorsOf(db, [run.actor_uuid]);
  const jobs = await jobRows(db, run.uuid, run.attempt);
  return { ...runJson(run, actor(run.actor_uuid)), error: run.error ?? null, jobs: jobs.map(jobSummary) };
}

/** GET {repo}/runs/{number}: the run with the jobs of its latest attempt. */
export async function getRun(deps: Deps, viewer: Viewer, ref: RepoRef, number: number) {
  const { repo } = await requireRepo(deps.db, viewer, ref, { level: 'read' });
  return fullRun(deps.db, await runOf(deps.db, repo.uuid, number));
}

async function jobOf(db: Kysely<DB>, runUuid: string, jobUuid: string) {
  const job = await db
    .selectFrom('ci_jobs')
    .selectAll()
    .where('uuid', '=', jobUuid)
    .where('run_uuid', '=', runUuid)
    .executeTakeFirst();
  if (!job) throw notFound('Job');
  return job;
}

/** GET {repo}/runs/{number}/jobs/{job_uuid}: one job (of any attempt) with its steps. */
export async function getJob(deps: Deps, viewer: Viewer, ref: RepoRef, number: number, jobUuid: string) {
  const { repo } = await requireRepo(deps.db, viewer, ref, { level: 'read' });
  const run = await runOf(deps.db, repo.uuid, number);
  return jobJson(await jobOf(deps.db, run.uuid, jobUuid));
}

/** The largest chunk the runner protocol stores (its body cap plus a truncation notice). */
const MAX_CHUNK_BYTES = 256 * 1024 * 4 + 200;

/**
 * GET …/jobs/{job_uuid}/log: bytes `start..end` (inclusive) of the log, or all of it; `size` is
 * the log's length now (it grows while the job runs). Reads only the chunks the range touches.
 */
export async function jobLog(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  jobUuid: string,
  range: (size: number) => { start: number; end: number } | null | 'bad',
) {
  const { repo } = await requireRepo(deps.db, viewer, ref, { level: 'read' });
  const run = await runOf(deps.db, repo.uuid, number);
  const job = await jobOf(deps.db, run.uuid, jobUuid);
  const size = job.log_bytes;
  const r = range(size);
  if (r === 'bad') return { size, range: 'bad' as const, data: Buffer.alloc(0) };
  const start = r?.start ?? 0;
  const end = r?.end ?? size - 1;
  if (size === 0) return { size, range: null, data: Buffer.alloc(0) };
  const chunks = await deps.db
    .selectFrom('ci_log_chunks')
    .select(['start_offset', 'data'])
    .where('job_uuid', '=', jobUuid)
    .where('start_offset', '>=', Math.max(0, start - MAX_CHUNK_BYTES))
    .where('start_offset', '<=', end)
    .orderBy('start_offset')
    .execute();
  const parts: Buffer[] = [];
  for (const c of chunks) {
    const b = Buffer.from(c.data, 'utf8');
    const from = Math.max(start - c.start_offset, 0);
    const to = Math.min(end + 1 - c.start_offset, b.length);
    if (to > from) parts.push(b.subarray(from, to));
  }
  return { size, range: r, data: Buffer.concat(parts) };
}

const writeTarget = (ref: RepoRef) => onRepo(ref, { level: 'write', write: true });
/** A write to one run: a missing run is 404 before 403 repo_archived (docs/behaviour.md "Errors"). */
const runWriteTarget = (ref: RepoRef) => onRepo(ref, itemWrite({ level: 'write', write: true }));

/** POST {repo}/runs/{number}/cancel: queued and waiting jobs end at once, running ones are stopped by their runner. */
export async function cancelRunApi(deps: Deps, viewer: Viewer, ref: RepoRef, number: number) {
  return command(deps, viewer, runWriteTarget(ref), async (tx) => {
    const run = await runOf(tx.db, tx.access.repo.uuid, number);
    assertNotArchived(tx.access);
    if (run.status === 'completed') throw conflict('The run has completed: there is nothing to cancel.');
    await cancelRun(deps, tx, run.uuid);
    return fullRun(tx.db, await runOf(tx.db, tx.access.repo.uuid, number));
  });
}

/** POST {repo}/runs/{number}/approve: a run waiting for approval is queued. */
export async function approveRun(deps: Deps, viewer: Viewer, ref: RepoRef, number: number) {
  return command(deps, viewer, runWriteTarget(ref), async (tx) => {
    const run = await runOf(tx.db, tx.access.repo.uuid, number);
    assertNotArchived(tx.access);
    if (run.status !== 'waiting') throw conflict('The run is not waiting for approval.');
    await tx.db.updateTable('ci_runs').set({ status: 'queued' }).where('uuid', '=', run.uuid).execute();
    await advanceRun(deps, tx, run.uuid);
    tx.afterCommit(wakePollers);
    return fullRun(tx.db, await runOf(tx.db, tx.access.repo.uuid, number));
  });
}

/**
 * POST {repo}/runs/{number}/rerun: a new attempt of a completed run. All its jobs run again, or
 * with `failed_only` those that did not succeed (and what needs them); a succeeded job is carried
 * over with its outputs.
 */
export async function rerunRun(deps: Deps, viewer: Viewer, ref: RepoRef, number: number, failedOnly: boolean) {
  return command(deps, viewer, runWriteTarget(ref), async (tx) => {
    const repoUuid = tx.access.repo.uuid;
    const run = await runOf(tx.db, repoUuid, number);
    assertNotArchived(tx.access);
    if (run.status !== 'completed') throw conflict('The run has not completed: cancel it first.');
    if (!run.workflow_json) throw conflict('The run failed to start (its workflow file is refused): push a fixed file.');
    const previous = await jobRows(tx.db, run.uuid, run.attempt);
    const attempt = run.attempt + 1;
    await tx.db
      .updateTable('ci_runs')
      .set({ attempt, status: 'queued', conclusion: null, started_at: null, completed_at: null })
      .where('uuid', '=', run.uuid)
      .execute();
    const fullName = (await repoFullNames(tx.db, [repoUuid])).get(repoUuid) ?? repoUuid;
    const repo = { ...tx.access.repo, full_name: fullName };
    const actor = { uuid: viewer.uuid, username: viewer.username };
    const now = nowIso();
    for (const j of previous) {
      const keep = failedOnly && j.conclusion === 'success';
      const uuid = randomUUID();
      await tx.db
        .insertInto('ci_jobs')
        .values({
          uuid,
          run_uuid: run.uuid,
          repo_uuid: repoUuid,
          attempt,
          job_key: j.job_key,
          name: j.name,
          context: j.context,
          matrix: j.matrix,
          needs: j.needs,
          runs_on: j.runs_on,
          status: keep ? 'completed' : 'waiting',
          conclusion: keep ? 'success' : null,
          runner_uuid: keep ? j.runner_uuid : null,
          runner_name: keep ? j.runner_name : null,
          timeout_minutes: j.timeout_minutes,
          outputs: keep ? j.outputs : '{}',
          steps: keep
            ? j.steps
            : JSON.stringify(
                (JSON.parse(j.steps) as Array<{ number: number; name: string }>).map((s) => ({
                  number: s.number,
                  name: s.name,
                  status: 'queued',
                  conclusion: null,
                })),
              ),
          created_at: now,
          started_at: keep ? j.started_at : null,
          completed_at: keep ? j.completed_at : null,
        })
        .execute();
      if (!keep)
        await ciStatus(deps, tx, repo, run.head_sha, 'pending', j.context, 'Queued', jobUrl(deps, fullName, number, uuid), actor);
    }
    await emitRunEvent(tx, 'run-created', run.uuid);
    await advanceRun(deps, tx, run.uuid);
    tx.afterCommit(wakePollers);
    return fullRun(tx.db, await runOf(tx.db, repoUuid, number));
  });
}

/**
 * POST {repo}/workflows/{file}/dispatches: a `workflow_dispatch` run of the workflow file `file`
 * (its name in the workflows folder, or its path) at `ref` (a branch or tag; the default branch
 * when omitted), with inputs checked against the file's declarations.
 */
export async function dispatchWorkflow(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  file: string,
  body: { ref?: string; inputs?: Record<string, unknown> },
) {
  const o = await openRepo(deps, viewer, ref);
  const target = await commitOf(o, body.ref);
  if (target.kind === 'sha') throw badRequest('ref: a branch or a tag.');
  const files = await readWorkflowFiles(deps, o.repo.uuid, target.sha);
  const wf = files.find((f) => f.path === file || f.path.endsWith(`/${file}`));
  if (!wf) throw notFound('Workflow');
  const parsed = parseWorkflow(wf.path, wf.text);
  if (!parsed.ok)
    throw new AppError(400, 'invalid_workflow', parsed.errors.map((e) => `${e.file}:${e.line}: ${e.message}`).join('\n'));
  let inputs;
  try {
    inputs = dispatchInputs(parsed.workflow, body.inputs ?? {});
  } catch (e) {
    if (e instanceof DispatchError) throw new AppError(400, 'invalid_inputs', e.message);
    throw e;
  }
  const fullRef = `refs/${target.kind === 'branch' ? 'heads' : 'tags'}/${target.name}`;
  return command(deps, viewer, writeTarget(ref), async (tx) => {
    const [uuid] = await insertRuns(deps, tx, tx.access.repo.uuid, [
      {
        path: wf.path,
        parsed,
        event: 'workflow_dispatch',
        ref: fullRef,
        headSha: target.sha,
        headBranch: target.kind === 'branch' ? target.name : null,
        pullNumber: null,
        actor: { uuid: viewer.uuid, username: viewer.username },
        fork: false,
        waiting: false,
        inputs,
        payload: { ref: fullRef, inputs, workflow: wf.path },
      },
    ]);
    const run = await tx.db.selectFrom('ci_runs').selectAll().where('uuid', '=', uuid!).executeTakeFirstOrThrow();
    return fullRun(tx.db, run);
  });
}
