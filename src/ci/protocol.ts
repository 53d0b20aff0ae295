/**
 * The runner protocol (docs/ci.md "Runners"), under /api/v1/runner/, authenticated by the
 * runner's own secret (never a user token): register with a single-use registration token,
 * long-poll for jobs (the poll is also the heartbeat and carries cancellations), report steps,
 * upload log chunks by byte offset (a retried chunk is a no-op), finish.
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { command } from '../core/command.ts';
import { decide, onRepo } from '../core/targets.ts';
import { inTransaction, type TxContext } from '../core/transaction.ts';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { type RepoRef, requireTeamCiValues } from '../access/index.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { hashSecret, newTokenSecret } from '../tokens/secret.ts';
import { repoFullNames } from '../pulls/heads.ts';
import type { Value } from './workflow/expr.ts';
import type { Workflow } from './workflow/model.ts';
import { jobValues } from './secrets.ts';
import { assertSiteRunnersStaff } from './runners.ts';
import { addWaiter, removeWaiter, wakePollers } from './wake.ts';
import { claimJobs, finishJob, jobLogSignal, type JobConclusion, runContext, type RunnerRow, sweepLostRunners } from './runs.ts';

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const REGISTRATION_TTL_MS = 60 * 60 * 1000;
export const LOG_CAP_BYTES = 64 * 1024 * 1024;
export const POLL_WAIT_MS = 20_000;

/** POST {repo}/runners/registration-token (maintain level): one hour, one use. */
export async function createRepoRegistrationToken(deps: Deps, viewer: Viewer, ref: RepoRef) {
  return command(deps, viewer, onRepo(ref, { level: 'maintain', write: true }), async (tx) =>
    insertRegistrationToken(tx, 'repo', tx.access.repo.uuid, viewer),
  );
}

/** POST /teams/{t}/runners/registration-token (the team owner; staff): a runner for every repo of the team. */
export async function createTeamRegistrationToken(deps: Deps, viewer: Viewer, teamSlug: string) {
  const target = decide((db, v: Viewer) => requireTeamCiValues(db, v, teamSlug, { secret: true, write: true, owner: true }));
  return command(deps, viewer, target, async (tx) => insertRegistrationToken(tx, 'team', tx.access.team.uuid, viewer));
}

/** POST /runners/registration-token (staff): a runner for every repo of the site. */
export async function createSiteRegistrationToken(deps: Deps, viewer: Viewer) {
  const target = decide(async (_db, v: Viewer) => assertSiteRunnersStaff(v));
  return command(deps, viewer, target, async (tx) => insertRegistrationToken(tx, 'site', null, viewer));
}

export async function insertRegistrationToken(tx: TxContext, scope: string, scopeUuid: string | null, viewer: Viewer) {
  const token = `wrr_${randomBytes(24).toString('base64url')}`;
  const expires = new Date(Date.now() + REGISTRATION_TTL_MS).toISOString();
  await tx.db
    .insertInto('ci_registration_tokens')
    .values({
      token_hash: sha256(token),
      scope,
      scope_uuid: scopeUuid,
      created_by_uuid: viewer.uuid,
      expires_at: expires,
      used_at: null,
      created_at: nowIso(),
    })
    .execute();
  return { token, expires_at: expires };
}

export interface RegisterInput {
  token: string;
  name: string;
  labels: string[];
  version?: string;
  capacity?: number;
}

/** Trades a registration token (once) for a runner and its secret. */
export async function registerRunner(deps: Deps, input: RegisterInput) {
  return inTransaction(deps, async (tx) => {
    const now = nowIso();
    const used = await tx.db
      .updateTable('ci_registration_tokens')
      .set({ used_at: now })
      .where('token_hash', '=', sha256(input.token))
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['scope', 'scope_uuid', 'created_by_uuid'])
      .executeTakeFirst();
    if (!used) throw new AppError(401, 'unauthorized', 'The registration token is invalid, expired or already used.');
    const secret = `wrs_${randomBytes(32).toString('base64url')}`;
    const uuid = randomUUID();
    const labels = [...new Set(input.labels.map((l) => l.trim()).filter(Boolean))];
    await tx.db
      .insertInto('ci_runners')
      .values({
        uuid,
        name: input.name,
        labels: JSON.stringify(labels),
        scope: used.scope,
        scope_uuid: used.scope_uuid,
        secret_hash: sha256(secret),
        version: input.version ?? '',
        capacity: input.capacity ?? 1,
        last_seen_at: now,
        created_by_uuid: used.created_by_uuid,
        created_at: now,
      })
      .execute();
    return { uuid, name: input.name, labels, scope: used.scope, secret };
  });
}

