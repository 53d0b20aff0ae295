import { type TimerOwnerState, timerOwnerStates } from '../access/index.ts';
import { sql } from 'kysely';
import type { Deps } from '../deps.ts';
import { inTransaction } from '../core/transaction.ts';
import { timerLag } from '../http/metrics.ts';
import { createMarkdownRenderer } from '../markdown/render.ts';
import { nextAfterFiring } from './schedule.ts';
import { type TimerRow, scheduleOf, timerScopes } from './service.ts';

/**
 * Once caught up, claims start at most this often (ms): timers coming due at a high rate then
 * share batches instead of each paying a transaction of its own. A small part of the lag.
 */
const CLAIM_GAP_MS = 10;

export interface TimerSchedulerOptions {
  /**
   * The longest an idle scheduler sleeps before looking at the next due time again. This short
   * poll is how an instance notices timers created or changed on another instance (its own
   * changes wake it at once).
   */
  pollMs?: number;
  /** Occurrences claimed and fired per transaction. */
  batchSize?: number;
  /**
   * Batches the background pass may have under way at once on PostgreSQL (default 2): the next
   * claim starts once the previous batch holds its rows, and SKIP LOCKED hands each its own
   * rows, so timers coming due are not held up by a firing in progress. SQLite always runs one.
   */
  parallel?: number;
  onError?: (err: unknown) => void;
  /**
   * Test-only: milliseconds to wait inside each firing transaction after the claim (default from
   * WEFT_TEST_TIMER_HOLD_MS, else 0), so a crash test can kill a server mid-firing.
   */
  holdInFiringMs?: number;
}

/**
 * Fires due timers (README "Timers"). It sits beside the job queue rather than on it: the timer
 * row already is the durable schedule, so occurrences are claimed by moving their rows on in the
 * same transaction that writes their `timer-fired` events. A pass claims up to `batchSize` due
 * timers at once: on PostgreSQL it reads them `FOR UPDATE SKIP LOCKED`, so instances share a
 * burst without waiting on or repeating each other; on SQLite transactions are serialised. The
 * owners and the mentioned users of the whole batch are looked up in a few queries, the rows
 * are moved on in one update and the events written in one insert. Either the rows move on and
 * the events exist, or neither: each occurrence fires exactly once, and a process killed
 * mid-firing leaves its batch due for the next start.
 *
 * The scheduler sleeps until the next due time (at most `pollMs`), is woken by the
 * `timer-created` and `timer-updated` events on the bus, and on each wake fires everything due, oldest first. An occurrence
 * missed while no server ran fires once; the schedule then continues after now.
 */
export class TimerScheduler {
  private timeout: NodeJS.Timeout | null = null;
  private stopped = true;
  private running = false;
  private wakeRequested = false;
  private unsubscribe: (() => void) | null = null;
  private loop: Promise<void> = Promise.resolve();
  /** Batches of one instance run one after another (the background pass and runDue). */
  private batches: Promise<unknown> = Promise.resolve();
  private readonly pollMs: number;
  private readonly batchSize: number;
  private readonly parallel: number;
  private readonly holdMs: number;
  /** Where the renderer records the names of the message being rendered (see `render`). */
  private mentioned: Set<string> | null = null;
  private readonly markdown = createMarkdownRenderer({
    mentionHref: (username) => {
      this.mentioned?.add(username);
      return `/users/${encodeURIComponent(username)}`;
    },
  });

  constructor(
    private readonly deps: Deps,
    private readonly opts: TimerSchedulerOptions = {},
  ) {
    this.pollMs = opts.pollMs ?? 1000;
    this.batchSize = opts.batchSize ?? 200;
    this.parallel = deps.dialect === 'postgres' ? Math.max(1, opts.parallel ?? 2) : 1;
    this.holdMs = opts.holdInFiringMs ?? Number(process.env.WEFT_TEST_TIMER_HOLD_MS || 0);
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    // Created or changed timers wake the scheduler after commit: this instance's always, other
    // instances' too once the event bus delivers across instances (until then the poll does).
    this.unsubscribe = this.deps.bus.subscribe((event) => {
      if (event.kind === 'timer-created' || event.kind === 'timer-updated') this.wake();
    });
    this.wake();
  }

