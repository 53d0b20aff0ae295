import { timerOwnerState } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { inTransaction } from '../events/service.ts';
import { createMarkdownRenderer, extractMentions } from '../markdown/render.ts';
import { nextAfterFiring } from './schedule.ts';
import { type TimerRow, scheduleOf, timerScopes } from './service.ts';

export interface TimerSchedulerOptions {
  /**
   * The longest an idle scheduler sleeps before looking at the next due time again. This short
   * poll is how an instance notices timers created or changed on another instance (its own
   * changes wake it at once).
   */
  pollMs?: number;
  /** Occurrences claimed and fired per transaction. */
  batchSize?: number;
  onError?: (err: unknown) => void;
}

/**
 * Fires due timers (README "Timers"). It sits beside the job queue rather than on it: the timer
 * row already is the durable schedule, so an occurrence is claimed by a conditional update of
 * that row (`next_run_at` still the value read, `status` still active) in the same transaction
 * that writes the `timer-fired` event. On PostgreSQL the due rows are read `FOR UPDATE SKIP
 * LOCKED`, so instances share a burst without waiting on each other; on SQLite transactions are
 * serialised. Either the row moves on and the event exists, or neither: an occurrence fires
 * exactly once, and a process killed mid-firing leaves it due for the next start.
 *
 * The scheduler sleeps until the next due time (at most `pollMs`), is woken after commit by
 * local creates and updates, and on each wake fires everything due, oldest first. An occurrence
 * missed while no server ran fires once; the schedule then continues after now.
 */
export class TimerScheduler {
  private timeout: NodeJS.Timeout | null = null;
  private stopped = true;
  private running = false;
  private wakeRequested = false;
  private loop: Promise<void> = Promise.resolve();
  /** Batches of one instance run one after another (the background pass and runDue). */
  private batches: Promise<unknown> = Promise.resolve();
  private readonly pollMs: number;
  private readonly batchSize: number;
  private readonly markdown = createMarkdownRenderer();

  constructor(
    private readonly deps: Deps,
    private readonly opts: TimerSchedulerOptions = {},
  ) {
    this.pollMs = opts.pollMs ?? 1000;
    this.batchSize = opts.batchSize ?? 200;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.wake();
  }

  /** Stops waking and waits for a firing in progress to commit. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timeout) clearTimeout(this.timeout);
    this.timeout = null;
    await this.loop;
  }

  /** Looks for due timers now (after a local change). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.wakeRequested = true;
      return;
    }
    if (this.timeout) clearTimeout(this.timeout);
    this.timeout = null;
    this.running = true;
    this.loop = this.run();
  }

  /**
   * Fires everything due by the clock now and returns how many occurrences fired. For tests
   * with an injected clock and for a scheduler that is not started; waits for a running pass.
   */
  async runDue(): Promise<number> {
    await this.loop;
    let total = 0;
    for (;;) {
      const n = await this.fireBatch();
      total += n;
      if (n < this.batchSize) return total;
    }
  }

  private async run(): Promise<void> {
    let delay = this.pollMs;
    try {
      for (;;) {
        this.wakeRequested = false;
        const fired = await this.fireBatch();
        if (this.stopped) return;
        if (fired === this.batchSize || this.wakeRequested) continue;
        delay = await this.untilNextDue();
        break;
      }
    } catch (err) {
      (this.opts.onError ?? ((e) => console.error('weft: timer scheduler failed:', e)))(err);
    } finally {
      this.running = false;
    }
    if (!this.stopped) {
      this.timeout = setTimeout(() => this.wake(), delay);
      this.timeout.unref();
    }
  }

  /** Milliseconds until the next active timer is due, at most the poll interval. */
  private async untilNextDue(): Promise<number> {
    const next = await this.deps.db
      .selectFrom('timers')
      .select('next_run_at')
      .where('status', '=', 'active')
      .orderBy('next_run_at')
      .limit(1)
      .executeTakeFirst();
    if (!next) return this.pollMs;
    const ms = Date.parse(next.next_run_at) - this.deps.clock.now().getTime();
    return Math.max(0, Math.min(this.pollMs, ms));
  }

  /** Claims and fires up to one batch of due occurrences in one transaction; returns how many were claimed. */
  private fireBatch(): Promise<number> {
    const run = this.batches.then(
      () => this.claimAndFire(),
      () => this.claimAndFire(),
    );
    this.batches = run.catch(() => undefined);
    return run;
  }

