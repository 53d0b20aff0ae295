import type { Kysely } from 'kysely';
import type { Dialect } from '../db/index.ts';
import type { DB } from '../db/types.ts';
import type { EventBus, LiveFeed, LiveSignal, LiveSubscriber } from '../deps.ts';
import { settledBound } from './order.ts';
import { ACTOR_SCOPE } from './scopes.ts';
import { type EventRecord, eventFromRow } from './service.ts';

const BATCH = 500;
/** How often the store is re-read while events are committed but not settled yet (PostgreSQL). */
const UNSETTLED_RETRY_MS = 50;
/** A safety net for lost notifications: the store is re-read this often while anyone listens. */
const POLL_MS = 2000;

/**
 * The live side of the event store, one per instance (README "Live event stream"). It follows the
 * store in id order, reading only settled events (events/order.ts), and fans each one out to the
 * subscribers of its scopes. Reads are woken by the bus (a commit here or on another instance),
 * retried while committed events are not settled yet, and polled every few seconds in case a
 * notification was lost. One reader serves every subscriber of the instance, however many.
 */
export class LiveHub implements LiveFeed {
  private readonly byScope = new Map<string, Set<LiveSubscriber>>();
  private size = 0;
  /** The highest id read and dispatched; null while nobody listens. */
  private cursor: number | null = null;
  private reading: Promise<void> | null = null;
  private again = false;
  private retryTimer: NodeJS.Timeout | null = null;
  private pollTimer: NodeJS.Timeout | null = null;
  private unsubscribeBus: (() => void) | null = null;
  private unsubscribeSignals: (() => void) | null = null;
  private closed = false;

  constructor(
    private readonly db: Kysely<DB>,
    private readonly dialect: Dialect,
    private readonly bus: EventBus,
    private readonly onError: (err: unknown) => void = (err) => console.error('weft: reading live events failed', err),
  ) {}

  start(): void {
    this.closed = false;
    this.unsubscribeBus ??= this.bus.onNewEvents(() => this.wake());
    this.unsubscribeSignals ??= this.bus.onSignal((signal) => this.dispatchSignal(signal));
  }

  /** A live signal to the subscribers of its scope that asked for its kind (never stored, never replayed). */
  private dispatchSignal(signal: LiveSignal): void {
    const set = this.byScope.get(signal.scope);
    if (!set) return;
    for (const sub of [...set]) {
      if (sub.kind !== signal.kind || !sub.signal) continue;
      try {
        sub.signal(signal);
      } catch (err) {
        this.onError(err);
      }
    }
  }

  /** A signal to this instance's subscribers alone (not sent to the other instances). */
  deliverSignal(signal: LiveSignal): void {
    this.dispatchSignal(signal);
  }

  /** The scopes with a subscriber on this instance asking for `kind`, starting with `prefix`. */
  scopesAsking(kind: string, prefix: string): string[] {
    const out: string[] = [];
    for (const [scope, set] of this.byScope)
      if (scope.startsWith(prefix) && [...set].some((sub) => sub.kind === kind && sub.signal)) out.push(scope);
    return out;
  }

  /** Live subscribers on this instance. */
  get subscriberCount(): number {
    return this.size;
  }

  /**
   * Registers a subscriber. Every event with an id above the returned cursor is delivered to it
   * (in order) until it is removed; events at or below it are the caller's to replay.
   */
  async add(sub: LiveSubscriber): Promise<number> {
    if (this.closed) throw new Error('the live event hub is closed');
    if (this.cursor === null) {
      const cursor = await this.newestSettledId();
      if (this.closed) throw new Error('the live event hub is closed');
      this.cursor ??= cursor;
    }
    let set = this.byScope.get(sub.scope);
    if (!set) this.byScope.set(sub.scope, (set = new Set()));
    set.add(sub);
    this.size++;
    this.pollTimer ??= setInterval(() => this.wake(), POLL_MS).unref();
    return this.cursor;
  }

  remove(sub: LiveSubscriber): void {
    const set = this.byScope.get(sub.scope);
    if (!set?.delete(sub)) return;
    this.size--;
    if (set.size === 0) this.byScope.delete(sub.scope);
    if (this.size === 0) {
      this.cursor = null;
      if (this.pollTimer) clearInterval(this.pollTimer);
      this.pollTimer = null;
    }
  }

