import type { IncomingMessage, ServerResponse } from 'node:http';
import { EventBuffer, type Session, createSession } from 'better-sse';
import type { Deps } from '../deps.ts';
import { eventHtml } from './event-html.ts';
import type { LiveSignal, LiveSubscriber } from '../deps.ts';
import { streamEventsAfter } from '../events/live.ts';
import type { EventRecord } from '../events/service.ts';

/** README "Live event stream": the stream's tunables. */
export const TAIL = {
  retryMs: 3000,
  keepAliveMs: 15_000,
  /** How often a stream re-checks that its caller may still read the scope. */
  recheckMs: 1500,
  /**
   * At most this many of those checks a second per instance (one per distinct token and scope):
   * past `recheckMs × maxRechecksPerSecond` distinct pairs, each is re-checked less often (every
   * pairs / maxRechecksPerSecond seconds), so 10,000 streams of 10,000 callers do not spend the
   * instance on access checks (bench/README.md "SSE").
   */
  maxRechecksPerSecond: 1000,
  /**
   * At most this many of those checks run at once: 4 of the 10 pooled connections on PostgreSQL,
   * so the live hub's reads and the writes always find one.
   */
  maxRechecksInFlight: 4,
  /**
   * A client that leaves more than `maxUnreadBytes` unread for `slowGraceMs`, or more than
   * `hardUnreadBytes` at any time, is dropped (it can resume with Last-Event-ID).
   */
  maxUnreadBytes: 1024 * 1024,
  slowGraceMs: 3000,
  hardUnreadBytes: 16 * 1024 * 1024,
  /** Live events held while the replay runs; a replay that falls this far behind is dropped. */
  maxHeldEvents: 10_000,
  replayBatch: 500,
};

export interface TailOptions {
  /** The scopes followed (one, or several: an event in more than one of them is sent once). */
  scopes: string[];
  kind?: string;
  /** Replay every later event of the scope first; null: only new events. */
  resumeAfter: number | null;
  html: boolean;
  /**
   * Answers whether the caller may still read one of the scopes (token valid, access kept). A
   * scope lost is no longer followed; the stream ends when none is left.
   */
  stillAllowed: (scope: string) => Promise<boolean>;
  /** The event as the caller may see it, or null when it is hidden (README "Event privacy"). */
  show: (event: EventRecord) => Promise<EventRecord | null>;
}

// Frames as decisions say: `id: 1`, `event: kind`, one `data: ` line per line of HTML.
const sanitizer = (text: string) => ` ${text}`;
const serializer = (data: unknown) =>
  typeof data === 'string'
    ? data
        .replace(/\r\n|\r/g, '\n')
        .replace(/\n+$/, '')
        .split('\n')
        .join('\ndata: ')
    : JSON.stringify(data);

/**
 * Each event's frame, built once for every stream that sends that event (the hub hands the same
 * record to all of them), apart for JSON and HTML.
 */
const frames = { json: new WeakMap<EventRecord, EventBuffer>(), html: new WeakMap<EventRecord, EventBuffer>() };
function frameOf(event: EventRecord, html: boolean): EventBuffer {
  const cache = html ? frames.html : frames.json;
  let frame = cache.get(event);
  if (!frame) {
    frame = new EventBuffer({ serializer, sanitizer })
      .id(event.id)
      .event(event.kind)
      .data(html ? eventHtml(event) : event)
      .dispatch();
    cache.set(event, frame);
  }
  return frame;
}

/**
 * Serves one `GET /tail-events` stream on a hijacked reply: subscribe to the instance's live hub
 * first, replay the scope's events after the resume point from the store, then send the live
 * events held meanwhile and those that follow, dropping any id already sent (no gap, no
 * duplicate, in id order). Ends when the client goes, the server shuts down, the client stops
 * reading (its unread bytes pass a bound), or the caller loses access.
 */
