/**
 * The HTTP side of deliveries (README "Webhooks", safety): one undici Agent per instance whose
 * connector checks every address when the connection is made, after DNS resolution (a name that
 * resolves, or later re-resolves, to a refused address cannot be reached), made again when the
 * allow-list changes; no redirects; WEBHOOK_TIMEOUT_MS (10 s) for the whole exchange; answers read
 * up to 64 KiB; at most `maxConcurrency` requests at once, shared fairly between hooks (FairSlots).
 */
import { lookup as dnsLookup } from 'node:dns';
import { isIP } from 'node:net';
import type * as Undici from 'undici';
import type { Agent, buildConnector } from 'undici';
import { type AllowList, EMPTY_ALLOW_LIST, addressAllowed, compileAllowList, hostAllowed } from './allow-list.ts';
import { lazyRequire } from '../lazy-require.ts';

/** undici is loaded with the first delivery, not when the server starts. */
const undici = lazyRequire<typeof Undici>('undici');

export const MAX_RESPONSE_BODY = 64 * 1024;
export const ADDRESS_NOT_ALLOWED = 'address_not_allowed';

export interface HttpOutcome {
  status: number | null;
  headers: Record<string, string> | null;
  body: string | null;
  error: string | null;
  durationMs: number;
}

class AddressNotAllowed extends Error {
  readonly code = 'EADDRNOTALLOWED';
  constructor(address: string) {
    super(`${ADDRESS_NOT_ALLOWED}: ${address}`);
  }
}

function isNotAllowed(err: unknown): boolean {
  for (let e = err as { code?: string; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e.code === 'EADDRNOTALLOWED') return true;
  }
  return false;
}

function describe(err: unknown): string {
  if (isNotAllowed(err)) return ADDRESS_NOT_ALLOWED;
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError' || /timeout/i.test(e?.code ?? '')) return 'timeout';
  const detail = e?.cause?.code ?? e?.code ?? e?.cause?.message ?? e?.message ?? String(err);
  return `connection_error: ${detail}`.slice(0, 500);
}

/** At most this many attempts of one hook are in flight at once on an instance. */
export const HOOK_MAX_IN_FLIGHT = 2;

/** Whose attempt this is: the hook, and whether it is degraded (its last attempts failed or timed out). */
export interface Lane {
  hook: string;
  degraded: boolean;
}

/**
 * The delivery slots of one instance, shared fairly between hooks: `max` attempts at once, at
 * most HOOK_MAX_IN_FLIGHT of one hook, and at most a quarter of the slots (at least one) for
 * degraded hooks, so hooks whose receiver hangs cannot hold the slots a healthy hook needs.
 * A freed slot goes to the oldest waiter that may take it.
 */
class FairSlots {
  private active = 0;
  private degradedActive = 0;
  private readonly perHook = new Map<string, number>();
  private readonly waiting: Array<{ lane: Lane; start: () => void }> = [];
  private readonly degradedMax: number;

  constructor(private readonly max: number) {
    this.degradedMax = Math.max(1, Math.floor(max / 4));
  }

  private mayTake(lane: Lane): boolean {
    return (
      this.active < this.max &&
      (this.perHook.get(lane.hook) ?? 0) < HOOK_MAX_IN_FLIGHT &&
      (!lane.degraded || this.degradedActive < this.degradedMax)
    );
  }

  private take(lane: Lane): void {
    this.active++;
    if (lane.degraded) this.degradedActive++;
    this.perHook.set(lane.hook, (this.perHook.get(lane.hook) ?? 0) + 1);
  }

  private give(lane: Lane): void {
    this.active--;
    if (lane.degraded) this.degradedActive--;
    const n = (this.perHook.get(lane.hook) ?? 1) - 1;
    if (n === 0) this.perHook.delete(lane.hook);
    else this.perHook.set(lane.hook, n);
    for (let i = 0; i < this.waiting.length; i++) {
      const w = this.waiting[i]!;
      if (!this.mayTake(w.lane)) continue;
      this.waiting.splice(i, 1);
      this.take(w.lane);
      w.start();
      if (this.active >= this.max) return;
      i--;
    }
  }