  private async claimAndFire(): Promise<number> {
    const { deps } = this;
    const now = deps.clock.now();
    const nowIso = now.toISOString();
    return inTransaction(deps, async (tx) => {
      let query = tx.db
        .selectFrom('timers')
        .selectAll()
        .where('status', '=', 'active')
        .where('next_run_at', '<=', nowIso)
        .orderBy('next_run_at')
        .orderBy('uuid')
        .limit(this.batchSize);
      if (deps.dialect === 'postgres') query = query.forUpdate().skipLocked();
      const due: TimerRow[] = await query.execute();
      if (due.length === 0) return 0;
      const mentioned = new Map(due.map((t) => [t.uuid, extractMentions(t.message)]));
      const mentionable = await this.activeUsers(tx.db, [...mentioned.values()].flat());
      const owners = new Map<string, 'ok' | 'inactive' | 'gone'>();
      for (const timer of due) {
        const key = `${timer.scope}:${timer.owner_uuid}`;
        let state = owners.get(key);
        if (state === undefined) {
          state = await timerOwnerState(tx.db, timer.scope, timer.owner_uuid);
          owners.set(key, state);
        }
        await this.fireOne(tx, timer, state, now, mentioned.get(timer.uuid)!, mentionable);
      }
      return due.length;
    });
  }

  private async fireOne(
    tx: Parameters<Parameters<typeof inTransaction>[1]>[0],
    timer: TimerRow,
    ownerState: 'ok' | 'inactive' | 'gone',
    now: Date,
    mentioned: string[],
    mentionable: Map<string, { uuid: string; username: string }>,
  ): Promise<void> {
    const nowIso = now.toISOString();
    const dueAt = new Date(timer.next_run_at);
    const next = nextAfterFiring(scheduleOf(timer), dueAt, now);
    const claim = tx.db
      .updateTable('timers')
      .where('uuid', '=', timer.uuid)
      .where('status', '=', 'active')
      .where('next_run_at', '=', timer.next_run_at);
    if (ownerState !== 'ok') {
      // The owner is gone or inactive: the occurrence passes without firing. A deleted repo's
      // timers, and once timers, end cancelled; recurring ones wait for their next occurrence.
      const end = ownerState === 'gone' || next === null;
      await claim
        .set(end ? { status: 'cancelled', updated_at: nowIso } : { next_run_at: next.toISOString(), updated_at: nowIso })
        .execute();
      return;
    }
    const result = await claim
      .set((eb) => ({
        run_count: eb('run_count', '+', 1),
        last_run_at: nowIso,
        next_run_at: next ? next.toISOString() : timer.next_run_at,
        status: next ? 'active' : 'completed',
        updated_at: nowIso,
      }))
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) !== 1) return; // another instance fired it
    const mentions = mentioned
      .map((u) => mentionable.get(u))
      .filter((u): u is { uuid: string; username: string } => u !== undefined);
    await tx.emit({
      kind: 'timer-fired',
      scopes: timerScopes(timer),
      actor: null,
      payload: {
        timer_uuid: timer.uuid,
        message: timer.message,
        message_html: this.renderMessage(timer.message, mentionable),
        mentions,
        run_count: timer.run_count + 1,
        scheduled_for: timer.next_run_at,
      },
    });
  }

  /** Active users among the mentioned names, by lower-case username. */
  private async activeUsers(db: Deps['db'], names: string[]): Promise<Map<string, { uuid: string; username: string }>> {
    const unique = [...new Set(names)];
    const map = new Map<string, { uuid: string; username: string }>();
    if (unique.length === 0) return map;
    const rows = await db
      .selectFrom('users')
      .select(['uuid', 'username'])
      .where('username', 'in', unique)
      .where('is_active', '=', 1)
      .execute();
    for (const r of rows) map.set(r.username, { uuid: r.uuid, username: r.username });
    return map;
  }

  /** Sanitised HTML of the message; mentions of unknown or inactive users stay plain text. */
  private renderMessage(message: string, mentionable: Map<string, unknown>): string {
    return this.markdown
      .render(message)
      .replace(/<a href="\/users\/([a-z0-9_-]+)" class="mention"[^>]*>([^<]*)<\/a>/g, (link, name: string, text: string) =>
        mentionable.has(name) ? link : text,
      );
  }
}
