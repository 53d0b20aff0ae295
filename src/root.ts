/**
 * The composition root: builds `Deps` (src/deps.ts) from the configuration and the database, and
 * starts and stops the background parts. Only the entry points (main.ts, cli.ts) and the tests
 * import it, so nothing below depends on the concrete implementations it wires together.
 */
import { join } from 'node:path';
import { SCOPE_READERS } from './access/scopes.ts';
import { FsBlobStore, type BlobStore } from './blobs/store.ts';
import type { Config } from './config.ts';
import { setFastPath } from './db/fast-path.ts';
import type { Database } from './db/index.ts';
import type { Deps, EventBus } from './deps.ts';
import { InProcessBus, PostgresBus } from './events/bus.ts';
import { LiveHub } from './events/live.ts';
import { ScopeRegistry } from './events/scopes.ts';
import { BareGitStore } from './git/bare-store.ts';
import type { GitStore } from './git/store.ts';
import { registerGitMaintenance } from './git/maintenance.ts';
import { registerSearchIndexer } from './search/service.ts';
import { registerMirrors } from './mirrors/service.ts';
import { Webhooks } from './hooks/background.ts';
import { NotificationsBackground } from './notifications/background.ts';
import { DbJobQueue, type JobQueue } from './jobs/queue.ts';
import { startMergeRecovery, stopMergeRecovery } from './pulls/merge.ts';
import { registerAutoMerge } from './pulls/auto-merge.ts';
import { startBlobSweep, stopBlobSweep } from './blobs/lifetime.ts';
import { startCiBackground, stopCiBackground } from './ci/background.ts';
import { registerSchedules } from './ci/schedule.ts';
import { recoverPushes, sweepPushSpool } from './code/pushes.ts';
import { ServerSecret } from './secrets/server-secret.ts';
import { type Clock, systemClock } from './time.ts';
import { TimerScheduler, type TimerSchedulerOptions } from './timers/scheduler.ts';

export type { Deps } from './deps.ts';

export interface DepsOverrides {
  clock?: Clock;
  bus?: EventBus;
  git?: GitStore;
  blobs?: BlobStore;
  jobs?: JobQueue;
  timers?: TimerSchedulerOptions;
  scopeReaders?: ConstructorParameters<typeof ScopeRegistry>[0];
  secret?: ServerSecret;
}

export function createDeps(config: Config, database: Database, overrides: DepsOverrides = {}): Deps {
  setFastPath(config.fastPath);
  const clock = overrides.clock ?? systemClock;
  const deps: Omit<Deps, 'timers' | 'live' | 'webhooks' | 'notifications'> & {
    timers?: TimerScheduler;
    live?: LiveHub;
    webhooks?: Webhooks;
    notifications?: NotificationsBackground;
  } = {
    config,
    database,
    db: database.db,
    dialect: database.dialect,
    clock,
    secret:
      overrides.secret ??
      ServerSecret.load({ secretKey: config.secretKey, previousKeys: config.secretKeyPrevious, dataDir: config.dataDir }),
    scopes: new ScopeRegistry(overrides.scopeReaders ?? SCOPE_READERS),
    bus: overrides.bus ?? (database.pool ? new PostgresBus(database.pool, database.pool.options) : new InProcessBus()),
    git: overrides.git ?? new BareGitStore(join(config.dataDir, 'git'), database.db, database),
    blobs: overrides.blobs ?? new FsBlobStore(join(config.dataDir, 'blobs')),
    jobs:
      overrides.jobs ??
      new DbJobQueue(database.db, {
        dialect: database.dialect,
        clock,
        onError: (err, job) => console.error(`weft: job ${job ? `${job.kind} #${job.id}` : 'queue'} failed:`, err),
      }),
  };
  deps.live = new LiveHub(database.db, database.dialect, deps.bus);
  deps.timers = new TimerScheduler(deps as Deps, overrides.timers);
  deps.webhooks = new Webhooks(deps as Deps);
  deps.notifications = new NotificationsBackground(deps as Deps);
  registerGitMaintenance(deps as Deps);
  registerSearchIndexer(deps as Deps);
  registerMirrors(deps as Deps);
  registerSchedules(deps as Deps);
  registerAutoMerge(deps as Deps);
  return deps as Deps;
}

/** Starts the background parts (job workers, cross-instance listeners); the CLI does not. */
export async function startBackground(deps: Deps): Promise<void> {
  // SQLite file: the WAL checkpoints move to the background writer's thread from the start
  // (docs/architecture.md "One store, two dialects"; bench/README.md "Session 12")
  await deps.database.startWriter();
  await deps.bus.start();
  deps.live.start();
  deps.jobs.start();
  deps.timers.start();
  await deps.webhooks.start();
  await deps.notifications.start();
  // Work a killed process left half-done (README "Storage lifetimes and crash recovery"): merge
  // claims whose instance is gone, pushes not yet recorded, unreferenced blobs and spooled bodies.
  await startMergeRecovery(deps).catch((err) => console.error('weft: recovering merge claims failed:', err));
  if (deps.git instanceof BareGitStore) {
    await recoverPushes(deps, deps.git).catch((err) => console.error('weft: recovering pushes failed:', err));
  }
  await sweepPushSpool(deps.config.dataDir, deps.config.transferTimeoutMs + 60_000).catch(() => undefined);
  startBlobSweep(deps);
  startCiBackground(deps);
}

/** Stops the background parts; called on shutdown before the database closes. */
export async function stopBackground(deps: Deps): Promise<void> {
  stopBlobSweep(deps);
  stopCiBackground(deps);
  await stopMergeRecovery(deps);
  await deps.timers.stop();
  await deps.webhooks.stop();
  await deps.notifications.stop();
  await deps.jobs.stop();
  await deps.webhooks.close();
  await deps.live.close();
  await deps.bus.close();
}
