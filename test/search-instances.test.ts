import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Database, openDatabase } from '../src/db/index.ts';
import { DIALECTS, freshStore } from './helpers.ts';
import {
  SERVER_ADMIN_TOKEN,
  type ServerProcess,
  type StoreHandle,
  eventually,
  runWeft,
  startServer,
  stopServer,
  storeEnv,
  git,
} from './server-process.ts';

/**
 * docs/search.md "Indexing": two real server processes (dist/main.js) on one PostgreSQL database
 * and one DATA_DIR, pushes through both and a `weft reindex` beside them. One indexer per repo at
 * a time (a lease in search_index_state): no job fails on another's rows, and the index ends
 * exactly at the tip (every file once, at its last version; a deleted file gone).
 */

async function api(base: string, method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : {}) as Record<string, unknown>, text };
}

// several instances are a PostgreSQL deployment; SQLite serves one process
for (const dialect of DIALECTS.filter((d) => d === 'postgres')) {
  describe(`search indexing across two server processes (${dialect})`, () => {
    let store: StoreHandle;
    let a: ServerProcess;
    let b: ServerProcess;
    let database: Database;
    let work: string;
    before(async () => {
      store = await freshStore(dialect);
      [a, b] = await Promise.all([startServer(store), startServer(store)]);
      database = await openDatabase({ url: store.url, dataDir: store.dataDir, schema: store.schema });
      work = mkdtempSync(join(tmpdir(), 'weft-search-instances-'));
    });
    after(async () => {
      await Promise.all([stopServer(a, 'SIGTERM'), stopServer(b, 'SIGTERM')]);
      await database?.close();
      await store?.drop().catch(() => undefined);
      rmSync(work, { recursive: true, force: true });
    });

    it('pushes through both instances and a weft reindex: one indexer at a time, the index exactly at the tip', async () => {
      assert.equal(
        (
          await api(a.base, 'POST', '/users', SERVER_ADMIN_TOKEN, {
            username: 'owner',
            email: 'o@example.com',
            password: 'correct horse battery',
          })
        ).status,
        201,
      );
      const token = (await api(a.base, 'POST', '/api-tokens', SERVER_ADMIN_TOKEN, { name: 't', username: 'owner' })).body
        .token as string;
      const repo = await api(b.base, 'POST', '/users/owner/repos', token, { name: 'big', slug: 'big', visibility: 'public' });
      assert.equal(repo.status, 201, repo.text);
      const url = (base: string) => {
        const u = new URL('/git/users/owner/big.git', base);
        u.username = 'x';
        u.password = token;
        return u.toString();
      };
      const write = (from: number, to: number, gen: string) => {
        for (let i = from; i < to; i++) {
          mkdirSync(join(work, `d${i % 7}`), { recursive: true });
          writeFileSync(join(work, `d${i % 7}`, `f${i}.txt`), `file ${i}\nversion ${gen}mark\n`);
        }
      };
      git(['init', '-q', '-b', 'main'], work);
      // 450 files: the first index writes three batches
      write(0, 450, 'genone');
      git(['add', '-A'], work);
      git(['commit', '-q', '-m', 'one'], work);
      git(['push', '-q', url(a.base), 'main'], work);
      // at once, through the other instance: every file changed, 50 deleted
      write(0, 400, 'gentwo');
      for (let i = 400; i < 450; i++) rmSync(join(work, `d${i % 7}`, `f${i}.txt`));
      git(['add', '-A'], work);
      git(['commit', '-q', '-m', 'two'], work);
      git(['push', '-q', url(b.base), 'main'], work);
      // and through the first again, beside a reindex in a third process
      write(300, 420, 'genthree');
      git(['add', '-A'], work);
      git(['commit', '-q', '-m', 'three'], work);
      const reindex = runWeft('cli', ['reindex', 'owner/big'], { ...storeEnv(store), LOG_LEVEL: 'silent' }, 120_000);
      git(['push', '-q', url(a.base), 'main'], work);
      const tip = git(['rev-parse', 'HEAD'], work).trim();
      const cli = await reindex;
      assert.equal(cli.code, 0, cli.stderr);

      const state = await eventually(
        'the index at the tip',
        async () => {
          const s = await api(b.base, 'GET', '/users/owner/repos/big/search-index', token);
          return s.body.state === 'ready' && s.body.commit_sha === tip ? s.body : undefined;
        },
        120_000,
      );
      assert.equal(state.files, 420);
      const count = async (base: string, q: string) =>
        (await api(base, 'GET', `/search/code?q=${encodeURIComponent(q)}&repo=owner/big`, token)).headers.get('x-total-count');
      assert.equal(await count(a.base, 'genonemark'), '0');
      assert.equal(await count(b.base, 'gentwomark'), '300');
      assert.equal(await count(a.base, 'genthreemark'), '120');
      // every file once, at the blob of the tip
      const tree = new Map(
        git(['ls-tree', '-r', tip], work)
          .trim()
          .split('\n')
          .map((l) => [l.slice(l.indexOf('\t') + 1), l.split(/\s+/)[2]!] as const),
      );
      const rows = await database.db.selectFrom('search_code_files').select(['path', 'blob_sha']).execute();
      assert.equal(rows.length, tree.size);
      for (const r of rows) assert.equal(r.blob_sha, tree.get(r.path), r.path);
      // no indexing job failed on another's rows (each waits for the lease instead)
      const failed = await database.db
        .selectFrom('jobs')
        .select(['id', 'last_error'])
        .where('kind', '=', 'search-index')
        .where('last_error', 'is not', null)
        .execute();
      assert.deepEqual(failed, []);
    });
  });
}
