import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import type { Res, TestApp } from './helpers.ts';
import { ROOT } from './foundation-helpers.ts';

/**
 * Runs `write` while another connection holds uncommitted `statements` (and their locks) for a
 * moment. On PostgreSQL the other side is a second connection; on SQLite a second process (as
 * the CLI would be) holding the write lock, which the write's BEGIN IMMEDIATE waits for.
 */
export async function whileUncommitted(
  t: TestApp & { store: { dataDir: string; schema?: string } },
  writerToken: string | null,
  statements: string[],
  write: () => Promise<Res>,
) {
  // The writer's token is used once first: authentication writes `last_used_at` when it is older
  // than a minute, and on SQLite that write would wait for the lock too, so every later read (a
  // check outside the transaction included) would see the committed change and a test could not
  // tell a check inside the transaction from one outside it.
  if (writerToken) assert.equal((await t.req('GET', '/api/v1/user', { token: writerToken })).status, 200);
  if (t.dialect === 'postgres') {
    const client = new pg.Client({
      connectionString: process.env.TEST_DATABASE_URL,
      options: `-c search_path=${t.store.schema}`,
    });
    await client.connect();
    try {
      await client.query('begin');
      for (const s of statements) await client.query(s);
      let settled = false;
      const pending = write().finally(() => (settled = true));
      await sleep(300);
      assert.equal(settled, false, 'the write waits for the uncommitted change');
      await client.query('commit');
      return await pending;
    } finally {
      await client.end();
    }
  }
  const file = join(t.store.dataDir, 'weft.sqlite');
  const script = `
    const Database = require('better-sqlite3');
    const db = new Database(${JSON.stringify(file)});
    db.pragma('busy_timeout = 5000');
    db.exec('begin immediate');
    for (const s of ${JSON.stringify(statements)}) db.exec(s);
    process.stdout.write('locked\\n');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
    db.exec('commit');
    db.close();
  `;
  const child = spawn(process.execPath, ['-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d) => String(d).includes('locked') && resolve());
    child.on('close', () => reject(new Error('the locking process ended early')));
  });
  const res = await write();
  assert.equal(await exited, 0);
  return res;
}

/** An SQL string literal. */
export const q = (s: string) => `'${s.replace(/'/g, "''")}'`;
