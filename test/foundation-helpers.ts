import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { TestApp } from './helpers.ts';

/** Shared by the foundation tests (users, tokens, auth, conventions, events, openapi, ops). */

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export async function countRows(t: TestApp, table: 'users' | 'api_tokens' | 'events'): Promise<number> {
  const row = await t.deps.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Counts of the foundation tables, to show that a refused request changed nothing. */
export async function snapshot(t: TestApp): Promise<{ users: number; tokens: number; events: number }> {
  return { users: await countRows(t, 'users'), tokens: await countRows(t, 'api_tokens'), events: await countRows(t, 'events') };
}

export const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const TOKEN_SECRET = /^weft_[0-9A-Za-z]{40}$/;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs a TypeScript entry point of this project with tsx and collects its output; `input` goes to its stdin. */
export function runTs(
  script: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs = 30_000,
  input?: string,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        LOAD_SHED_EVENT_LOOP_DELAY_MS: '0',
        SSH_PORT: '0',
        ...env,
      },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
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