/** The runner a secret names (401 otherwise); marks it seen. */
export async function runnerOf(deps: Deps, secret: string | undefined): Promise<RunnerRow & { capacity: number }> {
  if (!secret) throw new AppError(401, 'unauthorized', 'The runner secret is missing (X-Weft-Runner-Secret).');
  const hash = sha256(secret);
  const row = await deps.db.selectFrom('ci_runners').selectAll().where('secret_hash', '=', hash).executeTakeFirst();
  if (!row || !timingSafeEqual(Buffer.from(row.secret_hash), Buffer.from(hash))) {
    throw new AppError(401, 'unauthorized', 'The runner secret is invalid or the runner was removed.');
  }
  await deps.db.updateTable('ci_runners').set({ last_seen_at: nowIso() }).where('uuid', '=', row.uuid).execute();
  return row;
}

/** What a runner needs to run one job. */
export interface JobSpec {
  uuid: string;
  name: string;
  run: { uuid: string; number: number; attempt: number; workflow: string };
  job: Workflow['jobs'][number];
  workflow_env: Record<string, string>;
  matrix: Record<string, Value>;
  contexts: Record<string, Value>;
  secrets: Record<string, string>;
  token: string;
  server_url: string;
  repository: string;
  /** the repo's smart-HTTP path (`/git/users/u/r.git`), joined by the runner to its server URL */
  clone_path: string;
  sha: string;
  ref: string;
  timeout_minutes: number;
  log_offset: number;
}

/** Writes a job's token: an API token of the run's actor restricted to the repo, expiring with the job. */
async function issueJobToken(
  tx: TxContext,
  job: { uuid: string; timeout_minutes: number },
  run: { actor_uuid: string; repo_uuid: string; event: string; fork: number },
) {
  const secret = newTokenSecret();
  const uuid = randomUUID();
  const write = !run.fork && (run.event === 'push' || run.event === 'workflow_dispatch');
  await tx.db
    .insertInto('api_tokens')
    .values({
      uuid,
      user_uuid: run.actor_uuid,
      name: `ci job ${job.uuid}`,
      token_hash: hashSecret(secret),
      expires_at: new Date(Date.now() + (job.timeout_minutes + 5) * 60_000).toISOString(),
      created_at: nowIso(),
      last_used_at: null,
      revoked_at: null,
      scopes: JSON.stringify([write ? 'write:repo' : 'read:repo']),
      repos: JSON.stringify([run.repo_uuid]),
    })
    .execute();
  await tx.db.updateTable('ci_jobs').set({ token_uuid: uuid }).where('uuid', '=', job.uuid).execute();
  return secret;
}

