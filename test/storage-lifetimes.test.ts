/**
 * Blob lifetimes and upload names (README "Storage lifetimes and crash recovery"): a refused
 * twin never deletes the bytes of an identical upload about to commit; removing an upload or
 * deleting a repo deletes the files nothing else references; crash leftovers (temporary files,
 * unreferenced blobs) are swept at start-up once old enough; bidirectional controls are refused
 * in upload names.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { FsBlobStore, type PutOptions, type StoredBlob } from '../src/blobs/store.ts';
import { DIALECTS, isErrorBody, startApp } from './helpers.ts';
import { eventually } from './server-process.ts';

const CAP = 256 * 1024;

/** The real store; a put can be made to wait, after its bytes are published, until released. */
class GatedStore extends FsBlobStore {
  gate: { reached: () => void; open: Promise<void> } | null = null;
  override async put(content: Readable, opts?: PutOptions): Promise<StoredBlob> {
    const stored = await super.put(content, opts);
    const gate = this.gate;
    if (gate) {
      this.gate = null;
      gate.reached();
      await gate.open;
    }
    return stored;
  }
}

/** A multipart/form-data body with the given parts. */
function multipart(parts: Array<{ name: string; filename?: string; data: string | Buffer }>, boundary = 'wEfTtWiNs') {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`;
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n\r\n`),
      Buffer.from(p.data),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

