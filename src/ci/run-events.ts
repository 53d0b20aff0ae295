/**
 * The CI events (docs/ci.md "Events"): `run-created`, `run-completed` and `job-completed`, in the
 * repo's scopes, so webhooks, the event feed and notifications carry them. Each payload is the
 * run (or job) as the API shows it, without its jobs.
 */
import type { TxContext } from '../core/transaction.ts';
import type { CiRunsTable } from '../db/tables/ci.ts';
import { actorOf } from '../events/service.ts';

export type RunRow = Pick<
  CiRunsTable,
  | 'uuid'
  | 'repo_uuid'
  | 'number'
  | 'workflow_path'
  | 'workflow_name'
  | 'event'
  | 'head_sha'
  | 'head_branch'
  | 'pull_number'
  | 'actor_uuid'
  | 'status'
  | 'conclusion'
  | 'attempt'
  | 'created_at'
  | 'started_at'
  | 'completed_at'
>;

/** A run as the API and the events show it (without its jobs). */
export function runJson(run: RunRow, actor: { uuid: string; username: string }) {
  return {
    uuid: run.uuid,
    number: run.number,
    workflow: { path: run.workflow_path, name: run.workflow_name },
    event: run.event,
    head_sha: run.head_sha,
    head_branch: run.head_branch,
    pull_number: run.pull_number,
    actor: { uuid: actor.uuid, username: actor.username },
    status: run.status,
    conclusion: run.conclusion,
    attempt: run.attempt,
    created_at: run.created_at,
    started_at: run.started_at,
    completed_at: run.completed_at,
  };
}

async function scopesAndActor(tx: TxContext, run: RunRow) {
  const repo = await tx.db
    .selectFrom('repos')
    .select(['uuid', 'owner_kind', 'owner_uuid'])
    .where('uuid', '=', run.repo_uuid)
    .executeTakeFirst();
  const user = await tx.db.selectFrom('users').select(['uuid', 'username']).where('uuid', '=', run.actor_uuid).executeTakeFirst();
  const scopes = repo ? [`repo:${repo.uuid}`, `${repo.owner_kind === 'team' ? 'team' : 'user'}:${repo.owner_uuid}`] : [];
  return { scopes, actor: user ?? { uuid: run.actor_uuid, username: '' } };
}

/** `run-created` or `run-completed` with the run as it is now in the transaction. */
export async function emitRunEvent(tx: TxContext, kind: 'run-created' | 'run-completed', runUuid: string): Promise<void> {
  const run = await tx.db.selectFrom('ci_runs').selectAll().where('uuid', '=', runUuid).executeTakeFirst();
  if (!run) return;
  const { scopes, actor } = await scopesAndActor(tx, run);
  if (scopes.length === 0) return;
  await tx.emit({ kind, scopes, actor: actorOf(actor), payload: { repo_uuid: run.repo_uuid, run: runJson(run, actor) } });
}

/** `job-completed` with the job as it is now in the transaction. */
export async function emitJobCompleted(tx: TxContext, jobUuid: string): Promise<void> {
  const job = await tx.db.selectFrom('ci_jobs').selectAll().where('uuid', '=', jobUuid).executeTakeFirst();
  if (!job) return;
  const run = await tx.db.selectFrom('ci_runs').selectAll().where('uuid', '=', job.run_uuid).executeTakeFirst();
  if (!run) return;
  const { scopes, actor } = await scopesAndActor(tx, run);
  if (scopes.length === 0) return;
  await tx.emit({
    kind: 'job-completed',
    scopes,
    actor: actorOf(actor),
    payload: {
      repo_uuid: run.repo_uuid,
      run: {
        uuid: run.uuid,
        number: run.number,
        attempt: job.attempt,
        workflow: { path: run.workflow_path, name: run.workflow_name },
      },
      job: {
        uuid: job.uuid,
        name: job.name,
        matrix: job.matrix ? (JSON.parse(job.matrix) as Record<string, unknown>) : null,
        conclusion: job.conclusion,
        runner_name: job.runner_name,
        started_at: job.started_at,
        completed_at: job.completed_at,
      },
      head_sha: run.head_sha,
    },
  });
}