async function jobSpec(deps: Deps, tx: TxContext, jobUuid: string): Promise<JobSpec> {
  const job = await tx.db.selectFrom('ci_jobs').selectAll().where('uuid', '=', jobUuid).executeTakeFirstOrThrow();
  const run = await tx.db.selectFrom('ci_runs').selectAll().where('uuid', '=', job.run_uuid).executeTakeFirstOrThrow();
  const wf = JSON.parse(run.workflow_json ?? '{}') as Workflow;
  const def = wf.jobs.find((j) => j.id === job.job_key)!;
  const fullName = (await repoFullNames(tx.db, [run.repo_uuid])).get(run.repo_uuid) ?? run.repo_uuid;
  const actor = await tx.db.selectFrom('users').select('username').where('uuid', '=', run.actor_uuid).executeTakeFirst();
  // the needs context: results and outputs of the jobs this one needs
  const needs: Record<string, Value> = {};
  const needIds = JSON.parse(job.needs) as string[];
  if (needIds.length) {
    const done = await tx.db
      .selectFrom('ci_jobs')
      .select(['job_key', 'conclusion', 'outputs'])
      .where('run_uuid', '=', run.uuid)
      .where('attempt', '=', job.attempt)
      .where('job_key', 'in', needIds)
      .execute();
    for (const n of needIds) {
      const rows = done.filter((d) => d.job_key === n);
      const outputs: Record<string, string> = {};
      for (const r of rows) Object.assign(outputs, JSON.parse(r.outputs));
      needs[n] = {
        result: rows.some((r) => r.conclusion !== 'success' && r.conclusion !== 'skipped') ? 'failure' : 'success',
        outputs,
      };
    }
  }
  const token = await issueJobToken(tx, job, run);
  const repoRow = await tx.db
    .selectFrom('repos')
    .select(['uuid', 'owner_kind', 'owner_uuid'])
    .where('uuid', '=', run.repo_uuid)
    .executeTakeFirstOrThrow();
  const values = await jobValues(deps, tx.db, repoRow, run.fork === 1);
  const weft = runContext(run, fullName, actor?.username ?? '', {});
  const base = deps.config.publicUrl.replace(/\/$/, '');
  return {
    uuid: job.uuid,
    name: job.name,
    run: { uuid: run.uuid, number: run.number, attempt: run.attempt, workflow: run.workflow_name },
    job: def,
    workflow_env: wf.env,
    matrix: job.matrix ? JSON.parse(job.matrix) : {},
    contexts: {
      weft,
      github: weft,
      inputs: JSON.parse(run.inputs),
      vars: values.vars,
      needs,
      job: { status: 'success' },
      runner: {},
    },
    secrets: values.secrets,
    token,
    server_url: base,
    repository: fullName,
    clone_path: await clonePath(tx, run.repo_uuid),
    sha: run.head_sha,
    ref: run.ref,
    timeout_minutes: job.timeout_minutes,
    log_offset: 0,
  };
}