export async function serveTail(deps: Deps, req: IncomingMessage, res: ServerResponse, opts: TailOptions): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.getHeaders())) if (typeof value === 'string') headers[name] = value;
  let session: Session;
  try {
    session = await createSession(req, res, {
      retry: TAIL.retryMs,
      keepAlive: null,
      trustClientEventId: false,
      serializer,
      sanitizer,
      headers: { ...headers, 'x-accel-buffering': 'no' },
    });
  } catch {
    res.destroy();
    return;
  }

  let lastSent = opts.resumeAfter ?? 0;
  let held: EventRecord[] | null = [];
  let ended = false;
  const timers: NodeJS.Timeout[] = [];

  const end = () => {
    if (ended) return;
    ended = true;
    for (const timer of timers) clearInterval(timer);
    if (slowTimer) clearTimeout(slowTimer);
    for (const subscriber of subscribers.values()) deps.live.remove(subscriber);
    if (!res.writableEnded) res.end();
  };

  let slowTimer: NodeJS.Timeout | null = null;
  const write = (event: EventRecord) => {
    if (ended) return;
    // A client that does not read is dropped; writes never wait for it, so it holds up nobody.
    if (res.writableLength > TAIL.hardUnreadBytes) return end();
    // shared by every stream that writes this same record (a redacted copy gets its own)
    void session.batch(frameOf(event, opts.html));
    if (res.writableLength > TAIL.maxUnreadBytes && !slowTimer) {
      slowTimer = setTimeout(() => {
        slowTimer = null;
        if (res.writableLength > TAIL.maxUnreadBytes) end();
      }, TAIL.slowGraceMs);
      slowTimer.unref();
    }
  };
  // Events pass the caller's event viewer one at a time, in id order, before they are written.
  let queue: Promise<void> = Promise.resolve();
  const send = (event: EventRecord) => {
    if (ended || Number(event.id) <= lastSent) return;
    lastSent = Number(event.id);
    queue = queue.then(async () => {
      if (ended) return;
      const shown = await opts.show(event).catch(() => null);
      if (shown) write(shown);
    });
  };

  // A signal (a job's log grew) is written as it comes, without an id: the resume point stays the last event's.
  const signal = (s: LiveSignal) => {
    if (ended) return;
    if (res.writableLength > TAIL.maxUnreadBytes) return;
    void session.batch(new EventBuffer({ serializer, sanitizer }).event(s.kind).data(s.data).dispatch()).catch(end);
  };

  // One subscriber per scope, all into the same `send`: the hub hands an event to them one after
  // the other, in id order, so a copy (an event in two of the scopes) is dropped by its id.
  const deliver = (event: EventRecord) => {
    if (held === null) send(event);
    else if (held.length < TAIL.maxHeldEvents) held.push(event);
    else end();
  };
  const subscribers = new Map<string, LiveSubscriber>(
    opts.scopes.map((scope) => [
      scope,
      { scope, ...(opts.kind === undefined ? {} : { kind: opts.kind, signal }), deliver, close: end },
    ]),
  );

  req.on('close', end);
  res.on('close', end);
  session.on('disconnected', end);

  timers.push(
    setInterval(() => {
      if (!ended) void session.batch(new EventBuffer({ sanitizer }).comment('keep-alive').dispatch()).catch(end);
    }, TAIL.keepAliveMs),
  );
  let checking = false;
  timers.push(
    setInterval(() => {
      if (ended || checking) return;
      checking = true;
      const scopes = [...subscribers.keys()];
      Promise.all(scopes.map((scope) => opts.stillAllowed(scope)))
        .then((answers) => {
          scopes.forEach((scope, i) => {
            if (answers[i] || ended) return;
            deps.live.remove(subscribers.get(scope)!);
            subscribers.delete(scope);
          });
          if (subscribers.size === 0) end();
        })
        .catch(() => end())
        .finally(() => {
          checking = false;
        });
    }, TAIL.recheckMs),
  );
  for (const timer of timers) timer.unref();

  try {
    for (const subscriber of subscribers.values()) {
      await deps.live.add(subscriber);
      if (ended) {
        deps.live.remove(subscriber);
        return;
      }
    }
    if (opts.resumeAfter !== null) {
      // Replay from the store up to (at least) the hub's cursor; later ones come live.
      let after = opts.resumeAfter;
      for (;;) {
        const batch = await streamEventsAfter(deps.db, deps.dialect, opts.scopes, opts.kind, after, TAIL.replayBatch);
        for (const event of batch) send(event);
        await queue;
        if (ended || batch.length < TAIL.replayBatch) break;
        after = Number(batch.at(-1)!.id);
        if (res.writableLength > TAIL.maxUnreadBytes / 2)
          await new Promise((resolve) => res.once('drain', resolve).once('close', resolve));
      }
    }
    const pending = held ?? [];
    held = null;
    for (const event of pending) send(event);
  } catch (err) {
    // a stream already ended (the hub closed at shutdown while it subscribed) did not fail
    if (!ended) console.error('weft: a live event stream failed', err);
    end();
  }
}

