/**
 * The HTTP side of deliveries (README "Webhooks", safety): one undici Agent per instance whose
 * connector checks every address when the connection is made, after DNS resolution (a name that
 * resolves, or later re-resolves, to a refused address cannot be reached); no redirects; 10 s
 * for the whole exchange; answers read up to 64 KiB; at most `maxConcurrency` requests at once.
 */
import { lookup as dnsLookup } from 'node:dns';
import { isIP } from 'node:net';
import type * as Undici from 'undici';
import type { Agent, buildConnector } from 'undici';
import { type AllowList, EMPTY_ALLOW_LIST, addressAllowed, hostAllowed } from './allow-list.ts';
import { lazyRequire } from '../lazy-require.ts';

/** undici is loaded with the first delivery, not when the server starts. */
const undici = lazyRequire<typeof Undici>('undici');

export const DELIVERY_TIMEOUT_MS = 10_000;
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

/** A counting semaphore: at most `n` holders. */
class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(private readonly n: number) {}
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.n) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}

export class HookHttp {
  /** The site's allow-list as last read (the sender refreshes it before it sends). */
  allow: AllowList = EMPTY_ALLOW_LIST;
  private agentOrNull: Agent | null = null;
  private readonly limit: Semaphore;

  constructor(maxConcurrency: number) {
    this.limit = new Semaphore(maxConcurrency);
    this.maxConcurrency = maxConcurrency;
  }

  private readonly maxConcurrency: number;

  /** The Agent, made with the first delivery. */
  private get agent(): Agent {
    return (this.agentOrNull ??= this.createAgent());
  }

  private createAgent(): Agent {
    const { Agent, buildConnector } = undici();
    const maxConcurrency = this.maxConcurrency;
    const base = buildConnector({
      timeout: DELIVERY_TIMEOUT_MS,
      // every address a name resolves to is checked here, when the connection is made
      lookup: (hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
        dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
          if (err) return callback(err);
          const allowed = hostAllowed(hostname, this.allow)
            ? addresses
            : addresses.filter((a) => addressAllowed(a.address, this.allow));
          if (allowed.length === 0) return callback(new AddressNotAllowed(addresses[0]?.address ?? hostname));
          if (options.all) callback(null, allowed);
          else callback(null, allowed[0]!.address, allowed[0]!.family);
        });
      },
    } as buildConnector.BuildOptions);
    return new Agent({
      connections: maxConcurrency,
      headersTimeout: DELIVERY_TIMEOUT_MS,
      bodyTimeout: DELIVERY_TIMEOUT_MS,
      connect: (opts, callback) => {
        // an IP literal is not looked up: it is checked as it stands
        const host = opts.hostname.replace(/^\[|\]$/g, '');
        if (isIP(host) && !hostAllowed(host, this.allow) && !addressAllowed(host, this.allow)) {
          callback(new AddressNotAllowed(host), null);
          return;
        }
        base(opts, callback);
      },
    });
  }

  /** POSTs one attempt; never throws: a failure is in `error`. */
  async post(url: string, headers: Record<string, string>, body: string): Promise<HttpOutcome> {
    return this.limit.run(async () => {
      const started = performance.now();
      const signal = AbortSignal.timeout(DELIVERY_TIMEOUT_MS);
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
    });
  }

  async close(): Promise<void> {
    await this.agentOrNull?.close().catch(() => undefined);
  }
}
