/**
 * A full SQLite database (README "Storage lifetimes and crash recovery"): every write answers 507
 * insufficient_storage with a clear detail, nothing is half-written, and writes work again once
 * there is room, without a restart. Two ways to fill it: SQLite's `max_page_count` (no root
 * needed; writes that need new pages), and a small tmpfs holding DATA_DIR and the database (root
 * only; skipped where mounting is not allowed), where every write needs disk.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { snapshot } from './foundation-helpers.ts';
import { isErrorBody, startApp, type TestApp } from './helpers.ts';

type Write = [method: string, path: string, body: unknown];

const count = async (t: TestApp, table: 'threads' | 'replies' | 'repos' | 'teams' | 'ssh_keys') =>
  Number(
    (
      await t.deps.db
        .selectFrom(table)
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

async function state(t: TestApp) {
  return {
    ...(await snapshot(t)),
    threads: await count(t, 'threads'),
    replies: await count(t, 'replies'),
    repos: await count(t, 'repos'),
    teams: await count(t, 'teams'),
    keys: await count(t, 'ssh_keys'),
    about: (await t.deps.db.selectFrom('repos').select('about').where('slug', '=', 'r').executeTakeFirst())?.about,
  };
}

async function refusedThenFine(t: TestApp, token: string, writes: Write[], fill: () => void, makeRoom: () => void) {
  fill();
  const before = await state(t);
  for (const [method, path, body] of writes) {
    const res = await t.req(method, path, { token, body });
    assert.equal(res.status, 507, `${method} ${path}: ${res.status} ${res.text}`);
    assert.ok(isErrorBody(res.body, 'insufficient_storage'), res.text);
    assert.match(res.body.detail, /no storage left/);
  }
  assert.deepEqual(await state(t), before, 'nothing was half-written');
  makeRoom();
  for (const [method, path, body] of writes) {
    const res = await t.req(method, path, { token, body });
    assert.ok(res.status < 300, `once there is room, ${method} ${path}: ${res.status} ${res.text}`);
  }
}

async function setUp(t: TestApp) {
  const alice = await t.user('alice');
  const repo = await t.req('POST', '/api/v1/users/alice/repos', {
    token: alice.token,
    body: { name: 'r', slug: 'r', visibility: 'public' },
  });
  assert.equal(repo.status, 201, repo.text);
  const thread = await t.req('POST', '/api/v1/users/alice/repos/r/threads', {
    token: alice.token,
    body: { title: 't', body: 'b' },
  });
  assert.equal(thread.status, 201, thread.text);
  return { alice, thread: thread.body.number as number };
}

describe('a full SQLite database (max_page_count) is 507 insufficient_storage, then works again', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp('sqlite');
  });
  after(() => t.close());

  it('writes that need new pages: 507 with a clear detail, nothing changed; the same writes succeed once there is room', async () => {
    const { alice, thread } = await setUp(t);
    const sqlite = t.deps.database.sqlite!;
    const big = (c: string) => c.repeat(60_000); // more than the free room of the file's pages
    await refusedThenFine(
      t,
      alice.token,
      [
        ['POST', '/api/v1/users/alice/repos/r/threads', { title: 'full', body: big('a') }],
        ['POST', `/api/v1/users/alice/repos/r/threads/${thread}/replies`, { body: big('b') }],
        ['PUT', '/api/v1/users/alice/repos/r', { about: big('c') }],
      ],
      () => sqlite.pragma(`max_page_count = ${Number(sqlite.pragma('page_count', { simple: true }))}`),
      () => sqlite.pragma('max_page_count = 1073741823'),
    );
  });
});

function tryMount(dir: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=6m,mode=0700', 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const mountPoint = mkdtempSync(join(tmpdir(), 'weft-sqlite-full-'));
const mounted = tryMount(mountPoint);
describe(
  'a full disk under the SQLite database (tmpfs) is 507 insufficient_storage, then works again',
  { skip: mounted ? false : 'cannot mount a tmpfs here (needs root)' },
  () => {
    let t: TestApp;
    before(async () => {
      t = await startApp('sqlite', { store: { url: null, dataDir: mountPoint, drop: async () => undefined } });
    });
    after(async () => {
      await t?.close();
      execFileSync('umount', [mountPoint]);
      rmSync(mountPoint, { recursive: true, force: true });
    });

    it('small writes too: 507, nothing changed, no stray files; fine once space is freed, without a restart', async () => {
      const { alice } = await setUp(t);
      const filler = join(mountPoint, 'filler');
      const entries = () =>
        readdirSync(mountPoint)
          .filter((f) => f !== 'filler')
          .sort();
      let listed: string[] = [];
      await refusedThenFine(
        t,
        alice.token,
        [
          ['PUT', '/api/v1/users/alice', { display_name: 'Alice Full' }],
          ['POST', '/api/v1/teams', { slug: 'fullteam', name: 'Full team' }],
          ['POST', '/api/v1/users/alice/repos', { name: 'r2', slug: 'r2', visibility: 'public' }],
          ['POST', '/api/v1/users/alice/repos/r/threads', { title: 'full', body: 'small' }],
        ],
        () => {
          // an empty WAL, so every write needs new disk blocks; then no block is left
          t.deps.database.sqlite!.pragma('wal_checkpoint(TRUNCATE)');
          try {
            writeFileSync(filler, Buffer.alloc(16 * 1024 * 1024));
          } catch (err) {
            assert.equal((err as { code?: string }).code, 'ENOSPC');
          }
          listed = entries();
        },
        () => {
          assert.deepEqual(entries(), listed, 'no file was left behind');
          rmSync(filler);
        },
      );
    });
  },
);
if (!mounted) rmSync(mountPoint, { recursive: true, force: true });
