import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Dialect } from '../db/index.ts';
import { isUniqueViolation, runAfterCommit } from '../db/tx.ts';
import type { DB } from '../db/types.ts';
import type { Clock } from '../time.ts';

export interface JobInput {
  kind: string;
  payload: Record<string, unknown>;
  /** When the job becomes due (ISO 8601); now when omitted. */
  runAt?: string;
  /** At most one queued job per key: a second enqueue with a key still queued does nothing. */
  dedupeKey?: string;
}

export interface JobContext {
  id: number;
  kind: string;
  attempts: number;
}

interface ClaimedJob {
  id: number;
  kind: string;
  payload: string;
  attempts: number;
  /** The `locked_until` this worker wrote when it claimed the job, then at each renewal. */
  lease: string;
}

export type JobHandler = (payload: Record<string, unknown>, job: JobContext) => Promise<void>;

/**
 * Background work that must survive a restart: fork copies, clean-ups, timer firings. A job is
 * written in the caller's transaction (it exists exactly when the change that asked for it
 * committed) and run at least once, by one worker at a time: workers claim due jobs with
 * `FOR UPDATE SKIP LOCKED` on PostgreSQL (so instances never take the same job) and a lease,
 * so a job held by a crashed worker is taken over when the lease runs out. Handlers must
 * therefore be idempotent (a conditional update is the usual way).
 */
export interface JobQueue {
  /** Writes the job with `db` (the caller's transaction when one is open). */
  enqueue(db: Kysely<DB>, job: JobInput): Promise<void>;
  /**
   * `holdLease`: the handler may run longer than the lease (an import, a mirror sync: work with
   * its own timeout), so its lease is renewed while it runs; a worker that dies stops renewing.
   */
  register(kind: string, handler: JobHandler, opts?: { holdLease?: boolean }): void;
  /** Looks for due work now (called after commit by enqueue; callers rarely need it). */
  wake(): void;
  start(): void;
  /** Stops claiming and waits for running handlers. */
  stop(): Promise<void>;
}

export interface JobQueueOptions {
  dialect: Dialect;
  clock: Clock;
  /** How often an idle worker looks for jobs written by other instances (ms). */
  pollMs?: number;
  /** How long a claim holds a job before another worker may take it over (ms). */
  leaseMs?: number;
  batchSize?: number;
  maxAttempts?: number;
  onError?: (err: unknown, job: JobContext | null) => void;
}

