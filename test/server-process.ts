/**
 * Real Weft processes for tests: the server (crash tests with kill -9 and restart, resource limits
 * with a lowered `ulimit -n`, shutdown) and the CLI. They run the built `dist/` (what `npm start`
 * runs), which starts in about 0.5 s where `node --import tsx src/main.ts` takes 3.5-4 s; dist/ is
 * built first when it is missing or older than src/ (`npm test` and `npm run test:files` build it in
 * their `pretest:files` step, so a run of many files never builds twice).
 */
import { type ChildProcess, type StdioOptions, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { freshStore } from './helpers.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export type StoreHandle = Awaited<ReturnType<typeof freshStore>>;
export const SERVER_ADMIN_TOKEN = 'weft_Zq8Lr2Xv6Tn4Pk1Hs9Bd3Wf7Mc5Ya0Ge2Ju8';

let distChecked = false;

/** `dist/main.js` (the server) or `dist/cli.js` (the CLI), built first when missing or stale. */
export function builtEntry(entry: 'main' | 'cli'): string {
  if (!distChecked) {
    execFileSync(process.execPath, [join(ROOT, 'bin', 'build-if-needed.mjs')], { cwd: ROOT, stdio: 'inherit' });
    distChecked = true;
  }
  return `dist/${entry}.js`;
}

/** The store's DATA_DIR, and its DATABASE_URL (with the test schema) on PostgreSQL. */
export function storeEnv(store: StoreHandle): Record<string, string> {
  const url = store.url && store.schema ? `${store.url}?options=${encodeURIComponent(`-c search_path=${store.schema}`)}` : null;
  return { DATA_DIR: store.dataDir, ...(url ? { DATABASE_URL: url } : {}) };
}

/**
 * Spawns a built entry point with a small environment (PATH, no SSH listener, no load shedding
 * on a loaded machine) plus `env`; `ulimitFiles` lowers its open-file limit.
 */
export function spawnWeft(
  entry: 'main' | 'cli',
  args: string[],
  env: Record<string, string>,
  opts: { stdio?: StdioOptions; ulimitFiles?: number } = {},
): ChildProcess {
  const nodeArgs = [builtEntry(entry), ...args];
  const [cmd, argv] =
    opts.ulimitFiles === undefined
      ? [process.execPath, nodeArgs]
      : ['/bin/sh', ['-c', `ulimit -n ${opts.ulimitFiles} && exec "$0" "$@"`, process.execPath, ...nodeArgs]];
  return spawn(cmd, argv, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      SSH_PORT: '0',
      LOAD_SHED_EVENT_LOOP_DELAY_MS: '0',
      ...env,
    },
    stdio: opts.stdio ?? ['ignore', 'ignore', 'pipe'],
  });
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a built entry point to its end and collects its output; `input` goes to its stdin. */
export function runWeft(
  entry: 'main' | 'cli',
  args: string[],
  env: Record<string, string>,
  timeoutMs = 30_000,
  input?: string,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawnWeft(
      entry,
      args,
      { HOME: process.env.HOME ?? '', ...env },
      { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] },
    );
    if (input !== undefined) child.stdin!.end(input);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d) => {
      stdout += d;
    });
    child.stderr!.on('data', (d) => {
      stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** A port free at this moment. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  srv.close();
  await once(srv, 'close');
  return port;
}

export interface ServerProcess {
  child: ChildProcess;
  base: string;
  /** everything written to stderr so far */
  stderr(): string;
}

/** Starts a server on the store and waits until `/readyz` answers. `ulimit` lowers its open-file limit. */
export async function startServer(
  store: StoreHandle,
  env: Record<string, string> = {},
  opts: { ulimitFiles?: number } = {},
): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawnWeft(
    'main',
    [],
    {
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      BOOTSTRAP_ADMIN_TOKEN: SERVER_ADMIN_TOKEN,
      ...storeEnv(store),
      ...env,
    },
    opts,
  );
  let seen = '';
  child.stderr!.on('data', (c: Buffer) => {
    seen += c.toString();
  });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`server exited early: ${seen.slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`server not ready in 90 s: ${seen.slice(-2000)}`);
    const ok = await fetch(`${base}/readyz`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  return { child, base, stderr: () => seen };
}

/** Resolves once `pattern` has appeared on the server's stderr. */
export async function waitForStderr(server: ServerProcess, pattern: RegExp, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pattern.test(server.stderr())) {
    if (server.child.exitCode !== null) throw new Error(`server exited before ${pattern}: ${server.stderr().slice(-2000)}`);
    if (Date.now() > deadline) throw new Error(`no ${pattern} within ${ms} ms: ${server.stderr().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function stopServer(server: ServerProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  const child = server?.child;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** Polls `check` until it returns a value that is not undefined, or fails after `ms`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms${last ? ` (${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The environment the instance tests run the system `git` with: no user or system config, no prompts. */
export const GIT_ENV = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'Tester',
  GIT_AUTHOR_EMAIL: 'tester@example.com',
  GIT_COMMITTER_NAME: 'Tester',
  GIT_COMMITTER_EMAIL: 'tester@example.com',
  HOME: tmpdir(),
  LC_ALL: 'C',
};

/** `git args` in `cwd` (a work tree or a bare repo) with `GIT_ENV`, its output as text. */
export const git = (args: string[], cwd?: string): string => execFileSync('git', args, { cwd, env: GIT_ENV, encoding: 'utf8' });
