import { type ChildProcess, spawn } from 'node:child_process';
import { type Readable, Transform } from 'node:stream';
import { AppError } from '../errors.ts';
import { gitEnv } from './run.ts';
import { gitBusy, isResourceExhaustion } from './spawn-errors.ts';

export { GIT_RETRY_AFTER_SECONDS, gitBusy, isResourceExhaustion } from './spawn-errors.ts';

/**
 * Bounded git for reading code (README "Reading code"): a semaphore caps how many git processes
 * one instance runs at once, and every process has a timeout and a cap on the bytes it may write.
 * Buffered commands (`runBounded`) answer with their output or, past the cap, either a truncated
 * output (when the caller can say so, as diffs do with `patch_truncated`) or a 422; streamed
 * commands (`spawnBounded`: archives, large raw files) hold their permit until the process exits.
 */

export interface GitLimitsOptions {
  /** concurrent git processes (GIT_MAX_PROCESSES) */
  maxProcesses: number;
  /** timeout of a buffered command in ms (GIT_TIMEOUT_MS) */
  timeoutMs: number;
  /** most bytes a buffered command may write (GIT_MAX_OUTPUT_BYTES) */
  maxOutputBytes: number;
  /** most bytes a streamed command may write (GIT_MAX_STREAM_BYTES) */
  maxStreamBytes: number;
  /** timeout of a streamed command in ms */
  streamTimeoutMs: number;
  /** how long a request may wait for a permit before 503 */
  queueTimeoutMs: number;
}

/** A counting semaphore with a FIFO queue; `acquire` answers a release function (idempotent). */
export class Semaphore {
  private active = 0;
  private readonly waiters: Array<() => void> = [];

  constructor(readonly max: number) {}

  get inUse(): number {
    return this.active;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /** Waits for a permit at most `timeoutMs` (then 503 `git_busy`). */
  acquire(timeoutMs: number): Promise<() => void> {
    if (this.active < this.max) {
      this.active++;
      return Promise.resolve(this.releaser());
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        clearTimeout(timer);
        this.active++;
        resolve(this.releaser());
      };
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(grant);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(busy());
      }, timeoutMs);
      timer.unref();
      this.waiters.push(grant);
    });
  }

  private releaser(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.active--;
      const next = this.waiters.shift();
      if (next) next();
    };
  }
}

const busy = () =>
  new AppError(503, 'git_busy', 'The server is reading too many repositories at once: retry shortly.', undefined, {
    'retry-after': '1',
  });

export const gitTimeout = () => new AppError(503, 'git_timeout', 'Reading the repository took too long: try a smaller request.');

export const outputTooLarge = () =>
  new AppError(422, 'too_large', 'The answer is larger than this server returns in one response: ask for less (a path, a page).');

export interface BoundedResult {
  code: number;
  stdout: Buffer;
  stderr: string;
  /** the output reached the cap and the process was stopped (only with `truncate`) */
  truncated: boolean;
}

export interface BoundedOptions {
  /** exit codes that are answers, not failures */
  okCodes?: number[];
  /** past the output cap: answer what was read (truncated) instead of a 422 */
  truncate?: boolean;
  /** a smaller output cap than the instance's */
  maxBytes?: number;
  input?: string;
}

export class GitLimits {
  readonly semaphore: Semaphore;

  constructor(readonly options: GitLimitsOptions) {
    this.semaphore = new Semaphore(options.maxProcesses);
  }

  /**
   * Runs `git --git-dir=DIR ARGS` under a permit with the timeout and output cap. A non-zero
   * exit not in `okCodes` rejects with an Error naming the command (a 500: callers decide which
   * failures are answers).
   */
  async run(dir: string, args: string[], opts: BoundedOptions = {}): Promise<BoundedResult> {
    const release = await this.semaphore.acquire(this.options.queueTimeoutMs);
    try {
      return await this.runHeld(dir, args, opts);
    } finally {
      release();
    }
  }