/**
 * Memoised access checks shared by the streams of one caller and scope: an answer is reused for
 * `TAIL.recheckMs`, or longer when more distinct keys are checked than
 * `TAIL.maxRechecksPerSecond` allows in that time. A stale answer is renewed in the background:
 * the checks wait in one queue, at most `TAIL.maxRechecksInFlight` run at a time, and the streams
 * keep the previous answer meanwhile. So the checks never hold more than that many of the pool's
 * connections, and the live hub's reads and the writes never queue behind them
 * (bench/README.md "SSE"); when the database answers slower than the bound, each pair is simply
 * re-checked less often.
 */
export class AccessRecheck {
  private readonly memo = new Map<string, Check>();
  private readonly queue: Array<{ entry: Check; fn: () => Promise<boolean>; resolve?: (ok: boolean) => void }> = [];
  private head = 0;
  private running = 0;
  private sweptAt = 0;

  /** How long an answer is reused, given how many keys are being checked. */
  ttlMs(): number {
    return Math.max(TAIL.recheckMs - 100, (this.memo.size * 1000) / TAIL.maxRechecksPerSecond);
  }

  check(key: string, fn: () => Promise<boolean>): Promise<boolean> {
    const now = Date.now();
    const ttl = this.ttlMs();
    let entry = this.memo.get(key);
    if (!entry) {
      let resolve!: (ok: boolean) => void;
      entry = { at: now, answer: new Promise((r) => (resolve = r)), renewing: true };
      this.memo.set(key, entry);
      this.enqueue({ entry, fn, resolve });
    } else if (!entry.renewing && now - entry.at >= ttl) {
      entry.renewing = true;
      this.enqueue({ entry, fn });
    }
    if (now - this.sweptAt > ttl) {
      // A key still streamed is asked about every `recheckMs`, and renewed once older than ttl:
      // one older than both, and not being renewed, has no stream left.
      this.sweptAt = now;
      for (const [k, v] of this.memo) if (!v.renewing && now - v.at > ttl + 2 * TAIL.recheckMs) this.memo.delete(k);
    }
    return entry.answer;
  }

  private enqueue(job: { entry: Check; fn: () => Promise<boolean>; resolve?: (ok: boolean) => void }): void {
    this.queue.push(job);
    this.pump();
  }

  private pump(): void {
    while (this.running < TAIL.maxRechecksInFlight && this.head < this.queue.length) {
      const job = this.queue[this.head++]!;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      this.running++;
      void job
        .fn()
        .catch(() => false)
        .then((ok) => {
          job.entry.at = Date.now();
          job.entry.answer = Promise.resolve(ok);
          job.entry.renewing = false;
          job.resolve?.(ok);
        })
        .finally(() => {
          this.running--;
          this.pump();
        });
    }
  }
}

interface Check {
  /** When the answer was given. */
  at: number;
  answer: Promise<boolean>;
  /** A check of this key is queued or running. */
  renewing: boolean;
}
