/**
 * Real server processes (`node --import tsx src/main.ts`) on a test store, for crash tests
 * (kill -9 and restart) and resource limits (a lowered `ulimit -n`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { freshStore } from './helpers.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export type StoreHandle = Awaited<ReturnType<typeof freshStore>>;
export const SERVER_ADMIN_TOKEN = 'weft_Zq8Lr2Xv6Tn4Pk1Hs9Bd3Wf7Mc5Ya0Ge2Ju8';

export interface ServerProcess {
  child: ChildProcess;
  base: string;
  /** everything written to stderr so far */
  stderr(): string;
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

/** Starts a server on the store and waits until `/readyz` answers. `ulimit` lowers its open-file limit. */
export async function startServer(
  store: StoreHandle,
  env: Record<string, string> = {},
  opts: { ulimitFiles?: number } = {},
): Promise<ServerProcess> {
  const url = store.url && store.schema ? `${store.url}?options=${encodeURIComponent(`-c search_path=${store.schema}`)}` : null;
  const port = await freePort();
  const nodeArgs = ['--import', 'tsx', 'src/main.ts'];
  const [cmd, args] =
    opts.ulimitFiles === undefined
      ? [process.execPath, nodeArgs]
      : ['/bin/sh', ['-c', `ulimit -n ${opts.ulimitFiles} && exec "$0" "$@"`, process.execPath, ...nodeArgs]];
  const child = spawn(cmd, args as string[], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: store.dataDir,
      LOG_LEVEL: 'warn',
      BOOTSTRAP_ADMIN_TOKEN: SERVER_ADMIN_TOKEN,
      LOAD_SHED_EVENT_LOOP_DELAY_MS: '0',
      ...(url ? { DATABASE_URL: url } : {}),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
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