async function clonePath(tx: TxContext, repoUuid: string): Promise<string> {
  const row = await tx.db
    .selectFrom('repos as r')
    .leftJoin('users as u', (j) => j.onRef('u.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'user'))
    .leftJoin('teams as t', (j) => j.onRef('t.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'team'))
    .select(['r.slug', 'r.owner_kind', 'u.username', 't.slug as team_slug'])
    .where('r.uuid', '=', repoUuid)
    .executeTakeFirstOrThrow();
  return row.owner_kind === 'team' ? `/git/teams/${row.team_slug}/${row.slug}.git` : `/git/users/${row.username}/${row.slug}.git`;
}

/** Jobs of this runner that should stop (their run was cancelled, or they completed server-side). */
async function cancellations(deps: Deps, runnerUuid: string, running: string[]): Promise<string[]> {
  if (running.length === 0) return [];
  const rows = await deps.db
    .selectFrom('ci_jobs as j')
    .innerJoin('ci_runs as r', 'r.uuid', 'j.run_uuid')
    .select(['j.uuid', 'j.status', 'j.runner_uuid', 'r.conclusion'])
    .where('j.uuid', 'in', running)
    .execute();
  const stop = new Set(running);
  for (const r of rows)
    if (r.status === 'in_progress' && r.runner_uuid === runnerUuid && r.conclusion !== 'cancelled') stop.delete(r.uuid);
  return [...stop];
}

/**
 * One poll: the heartbeat, the cancellations of its running jobs, and up to `free` jobs. With
 * nothing to hand out and nothing to cancel it waits (up to `waitMs`) for work.
 */
export async function poll(
  deps: Deps,
  secret: string | undefined,
  input: { free: number; running: string[] },
  waitMs = POLL_WAIT_MS,
  gone?: AbortSignal,
) {
  const runner = await runnerOf(deps, secret);
  const deadline = Date.now() + waitMs;
  for (;;) {
    await inTransaction(deps, (tx) => sweepLostRunners(deps, tx));
    const cancel = await cancellations(deps, runner.uuid, input.running);
    const jobs = await inTransaction(deps, async (tx) => {
      // a runner that hung up (a stop) gets no job: nobody would read the answer
      if (gone?.aborted) return [];
      const uuids = await claimJobs(deps, tx, runner, Math.min(input.free, runner.capacity));
      const specs: JobSpec[] = [];
      for (const u of uuids) specs.push(await jobSpec(deps, tx, u));
      return specs;
    });
    if (jobs.length || cancel.length || Date.now() >= deadline || input.free <= 0 || gone?.aborted) return { jobs, cancel };
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        removeWaiter(done);
        gone?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.min(1000, Math.max(0, deadline - Date.now())));
      addWaiter(done);
      gone?.addEventListener('abort', done, { once: true });
    });
    if (gone?.aborted) return { jobs: [], cancel: [] };
    await deps.db.updateTable('ci_runners').set({ last_seen_at: nowIso() }).where('uuid', '=', runner.uuid).execute();
  }
}

async function runnerJob(deps: Deps, secret: string | undefined, jobUuid: string) {
  const runner = await runnerOf(deps, secret);
  const job = await deps.db.selectFrom('ci_jobs').selectAll().where('uuid', '=', jobUuid).executeTakeFirst();
  if (!job || job.runner_uuid !== runner.uuid) throw new AppError(404, 'not_found', 'No such job of this runner.');
  return { runner, job };
}

/**
 * Appends a log chunk at byte `offset`: a chunk already stored (a retry) is a no-op, a chunk past
 * the end is 409 with the expected offset. Past 64 MiB one notice is kept and the rest dropped.
 */
export async function appendLog(deps: Deps, secret: string | undefined, jobUuid: string, offset: number, data: string) {
  const { job: row } = await runnerJob(deps, secret, jobUuid);
  return inTransaction(deps, async (tx) => {
    let q = tx.db.selectFrom('ci_jobs').select(['log_bytes', 'status']).where('uuid', '=', jobUuid);
    if (tx.dialect === 'postgres') q = q.forUpdate();
    const job = await q.executeTakeFirstOrThrow();
    const stored = job.log_bytes;
    const bytes = Buffer.from(data, 'utf8');
    if (offset > stored) throw new AppError(409, 'conflict', `The log has ${stored} bytes: send from offset ${stored}.`);
    if (offset + bytes.length <= stored) return { offset: stored };
    let rest = bytes.subarray(stored - offset);
    if (stored >= LOG_CAP_BYTES) return { offset: stored + rest.length, truncated: true };
    let text = rest.toString('utf8');
    if (stored + rest.length > LOG_CAP_BYTES) {
      rest = rest.subarray(0, LOG_CAP_BYTES - stored);
      text = `${rest.toString('utf8')}\n${nowIso()} [weft] the log reached 64 MiB: the rest is not kept\n`;
    }
    await tx.db
      .insertInto('ci_log_chunks')
      .values({ job_uuid: jobUuid, start_offset: stored, data: text, created_at: nowIso() })
      .execute();
    const end = stored + Buffer.byteLength(text);
    await tx.db.updateTable('ci_jobs').set({ log_bytes: end }).where('uuid', '=', jobUuid).execute();
    tx.afterCommit(() => deps.bus.signal(jobLogSignal(row.repo_uuid, jobUuid, { size: end })));
    return { offset: offset + bytes.length > end ? offset + bytes.length : end };
  });
}

export interface StepReport {
  number: number;
  status: 'in_progress' | 'completed';
  conclusion?: string | null;
  started_at?: string | null;
  completed_at?: string | null;
}

export async function reportSteps(deps: Deps, secret: string | undefined, jobUuid: string, steps: StepReport[]) {
  const { job } = await runnerJob(deps, secret, jobUuid);
  const current = JSON.parse(job.steps) as Array<Record<string, unknown>>;
  for (const s of steps) {
    const at = current.find((c) => c.number === s.number);
    if (at)
      Object.assign(at, {
        status: s.status,
        conclusion: s.conclusion ?? null,
        started_at: s.started_at ?? null,
        completed_at: s.completed_at ?? null,
      });
  }
  await deps.db
    .updateTable('ci_jobs')
    .set({ steps: JSON.stringify(current) })
    .where('uuid', '=', jobUuid)
    .execute();
}

/** The runner's end of a job: its conclusion and outputs; the job token is revoked. */
export async function finishFromRunner(
  deps: Deps,
  secret: string | undefined,
  jobUuid: string,
  input: { conclusion: JobConclusion; outputs?: Record<string, string> },
) {
  await runnerJob(deps, secret, jobUuid);
  await inTransaction(deps, (tx) => finishJob(deps, tx, jobUuid, input.conclusion, input.outputs ?? {}));
  wakePollers();
}
