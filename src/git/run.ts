import { type ChildProcess, execFile, spawn } from 'node:child_process';
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
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      full,
      {
        env: gitEnv(opts.env),
        timeout: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        killSignal: 'SIGKILL',
        maxBuffer: 64 * 1024 * 1024,
        encoding: 'utf8',
      },
      (err, stdout, stderr) => {
        // git could not even start (EMFILE, EAGAIN...): a 503 for this request, not a 500.
        if (err && isResourceExhaustion(err))
          return reject(gitBusy('The server could not start git (out of file descriptors or processes)'));
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        const result = { code, stdout, stderr };
        if (code === 0 || opts.okCodes?.includes(code)) resolve(result);
        else reject(new GitError(full, result));
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
