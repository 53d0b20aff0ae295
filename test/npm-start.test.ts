/**
 * Issue 30, item 7: `npm start` is one server process. SIGTERM or SIGINT to the `npm start` pid
 * stops the server (npm forwards the signal; the start script `exec`s node, so no shell sits in
 * between to die and leave `node dist/main.js` serving as an orphan).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT } from './foundation-helpers.ts';
import { freePort } from './server-process.ts';

async function up(port: number, deadlineMs: number): Promise<boolean> {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null);
    if (res?.status === 200) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

describe('npm start (spawned)', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal} to the npm start pid stops the server: nothing keeps serving`, { timeout: 300_000 }, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'weft-start-'));
      const port = await freePort();
      const child = spawn('npm', ['start', '--silent'], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: dir, PORT: String(port), LOG_LEVEL: 'warn' },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let err = '';
      child.stderr!.on('data', (d) => {
        err += d;
      });
      const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      try {
        // the prestart build may compile src/ first: minutes on a loaded machine
        assert.ok(await up(port, 240_000), `the server came up: ${err}`);
        const t0 = Date.now();
        child.kill(signal);
        const code = await Promise.race([
          exited,
          new Promise<'still running'>((r) => setTimeout(() => r('still running'), 20_000)),
        ]);
        assert.notEqual(code, 'still running', `npm start still runs 20 s after ${signal}`);
        assert.ok(Date.now() - t0 < 20_000, `npm start exited ${Date.now() - t0} ms after ${signal}`);
        assert.ok(code === 0 || code === null, `exit code ${code}: ${err}`);
        const after = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null);
        assert.equal(after, null, 'nothing serves the port any more (no orphaned node dist/main.js)');
      } finally {
        // without the fix the server outlives npm: end the whole group (spawned detached for this)
        try {
          if (child.pid) process.kill(-child.pid, 'SIGKILL');
        } catch {
          /* the group is gone: nothing outlived npm */
        }
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
