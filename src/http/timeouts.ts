import type { ServerOptions } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import underPressure from '@fastify/under-pressure';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';

/**
 * Bounded time for every client (README "Timeouts and load shedding"):
 * - headers must arrive within HEADERS_TIMEOUT_MS (Node's parser; 408 then the connection closes);
 * - a request body must arrive within REQUEST_TIMEOUT_MS of the request's start: a slower one is
 *   answered 408 request_timeout and its connection closed, which drops whatever was buffered;
 * - a connection with no traffic either way for IDLE_TIMEOUT_MS is closed.
 * Long-lived routes (event streams, git transfers) get TRANSFER_TIMEOUT_MS for their body and
 * STREAM_IDLE_TIMEOUT_MS of silence instead.
 */

declare module 'fastify' {
  interface FastifyContextConfig {
    /** An event stream or a git transfer: the longer body and idle limits apply. */
    longLived?: boolean;
    /** A long-lived route whose request body is small and read whole first (git-upload-pack): REQUEST_TIMEOUT_MS bounds it. */
    shortBody?: boolean;
  }
}

/**
 * Paths that are long-lived whatever their route config says: a route added here (or flagged
 * `config: { longLived: true }`) gets the longer limits. Matched against the path (no query).
 */
export const LONG_LIVED_PATHS: RegExp[] = [/^\/api\/v1\/tail-events$/, /^\/git\//];

export type TimeoutConfig = Pick<
  Config,
  'headersTimeoutMs' | 'requestTimeoutMs' | 'idleTimeoutMs' | 'transferTimeoutMs' | 'streamIdleTimeoutMs'
>;

export function isLongLived(request: FastifyRequest): boolean {
  if (request.routeOptions.config?.longLived === true) return true;
  const url = request.url;
  const q = url.indexOf('?');
  const path = q >= 0 ? url.slice(0, q) : url;
  return LONG_LIVED_PATHS.some((re) => re.test(path));
}

/**
 * The Fastify server options for these limits. Node enforces the header limit (checked every
 * `connectionsCheckingInterval`) and, as a backstop, the longest body limit; the per-route body
 * limit is ours (installTimeouts).
 */
export function serverTimeoutOptions(cfg: TimeoutConfig): {
  connectionTimeout: number;
  requestTimeout: number;
  http: ServerOptions;
} {
  return {
    connectionTimeout: cfg.idleTimeoutMs,
    requestTimeout: cfg.transferTimeoutMs,
    http: {
      headersTimeout: cfg.headersTimeoutMs,
      requestTimeout: cfg.transferTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(5000, Math.floor(cfg.headersTimeoutMs / 4))),
    },
  };
}

const TIMED_OUT = { error: 'request_timeout', detail: 'The request body took too long to arrive.' };

/** Cuts a request whose body is still arriving: 408, then the connection is closed (its buffers go with it). */
function cutOff(request: FastifyRequest, reply: FastifyReply): void {
  const socket = request.raw.socket;
  if (reply.sent || reply.raw.headersSent) {
    socket.destroy();
    return;
  }
  reply.raw.once('finish', () => socket.destroy());
  void reply.status(408).header('connection', 'close').send(TIMED_OUT);
}

/** Whether a request has a body still to arrive: only Content-Length (non-zero) or Transfer-Encoding announce one. */
function expectsBody(request: FastifyRequest): boolean {
  const headers = request.headers;
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = headers['content-length'];
  return length !== undefined && length !== '0';
}

export function installTimeouts(app: FastifyInstance, cfg: TimeoutConfig): void {
  app.addHook('onRequest', (request, reply, done) => {
    // Per socket: a keep-alive connection's next request sets its own.
    const socket = request.raw.socket;
    // Injected requests (light-my-request) have a stand-in socket: no network, nothing to bound.
    if (typeof socket?.setTimeout !== 'function') return done();
    const long = isLongLived(request);
    const idle = long ? cfg.streamIdleTimeoutMs : cfg.idleTimeoutMs;
    // Re-arming a socket timer costs a timer-list update per request: only when it changes
    // (Node keeps the current value in socket.timeout; the server sets IDLE_TIMEOUT_MS on accept).
    if (socket.timeout !== idle) socket.setTimeout(idle);
    // A request without a body (most GETs) has nothing left to arrive: no body timer.
    const bodyLimited = !long || request.routeOptions.config?.shortBody === true;
    if (bodyLimited && request.raw.complete === false && expectsBody(request)) {
      const timer = setTimeout(() => {
        if (!request.raw.complete) cutOff(request, reply);
      }, cfg.requestTimeoutMs);
      const clear = () => clearTimeout(timer);
      request.raw.once('end', clear);
      request.raw.once('close', clear);
    }
    done();
  });
}

/**
 * Routes that cost the loop the most per request, shed for every caller while overloaded:
 * writes whose body is Markdown to render (threads, replies, reviews, pings) and archive
 * downloads. Matched against the route pattern; a route can also say `config: { expensive: true }`.
 */