  /** Stops waking and waits for a firing in progress to commit. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.timeout) clearTimeout(this.timeout);
    this.timeout = null;
    await this.loop;
  }

  /** Looks for due timers now (after a timer was created or changed). */
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

  /**
   * The background pass: claims and fires until nothing is due, then sleeps until the next due
   * time. On PostgreSQL up to `parallel` batches are under way at once, and the next claim starts
   * as soon as the previous one holds its rows rather than when it commits: SKIP LOCKED hands it
   * only rows no batch holds, so timers coming due are not held up by a firing in progress (the
   * wait for the previous batch was most of the lag under load). SQLite runs one at a time.
   */
  private async run(): Promise<void> {
    let delay = this.pollMs;
    const underWay = new Set<Promise<number>>();
    try {
      await this.batches; // a runDue() batch in progress finishes first
      for (;;) {
        this.wakeRequested = false;
        const claimStart = Date.now();
        let claimedNow!: (n: number) => void;
        const claimed = new Promise<number>((resolve) => (claimedNow = resolve));
        const batch = this.claimAndFire(claimedNow);
        underWay.add(batch);
        batch.then(
          () => underWay.delete(batch),
          () => claimedNow(-1),
        );
        const n = await claimed;
        if (n <= 0) await batch; // nothing claimed: its transaction ends at once (or it failed: rethrow)
        if (this.stopped) break;
        while (underWay.size >= this.parallel) await Promise.race(underWay);
        if (n > 0 && n < this.batchSize) {
          // Caught up at this claim: timers coming due meanwhile wait a moment to share a batch,
          // rather than each paying a transaction of their own.
          const gap = claimStart + CLAIM_GAP_MS - Date.now();
          if (gap > 0 && !this.stopped) await new Promise((r) => setTimeout(r, gap));
        }
        if (n > 0 || this.wakeRequested) continue;
        // Nothing was due at this claim: let the batches under way commit, then look again or sleep.
        if (underWay.size > 0) {
          await Promise.all(underWay);
          continue;
        }
        delay = await this.untilNextDue();
        break;
      }
    } catch (err) {
      (this.opts.onError ?? ((e) => console.error('weft: timer scheduler failed:', e)))(err);
    } finally {
      await Promise.allSettled(underWay);
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

  /** Claims and fires one batch after the batches of runDue() before it; returns how many it claimed. */
  private fireBatch(): Promise<number> {
    const go = () => this.claimAndFire();
    const run = this.batches.then(go, go);
    this.batches = run.catch(() => undefined);
    return run;
  }

  /** One batch in one transaction; `claimed` hears how many rows the claim holds as soon as it holds them. */
  private async claimAndFire(claimed?: (n: number) => void): Promise<number> {
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
        .limit(this.batchSize);
      if (deps.dialect === 'postgres') query = query.forUpdate().skipLocked();
      const due: TimerRow[] = await query.execute();
      claimed?.(due.length);
      if (due.length === 0) return 0;
      if (this.holdMs > 0) {
        // Test-only (README "Timers"): hold the claimed batch open so a crash test can kill the process here.
        console.error(`weft-test: holding ${due.length} claimed timers in the firing transaction`);
        await new Promise((r) => setTimeout(r, this.holdMs));
      }
      const owners = await timerOwnerStates(tx.db, due);
      const plans = due.map((timer) => planOccurrence(timer, owners.get(`${timer.scope}:${timer.owner_uuid}`)!, now));
      const firing = plans.filter((p) => p.fires);
      for (const p of firing) timerLag.observe(Math.max(0, now.getTime() - Date.parse(p.timer.next_run_at)) / 1000);
      await this.moveOn(tx.db, firing, nowIso, true);
      await this.moveOn(
        tx.db,
        plans.filter((p) => !p.fires),
        nowIso,
        false,
      );
      // One Markdown pass per message gives both its HTML and the names it mentions.
      const rendered = firing.map(({ timer }) => this.render(timer.message));
      const mentionable = await this.activeUsers(
        tx.db,
        rendered.flatMap((r) => r.names),
      );
      await tx.emitMany(
        firing.map(({ timer }, i) => ({
          kind: 'timer-fired',
          scopes: timerScopes(timer),
          actor: null,
          payload: {
            timer_uuid: timer.uuid,
            message: timer.message,
            message_html: keepMentionsOf(rendered[i]!.html, mentionable),
            mentions: rendered[i]!.names.map((u) => mentionable.get(u)).filter(
              (u): u is { uuid: string; username: string } => u !== undefined,
            ),
            run_count: timer.run_count + 1,
            scheduled_for: timer.next_run_at,
          },
        })),
      );
      return due.length;
    });
  }