for (const dialect of DIALECTS) {
  describe(`blob lifetimes and upload names (${dialect})`, () => {
    let t: Awaited<ReturnType<typeof startApp>>;
    let store: GatedStore;
    let alice: { token: string; uuid: string; username: string };
    let n = 0;
    before(async () => {
      t = await startApp(dialect, {
        config: { maxUploadBytes: CAP },
        deps: {
          blobs: (store = new GatedStore(
            join(`${process.env.TMPDIR ?? '/tmp'}`, `weft-blobs-${randomBytes(6).toString('hex')}`),
          )),
        },
      });
      alice = await t.user(`alice${dialect}`);
    });
    after(async () => t.close());

    const newRepo = async (maxDisk?: number) => {
      const slug = `b${++n}`;
      const res = await t.req('POST', `/api/v1/users/${alice.username}/repos`, {
        token: alice.token,
        body: { name: slug, slug, visibility: 'private' },
      });
      assert.equal(res.status, 201, res.text);
      if (maxDisk !== undefined) {
        await t.deps.db.updateTable('repos').set({ max_disk_bytes: maxDisk }).where('uuid', '=', res.body.uuid).execute();
      }
      return { uuid: res.body.uuid as string, base: `/api/v1/users/${alice.username}/repos/${slug}` };
    };
    const raw = (base: string, data: Buffer | string, name = 'f.bin') =>
      t.req('POST', `${base}/uploads?filename=${encodeURIComponent(name)}`, {
        token: alice.token,
        rawBody: data,
        headers: { 'content-type': 'application/octet-stream' },
      });
    const usage = async (uuid: string) =>
      Number(
        (await t.deps.db.selectFrom('repos').select('disk_usage_bytes').where('uuid', '=', uuid).executeTakeFirstOrThrow())
          .disk_usage_bytes,
      );
    const onDisk = (hash: string) => existsSync(join(store.root, hash.slice(0, 2), hash.slice(2, 4), hash));
    const blobFiles = () =>
      existsSync(store.root)
        ? readdirSync(store.root, { recursive: true, withFileTypes: true }).filter(
            (d) => d.isFile() && /^[0-9a-f]{64}$/.test(d.name),
          ).length
        : 0;

    it('bidirectional control characters in upload names are 400, raw or multipart, and change nothing', async () => {
      const repo = await newRepo();
      for (const ch of ['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069']) {
        const res = await raw(repo.base, 'x', `invoice${ch}fdp.exe`);
        assert.equal(res.status, 400, JSON.stringify(ch));
        assert.ok(isErrorBody(res.body, 'invalid_request'));
        assert.match(res.body.detail, /bidirectional/);
        const mp = multipart([{ name: 'file', filename: `a${ch}b.txt`, data: 'y' }]);
        const res2 = await t.req('POST', `${repo.base}/uploads`, { token: alice.token, rawBody: mp.body, headers: mp.headers });
        assert.equal(res2.status, 400);
        assert.ok(isErrorBody(res2.body, 'invalid_request'));
      }
      assert.equal((await t.deps.db.selectFrom('uploads').select('uuid').where('repo_uuid', '=', repo.uuid).execute()).length, 0);
      assert.equal(await usage(repo.uuid), 0);
      const plain = await raw(repo.base, 'x', 'ordinary \u00e9t\u00e9 name.txt');
      assert.equal(plain.status, 201);
    });

    it('a refused twin never deletes the bytes of an identical upload about to commit', async () => {
      const repo = await newRepo();
      const twin = randomBytes(4096);
      let reached!: () => void;
      const atGate = new Promise<void>((r) => {
        reached = r;
      });
      let open!: () => void;
      store.gate = { reached, open: new Promise<void>((r) => (open = r)) };
      // A: its bytes are published, then it waits before its row is written.
      const a = raw(repo.base, twin, 'a.bin');
      await atGate;
      assert.ok(onDisk(sha(twin)));
      // B: the same bytes, then a part over the cap: 413, and its stored twin is discarded.
      const mp = multipart([
        { name: 'file', filename: 'twin.bin', data: twin },
        { name: 'file', filename: 'big.bin', data: Buffer.alloc(CAP + 1, 1) },
      ]);
      const b = await t.req('POST', `${repo.base}/uploads`, { token: alice.token, rawBody: mp.body, headers: mp.headers });
      assert.equal(b.status, 413, b.text);
      assert.ok(onDisk(sha(twin)), 'the twin in progress keeps the bytes');
      open();
      const done = await a;
      assert.equal(done.status, 201, done.text);
      const content = await t.app.inject({
        method: 'GET',
        url: `${repo.base}/uploads/${done.body.uuid}/content`,
        headers: { authorization: `Bearer ${alice.token}` },
      });
      assert.equal(content.statusCode, 200);
      assert.equal(sha(content.rawPayload), sha(twin), 'the acknowledged upload serves its bytes');
      assert.equal((await t.deps.db.selectFrom('blob_holds').select('id').execute()).length, 0, 'no hold left');
      assert.equal(await usage(repo.uuid), twin.length);
    });

    it('removing uploads and deleting a repo delete the files nothing else references, and give the quota back', async () => {
      const repo = await newRepo(96 * 1024);
      const before = blobFiles();
      // 20 uploads of 64 KiB, each removed, in a 96 KiB repo: all accepted, nothing left on disk.
      for (let i = 0; i < 20; i++) {
        const data = randomBytes(64 * 1024);
        const up = await raw(repo.base, data);
        assert.equal(up.status, 201, up.text);
        assert.ok(onDisk(up.body.sha256));
        const del = await t.req('DELETE', `${repo.base}/uploads/${up.body.uuid}`, { token: alice.token });
        assert.equal(del.status, 204);
        assert.equal(onDisk(up.body.sha256), false, "the removed upload's file is deleted");
      }
      assert.equal(await usage(repo.uuid), 0);
      assert.equal(blobFiles(), before);

      // Shared bytes stay while one active upload names them.
      const shared = randomBytes(1000);
      const one = await raw(repo.base, shared, 'one');
      const two = await raw(repo.base, shared, 'two');
      assert.equal((await t.req('DELETE', `${repo.base}/uploads/${one.body.uuid}`, { token: alice.token })).status, 204);
      assert.ok(onDisk(sha(shared)));
      const got = await t.req('GET', `${repo.base}/uploads/${two.body.uuid}/content`, { token: alice.token });
      assert.equal(got.status, 200);
      // Deleting the repo reclaims its blobs, but not bytes another repo's upload shares.
      const other = await newRepo();
      const elsewhere = randomBytes(500);
      assert.equal((await raw(other.base, elsewhere)).status, 201);
      assert.equal((await raw(repo.base, elsewhere)).status, 201);
      const own = randomBytes(700);
      assert.equal((await raw(repo.base, own)).status, 201);
      assert.equal((await t.req('DELETE', repo.base, { token: alice.token })).status, 204);
      assert.equal(onDisk(sha(shared)), false);
      assert.equal(onDisk(sha(own)), false);
      assert.ok(onDisk(sha(elsewhere)), 'still used by the other repo');
    });

    it('at start-up, temporary files older than the longest upload and old unreferenced blobs are swept; young ones stay', async () => {
      const tmp = join(store.root, 'tmp');
      mkdirSync(tmp, { recursive: true });
      const longAgo = new Date(Date.now() - t.deps.config.transferTimeoutMs - 3_600_000);
      const oldTmp = join(tmp, 'crashed-upload');
      const youngTmp = join(tmp, 'upload-in-progress');
      writeFileSync(oldTmp, Buffer.alloc(1000));
      writeFileSync(youngTmp, Buffer.alloc(1000));
      utimesSync(oldTmp, longAgo, longAgo);
      const orphan = randomBytes(300);
      const young = randomBytes(300);
      for (const data of [orphan, young]) {
        const h = sha(data);
        mkdirSync(join(store.root, h.slice(0, 2), h.slice(2, 4)), { recursive: true });
        writeFileSync(join(store.root, h.slice(0, 2), h.slice(2, 4), h), data);
      }
      const o = sha(orphan);
      utimesSync(join(store.root, o.slice(0, 2), o.slice(2, 4), o), longAgo, longAgo);
      // A second instance on the same store and blob directory sweeps as it starts.
      const second = await startApp(dialect, {
        store: t.store,
        config: { maxUploadBytes: CAP },
        deps: { blobs: new FsBlobStore(store.root) },
      });
      try {
        await eventually('swept', async () => (existsSync(oldTmp) || onDisk(o) ? undefined : true), 30_000);
        assert.ok(existsSync(youngTmp), 'an upload in progress is untouched');
        assert.ok(onDisk(sha(young)), 'a blob younger than the grace period is untouched');
      } finally {
        await second.close();
      }
    });
  });
}
