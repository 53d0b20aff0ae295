import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { LauncherUnreachable, launcher } from './launcher.ts';
import { gitBusy, isResourceExhaustion } from './spawn-errors.ts';

/**
 * The one module that runs git. Every command is an argument array (never a shell), with a
 * timeout and a clean environment: nothing of the server's environment (HOME, GIT_DIR,
 * GIT_CONFIG_*, credentials) reaches git, and system/global configuration is ignored.
 */

const DEFAULT_TIMEOUT_MS = 120_000;

/** The environment every git command runs with, plus per-call additions. */
export function gitEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: '/nonexistent',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    LC_ALL: 'C',
    GIT_AUTHOR_NAME: 'Weft',
    GIT_AUTHOR_EMAIL: 'weft@localhost',
    GIT_COMMITTER_NAME: 'Weft',
    GIT_COMMITTER_EMAIL: 'weft@localhost',
    ...extra,
  };
}

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  env?: Record<string, string>;
  input?: string;
  timeoutMs?: number;
  /** exit codes that are answers, not failures (merge-tree's 1 = conflicts) */
  okCodes?: number[];
}

export class GitError extends Error {
  constructor(
    readonly args: string[],
    readonly result: GitResult,
  ) {
    super(`git ${args.slice(0, 3).join(' ')} failed (${result.code}): ${result.stderr.trim().slice(0, 500)}`);
  }
}

/** Runs `git --git-dir=DIR ARGS`, buffering output (for small answers: refs, trees, logs). */
export function git(gitDir: string | null, args: string[], opts: RunOptions = {}): Promise<GitResult> {
  const full = gitDir === null ? args : [`--git-dir=${gitDir}`, ...args];
  const via = launcher();
  if (!via) return gitHere(full, opts);
  return via
    .run({
      args: full,
      env: gitEnv(opts.env),
      input: opts.input,
      timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxBuffer: MAX_BUFFER,
    })
    .then(
      (reply) => settle(full, opts, reply.error, reply.stdout, reply.stderr),
      (err: unknown) => {
        // never reached the launcher: run it here; died with it in flight: it may have run
        if (err instanceof LauncherUnreachable) return gitHere(full, opts);
        throw gitBusy('The git launcher stopped while running this command');
      },
    );
}

const MAX_BUFFER = 64 * 1024 * 1024;

/** The answer of one command, wherever it ran: the result, a GitError, or a 503 when git could not start. */
function settle(
  full: string[],
  opts: RunOptions,
  err: { code?: number | string | null } | null,
  stdout: string,
  stderr: string,
): GitResult {
  // git could not even start (EMFILE, EAGAIN...): a 503 for this request, not a 500.
  if (err && isResourceExhaustion(err)) throw gitBusy('The server could not start git (out of file descriptors or processes)');
  const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
  const result = { code, stdout, stderr };
  if (code === 0 || opts.okCodes?.includes(code)) return result;
  throw new GitError(full, result);
}

/** Runs the command from this process (the launcher is off or could not be started). */
function gitHere(full: string[], opts: RunOptions): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      full,
      {
        env: gitEnv(opts.env),
        timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: MAX_BUFFER,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        try {
          resolve(settle(full, opts, err as { code?: number | string | null } | null, stdout, stderr));
        } catch (e) {
          reject(e);
        }
      },
    );
    // A child that failed to spawn reports it through the callback; its stdin may not exist.
    child.stdin?.on('error', () => undefined);
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

/**
 * Spawns a streaming git process (smart HTTP): the caller awaits `started(child)` (src/git/limits.ts)
 * before touching its streams, pipes stdin/stdout and must wait for exit. A failed spawn never
 * throws here and never goes unhandled: `started` turns it into a 503.
 */
export function spawnGit(args: string[], env: Record<string, string> = {}, timeoutMs = 3_600_000): ChildProcess {
  const child = spawn('git', args, { env: gitEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
  child.on('error', () => undefined);
  child.stdin?.on('error', () => undefined);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  timer.unref();
  child.on('exit', () => clearTimeout(timer));
  return child;
}

export const ZERO_SHA = '0000000000000000000000000000000000000000';