export const EXPENSIVE_ROUTES: { methods: RegExp; url: RegExp }[] = [
  { methods: /^(POST|PUT|PATCH)$/, url: /\/(threads|replies|reviews|ping)(\/|$)/ },
  { methods: /^GET$/, url: /\/(archive|tarball|zipball)\b/ },
];

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Shed for every caller while the server is overloaded (README "Timeouts and load shedding"). */
    expensive?: boolean;
  }
  interface FastifyRequest {
    /** Set by the shedder when the event loop was behind as this request arrived. */
    overloaded?: boolean;
  }
}

export function isExpensive(request: FastifyRequest): boolean {
  if (request.routeOptions.config?.expensive === true) return true;
  const url = request.routeOptions.url;
  if (url === undefined) return false;
  return EXPENSIVE_ROUTES.some((r) => r.methods.test(request.method) && r.url.test(url));
}

/**
 * The time each caller's requests took over the last one to two windows (two buckets that
 * rotate): bounded by `maxCallers` per bucket (a caller past it is not counted, so is never
 * the one shed).
 */
export class CallerCosts {
  private current = new Map<string, number>();
  private previous = new Map<string, number>();
  private currentTotal = 0;
  private previousTotal = 0;
  private rotatedAt: number;
  constructor(
    private readonly windowMs: number,
    private readonly maxCallers = 10_000,
    private readonly now: () => number = Date.now,
  ) {
    this.rotatedAt = now();
  }

  private rotate(): void {
    const now = this.now();
    if (now - this.rotatedAt < this.windowMs) return;
    const skipped = now - this.rotatedAt >= 2 * this.windowMs;
    this.previous = skipped ? new Map() : this.current;
    this.previousTotal = skipped ? 0 : this.currentTotal;
    this.current = new Map();
    this.currentTotal = 0;
    this.rotatedAt = now;
  }

  add(caller: string, ms: number): void {
    this.rotate();
    const had = this.current.get(caller);
    if (had === undefined && this.current.size >= this.maxCallers) return;
    this.current.set(caller, (had ?? 0) + ms);
    this.currentTotal += ms;
  }

  /**
   * Whether a caller used more than its fair share: over 1.5 times the mean per caller (the sole
   * caller counts as over it). A caller with no recorded time never is.
   */
  overShare(caller: string): boolean {
    this.rotate();
    const cost = (this.current.get(caller) ?? 0) + (this.previous.get(caller) ?? 0);
    if (cost === 0) return false;
    const callers = Math.max(this.current.size, this.previous.size, 1);
    if (callers === 1) return true;
    return cost > (1.5 * (this.currentTotal + this.previousTotal)) / callers;
  }
}

/** The caller a request's cost is counted against: its user, else its address. */
function callerOf(request: FastifyRequest): string {
  const viewer = request.viewer;
  return viewer ? `u:${viewer.uuid}` : `ip:${request.ip}`;
}

/**
 * Load shedding (@fastify/under-pressure measures): while the event loop's mean delay over the
 * last sample is above LOAD_SHED_EVENT_LOOP_DELAY_MS, the expensive routes (EXPENSIVE_ROUTES)
 * and the callers (user, else address) whose requests took more than a fair share of the time
 * in the last 10-20 s are answered 503 service_unavailable with Retry-After; everyone else's
 * requests are served. /healthz (liveness) always answers. 0 turns it off.
 */
export async function installLoadShedding(app: FastifyInstance, cfg: Pick<Config, 'loadShedEventLoopDelayMs'>): Promise<void> {
  if (cfg.loadShedEventLoopDelayMs === 0) return;
  const retryAfter = 5;
  // The mean delay over a window of twice the limit: one long synchronous step (a big migration,
  // a lock wait) averages out; only a loop that stays behind trips it. A window in which the loop
  // never came round at all counts as overloaded (under-pressure reads it as an infinite delay).
  const sampleInterval = Math.max(20, Math.min(2000, 2 * cfg.loadShedEventLoopDelayMs));
  // Start-up itself (module loading, migrations) blocks the loop: the samples taken then say
  // nothing about load, so shedding begins two sample intervals after the app is ready.
  let armedAt = Infinity;
  app.addHook('onReady', async () => {
    armedAt = Date.now() + 2 * sampleInterval;
  });
  const costs = new CallerCosts(10_000);
  await app.register(underPressure, {
    maxEventLoopDelay: cfg.loadShedEventLoopDelayMs,
    sampleInterval,
    retryAfter,
    // Only marks the request: who is shed is decided once the caller is known (below).
    pressureHandler: (request) => {
      if (Date.now() >= armedAt) request.overloaded = true;
    },
  });
  // After authentication (an onRequest hook registered later), before the handler's work.
  app.addHook('preHandler', (request, _reply, done) => {
    if (request.overloaded !== true || request.url === '/healthz') return done();
    if (!isExpensive(request) && !costs.overShare(callerOf(request))) return done();
    // A rejection goes to the error handler (the error envelope, X-Request-Id and all).
    done(
      new AppError(503, 'service_unavailable', 'The server is overloaded; retry after a few seconds.', undefined, {
        'retry-after': String(retryAfter),
      }),
    );
  });
  app.addHook('onResponse', (request, reply, done) => {
    // Long-lived routes (streams, git transfers) mostly wait: their duration is not loop work.
    if (request.url !== '/healthz' && !isLongLived(request)) costs.add(callerOf(request), reply.elapsedTime);
    done();
  });
}
