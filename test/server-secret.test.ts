/**
 * The server secret (src/secrets, docs/secrets.md): the key made once under DATA_DIR or taken from
 * SECRET_KEY, sealing bound to its purpose, signatures, and rotation through the CLI.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { resealAll } from '../src/secrets/rotate.ts';
import { KEY_FILE, PREVIOUS_KEY_FILE, SecretKeyError, ServerSecret } from '../src/secrets/server-secret.ts';
import { DIALECTS, freshStore, startApp } from './helpers.ts';
import { runWeft } from './server-process.ts';

const tempDir = () => mkdtempSync(join(tmpdir(), 'weft-secret-'));

describe('server secret', () => {
  it('is made once under DATA_DIR with mode 0600, and every load agrees', () => {
    const dir = tempDir();
    try {
      const loads = Array.from({ length: 4 }, () => ServerSecret.load({ secretKey: null, dataDir: dir }));
      assert.equal(new Set(loads.map((s) => s.current.id)).size, 1);
      assert.equal(statSync(join(dir, KEY_FILE)).mode & 0o777, 0o600);
      const sealed = loads[0]!.seal('test', 'hunter2');
      assert.equal(loads[3]!.open('test', sealed), 'hunter2');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('SECRET_KEY wins over the file, and a short one is refused with its length', () => {
    const dir = tempDir();
    try {
      const a = ServerSecret.load({ secretKey: 'k'.repeat(40), dataDir: dir });
      const b = ServerSecret.load({ secretKey: 'k'.repeat(40), dataDir: tempDir() });
      assert.equal(a.current.id, b.current.id);
      assert.equal(a.origin, 'SECRET_KEY');
      assert.throws(
        () => ServerSecret.load({ secretKey: 'short', dataDir: dir }),
        /SECRET_KEY must be at least 32 characters \(got 5\)/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a sealed value opens only for its purpose, unaltered, with a known key', () => {
    const s = ServerSecret.fromText('a'.repeat(32));
    const sealed = s.seal('ci-secret', 'p@ss wörd');
    assert.match(sealed, /^s1\.[0-9a-f]{8}\.[A-Za-z0-9_-]+$/);
    assert.ok(!sealed.includes('p@ss'));
    assert.notEqual(s.seal('ci-secret', 'p@ss wörd'), sealed, 'a fresh nonce each time');
    assert.equal(s.open('ci-secret', sealed), 'p@ss wörd');
    assert.throws(() => s.open('mirror-credential', sealed), SecretKeyError);
    const parts = sealed.split('.');
    const raw = Buffer.from(parts[2]!, 'base64url');
    raw[14] = raw[14]! ^ 1;
    assert.throws(() => s.open('ci-secret', `${parts[0]}.${parts[1]}.${raw.toString('base64url')}`), /does not open/);
    assert.throws(() => ServerSecret.fromText('b'.repeat(32)).open('ci-secret', sealed), /unknown key/);
    assert.throws(() => s.open('ci-secret', 'plain text'), /not a sealed value/);
  });

  it('signatures verify for their purpose and message only, with the current or a previous key', () => {
    const old = ServerSecret.fromText('o'.repeat(32));
    const sig = old.sign('reply', 'thread:1:user:2');
    assert.ok(old.verify('reply', 'thread:1:user:2', sig));
    assert.ok(!old.verify('reply', 'thread:1:user:3', sig));
    assert.ok(!old.verify('unsubscribe', 'thread:1:user:2', sig));
    assert.ok(!old.verify('reply', 'thread:1:user:2', 'AAAA'));
    const rotated = new ServerSecret(ServerSecret.fromText('n'.repeat(32)).current, [old.current], 'text');
    assert.ok(rotated.verify('reply', 'thread:1:user:2', sig));
  });

  for (const dialect of DIALECTS) {
    it(`re-seals a sealed column with the current key, row by row (${dialect})`, async () => {
      const t = await startApp(dialect);
      try {
        const db = t.deps.db;
        await sql`create table sealed_probe (id integer primary key, v text)`.execute(db);
        const old = ServerSecret.fromText('o'.repeat(32));
        await sql`insert into sealed_probe (id, v) values (1, ${old.seal('probe', 'one')}), (2, ${null}), (3, ${old.seal('probe', 'three')})`.execute(
          db,
        );
        const next = new ServerSecret(ServerSecret.fromText('n'.repeat(32)).current, [old.current], 'text');
        const columns = [{ table: 'sealed_probe', key: 'id', column: 'v', purpose: 'probe' }];
        assert.deepEqual(await resealAll({ ...t.deps, secret: next }, columns), { resealed: 2, current: 0 });
        assert.deepEqual(await resealAll({ ...t.deps, secret: next }, columns), { resealed: 0, current: 2 });
        const rows = (
          await sql<{ id: number; v: string }>`select id, v from sealed_probe where v is not null order by id`.execute(db)
        ).rows;
        assert.deepEqual(
          rows.map((r) => ServerSecret.fromText('n'.repeat(32)).open('probe', r.v)),
          ['one', 'three'],
        );
      } finally {
        await t.close();
      }
    });
  }

  it('weft rotate-secret-key makes a new key, keeps the old one until --forget-previous', async () => {
    const store = await freshStore('sqlite');
    const env = { DATA_DIR: store.dataDir, LOG_LEVEL: 'silent' };
    try {
      assert.equal((await runWeft('cli', ['migrate'], env)).code, 0);
      const first = readFileSync(join(store.dataDir, KEY_FILE), 'utf8');
      const rotated = await runWeft('cli', ['rotate-secret-key'], env);
      assert.equal(rotated.code, 0, rotated.stderr);
      assert.match(rotated.stderr, /re-sealed 0 stored secrets/);
      assert.match(rotated.stderr, /--forget-previous/);
      const second = readFileSync(join(store.dataDir, KEY_FILE), 'utf8');
      assert.notEqual(second, first);
      assert.equal(readFileSync(join(store.dataDir, PREVIOUS_KEY_FILE), 'utf8'), first);
      const forgot = await runWeft('cli', ['rotate-secret-key', '--forget-previous'], env);
      assert.equal(forgot.code, 0, forgot.stderr);
      assert.equal(readFileSync(join(store.dataDir, KEY_FILE), 'utf8'), second);
      assert.equal(readFileSync(join(store.dataDir, PREVIOUS_KEY_FILE), 'utf8'), '');
      writeFileSync(join(store.dataDir, KEY_FILE), '');
      const empty = await runWeft('cli', ['list-users'], env);
      assert.notEqual(empty.code, 0);
      assert.match(empty.stderr, /secret\.key is empty/);
    } finally {
      await store.drop();
    }
  });
});