  async run<T>(lane: Lane, fn: () => Promise<T>): Promise<T> {
    if (this.mayTake(lane)) this.take(lane);
    else await new Promise<void>((start) => this.waiting.push({ lane, start }));
    try {
      return await fn();
    } finally {
      this.give(lane);
    }
  }
}

export class HookHttp {
  /** The site's allow-list in force (the sender sets it before every attempt: setAllowList). */
  private allow: AllowList = EMPTY_ALLOW_LIST;
  private allowKey = '[]';
  private agentOrNull: Agent | null = null;
  private readonly slots: FairSlots;

  constructor(
    private readonly maxConcurrency: number,
    readonly timeoutMs: number,
  ) {
    this.slots = new FairSlots(maxConcurrency);
  }

  /**
   * The allow-list read for this attempt. When it changed, the pooled connections (each checked
   * against the list in force when it was made) are dropped with their Agent, so no attempt
   * reuses a connection the new list would refuse.
   */
  setAllowList(entries: string[]): void {
    const key = JSON.stringify(entries);
    if (key === this.allowKey) return;
    this.allowKey = key;
    this.allow = compileAllowList(entries);
    const old = this.agentOrNull;
    this.agentOrNull = null;
    // in-flight attempts end on the old Agent; its idle connections are closed now
    if (old) void old.close().catch(() => undefined);
  }

  /** The Agent, made with the first delivery. */
  private get agent(): Agent {
    return (this.agentOrNull ??= this.createAgent());
  }

  private createAgent(): Agent {
    const { Agent, buildConnector } = undici();
    const maxConcurrency = this.maxConcurrency;
    const allow = this.allow;
    const base = buildConnector({
      timeout: this.timeoutMs,
      // every address a name resolves to is checked here, when the connection is made
      lookup: (hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
        dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
          if (err) return callback(err);
          const allowed = hostAllowed(hostname, allow) ? addresses : addresses.filter((a) => addressAllowed(a.address, allow));
          if (allowed.length === 0) return callback(new AddressNotAllowed(addresses[0]?.address ?? hostname));
          if (options.all) callback(null, allowed);
          else callback(null, allowed[0]!.address, allowed[0]!.family);
        });
      },
    } as buildConnector.BuildOptions);
    return new Agent({
      connections: maxConcurrency,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      connect: (opts, callback) => {
        // an IP literal is not looked up: it is checked as it stands
        const host = opts.hostname.replace(/^\[|\]$/g, '');
        if (isIP(host) && !hostAllowed(host, allow) && !addressAllowed(host, allow)) {
          callback(new AddressNotAllowed(host), null);
          return;
        }
        base(opts, callback);
      },
    });
  }

  /** Runs `fn` (which prepares and sends one attempt) holding a delivery slot of the hook's lane. */
  inSlot<T>(lane: Lane, fn: () => Promise<T>): Promise<T> {
    return this.slots.run(lane, fn);
  }

  /** POSTs one attempt (called inside `inSlot`); never throws: a failure is in `error`. */
  async send(url: string, headers: Record<string, string>, body: string): Promise<HttpOutcome> {
    {
      const started = performance.now();
      const signal = AbortSignal.timeout(this.timeoutMs);
      try {
        const res = await undici().request(url, { method: 'POST', headers, body, dispatcher: this.agent, signal });
        const chunks: Buffer[] = [];
        let size = 0;
        for await (const chunk of res.body) {
          const buf = chunk as Buffer;
          chunks.push(buf.subarray(0, Math.max(0, MAX_RESPONSE_BODY - size)));
          size += buf.length;
          if (size >= MAX_RESPONSE_BODY) {
            res.body.destroy();
            break;
          }
        }
        const out: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
        return {
          status: res.statusCode,
          headers: out,
          // as text; NUL (which PostgreSQL text cannot hold) becomes U+FFFD
          body: Buffer.concat(chunks).toString('utf8').replaceAll('\u0000', '\uFFFD'),
          error: res.statusCode >= 300 && res.statusCode < 400 ? 'redirect' : null,
          durationMs: Math.round(performance.now() - started),
        };
      } catch (err) {
        return {
          status: null,
          headers: null,
          body: null,
          error: describe(err),
          durationMs: Math.round(performance.now() - started),
        };
      }
    }
  }

  async close(): Promise<void> {
    await this.agentOrNull?.close().catch(() => undefined);
  }
}
