import { type ChildProcess, spawn } from 'node:child_process';

/**
 * Buffered git commands are started by a small helper process, the launcher (docs/architecture.md
 * "Git from a small process").
 *
 * Starting a process from Node forks the calling process first, and a fork copies its page
 * tables: the larger the server's memory, the longer each start. On a 2-vCPU VM a `git --version`
 * took 29 ms from a Node process holding 300 MB more, 13 ms of it the caller's CPU in the kernel,
 * against 13 ms (1 ms of the caller's CPU) through a fresh Node process (bench/git-launcher.ts).
 * The launcher is such a fresh process. It runs each command with `execFile`, exactly as the server did, and answers over IPC.
 *
 * When it cannot be started the command runs from the server as before (and the launcher is tried
 * again 5 s later). When it dies, the commands it was running are refused (503: the server cannot
 * know whether they ran), the next command starts a new one. It exits when the server goes away,
 * once its running commands have finished (a git killed halfway would leave a lock file); it
 * ignores SIGINT and SIGTERM, which a terminal or systemd sends to the whole process group while
 * the server drains its requests.
 * `WEFT_GIT_LAUNCHER=off` starts git from the server itself.
 */

export interface LaunchRequest {
  args: string[];
  env: NodeJS.ProcessEnv;
  /** the working directory (tests' client commands); the launcher's own (the server's) when absent */
  cwd?: string;
  input?: string;
  timeoutMs: number;
  maxBuffer: number;
}

export interface LaunchReply {
  /** execFile's error: the exit code (a number), an errno code (a string), or null (a signal) */
  error: { code: number | string | null; message: string } | null;
  stdout: string;
  stderr: string;
}

/** The launcher's own code: plain JavaScript, run by `node -e` with no loader and no application code. */
const SOURCE = `
const { execFile } = require('node:child_process');
let running = 0, gone = false;
const leave = () => { if (gone && running === 0) process.exit(0); };
process.on('disconnect', () => { gone = true; leave(); });
// a stop signal to the whole group (Ctrl-C, systemd) is the server's to handle: the launcher
// leaves when the server has gone
process.on('SIGINT', () => {});
process.on('SIGTERM', () => {});
process.on('message', (m) => {
  running++;
  let child;
  try {
    child = execFile('git', m.args, { cwd: m.cwd, env: m.env, timeout: m.timeoutMs, killSignal: 'SIGKILL', maxBuffer: m.maxBuffer, encoding: 'utf8' },
      (err, stdout, stderr) => {
        running--;
        const error = err ? { code: err.code === undefined ? null : err.code, message: String(err.message) } : null;
        if (!gone) process.send({ id: m.id, error, stdout, stderr }, () => leave());
        else leave();
      });
  } catch (err) {
    running--;
    if (!gone) process.send({ id: m.id, error: { code: err.code ?? null, message: String(err.message) }, stdout: '', stderr: '' });
    return;
  }
  if (child.stdin) {
    child.stdin.on('error', () => {});
    if (m.input !== undefined) child.stdin.end(m.input); else child.stdin.end();
  }
});
`;

interface Pending {
  resolve(reply: LaunchReply): void;
  reject(err: Error): void;
}

class Launcher {
  private readonly child: ChildProcess;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  dead = false;

  constructor(onExit: (unreachable: boolean) => void) {
    this.child = spawn(process.execPath, ['-e', SOURCE], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'advanced',
      env: {},
    });
    // the launcher never keeps the server alive; a command in flight does (see `run`)
    this.child.unref();
    this.child.channel?.unref();
    const die = (why: Error) => {
      if (this.dead) return;
      this.dead = true;
      onExit(why instanceof LauncherUnreachable);
      for (const p of this.pending.values()) p.reject(why);
      this.pending.clear();
    };
    // 'error' without a send callback: the launcher could not be started, so nothing ran
    this.child.on('error', (err) => die(new LauncherUnreachable(err)));
    // the channel closing is the first sign of a dead launcher (its 'exit' may come later, or,
    // the process being unref'd, after this process has nothing else to wait for)
    this.child.on('disconnect', () => die(new LauncherGone()));
    this.child.on('exit', () => die(new LauncherGone()));
    this.child.on('message', (m: LaunchReply & { id: number }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) this.child.channel?.unref();
      p.resolve(m);
    });
  }

  /** the launcher's process id (tests) */
  get pid(): number | undefined {
    return this.child.pid;
  }

  run(req: LaunchRequest): Promise<LaunchReply> {
    return new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) this.child.channel?.ref();
      this.child.send({ id, ...req }, (err) => {
        if (!err) return;
        if (this.pending.delete(id)) reject(new LauncherUnreachable(err));
        if (this.pending.size === 0) this.child.channel?.unref();
      });
    });
  }
}

/** The launcher died with commands in flight: they may or may not have run. */
export class LauncherGone extends Error {
  constructor() {
    super('the git launcher stopped');
  }
}

/** A command that never reached the launcher (it was not running): safe to run elsewhere. */
export class LauncherUnreachable extends Error {
  constructor(override readonly cause: Error) {
    super(`the git launcher could not be reached: ${cause.message}`);
  }
}

let current: Launcher | null = null;
let retryAt = 0;

/** The running launcher, started on first use; null when it is off or could not be started lately. */
export function launcher(): Launcher | null {
  if (process.env.WEFT_GIT_LAUNCHER === 'off') return null;
  if (current && !current.dead) return current;
  if (Date.now() < retryAt) return null;
  try {
    const started: Launcher = new Launcher((unreachable) => {
      if (current === started) current = null;
      if (unreachable) retryAt = Date.now() + 5000;
    });
    current = started;
    return started;
  } catch {
    retryAt = Date.now() + 5000;
    return null;
  }
}
