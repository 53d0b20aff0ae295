import type { Kysely } from 'kysely';
import type { BlobStore } from './blobs/store.ts';
import type { Config } from './config.ts';
import type { Database, Dialect } from './db/index.ts';
import type { DB } from './db/types.ts';
import type { EventRecord } from './db/rows.ts';
import type { GitStore } from './git/store.ts';
import type { JobQueue } from './jobs/queue.ts';
import type { ServerSecret } from './secrets/server-secret.ts';
import type { Clock } from './time.ts';
import type { Viewer } from './viewer.ts';

/**
 * Fan-out of committed events to live subscribers (events/bus.ts: in process, or PostgreSQL
 * LISTEN/NOTIFY across instances). `publish` is called after the writing transaction commits.
 * The bus carries hints, not the events: a live stream re-reads the store by id (events/live.ts),
 * so a lost or late notification delays an event but never loses it.
 */
/**
 * What a hint knows: the kinds of the events it is about, or null when unknown (another
 * instance's notification without them, a reconnection). Listeners that only re-read may ignore it.
 */
export interface NewEventsHint {
  kinds: readonly string[] | null;
}

/**
 * A live signal (README "Live event stream"): a hint for the streams of one scope that asked for
 * its kind (`kind=…`), not an event: not stored, not replayed, sent without an id. A job's log
 * growing is one (`job-log`): the page then reads the log from the offset it has.
 */
export interface LiveSignal {
  scope: string;
  kind: string;
  /** signals with the same scope, kind and key waiting to be sent across instances: only the last is sent */
  key: string;
  data: Record<string, unknown>;
}

export interface EventBus {
  publish(event: EventRecord): void;
  /** Several events committed together: each to the subscribers, one hint for them all. */
  publishMany(events: EventRecord[]): void;
  /** Sends a signal to the live streams of every instance (after the commit of what it is about). */
  signal(signal: LiveSignal): void;
  onSignal(listener: (signal: LiveSignal) => void): () => void;
  /** The events this instance committed, as they are published. */
  subscribe(listener: (event: EventRecord) => void): () => void;
  /** Called when events may exist past what was read: committed here or on another instance. */
  onNewEvents(listener: (hint: NewEventsHint) => void): () => void;
  /** Starts listening for other instances' events (no-op in process). */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** One live stream's interest: a scope, optionally one kind. */
export interface LiveSubscriber {
  scope: string;
  kind?: string;
  /** Called with this scope's settled events in increasing id order. */
  deliver(event: EventRecord): void;
  /** Called with the signals of this scope and of `kind` (only a subscriber naming a kind gets any). */
  signal?(signal: LiveSignal): void;
  /** Called when the hub stops (server shutdown). */
  close(): void;
}

/** The live side of the event store (events/live.ts `LiveHub`): follows the store and feeds the streams. */
export interface LiveFeed {
  start(): void;
  /** Subscribes a stream; the id of the newest settled event, where it starts. */
  add(sub: LiveSubscriber): Promise<number>;
  remove(sub: LiveSubscriber): void;
  /** Streams subscribed on this instance. */
  readonly subscriberCount: number;
  /** A signal to this instance's subscribers alone (not sent to the other instances). */
  deliverSignal(signal: LiveSignal): void;
  /** The scopes with a subscriber on this instance asking for `kind`, starting with `prefix`. */
  scopesAsking(kind: string, prefix: string): string[];
  close(): Promise<void>;
}

/** Who may read one event scope kind's scopes (access/scopes.ts registers one per kind). */
export type ScopeReader = (deps: Deps, viewer: Viewer, id: string) => Promise<boolean>;

/** The scope readers by kind (events/scopes.ts `ScopeRegistry`). */
export interface ScopeReaders {
  reader(kind: string): ScopeReader;
}

/** A background part started and stopped with the process (root.ts `startBackground`). */
export interface BackgroundPart {
  start(): void | Promise<void>;
  stop(): Promise<void>;
}

/** The timer scheduler (timers/scheduler.ts `TimerScheduler`): wakes to fire what is due. */
export interface TimerRunner extends BackgroundPart {
  /** look again for due timers now (a timer was created or changed) */
  wake(): void;
  /** fires every due timer now; the number fired */
  runDue(): Promise<number>;
}

/** Webhook delivery (hooks/background.ts `Webhooks`): a background part with its connections to close. */
export interface WebhookDelivery extends BackgroundPart {
  close(): Promise<void>;
}

/**
 * What services need from the outside world: the type only. It is built once by `createDeps` of
 * the composition root, src/root.ts (main.ts, the CLI and the test helpers all use it). Each seam is an interface with one real implementation
 * (the interfaces are named here or in a file that imports no service, so this file is at the bottom of the layers):
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
  live: LiveFeed;
  git: GitStore;
  blobs: BlobStore;
  jobs: JobQueue;
  clock: Clock;
  timers: TimerRunner;
  /** Who may read each event scope kind (access/scopes.ts). */
  scopes: ScopeReaders;
  /** Webhook delivery: dispatcher, sender jobs, sweep (src/hooks/background.ts). */
  webhooks: WebhookDelivery;
  /** The notification fan-out (src/notifications/fanout.ts). */
  notifications: BackgroundPart;
  /** The server secret: seals stored credentials, signs links and addresses (src/secrets, docs/secrets.md). */
  secret: ServerSecret;
}
