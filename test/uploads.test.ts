import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { buildWorld, eventsOf, setRepoFlags, type World } from './pulls-fixtures.ts';
import { DIALECTS, type TestApp, isErrorBody, startApp } from './helpers.ts';

const CAP = 64 * 1024;
const UPLOAD_KEYS = [
  'content_type',
  'created_at',
  'created_by_username',
  'filename',
  'group_uuid',
  'removed_at',
  'repo_uuid',
  'sha256',
  'size_bytes',
  'status',
  'uuid',
];

/** A multipart/form-data body with the given parts. */
export function multipart(
  parts: Array<{ name: string; filename?: string; type?: string; data: string | Buffer }>,
  boundary = 'wEfTbOuNdArY',
) {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`;
    const head = `--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`;
    chunks.push(Buffer.from(head), Buffer.from(p.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

const sha = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** Every blob file and temporary file under the data dir's blob store. */
function blobFiles(t: TestApp): string[] {
  const root = join(t.deps.config.dataDir, 'blobs');
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name));
}

for (const dialect of DIALECTS) {
  describe(`uploads and upload groups (${dialect})`, () => {
    let t: TestApp;
    before(async () => {
      t = await startApp(dialect, { config: { maxUploadBytes: CAP } });
    });
    after(async () => t.close());

    const usage = async (uuid: string) =>
      Number(
        (await t.deps.db.selectFrom('repos').select('disk_usage_bytes').where('uuid', '=', uuid).executeTakeFirstOrThrow())
          .disk_usage_bytes,
      );
    const uploadRows = async (uuid: string) =>
      (await t.deps.db.selectFrom('uploads').select('uuid').where('repo_uuid', '=', uuid).execute()).length;

    for (const form of ['team', 'user'] as const) {
      describe(`${form} form`, () => {
        let w: World;
        before(async () => {
          w = await buildWorld(t);
        });
        const base = () => (form === 'team' ? w.teamPrivate.base : w.userPrivate.base);
        const repoUuid = () => (form === 'team' ? w.teamPrivate.uuid : w.userPrivate.uuid);
        const writer = () => (form === 'team' ? w.member : w.solo);
        const raw = (
          data: string | Buffer,
          name = 'notes.txt',
          type = 'text/plain',
          token: string | null = writer().token,
          extra = '',
        ) =>
          t.req('POST', `${base()}/uploads?filename=${encodeURIComponent(name)}${extra}`, {
            token,
            rawBody: data,
            headers: { 'content-type': type },
          });

        it('raw-body upload: 201 record, content-addressed, counted in disk_usage_bytes, upload-created event', async () => {
          const before = await usage(repoUuid());
          const res = await raw('hello upload', 'notes.txt', 'text/plain; charset=utf-8');
          assert.equal(res.status, 201, res.text);
          const u = res.body;
          assert.deepEqual(Object.keys(u).sort(), UPLOAD_KEYS);
          assert.equal(u.filename, 'notes.txt');
          assert.equal(u.content_type, 'text/plain; charset=utf-8');
          assert.equal(u.size_bytes, 12);
          assert.equal(u.sha256, sha('hello upload'));
          assert.equal(u.status, 'active');
          assert.equal(u.created_by_username, writer().username);
          assert.equal(await usage(repoUuid()), before + 12);
          const again = await raw('hello upload', 'copy.txt');
          assert.equal(again.body.sha256, u.sha256);
          assert.notEqual(again.body.uuid, u.uuid);
          assert.equal(blobFiles(t).filter((f) => f.endsWith(u.sha256)).length, 1, 'stored once');
          assert.equal(await usage(repoUuid()), before + 24);
          const got = await t.req('GET', `${base()}/uploads/${u.uuid}`, { token: writer().token });
          assert.deepEqual(got.body, u);
          const list = await t.req('GET', `${base()}/uploads?per_page=100`, { token: writer().token });
          assert.ok(list.body.results.some((x: { uuid: string }) => x.uuid === u.uuid));
          const ev = await eventsOf(t, `repo:${repoUuid()}`);
          assert.ok(
            ev.body.results.some(
              (e: { kind: string; payload: { upload_uuid: string } }) =>
                e.kind === 'upload-created' && e.payload.upload_uuid === u.uuid,
            ),
          );
        });

        it('download: headers, ETag and If-None-Match, Range, RFC 6266 names', async () => {
          const data = 'abcdefghijklmnopqrstuvwxyz';
          const u = (await raw(data, 'résumé "final".txt', 'text/html')).body;
          assert.equal(u.filename, 'résumé "final".txt');
          const url = `${base()}/uploads/${u.uuid}/content`;
          const full = await t.req('GET', url, { token: writer().token });
          assert.equal(full.status, 200);
          assert.equal(full.text, data);
          assert.equal(full.headers['content-type'], 'text/html');
          assert.equal(full.headers['content-length'], String(data.length));
          assert.equal(full.headers.etag, `"${u.sha256}"`);
          assert.equal(full.headers['x-content-type-options'], 'nosniff');
          assert.equal(full.headers['accept-ranges'], 'bytes');
          assert.equal(
            full.headers['content-disposition'],
            `attachment; filename="r_sum_ _final_.txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20%22final%22.txt`,
          );
          const cached = await t.req('GET', url, { token: writer().token, headers: { 'if-none-match': `"x", "${u.sha256}"` } });
          assert.equal(cached.status, 304);
          assert.equal(cached.text, '');
          for (const [range, body, cr] of [
            ['bytes=0-4', 'abcde', 'bytes 0-4/26'],
            ['bytes=20-', 'uvwxyz', 'bytes 20-25/26'],
            ['bytes=-3', 'xyz', 'bytes 23-25/26'],
            ['bytes=24-100', 'yz', 'bytes 24-25/26'],
          ]) {
            const part = await t.req('GET', url, { token: writer().token, headers: { range: range! } });
            assert.equal(part.status, 206, range);
            assert.equal(part.text, body);
            assert.equal(part.headers['content-range'], cr);
            assert.equal(part.headers['content-length'], String(body!.length));
          }
          const bad = await t.req('GET', url, { token: writer().token, headers: { range: 'bytes=26-' } });
          assert.equal(bad.status, 416);
          assert.equal(bad.headers['content-range'], 'bytes */26');
          const multi = await t.req('GET', url, { token: writer().token, headers: { range: 'bytes=0-1,3-4' } });
          assert.equal(multi.status, 200);
          const plain = (await raw('x', 'plain.txt')).body;
          const p = await t.req('GET', `${base()}/uploads/${plain.uuid}/content`, { token: writer().token });
          assert.equal(p.headers['content-disposition'], 'attachment; filename="plain.txt"');
        });

        it('filenames are sanitised; a missing or empty one is 400', async () => {
          for (const [given, stored] of [
            ['../../etc/passwd', 'passwd'],
            ['C:\\Windows\\evil.exe', 'evil.exe'],
            ['a\u0001b\u007fc.txt', 'abc.txt'],
            ['  spaced.txt  ', 'spaced.txt'],
          ]) {
            const res = await raw('x', given);
            assert.equal(res.status, 201, given);
            assert.equal(res.body.filename, stored);
          }
          const rows = await uploadRows(repoUuid());
          for (const name of ['..', '.', 'dir/', '\u0001\u0002', '   ', 'x'.repeat(256)]) {
            const res = await raw('x', name);
            assert.equal(res.status, 400, JSON.stringify(name));
            assert.ok(isErrorBody(res.body, 'invalid_request'));
          }
          const none = await t.req('POST', `${base()}/uploads`, {
            token: writer().token,
            rawBody: 'x',
            headers: { 'content-type': 'text/plain' },
          });
          assert.equal(none.status, 400);
          assert.equal(await uploadRows(repoUuid()), rows);
        });

        it('multipart: one or more file parts; 201 {uploads}', async () => {
          const mp = multipart([
            { name: 'file', filename: 'a.txt', type: 'text/plain', data: 'AAA' },
            { name: 'file', filename: 'b.png', type: 'image/png', data: Buffer.from([0x89, 0x50, 0x4e, 0x47]) },
          ]);
          const res = await t.req('POST', `${base()}/uploads`, { token: writer().token, rawBody: mp.body, headers: mp.headers });
          assert.equal(res.status, 201, res.text);
          assert.deepEqual(Object.keys(res.body), ['uploads']);
          assert.deepEqual(
            res.body.uploads.map((u: { filename: string; content_type: string; size_bytes: number }) => [
              u.filename,
              u.content_type,
              u.size_bytes,
            ]),
            [
              ['a.txt', 'text/plain', 3],
              ['b.png', 'image/png', 4],
            ],
          );
          const content = await t.req('GET', `${base()}/uploads/${res.body.uploads[0].uuid}/content`, { token: writer().token });
          assert.equal(content.text, 'AAA');
        });

        it('bad multipart bodies are 400 and leave no row, no file and no quota used', async () => {
          const rows = await uploadRows(repoUuid());
          const files = blobFiles(t).length;
          const used = await usage(repoUuid());
          const good = multipart([{ name: 'file', filename: 'a.txt', data: 'unique-' + Math.random() }]);
          for (const [label, body] of [
            ['no file part', multipart([{ name: 'note', data: 'hi' }]).body],
            ['empty form', multipart([]).body],
            ['wrong field name', multipart([{ name: 'upload', filename: 'a.txt', data: 'x' }]).body],
            [
              'file then a field',
              multipart([
                { name: 'file', filename: 'a.txt', data: 'zz' + Math.random() },
                { name: 'x', data: 'y' },
              ]).body,
            ],
            ['truncated', good.body.subarray(0, good.body.length - 20)],
            ['not multipart at all', Buffer.from('garbage')],
          ] as const) {
            const res = await t.req('POST', `${base()}/uploads`, { token: writer().token, rawBody: body, headers: good.headers });
            assert.equal(res.status, 400, `${label}: ${res.text}`);
            assert.ok(isErrorBody(res.body, 'invalid_request'));
          }
          const filenameToo = await t.req('POST', `${base()}/uploads?filename=a.txt`, {
            token: writer().token,
            rawBody: good.body,
            headers: good.headers,
          });
          assert.equal(filenameToo.status, 400);
          assert.equal(await uploadRows(repoUuid()), rows);
          assert.equal(blobFiles(t).length, files, blobFiles(t).join('\n'));
          assert.equal(await usage(repoUuid()), used);
        });

        it('the per-upload cap is 413 payload_too_large and the repo quota 413 quota_exceeded; nothing is stored', async () => {
          const rows = await uploadRows(repoUuid());
          const files = blobFiles(t).length;
          const used = await usage(repoUuid());
          const over = Buffer.alloc(CAP + 1, 7);
          const big = await raw(over, 'big.bin', 'application/octet-stream');
          assert.equal(big.status, 413);
          assert.ok(isErrorBody(big.body, 'payload_too_large'));
          const exact = await raw(Buffer.alloc(CAP, form === 'team' ? 9 : 10), 'exact.bin');
          assert.equal(exact.status, 201);
          const mp = multipart([
            { name: 'file', filename: 'ok.txt', data: 'small ' + Math.random() },
            { name: 'file', filename: 'big.bin', data: over },
          ]);
          const mpBig = await t.req('POST', `${base()}/uploads`, {
            token: writer().token,
            rawBody: mp.body,
            headers: mp.headers,
          });
          assert.equal(mpBig.status, 413);
          assert.ok(isErrorBody(mpBig.body, 'payload_too_large'));
          assert.equal(await uploadRows(repoUuid()), rows + 1);
          assert.equal(blobFiles(t).length, files + 1);
          assert.equal(await usage(repoUuid()), used + CAP);
          // quota: room for 100 more bytes
          await t.deps.db
            .updateTable('repos')
            .set({ max_disk_bytes: used + CAP + 100 })
            .where('uuid', '=', repoUuid())
            .execute();
          try {
            const q = await raw(Buffer.alloc(101, 1), 'q.bin');
            assert.equal(q.status, 413);
            assert.ok(isErrorBody(q.body, 'quota_exceeded'));
            const mpq = multipart([
              { name: 'file', filename: 'a', data: Buffer.alloc(60, 2) },
              { name: 'file', filename: 'b', data: Buffer.alloc(60, 3) },
            ]);
            const q2 = await t.req('POST', `${base()}/uploads`, {
              token: writer().token,
              rawBody: mpq.body,
              headers: mpq.headers,
            });
            assert.equal(q2.status, 413);
            assert.ok(isErrorBody(q2.body, 'quota_exceeded'));
            assert.equal(await uploadRows(repoUuid()), rows + 1);
            assert.equal(blobFiles(t).length, files + 1);
            const fits = await raw(Buffer.alloc(100, 4), 'fits.bin');
            assert.equal(fits.status, 201);
            // removing an upload gives its bytes back
            assert.equal((await t.req('DELETE', `${base()}/uploads/${fits.body.uuid}`, { token: writer().token })).status, 204);
            assert.equal(await usage(repoUuid()), used + CAP);
          } finally {
            await t.deps.db
              .updateTable('repos')
              .set({ max_disk_bytes: 1024 ** 3 })
              .where('uuid', '=', repoUuid())
              .execute();
          }
        });

        it('removal: status removed, content 410, record still readable, out of the list; uploader or maintain level', async () => {
          const u = (await raw('to remove ' + Math.random(), 'r.txt')).body;
          if (form === 'team') {
            const byReader = await t.req('DELETE', `${base()}/uploads/${u.uuid}`, { token: w.reader.token });
            assert.equal(byReader.status, 403);
          }
          assert.equal((await t.req('DELETE', `${base()}/uploads/${u.uuid}`, { token: w.outsider.token })).status, 404);
          assert.equal((await t.req('DELETE', `${base()}/uploads/${u.uuid}`, { token: writer().token })).status, 204);
          assert.equal((await t.req('DELETE', `${base()}/uploads/${u.uuid}`, { token: writer().token })).status, 204);
          const rec = await t.req('GET', `${base()}/uploads/${u.uuid}`, { token: writer().token });
          assert.equal(rec.body.status, 'removed');
          assert.ok(rec.body.removed_at);
          const content = await t.req('GET', `${base()}/uploads/${u.uuid}/content`, { token: writer().token });
          assert.equal(content.status, 410);
          assert.ok(isErrorBody(content.body, 'gone'));
          const list = await t.req('GET', `${base()}/uploads?per_page=100`, { token: writer().token });
          assert.ok(!list.body.results.some((x: { uuid: string }) => x.uuid === u.uuid));
        });

        it('access: write access uploads; readers 403, outsiders 404, archived 403 repo_archived', async () => {
          const u = (await raw('access ' + Math.random(), 'a.txt')).body;
          if (form === 'team') {
            const res = await raw('x', 'x.txt', 'text/plain', w.reader.token);
            assert.equal(res.status, 403);
            assert.equal((await t.req('GET', `${base()}/uploads/${u.uuid}/content`, { token: w.reader.token })).status, 200);
            assert.equal((await t.req('POST', `${base()}/upload-groups`, { token: w.reader.token, body: {} })).status, 403);
          }
          for (const [method, path] of [
            ['GET', `${base()}/uploads`],
            ['GET', `${base()}/uploads/${u.uuid}`],
            ['GET', `${base()}/uploads/${u.uuid}/content`],
            ['DELETE', `${base()}/uploads/${u.uuid}`],
          ] as const) {
            assert.equal((await t.req(method, path, { token: w.outsider.token })).status, 404, `${method} ${path}`);
          }
          assert.equal((await raw('x', 'x.txt', 'text/plain', w.outsider.token)).status, 404);
          assert.equal((await raw('x', 'x.txt', 'text/plain', null)).status, 401);
          await setRepoFlags(t, repoUuid(), { is_archived: 1 });
          try {
            const res = await raw('x', 'x.txt');
            assert.equal(res.status, 403);
            assert.ok(isErrorBody(res.body, 'repo_archived'));
          } finally {
            await setRepoFlags(t, repoUuid(), { is_archived: 0 });
          }
        });

        it('upload groups: create, join with group_uuid, active members, removal leaves the group, delete', async () => {
          const g = await t.req('POST', `${base()}/upload-groups`, { token: writer().token, body: { name: 'Screenshots' } });
          assert.equal(g.status, 201, g.text);
          assert.deepEqual(Object.keys(g.body).sort(), [
            'created_at',
            'created_by_username',
            'name',
            'repo_uuid',
            'uploads',
            'uuid',
          ]);
          assert.deepEqual(g.body.uploads, []);
          const a = (await raw('g1 ' + Math.random(), 'one.txt', 'text/plain', writer().token, `&group_uuid=${g.body.uuid}`))
            .body;
          const mp = multipart([{ name: 'file', filename: 'two.txt', data: 'g2 ' + Math.random() }]);
          const b = await t.req('POST', `${base()}/uploads?group_uuid=${g.body.uuid}`, {
            token: writer().token,
            rawBody: mp.body,
            headers: mp.headers,
          });
          assert.equal(b.status, 201);
          assert.equal(a.group_uuid, g.body.uuid);
          let got = await t.req('GET', `${base()}/upload-groups/${g.body.uuid}`, { token: writer().token });
          assert.deepEqual(
            got.body.uploads.map((u: { filename: string }) => u.filename),
            ['one.txt', 'two.txt'],
          );
          await t.req('DELETE', `${base()}/uploads/${a.uuid}`, { token: writer().token });
          got = await t.req('GET', `${base()}/upload-groups/${g.body.uuid}`, { token: writer().token });
          assert.deepEqual(
            got.body.uploads.map((u: { filename: string }) => u.filename),
            ['two.txt'],
          );
          // another repo's group is 404, and so is an unknown one
          const otherBase = form === 'team' ? w.teamPublic.base : w.userPublic.base;
          const other = await t.req('POST', `${otherBase}/upload-groups`, { token: writer().token, body: {} });
          assert.equal(other.status, 201);
          assert.equal((await raw('x', 'x.txt', 'text/plain', writer().token, `&group_uuid=${other.body.uuid}`)).status, 404);
          assert.equal((await t.req('GET', `${base()}/upload-groups/${other.body.uuid}`, { token: writer().token })).status, 404);
          assert.equal(
            (await t.req('POST', `${base()}/upload-groups`, { token: writer().token, body: { name: 'x', extra: 1 } })).status,
            400,
          );
          assert.equal(
            (await t.req('POST', `${base()}/upload-groups`, { token: writer().token, body: { name: '' } })).status,
            400,
          );
          assert.equal((await t.req('DELETE', `${base()}/upload-groups/${g.body.uuid}`, { token: writer().token })).status, 204);
          assert.equal((await t.req('GET', `${base()}/upload-groups/${g.body.uuid}`, { token: writer().token })).status, 404);
          assert.equal((await t.req('DELETE', `${base()}/upload-groups/${g.body.uuid}`, { token: writer().token })).status, 404);
          assert.equal(
            (await t.req('GET', `${base()}/uploads/${a.uuid}`, { token: writer().token })).body.group_uuid,
            g.body.uuid,
          );
        });
      });
    }

    it('a client that disconnects mid-upload leaves no row, no file and no quota used', async () => {
      const w = await buildWorld(t);
      const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
      try {
        const rows = await uploadRows(w.teamPrivate.uuid);
        const files = blobFiles(t).length;
        const port = (t.app.server.address() as AddressInfo).port;
        await new Promise<void>((resolve) => {
          const req = httpRequest({
            host: '127.0.0.1',
            port,
            method: 'POST',
            path: `${w.teamPrivate.base}/uploads?filename=cut.bin`,
            headers: {
              authorization: `Bearer ${w.member.token}`,
              'content-type': 'application/octet-stream',
              'content-length': '50000',
            },
          });
          req.on('error', () => resolve());
          req.on('response', () => resolve());
          req.write(Buffer.alloc(20_000, 1));
          setTimeout(() => {
            req.destroy();
            resolve();
          }, 200);
        });
        await sleep(300);
        assert.equal(await uploadRows(w.teamPrivate.uuid), rows);
        assert.equal(blobFiles(t).length, files, 'no partial or temporary file');
        assert.equal(await usage(w.teamPrivate.uuid), 0);
        assert.ok(address);
      } finally {
        await t.app.server.close();
      }
    });
  });
}