  private runHeld(dir: string, args: string[], opts: BoundedOptions): Promise<BoundedResult> {
    const cap = Math.min(opts.maxBytes ?? this.options.maxOutputBytes, this.options.maxOutputBytes);
    return new Promise((resolve, reject) => {
      const child = spawn('git', [`--git-dir=${dir}`, ...args], { env: gitEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
      const chunks: Buffer[] = [];
      let size = 0;
      let truncated = false;
      let timedOut = false;
      let stderr = '';
      const timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, this.options.timeoutMs);
      child.stdout!.on('data', (chunk: Buffer) => {
        if (truncated) return;
        if (size + chunk.length > cap) {
          chunks.push(chunk.subarray(0, cap - size));
          size = cap;
          truncated = true;
          child.kill('SIGKILL');
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      child.stderr!.on('data', (chunk: Buffer) => {
        if (stderr.length < 8192) stderr += chunk.toString('utf8');
      });
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        if (timedOut) return reject(gitTimeout());
        const stdout = Buffer.concat(chunks, size);
        if (truncated) {
          if (opts.truncate) return resolve({ code: 0, stdout, stderr, truncated });
          return reject(outputTooLarge());
        }
        const c = code ?? -1;
        if (c === 0 || opts.okCodes?.includes(c)) return resolve({ code: c, stdout, stderr, truncated: false });
        reject(new Error(`git ${args.slice(0, 3).join(' ')} failed (${c}): ${stderr.trim().slice(0, 500)}`));
      });
      child.stdin!.on('error', () => {});
      child.stdin!.end(opts.input ?? '');
    });
  }

  /**
   * Spawns a streaming git process under a permit (released when it exits). Its stdout stops
   * (the process is killed) past the stream cap or the stream timeout; `abort` kills it.
   */
  async spawn(dir: string, args: string[]): Promise<{ child: ChildProcess; stdout: Readable; abort: () => void }> {
    const release = await this.semaphore.acquire(this.options.queueTimeoutMs);
    let child: ChildProcess;
    try {
      child = spawn('git', [`--git-dir=${dir}`, ...args], { env: gitEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      release();
      throw err;
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), this.options.streamTimeoutMs);
    timer.unref();
    let written = 0;
    const max = this.options.maxStreamBytes;
    const stdout = new Transform({
      transform(chunk: Buffer, _enc, done) {
        written += chunk.length;
        if (written > max) {
          child.kill('SIGKILL');
          return done(new Error('git output exceeded the stream cap'));
        }
        done(null, chunk);
      },
    });
    child.stdout!.pipe(stdout);
    child.stderr!.resume();
    child.on('error', () => {});
    child.on('close', () => {
      clearTimeout(timer);
      release();
    });
    return {
      child,
      stdout,
      abort: () => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      },
    };
  }
}

// ---------------------------------------------------------------- smart HTTP (clone, fetch, push)

/**
 * Bounds on the git processes one instance runs for clients (README "Bounded git processes"):
 * at most `GIT_HTTP_MAX_PROCESSES` at once, and `GIT_HTTP_MAX_PROCESSES_PER_CLIENT` per client
 * address (for SSH, per user: `SSH_MAX_SESSIONS_PER_USER`). A request over either waits for a
 * slot, in arrival order, up to `GIT_WAIT_MS` (a CI's matrix of clones from one host all get
 * served instead of half of them refused), then gets 503 `service_unavailable` with `Retry-After`
 * before any process starts. A slot is taken with `acquire` and given back with the function it
 * returns (once; a second call does nothing). Shared by every route that starts git for a client:
 * smart HTTP here, SSH, and any read route that wants the same cap (`gitHttpLimiter(deps)`).
 */
export class GitHttpLimiter {
  private total = 0;
  private readonly perClient = new Map<string, number>();
  private readonly waiters: Array<{ client: string; grant: () => void }> = [];

  constructor(
    readonly maxTotal: number,
    readonly maxPerClient: number,
    /** how long a request waits for a slot before its 503; 0 refuses at once */
    readonly waitMs = 0,
    /** the 503's words for a client over its own cap */
    readonly clientBusy = 'This client address already runs as many git processes as one client may',
  ) {}

  private fits(client: string): boolean {
    return this.total < this.maxTotal && (this.perClient.get(client) ?? 0) < this.maxPerClient;
  }

  private take(client: string): () => void {
    this.total++;
    this.perClient.set(client, (this.perClient.get(client) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.perClient.get(client) ?? 1) - 1;
      if (left <= 0) this.perClient.delete(client);
      else this.perClient.set(client, left);
      this.wake();
    };
  }

  /** Grants waiting requests in arrival order while slots fit them (a client at its cap does not hold up others). */
  private wake(): void {
    for (let i = 0; i < this.waiters.length && this.total < this.maxTotal;) {
      const w = this.waiters[i]!;
      if (this.fits(w.client)) {
        this.waiters.splice(i, 1);
        w.grant();
      } else i++;
    }
  }

  private refusal(client: string): AppError {
    if (this.total >= this.maxTotal) return gitBusy('The server is running as many git processes as it allows');
    if ((this.perClient.get(client) ?? 0) >= this.maxPerClient) return gitBusy(this.clientBusy);
    return gitBusy('The server is running as many git processes as it allows');
  }

  /** A slot for `client` at once, or an AppError 503 when the instance or the client is at its cap. */
  tryAcquire(client: string): () => void {
    if (this.waiters.length === 0 && this.fits(client)) return this.take(client);
    throw this.refusal(client);
  }

  /**
   * A slot for `client`: at once when one is free and nobody waits, else after waiting in line up
   * to `waitMs` (then the 503). `signal` gives up the wait (the client went away).
   */
  acquire(client: string, signal?: AbortSignal): Promise<() => void> {
    if (this.waiters.length === 0 && this.fits(client)) return Promise.resolve(this.take(client));
    if (this.waitMs <= 0) return Promise.reject(this.refusal(client));
    return new Promise((resolve, reject) => {
      const leave = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const waiter = {
        client,
        grant: () => {
          leave();
          resolve(this.take(client));
        },
      };
      const onAbort = () => {
        leave();
        reject(this.refusal(client));
      };
      const timer = setTimeout(() => {
        leave();
        reject(this.refusal(client));
      }, this.waitMs);
      timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** Processes running now (for tests and metrics). */
  get running(): number {
    return this.total;
  }

  /** Requests waiting for a slot now. */
  get waiting(): number {
    return this.waiters.length;
  }
}

const limiters = new WeakMap<object, GitHttpLimiter>();

/** The limiter of one app instance (keyed by its deps), made on first use from its configuration. */
export function gitHttpLimiter(deps: {
  config: { gitHttpMaxProcesses: number; gitHttpMaxProcessesPerClient: number; gitWaitMs: number };
}): GitHttpLimiter {
  let limiter = limiters.get(deps);
  if (!limiter) {
    limiter = new GitHttpLimiter(
      deps.config.gitHttpMaxProcesses,
      deps.config.gitHttpMaxProcessesPerClient,
      deps.config.gitWaitMs,
    );
    limiters.set(deps, limiter);
  }
  return limiter;
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