export class DbJobQueue implements JobQueue {
  private readonly handlers = new Map<string, JobHandler>();
  private readonly leaseHolders = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private stopped = true;
  private loop: Promise<void> | null = null;
  private wakeRequested = false;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly batchSize: number;
  private readonly maxAttempts: number;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly opts: JobQueueOptions,
  ) {
    this.pollMs = opts.pollMs ?? 1000;
    this.leaseMs = opts.leaseMs ?? 60_000;
    this.batchSize = opts.batchSize ?? 20;
    this.maxAttempts = opts.maxAttempts ?? 8;
  }

  register(kind: string, handler: JobHandler, opts: { holdLease?: boolean } = {}): void {
    this.handlers.set(kind, handler);
    if (opts.holdLease) this.leaseHolders.add(kind);
    else this.leaseHolders.delete(kind);
  }

  async enqueue(db: Kysely<DB>, job: JobInput): Promise<void> {
    const now = this.opts.clock.now().toISOString();
    const values = {
      kind: job.kind,
      payload: JSON.stringify(job.payload),
      dedupe_key: job.dedupeKey ?? null,
      run_at: job.runAt ?? now,
      locked_until: null,
      attempts: 0,
      last_error: null,
      failed_at: null,
      created_at: now,
    };
    try {
      await db
        .insertInto('jobs')
        .values(values)
        .onConflict((oc) => oc.column('dedupe_key').doNothing())
        .execute();
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
    // Woken once the caller's transaction commits: before that no worker could see the row.
    runAfterCommit(this.db, () => this.wake());
  }

  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.wakeRequested = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.loop = this.runOnce();
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.loop;
  }

  private async runOnce(): Promise<void> {
    this.running = true;
    let delay = this.pollMs;
    try {
      for (;;) {
        this.wakeRequested = false;
        const claimed = await this.claim();
        await Promise.all(claimed.map((job) => this.execute(job)));
        if (this.stopped) return;
        if (claimed.length === this.batchSize || this.wakeRequested) continue;
        delay = await this.untilNextDue();
        break;
      }
    } catch (err) {
      this.opts.onError?.(err, null);
    } finally {
      this.running = false;
    }
    if (!this.stopped) {
      this.timer = setTimeout(() => this.wake(), delay);
      this.timer.unref();
    }
  }

  /**
   * Milliseconds until the next job could be claimed, at most the poll interval. A job leased
   * by another worker is not claimable before its lease ends, so its due time is the later of
   * `run_at` and `locked_until` (counting only `run_at` made an idle worker spin while another
   * instance ran a job whose `run_at` had passed).
   */
  private async untilNextDue(): Promise<number> {
    const next = await this.db
      .selectFrom('jobs')
      .select(sql<string | null>`min(case when locked_until > run_at then locked_until else run_at end)`.as('due'))
      .where('failed_at', 'is', null)
      .executeTakeFirst();
    if (!next?.due) return this.pollMs;
    const ms = Date.parse(String(next.due)) - this.opts.clock.now().getTime();
    return Math.max(0, Math.min(this.pollMs, ms));
  }

  private async claim(): Promise<ClaimedJob[]> {
    const now = this.opts.clock.now();
    const nowIso = now.toISOString();
    const lease = new Date(now.getTime() + this.leaseMs).toISOString();
    return this.db.transaction().execute(async (trx) => {
      let query = trx
        .selectFrom('jobs')
        .select(['id', 'kind', 'payload', 'attempts'])
        .where('failed_at', 'is', null)
        .where('run_at', '<=', nowIso)
        .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', nowIso)]))
        .orderBy('run_at')
        .orderBy('id')
        .limit(this.batchSize);
      if (this.opts.dialect === 'postgres') query = query.forUpdate().skipLocked();
      const due = await query.execute();
      if (due.length === 0) return [];
      await trx
        .updateTable('jobs')
        .set({ locked_until: lease, attempts: sql<number>`attempts + 1` })
        .where(
          'id',
          'in',
          due.map((j) => j.id),
        )
        .execute();
      return due.map((j) => ({ ...j, attempts: j.attempts + 1, lease }));
    });
  }

  /**
   * Keeps a running job's lease while its handler works, for kinds registered with `holdLease`
   * (a mirror sync or an import can run longer than the lease): every third of the lease the lease is moved on, only while this
   * worker still holds it. `job.lease` follows, so the finish below matches the row. A worker
   * that died stops renewing and the job is taken over when the last lease runs out.
   */
  private holdLease(job: ClaimedJob): { stop: () => Promise<void> } {
    let beat: Promise<void> = Promise.resolve();
    let stopped = false;
    const renew = async (): Promise<void> => {
      const next = new Date(this.opts.clock.now().getTime() + this.leaseMs).toISOString();
      if (next <= job.lease) return;
      const res = await this.db
        .updateTable('jobs')
        .set({ locked_until: next })
        .where('id', '=', job.id)
        .where('locked_until', '=', job.lease)
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) === 1) job.lease = next;
      else stopped = true;
    };
    const timer = setInterval(
      () => {
        if (stopped) return;
        beat = beat.then(renew).catch((e: unknown) => this.opts.onError?.(e, null));
      },
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    timer.unref();
    return {
      stop: async () => {
        stopped = true;
        clearInterval(timer);
        await beat;
      },
    };
  }

  /**
   * Runs one claimed job. The delete or reschedule that follows only touches the row while this
   * worker still holds its lease: once the lease ran out and another worker took the job over,
   * a late finish must not delete or unlock the job under that worker.
   */
  private async execute(job: ClaimedJob): Promise<void> {
    const context: JobContext = { id: job.id, kind: job.kind, attempts: job.attempts };
    const handler = this.handlers.get(job.kind);
    const heartbeat = this.leaseHolders.has(job.kind) ? this.holdLease(job) : { stop: async () => {} };
    try {
      if (!handler) throw new Error(`no handler for job kind ${job.kind}`);
      await handler(JSON.parse(job.payload) as Record<string, unknown>, context);
      await heartbeat.stop();
      await this.db.deleteFrom('jobs').where('id', '=', job.id).where('locked_until', '=', job.lease).execute();
    } catch (err) {
      await heartbeat.stop();
      this.opts.onError?.(err, context);
      const now = this.opts.clock.now();
      const giveUp = job.attempts >= this.maxAttempts;
      // Exponential back-off: 1 s, 2 s, 4 s ... capped at 10 minutes.
      const backoff = Math.min(600_000, 1000 * 2 ** (job.attempts - 1));
      await this.db
        .updateTable('jobs')
        .set({
          locked_until: null,
          last_error: String((err as Error)?.message ?? err).slice(0, 2000),
          run_at: new Date(now.getTime() + backoff).toISOString(),
          failed_at: giveUp ? now.toISOString() : null,
          // A job given up on no longer holds its dedupe key: the same work may be asked for again.
          ...(giveUp ? { dedupe_key: null } : {}),
        })
        .where('id', '=', job.id)
        .where('locked_until', '=', job.lease)
        .execute()
        .catch((e: unknown) => this.opts.onError?.(e, context));
    }
  }
}
