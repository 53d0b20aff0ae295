import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { EventBus, LiveSignal, NewEventsHint } from '../deps.ts';
import type { EventRecord } from './service.ts';

/**
 * Fan-out of committed events to live subscribers (the SSE stream). `publish` is called after
 * the writing transaction commits. The in-process implementation serves one instance (SQLite);
 * the PostgreSQL one (LISTEN/NOTIFY) also tells this instance when another one committed events.
 *
 * The bus carries hints, not the events: a live stream re-reads the store by id
 * (events/live.ts), so a lost or late notification delays an event but never loses it.
 */
export class InProcessBus implements EventBus {
  protected readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  publish(event: EventRecord): void {
    this.emitter.emit('event', event);
    this.emitter.emit('hint', { kinds: [event.kind] } satisfies NewEventsHint);
  }

  /** Several events of one transaction: each to the subscribers, one hint for all of them. */
  publishMany(events: EventRecord[]): void {
    if (events.length === 0) return;
    for (const event of events) this.emitter.emit('event', event);
    this.emitter.emit('hint', { kinds: [...new Set(events.map((e) => e.kind))] } satisfies NewEventsHint);
  }

  subscribe(listener: (event: EventRecord) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  onNewEvents(listener: (hint: NewEventsHint) => void): () => void {
    this.emitter.on('hint', listener);
    return () => this.emitter.off('hint', listener);
  }

  signal(signal: LiveSignal): void {
    this.emitter.emit('signal', signal);
  }

  onSignal(listener: (signal: LiveSignal) => void): () => void {
    this.emitter.on('signal', listener);
    return () => this.emitter.off('signal', listener);
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}

export const EVENTS_CHANNEL = 'weft_events';
/** Live signals (deps.ts `LiveSignal`) between instances: `{from, signals}` as JSON. */
export const SIGNALS_CHANNEL = 'weft_signals';
/** A signal notification's payload stays under PostgreSQL's 8000 bytes. */
const MAX_SIGNAL_PAYLOAD = 7000;
/** A notification names the kinds it covers while they fit; beyond, it names none (unknown). */
const MAX_NOTIFY_KINDS = 32;

function hintOf(payload: string | undefined): NewEventsHint {
  if (!payload) return { kinds: null };
  try {
    const kinds = JSON.parse(payload) as unknown;
    return Array.isArray(kinds) && kinds.every((k) => typeof k === 'string') ? { kinds } : { kinds: null };
  } catch {
    return { kinds: null };
  }
}

/**
 * Across instances on PostgreSQL: after commit, `NOTIFY weft_events` (outside the writing
 * transaction: a NOTIFY inside it would serialise commits on the notification queue). Notifies
 * are coalesced: at most one in flight, and one more for everything published meanwhile. A
 * dedicated connection LISTENs and turns each notification into a hint; when it drops, it
 * reconnects and hints once (a notification may have been missed). A notification's payload names
 * the kinds of the events it covers (a JSON array; empty when there are too many), so a listener
 * such as the webhook sender can tell whether access may have changed.
 */
export class PostgresBus extends InProcessBus {
  private listener: pg.Client | null = null;
  private closed = false;
  private notifying = false;
  private notifyAgain = false;
  /** Kinds published since the last notification was sent; null once too many to name. */
  private pendingKinds: Set<string> | null = new Set();
  private reconnectTimer: NodeJS.Timeout | null = null;
  /** This instance, so it skips its own signal notifications (they were delivered here at once). */
  private readonly instance = randomUUID();
  /** Signals waiting for the notification in flight, by scope, kind and key (the last one wins). */
  private pendingSignals = new Map<string, LiveSignal>();
  private signalling = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly clientConfig: pg.ClientConfig,
  ) {
    super();
  }

  override publish(event: EventRecord): void {
    super.publish(event);
    this.pending([event.kind]);
  }

  override publishMany(events: EventRecord[]): void {
    super.publishMany(events);
    if (events.length) this.pending(new Set(events.map((e) => e.kind)));
  }

  private pending(kinds: Iterable<string>): void {
    if (this.pendingKinds) {
      for (const kind of kinds) this.pendingKinds.add(kind);
      if (this.pendingKinds.size > MAX_NOTIFY_KINDS) this.pendingKinds = null;
    }
    this.notify();
  }

  /** Delivered here at once; to the other instances by `NOTIFY weft_signals`, coalesced as events' are. */
  override signal(signal: LiveSignal): void {
    super.signal(signal);
    if (this.closed) return;
    this.pendingSignals.set(`${signal.scope}\n${signal.kind}\n${signal.key}`, signal);
    this.notifySignals();
  }

  private notifySignals(): void {
    if (this.signalling || this.pendingSignals.size === 0 || this.closed) return;
    this.signalling = true;
    const batch: LiveSignal[] = [];
    let bytes = 100;
    for (const [key, sig] of this.pendingSignals) {
      const size = JSON.stringify(sig).length + 1;
      if (batch.length && bytes + size > MAX_SIGNAL_PAYLOAD) break;
      batch.push(sig);
      bytes += size;
      this.pendingSignals.delete(key);
    }
    const payload = JSON.stringify({ from: this.instance, signals: batch });
    this.pool
      .query(`select pg_notify('${SIGNALS_CHANNEL}', $1)`, [payload.length <= MAX_SIGNAL_PAYLOAD + 500 ? payload : '{}'])
      .catch((err) => {
        if (!this.closed) console.error('weft: NOTIFY of live signals failed', err);
      })
      .finally(() => {
        this.signalling = false;
        this.notifySignals();
      });
  }

  private receiveSignals(payload: string | undefined): void {
    try {
      const body = JSON.parse(payload ?? '') as { from?: unknown; signals?: unknown };
      if (body.from === this.instance || !Array.isArray(body.signals)) return;
      for (const s of body.signals as LiveSignal[]) {
        if (s && typeof s.scope === 'string' && typeof s.kind === 'string' && s.data && typeof s.data === 'object')
          this.emitter.emit('signal', s);
      }
    } catch {
      // not a signal notification
    }
  }

  private notify(): void {
    if (this.closed) return;
    if (this.notifying) {
      this.notifyAgain = true;
      return;
    }
    this.notifying = true;
    const payload = this.pendingKinds ? JSON.stringify([...this.pendingKinds]) : '';
    this.pendingKinds = new Set();
    this.pool
      .query(`select pg_notify('${EVENTS_CHANNEL}', $1)`, [payload])
      .catch((err) => {
        if (!this.closed) console.error('weft: NOTIFY of new events failed', err);
      })
      .finally(() => {
        this.notifying = false;
        if (this.notifyAgain) {
          this.notifyAgain = false;
          this.notify();
        }
      });
  }

  override async start(): Promise<void> {
    this.closed = false;
    await this.connect();
  }

  private async connect(): Promise<void> {
    const client = new pg.Client(this.clientConfig);
    client.on('notification', (n) =>
      n.channel === SIGNALS_CHANNEL ? this.receiveSignals(n.payload) : this.emitter.emit('hint', hintOf(n.payload)),
    );
    client.on('error', () => this.reconnectSoon(client));
    client.on('end', () => this.reconnectSoon(client));
    try {
      await client.connect();
      await client.query(`listen ${EVENTS_CHANNEL}`);
      await client.query(`listen ${SIGNALS_CHANNEL}`);
    } catch (err) {
      client.end().catch(() => {});
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.listener = client;
  }

  private reconnectSoon(client: pg.Client): void {
    if (this.listener !== client) return;
    this.listener = null;
    client.end().catch(() => {});
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.closed) return;
      this.connect()
        .then(() => this.emitter.emit('hint', { kinds: null } satisfies NewEventsHint))
        .catch(() => this.scheduleReconnect());
    }, 500);
    this.reconnectTimer.unref();
  }

  override async close(): Promise<void> {
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.listener;
    this.listener = null;
    if (client) await client.end().catch(() => {});
    await super.close();
  }
}
