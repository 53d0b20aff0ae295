import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { gitTimeout } from './limits.ts';
import { gitEnv } from './run.ts';

/**
 * Long-lived `git diff-tree --stdin` processes, a small pool per repository and option set (with
 * an idle timeout), instead of one `git diff-tree` per diff: starting git costs several times
 * what diffing a small commit does (bench/README.md "Reading code"). A diff is asked as a line
 * `TREE1 TREE2`, followed by a line that is not an object id, which git echoes and then flushes
 * its output: that line (with a random nonce per process, so no path can forge it) ends the
 * answer. Git prints `TREE1 TREE2` before a diff of two trees; the rest is the output the same
 * `git diff-tree` options give for the two trees on the command line. One diff at a time per
 * process; each has the timeout and the output cap of a bounded command (src/git/limits.ts):
 * past the cap the process is stopped and the answer is what was read, marked truncated.
 */

export interface DiffPoolOptions {
  /** processes per repository and option set */
  perRepo: number;
  /** processes in all; past it callers run a one-off process instead */
  total: number;
  idleMs: number;
  timeoutMs: number;
  maxOutputBytes: number;
}

export interface DiffOutput {
  stdout: Buffer;
  truncated: boolean;
}

const TREE = /^[0-9a-f]{40}$/;

interface Job {
  from: string;
  to: string;
  resolve: (out: DiffOutput) => void;
  reject: (err: Error) => void;
}

class DiffProcess {
  private readonly child: ChildProcess;
  private readonly sync: Buffer;
  private job: Job | null = null;
  private chunks: Buffer[] = [];
  private size = 0;
  private timer: NodeJS.Timeout | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  dead = false;

