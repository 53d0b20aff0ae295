/**
 * SQLite durability cost (bench/README.md "SQLite synchronous"): small committed write
 * transactions (one insert each, as an API write is) in WAL mode under `synchronous=NORMAL`
 * (Weft's setting) and `synchronous=FULL`, with a reference measured in the same run: appending
 * the same bytes to a plain file with an fsync after each write (what one durable commit costs
 * the disk at least).
 *
 *   npx tsx bench/sqlite-sync.ts          # BENCH_WRITES=2000 by default
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import SQLite from 'better-sqlite3';

const N = Number(process.env.BENCH_WRITES ?? 2000);
const dir = mkdtempSync(join(tmpdir(), 'weft-bench-sync-'));
const row = 'x'.repeat(200);

function sqliteRun(mode: 'NORMAL' | 'FULL'): number {
  const db = new SQLite(join(dir, `${mode}.sqlite`));
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${mode}`);
  db.exec('create table t (id integer primary key, body text not null)');
  const insert = db.prepare('insert into t (body) values (?)');
  const one = db.transaction((body: string) => insert.run(body));
  const start = performance.now();
  for (let i = 0; i < N; i++) one(row);
  const ms = performance.now() - start;
  db.close();
  return ms;
}

function fsyncRun(): number {
  const fd = openSync(join(dir, 'append.log'), 'a');
  const start = performance.now();
  for (let i = 0; i < N; i++) {
    writeSync(fd, row);
    fsyncSync(fd);
  }
  const ms = performance.now() - start;
  closeSync(fd);
  return ms;
}

try {
  const ref = fsyncRun();
  const normal = sqliteRun('NORMAL');
  const full = sqliteRun('FULL');
  const line = (name: string, ms: number) =>
    `| ${name} | ${((N / ms) * 1000).toFixed(0)} | ${((ms * 1000) / N).toFixed(0)} µs | ${(ms / ref).toFixed(2)} |`;
  console.log(`${N} single-row write transactions each\n`);
  console.log('| target | commits/s | per commit | time vs append+fsync |');
  console.log('|---|---|---|---|');
  console.log(line('append + fsync (reference)', ref));
  console.log(line('SQLite WAL, synchronous=NORMAL', normal));
  console.log(line('SQLite WAL, synchronous=FULL', full));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