  /**
   * Moves a batch of claimed timers on in one update. The rows are this pass's alone until
   * commit: locked by the select on PostgreSQL (another instance skips them, and a PATCH or
   * DELETE waits), and on SQLite the transaction holds the one connection of the one server
   * process. Firings bump `run_count` and set `last_run_at`.
   */
  private async moveOn(db: Deps['db'], plans: Occurrence[], nowIso: string, firing: boolean): Promise<void> {
    if (plans.length === 0) return;
    const fired = firing ? sql`, run_count = run_count + 1, last_run_at = ${nowIso}` : sql``;
    if (this.deps.dialect === 'postgres') {
      // Three array parameters joined by uuid: linear in the batch, one small statement.
      await sql`update timers set next_run_at = v.next_run_at, status = v.status, updated_at = ${nowIso}${fired}
        from unnest(${plans.map((p) => p.timer.uuid)}::text[], ${plans.map((p) => p.nextRunAt)}::text[],
          ${plans.map((p) => p.status)}::text[]) as v(uuid, next_run_at, status)
        where timers.uuid = v.uuid`.execute(db);
      return;
    }
    // SQLite: the same join over one JSON array parameter.
    const rows = JSON.stringify(plans.map((p) => [p.timer.uuid, p.nextRunAt, p.status]));
    await sql`update timers set next_run_at = v.next_run_at, status = v.status, updated_at = ${nowIso}${fired}
      from (select json_extract(value, '$[0]') as uuid, json_extract(value, '$[1]') as next_run_at,
        json_extract(value, '$[2]') as status from json_each(${rows})) as v
      where timers.uuid = v.uuid`.execute(db);
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

  /**
   * Sanitised HTML of a message and the lower-case names it mentions, in first-seen order: the
   * names are collected as the renderer links them, so code spans and URLs never mention anyone.
   */
  private render(message: string): { html: string; names: string[] } {
    const names = new Set<string>();
    this.mentioned = names;
    try {
      return { html: this.markdown.render(message), names: [...names] };
    } finally {
      this.mentioned = null;
    }
  }
}

/** Mention links of unknown or inactive users become plain text. */
function keepMentionsOf(html: string, mentionable: Map<string, unknown>): string {
  return html.replace(
    /<a href="\/users\/([a-z0-9_-]+)" class="mention"[^>]*>([^<]*)<\/a>/g,
    (link, name: string, text: string) => (mentionable.has(name) ? link : text),
  );
}

/** What one due occurrence does: fire, or pass without firing because its owner is inactive or gone. */
interface Occurrence {
  timer: TimerRow;
  fires: boolean;
  nextRunAt: string;
  status: 'active' | 'completed' | 'cancelled';
}

function planOccurrence(timer: TimerRow, owner: TimerOwnerState, now: Date): Occurrence {
  const next = nextAfterFiring(scheduleOf(timer), new Date(timer.next_run_at), now);
  if (owner !== 'ok') {
    // The occurrence passes without firing. A deleted repo's timers, and once timers, end
    // cancelled; recurring timers of an inactive owner wait for their next occurrence.
    const end = owner === 'gone' || next === null;
    return { timer, fires: false, nextRunAt: end ? timer.next_run_at : next.toISOString(), status: end ? 'cancelled' : 'active' };
  }
  return { timer, fires: true, nextRunAt: next ? next.toISOString() : timer.next_run_at, status: next ? 'active' : 'completed' };
}