  constructor(
    readonly key: string,
    dir: string,
    args: string[],
    private readonly options: DiffPoolOptions,
    private readonly onFree: (p: DiffProcess) => void,
    private readonly onExit: (p: DiffProcess) => void,
  ) {
    this.sync = Buffer.from(`weft-sync-${randomBytes(16).toString('hex')}\n`);
    this.child = spawn('git', [`--git-dir=${dir}`, 'diff-tree', '--stdin', ...args], {
      env: gitEnv(),
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    this.child.stdout!.on('data', (chunk: Buffer) => this.onData(chunk));
    this.child.stdin!.on('error', () => this.fail(new Error('git diff-tree stopped')));
    this.child.on('error', (err) => this.fail(err));
    this.child.on('close', () => this.fail(new Error('git diff-tree exited')));
    this.armIdle();
  }

  get busy(): boolean {
    return this.job !== null;
  }

  start(job: Job): void {
    this.job = job;
    this.chunks = [];
    this.size = 0;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    this.timer = setTimeout(() => this.fail(gitTimeout()), this.options.timeoutMs);
    this.child.stdin!.write(`${job.from} ${job.to}\n${this.sync.toString('latin1')}`);
  }

  private armIdle(): void {
    this.idleTimer = setTimeout(() => this.close(), this.options.idleMs);
    this.idleTimer.unref();
  }

  private onData(chunk: Buffer): void {
    const job = this.job;
    if (!job) return this.fail(new Error('git diff-tree wrote unasked'));
    this.chunks.push(chunk);
    this.size += chunk.length;
    // the header line, then at most the cap, then the sync line
    const cap = this.options.maxOutputBytes + 83 + this.sync.length;
    if (this.size > cap) {
      const out = Buffer.concat(this.chunks, this.size);
      const body = this.body(out);
      if (!body) return this.fail(new Error('git diff-tree answered without a header'));
      this.finish();
      // the process still has output to write: it goes
      this.close();
      job.resolve({ stdout: body.subarray(0, this.options.maxOutputBytes), truncated: true });
      return;
    }
    const s = this.sync.length;
    if (this.size < s) return;
    const last = this.chunks[this.chunks.length - 1]!;
    const tail =
      last.length >= s ? last.subarray(last.length - s) : Buffer.concat(this.chunks, this.size).subarray(this.size - s);
    if (!tail.equals(this.sync)) return;
    const out = Buffer.concat(this.chunks, this.size).subarray(0, this.size - s);
    const body = this.body(out);
    this.finish();
    if (!body) {
      // git refused the line (an object it does not have): the answer has no header
      job.reject(new Error(`git diff-tree ${job.from} ${job.to} failed`));
    } else job.resolve({ stdout: Buffer.from(body), truncated: false });
    this.armIdle();
    this.onFree(this);
  }

  /** The output after the `TREE1 TREE2` header line, or null when it does not start with it. */
  private body(out: Buffer): Buffer | null {
    const nl = out.indexOf(10);
    if (nl !== 81 || out.toString('latin1', 0, nl) !== `${this.job!.from} ${this.job!.to}`) return null;
    return out.subarray(nl + 1);
  }

  private finish(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.job = null;
    this.chunks = [];
    this.size = 0;
  }

  private fail(err: Error): void {
    const job = this.job;
    this.finish();
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    const wasDead = this.dead;
    this.dead = true;
    job?.reject(err);
    if (!wasDead) {
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
      this.onExit(this);
    }
  }

  close(): void {
    this.fail(new Error('git diff-tree closed'));
  }
}

/**
 * The pool of one instance. `diff` answers the output of `git diff-tree ARGS FROM TO` for two
 * tree ids, or null when the pool is full (the caller then runs its own bounded process).
 */
export class DiffReaders {
  private readonly byKey = new Map<string, DiffProcess[]>();
  private readonly waiting = new Map<string, Job[]>();
  private count = 0;
  private closed = false;

  constructor(readonly options: DiffPoolOptions) {}

  get processCount(): number {
    return this.count;
  }

  diff(dir: string, args: string[], from: string, to: string): Promise<DiffOutput> | null {
    if (this.closed || !TREE.test(from) || !TREE.test(to)) return null;
    const key = `${dir}\0${args.join(' ')}`;
    const list = this.byKey.get(key) ?? [];
    const free = list.find((p) => !p.busy && !p.dead);
    const grow = !free && list.length < this.options.perRepo && this.count < this.options.total;
    if (!free && !grow && list.length === 0) return null;
    return new Promise<DiffOutput>((resolve, reject) => {
      const job: Job = { from, to, resolve, reject };
      if (free) return free.start(job);
      if (grow) {
        const p = new DiffProcess(
          key,
          dir,
          args,
          this.options,
          (done) => this.next(done),
          (gone) => this.forget(gone, dir, args),
        );
        this.count++;
        list.push(p);
        this.byKey.set(key, list);
        return p.start(job);
      }
      const queue = this.waiting.get(key) ?? [];
      queue.push(job);
      this.waiting.set(key, queue);
    });
  }

  /** A process is free: it takes the next diff waiting for its repository. */
  private next(p: DiffProcess): void {
    const queue = this.waiting.get(p.key);
    const job = queue?.shift();
    if (queue && queue.length === 0) this.waiting.delete(p.key);
    if (job) p.start(job);
  }

  private forget(p: DiffProcess, dir: string, args: string[]): void {
    const list = this.byKey.get(p.key);
    if (!list) return;
    const i = list.indexOf(p);
    if (i < 0) return;
    list.splice(i, 1);
    this.count--;
    if (list.length === 0) this.byKey.delete(p.key);
    // diffs waiting for this repository get a fresh process (or fail when the pool is closed)
    const queue = this.waiting.get(p.key);
    if (!queue || queue.length === 0) return;
    this.waiting.delete(p.key);
    for (const job of queue) {
      const again = this.diff(dir, args, job.from, job.to);
      if (again) again.then(job.resolve, job.reject);
      else job.reject(new Error('git diff-tree pool is closed'));
    }
  }

  close(): void {
    this.closed = true;
    for (const list of [...this.byKey.values()]) for (const p of [...list]) p.close();
  }
}
