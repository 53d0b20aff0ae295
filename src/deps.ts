import type { Kysely } from 'kysely';
import type { BlobStore } from './blobs/store.ts';
import type { Config } from './config.ts';
import type { Database, Dialect } from './db/index.ts';
import type { DB } from './db/types.ts';
import type { EventBus } from './events/bus.ts';
import type { LiveHub } from './events/live.ts';
import type { ScopeRegistry } from './events/scopes.ts';
import type { GitStore } from './git/store.ts';
import type { Webhooks } from './hooks/background.ts';
import type { JobQueue } from './jobs/queue.ts';
import type { Clock } from './time.ts';
import type { TimerScheduler } from './timers/scheduler.ts';

/**
 * What services need from the outside world: the type only. It is built once by `createDeps` of
 * the composition root, src/root.ts (main.ts, the CLI and the test helpers all use it). Each seam is an interface with one real implementation:
 * - `bus`: committed events to live subscribers (in process; across instances on PostgreSQL);
 * - `git`: bare repositories, forks, merges (src/git/store.ts);
 * - `blobs`: content-addressed files under DATA_DIR (src/blobs/store.ts);
 * - `jobs`: background work written in the caller's transaction (src/jobs/queue.ts);
 * - `clock`: "now", injectable for schedule tests;
 * - `timers`: the timer scheduler (src/timers/scheduler.ts), started with the background parts.
 */
export interface Deps {
  config: Config;
  database: Database;
  db: Kysely<DB>;
  dialect: Dialect;
  bus: EventBus;
  /** The live side of the event store: follows it and feeds the SSE streams (events/live.ts). */
  live: LiveHub;
  git: GitStore;
  blobs: BlobStore;
  jobs: JobQueue;
  clock: Clock;
  timers: TimerScheduler;
  /** Who may read each event scope kind (access/scopes.ts). */
  scopes: ScopeRegistry;
  /** Webhook delivery: dispatcher, sender jobs, sweep (src/hooks/background.ts). */
  webhooks: Webhooks;
}
