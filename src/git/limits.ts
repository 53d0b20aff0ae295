import type { ChildProcess } from 'node:child_process';
import { AppError } from '../errors.ts';

/**
 * Bounds on the git processes one instance runs for clients (README "Bounded git processes"):
 * at most `GIT_HTTP_MAX_PROCESSES` at once, and `GIT_HTTP_MAX_PROCESSES_PER_CLIENT` per client address.
 * A request over either gets 503 `service_unavailable` with `Retry-After` before any process
 * starts. A slot is taken with `acquire` and given back with the function it returns (once; a
 * second call does nothing). Shared by every route that starts git for a client: smart HTTP
 * here, and any read route that wants the same cap (`gitHttpLimiter(deps)`).
 */
export class GitHttpLimiter {
  private total = 0;
  private readonly perClient = new Map<string, number>();

  constructor(
    readonly maxTotal: number,
    readonly maxPerClient: number,
  ) {}

  /** A slot for `client`, or an AppError 503 when the instance or the client is at its cap. */
  acquire(client: string): () => void {
    const mine = this.perClient.get(client) ?? 0;
    if (this.total >= this.maxTotal) throw gitBusy('The server is running as many git processes as it allows');
    if (mine >= this.maxPerClient) throw gitBusy('This client address already runs as many git processes as one client may');
    this.total++;
    this.perClient.set(client, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perClient.get(client) ?? 1) - 1;
      if (left <= 0) this.perClient.delete(client);
      else this.perClient.set(client, left);
    };
  }

  /** Processes running now (for tests and metrics). */
  get running(): number {
    return this.total;
  }
}

/** Seconds a refused client is told to wait. */
export const GIT_RETRY_AFTER_SECONDS = 5;

export function gitBusy(reason: string): AppError {
  return new AppError(503, 'service_unavailable', `${reason}; retry after ${GIT_RETRY_AFTER_SECONDS} seconds.`, undefined, {
    'retry-after': String(GIT_RETRY_AFTER_SECONDS),
  });
}

const limiters = new WeakMap<object, GitHttpLimiter>();

/** The limiter of one app instance (keyed by its deps), made on first use from its configuration. */
export function gitHttpLimiter(deps: {
  config: { gitHttpMaxProcesses: number; gitHttpMaxProcessesPerClient: number };
}): GitHttpLimiter {
  let limiter = limiters.get(deps);
  if (!limiter) {
    limiter = new GitHttpLimiter(deps.config.gitHttpMaxProcesses, deps.config.gitHttpMaxProcessesPerClient);
    limiters.set(deps, limiter);
  }
  return limiter;
}

/** Error codes of a process that could not start for lack of resources: the request gets 503, the server lives on. */
const RESOURCE_CODES = new Set(['EMFILE', 'ENFILE', 'EAGAIN', 'ENOMEM']);

export function isResourceExhaustion(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && RESOURCE_CODES.has(code);
}

/**
 * Resolves once the child has started, or rejects with a 503 when it could not be started
 * (`spawn git EMFILE` and the like). A child whose spawn failed has no stdio streams: nothing
 * may touch them before this resolves.
 */
export function started(child: ChildProcess): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => {
      child.off('spawn', onSpawn);
      reject(isResourceExhaustion(err) ? gitBusy('The server could not start git (out of file descriptors or processes)') : err);
    };
    const onSpawn = () => {
      child.off('error', onError);
      resolve(child);
    };
    child.once('error', onError);
    child.once('spawn', onSpawn);
  });
}