  /** Reads what is new now (coalesced: one read at a time, one more for wake-ups meanwhile). */
  wake(): void {
    if (this.closed || this.size === 0) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = this.readNew()
      .catch((err) => {
        if (!this.closed) this.onError(err);
      })
      .finally(() => {
        this.reading = null;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Reads and dispatches settled events past the cursor; retries soon while some are unsettled. */
  private async readNew(): Promise<void> {
    for (;;) {
      if (this.cursor === null) return;
      const from = this.cursor;
      let query = this.db.selectFrom('events').selectAll().where('id', '>', from);
      const settled = settledBound(this.dialect);
      if (settled) query = query.where('id', '<', settled);
      const rows = await query.orderBy('id', 'asc').limit(BATCH).execute();
      // Everyone may have left, or the cursor been reset, while the query ran.
      if (this.cursor !== from) return;
      for (const row of rows) this.dispatch(eventFromRow(row));
      if (rows.length > 0) this.cursor = Number(rows.at(-1)!.id);
      if (rows.length < BATCH) break;
    }
    if (this.dialect === 'postgres' && this.cursor !== null && !this.retryTimer) {
      const pending = await this.db.selectFrom('events').select('id').where('id', '>', this.cursor).limit(1).executeTakeFirst();
      if (pending) {
        this.retryTimer = setTimeout(() => {
          this.retryTimer = null;
          this.wake();
        }, UNSETTLED_RETRY_MS);
        this.retryTimer.unref();
      }
    }
  }

  /**
   * To the subscribers of each of the event's scopes, then to those of its actor's scope
   * (`actor:UUID`, events/scopes.ts). A stream following several of them gets the event once per
   * scope, one after the other, and drops the copies by id (activity/tail.ts).
   */
  private dispatch(event: EventRecord): void {
    for (const scope of event.scopes) this.dispatchTo(scope, event);
    if (event.actor) this.dispatchTo(`${ACTOR_SCOPE}:${event.actor.uuid}`, event);
  }

  private dispatchTo(scope: string, event: EventRecord): void {
    const set = this.byScope.get(scope);
    if (!set) return;
    for (const sub of [...set]) {
      if (sub.kind !== undefined && sub.kind !== event.kind) continue;
      try {
        sub.deliver(event);
      } catch (err) {
        this.onError(err);
      }
    }
  }

  private async newestSettledId(): Promise<number> {
    let query = this.db.selectFrom('events').select((eb) => eb.fn.max('id').as('id'));
    const settled = settledBound(this.dialect);
    if (settled) query = query.where('id', '<', settled);
    const row = await query.executeTakeFirst();
    return row?.id == null ? 0 : Number(row.id);
  }

  /** Ends every stream (server shutdown) and stops reading. */
  async close(): Promise<void> {
    this.closed = true;
    this.unsubscribeBus?.();
    this.unsubscribeBus = null;
    this.unsubscribeSignals?.();
    this.unsubscribeSignals = null;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    for (const set of [...this.byScope.values()]) for (const sub of [...set]) sub.close();
    this.byScope.clear();
    this.size = 0;
    this.cursor = null;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = null;
    await this.reading;
  }
}

/**
 * The events of one scope after `afterId`, settled, in id order, a batch at a time (the replay of a
 * resumed stream).
 */
export async function scopeEventsAfter(
  db: Kysely<DB>,
  dialect: Dialect,
  scope: string,
  kind: string | undefined,
  afterId: number,
  limit: number,
): Promise<EventRecord[]> {
  // the ids from the scope's index entries (a subquery with its own order and limit), then their
  // rows by id (README "Performance": never a join under the range)
  let ids = db
    .selectFrom('event_scopes as s')
    .select('s.event_id')
    .where('s.scope', '=', scope)
    .where('s.event_id', '>', afterId);
  if (kind !== undefined) ids = ids.where('s.kind', '=', kind);
  const settled = settledBound(dialect);
  if (settled) ids = ids.where('s.event_id', '<', settled);
  const rows = await db
    .selectFrom('events')
    .selectAll()
    .where('id', 'in', ids.orderBy('s.event_id', 'asc').limit(limit))
    .orderBy('id', 'asc')
    .execute();
  return rows.map(eventFromRow);
}

/**
 * The events of several stream scopes after `afterId` (an actor scope among them: events/scopes.ts),
 * each once, settled, in id order, at most `limit`: the first `limit` of each scope, merged, then
 * the first `limit` of those, which are the first `limit` of them all.
 */
export async function streamEventsAfter(
  db: Kysely<DB>,
  dialect: Dialect,
  scopes: readonly string[],
  kind: string | undefined,
  afterId: number,
  limit: number,
): Promise<EventRecord[]> {
  const parts = await Promise.all(
    scopes.map((scope) =>
      scope.startsWith(`${ACTOR_SCOPE}:`)
        ? actorEventsAfter(db, dialect, scope.slice(ACTOR_SCOPE.length + 1), kind, afterId, limit)
        : scopeEventsAfter(db, dialect, scope, kind, afterId, limit),
    ),
  );
  if (parts.length === 1) return parts[0]!;
  const byId = new Map<string, EventRecord>();
  for (const part of parts) for (const event of part) byId.set(event.id, event);
  return [...byId.values()].sort((a, b) => Number(a.id) - Number(b.id)).slice(0, limit);
}

/** One actor's events after `afterId` (the index on the actor and id), settled, in id order. */
async function actorEventsAfter(
  db: Kysely<DB>,
  dialect: Dialect,
  actorUuid: string,
  kind: string | undefined,
  afterId: number,
  limit: number,
): Promise<EventRecord[]> {
  let query = db.selectFrom('events').selectAll().where('actor_uuid', '=', actorUuid).where('id', '>', afterId);
  if (kind !== undefined) query = query.where('kind', '=', kind);
  const settled = settledBound(dialect);
  if (settled) query = query.where('id', '<', settled);
  const rows = await query.orderBy('id', 'asc').limit(limit).execute();
  return rows.map(eventFromRow);
}
