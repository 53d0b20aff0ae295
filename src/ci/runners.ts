/**
 * The runners of a repo (docs/ci.md "Runners"): listed with their state, and removed (maintain
 * level, as their registration token). A runner is `busy` while it runs a job, `offline` when it
 * has not polled for as long as a lost runner is given (60 s), else `idle`. Removing one deletes
 * it (its secret stops working at once) and fails its running jobs as `runner_removed`.
 */
import type { Kysely } from 'kysely';
import { assertNotArchived, itemWrite, type RepoRef, requireRepo, requireTeamCiValues } from '../access/index.ts';
import { command } from '../core/command.ts';
import { decide, onRepo } from '../core/targets.ts';
import type { TxContext } from '../core/transaction.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { forbidden, notFound } from '../errors.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { finishJob, RUNNER_LOST_MS } from './runs.ts';

export type RunnerStatus = 'idle' | 'busy' | 'offline';

export interface RunnerJson {
  uuid: string;
  name: string;
  labels: string[];
  scope: string;
  status: RunnerStatus;
  last_seen_at: string;
  version: string;
  created_at: string;
}

async function runnersOf(db: Kysely<DB>, scope: string, scopeUuid: string | null): Promise<RunnerJson[]> {
  let q = db.selectFrom('ci_runners').selectAll().where('scope', '=', scope);
  q = scopeUuid === null ? q.where('scope_uuid', 'is', null) : q.where('scope_uuid', '=', scopeUuid);
  const rows = await q.orderBy('name').orderBy('created_at').execute();
  const busy = new Set(
    rows.length
      ? (
          await db
            .selectFrom('ci_jobs')
            .select('runner_uuid')
            .where('status', '=', 'in_progress')
            .where(
              'runner_uuid',
              'in',
              rows.map((r) => r.uuid),
            )
            .execute()
        ).map((j) => j.runner_uuid)
      : [],
  );
  const cutoff = Date.now() - RUNNER_LOST_MS;
  return rows.map((r) => ({
    uuid: r.uuid,
    name: r.name,
    labels: JSON.parse(r.labels) as string[],
    scope: r.scope,
    status: Date.parse(r.last_seen_at) < cutoff ? 'offline' : busy.has(r.uuid) ? 'busy' : 'idle',
    last_seen_at: r.last_seen_at,
    version: r.version,
    created_at: r.created_at,
  }));
}

/** GET {repo}/runners: the runners registered for this repo (maintain level), by name. */
export async function listRepoRunners(deps: Deps, viewer: Viewer, ref: RepoRef): Promise<RunnerJson[]> {
  const { repo } = await requireRepo(deps.db, viewer, ref, { level: 'maintain' });
  return runnersOf(deps.db, 'repo', repo.uuid);
}

/** Fails a removed runner's running jobs (`runner_removed`, with a notice at the end of each log), then deletes it. */
export async function removeRunner(deps: Deps, tx: TxContext, runnerUuid: string): Promise<void> {
  const running = await tx.db
    .selectFrom('ci_jobs')
    .select('uuid')
    .where('runner_uuid', '=', runnerUuid)
    .where('status', '=', 'in_progress')
    .execute();
  await tx.db.deleteFrom('ci_runners').where('uuid', '=', runnerUuid).execute();
  for (const j of running) {
    if (!(await finishJob(deps, tx, j.uuid, 'failure', {}, 'runner_removed'))) continue;
    let q = tx.db.selectFrom('ci_jobs').select('log_bytes').where('uuid', '=', j.uuid);
    if (tx.dialect === 'postgres') q = q.forUpdate();
    const { log_bytes: at } = await q.executeTakeFirstOrThrow();
    const text = `${nowIso()} [weft] runner_removed: the runner was removed while it ran this job\n`;
    await tx.db
      .insertInto('ci_log_chunks')
      .values({ job_uuid: j.uuid, start_offset: at, data: text, created_at: nowIso() })
      .execute();
    await tx.db
      .updateTable('ci_jobs')
      .set({ log_bytes: at + Buffer.byteLength(text) })
      .where('uuid', '=', j.uuid)
      .execute();
  }
}

/** DELETE {repo}/runners/{runner_uuid} (maintain level): 404 for a runner of another scope, before 403 repo_archived. */
export async function removeRepoRunner(deps: Deps, viewer: Viewer, ref: RepoRef, runnerUuid: string): Promise<void> {
  await command(deps, viewer, onRepo(ref, itemWrite({ level: 'maintain', write: true })), async (tx) => {
    await removeScopedRunner(deps, tx, runnerUuid, 'repo', tx.access.repo.uuid, () => assertNotArchived(tx.access));
  });
}

/**
 * Removes a runner of one scope (repo, team or site); a runner of another scope is 404, so a scope
 * never learns of another's runners. `check` runs once the runner is found (an archived repo's 403).
 */
async function removeScopedRunner(
  deps: Deps,
  tx: TxContext,
  runnerUuid: string,
  scope: 'repo' | 'team' | 'site',
  scopeUuid: string | null,
  check?: () => void,
): Promise<void> {
  let find = tx.db.selectFrom('ci_runners').select('uuid').where('uuid', '=', runnerUuid).where('scope', '=', scope);
  if (scopeUuid !== null) find = find.where('scope_uuid', '=', scopeUuid);
  const row = await find.executeTakeFirst();
  if (!row) throw notFound('Runner');
  check?.();
  await removeRunner(deps, tx, row.uuid);
}

/**
 * Team runners take the jobs of every repo of the team; the team's maintain level (maintainer role,
 * owner, staff) lists, removes and registers them (src/access/teams.ts `requireTeamCiValues`).
 */
export async function listTeamRunners(deps: Deps, viewer: Viewer, teamSlug: string): Promise<RunnerJson[]> {
  const { team } = await requireTeamCiValues(deps.db, viewer, teamSlug, { secret: true, write: false });
  return runnersOf(deps.db, 'team', team.uuid);
}

/** DELETE /teams/{t}/runners/{runner_uuid}: 404 for a runner of another scope. */
export async function removeTeamRunner(deps: Deps, viewer: Viewer, teamSlug: string, runnerUuid: string): Promise<void> {
  const target = decide((db, v) => requireTeamCiValues(db, v, teamSlug, { secret: true, write: true }));
  await command(deps, viewer, target, async (tx) => {
    await removeScopedRunner(deps, tx, runnerUuid, 'team', tx.access.team.uuid);
  });
}

/** Site runners take the jobs of every repo; staff only (403 to others, as the other /admin routes). */
export function assertSiteRunnersStaff(viewer: Viewer): void {
  if (!viewer.isStaff) throw forbidden('Only staff can manage site runners.');
}

export async function listSiteRunners(deps: Deps, viewer: Viewer): Promise<RunnerJson[]> {
  assertSiteRunnersStaff(viewer);
  return runnersOf(deps.db, 'site', null);
}

export async function removeSiteRunner(deps: Deps, viewer: Viewer, runnerUuid: string): Promise<void> {
  const target = decide(async (_db, v: Viewer) => assertSiteRunnersStaff(v));
  await command(deps, viewer, target, async (tx) => {
    await removeScopedRunner(deps, tx, runnerUuid, 'site', null);
  });
}
