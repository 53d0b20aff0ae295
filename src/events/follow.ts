/**
 * Following the event store from a cursor kept in the database (README "Event order"): what the
 * webhook dispatcher (hooks/dispatch.ts) and the notification fan-out (notifications/fanout.ts)
 * share. `EventFollower` is the per-instance loop (woken by the bus, polling as a fallback, again
 * at once after a full batch, soon while committed events wait to settle); `eventsAfterCursor`
 * reads, in the caller's transaction, the cursor row (locked; on PostgreSQL skipped while another
 * instance holds it) and the settled events after it, in id order.
 */
import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../db/index.ts';
import type { DB } from '../db/types.ts';
import type { EventBus } from '../deps.ts';
import { settledBound } from './order.ts';
import type { EventRow } from './service.ts';

const POLL_MS = 1000;
/** While committed events are not settled yet (PostgreSQL), the store is re-read this often. */
const UNSETTLED_RETRY_MS = 20;

/** What one batch found: a full batch (read again at once), events not settled yet, or nothing more. */
export type FollowStep = 'more' | 'unsettled' | 'idle';

export abstract class EventFollower {
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private stopped = true;

  protected constructor(
    private readonly bus: EventBus,
    /** what a failed batch is logged as */
    private readonly what: string,
  ) {}

  /** One batch. */
  protected abstract step(): Promise<FollowStep>;

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.unsubscribe = this.bus.onNewEvents(() => this.wake());
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.loop();
  }

  private async loop(): Promise<void> {
    let delay = POLL_MS;
    try {
      for (;;) {
        this.again = false;
        const step = await this.step();
        if (this.stopped) return;
        if (step === 'more' || this.again) continue;
        if (step === 'unsettled') delay = UNSETTLED_RETRY_MS;
        break;
      }
    } catch (err) {
      if (!this.stopped) console.error(`weft: ${this.what} failed`, err);
    } finally {
      this.running = null;
    }
    if (!this.stopped) {
      this.timer = setTimeout(() => this.wake(), delay);
      this.timer.unref();
    }
  }
}

/** An event as a follower reads it (no `created_at`). */
export type CursorEvent = Omit<EventRow, 'created_at'>;

/**
 * In the caller's transaction: the cursor of `table` (row 1, locked) and up to `limit` settled
 * events after it in id order. `from` may move the start past the cursor (or answer null: nothing
 * to read). With `kinds`, only events of those kinds are read, and `through` says how far the
 * cursor may move (the last event read in a full batch, else the newest settled event looked
 * over); without, `through` is the last event read. 'idle' when there is nothing (or another
 * instance holds the cursor), 'unsettled' when committed events wait to settle.
 */
export async function eventsAfterCursor(
  db: Kysely<DB>,
  dialect: Dialect,
  table: 'hook_dispatch' | 'notification_dispatch',
  limit: number,
  from: (cursor: number) => Promise<number | null> = async (cursor) => cursor,
  kinds?: readonly string[],
): Promise<{ events: CursorEvent[]; through: number } | 'idle' | 'unsettled'> {
  let cursorQuery = db.selectFrom(table).select('last_event_id').where('id', '=', 1);
  // another instance holding the cursor is following: nothing to do here
  if (dialect === 'postgres') cursorQuery = cursorQuery.forUpdate().skipLocked();
  const cursor = await cursorQuery.executeTakeFirst();
  if (!cursor) return 'idle';
  const start = await from(Number(cursor.last_event_id));
  if (start === null) return 'idle';
  const settled = settledBound(dialect);
  // with kinds, one bound for both statements: the events below it are all committed
  const bound = settled && kinds ? Number((await sql<{ b: string }>`select ${settled} as b`.execute(db)).rows[0]!.b) : settled;
  const newest = async () =>
    Number(
      (
        await db
          .selectFrom('events')
          .select((eb) => eb.fn.max('id').as('top'))
          .where('id', '>', start)
          .$if(bound !== null, (q) => q.where('id', '<', bound!))
          .executeTakeFirst()
      )?.top ?? start,
    );
  const through = kinds ? await newest() : null;
  let q = db
    .selectFrom('events')
    .select(['id', 'kind', 'scopes', 'actor_uuid', 'actor_username', 'payload'])
    .where('id', '>', start)
    .orderBy('id')
    .limit(limit);
  if (bound !== null) q = q.where('id', '<', bound);
  if (through !== null) q = q.where('id', '<=', through).where('kind', 'in', kinds!);
  const events = (await q.execute()) as CursorEvent[];
  if (through !== null && events.length < limit && through > start) return { events, through };
  if (events.length > 0) return { events, through: Number(events[events.length - 1]!.id) };
  if (!settled) return 'idle';
  const top = await db
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('top'))
    .executeTakeFirst();
  return top?.top !== null && top?.top !== undefined && Number(top.top) > start ? 'unsettled' : 'idle';
}
