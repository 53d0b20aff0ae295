import { type Readable, Transform } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AppError, badRequest } from '../errors.ts';
import { etagMatches, parseRange } from '../http/ranges.ts';
import { lookupPath, pathNotFound, refNotFound, resolveRefAndPath } from '../git/resolve.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import { MAX_POINTER_BYTES, parsePointer } from '../lfs/pointer.ts';
import { heldObject } from '../lfs/service.ts';
import { commitOf, immutableCache, MAX_INLINE_BYTES, openRepo } from './service.ts';

/**
 * Raw files and archives: bytes from the repository, streamed. Nothing from a repo runs in a
 * browser on the API's origin: `X-Content-Type-Options: nosniff`, `Content-Security-Policy:
 * sandbox`, and only plain text and four image types are served as themselves.
 */

const IMAGE_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
};
/** How much of a file decides text or binary (git's own heuristic looks at 8000 bytes). */
const SNIFF_BYTES = 8000;

/** The type a raw file is served as: an image by extension, text when its start is NUL-free UTF-8, else octet-stream. */
export function rawContentType(path: string, head: Buffer): string {
  const ext = path.slice(path.lastIndexOf('.') + 1).toLowerCase();
  if (path.includes('.') && IMAGE_TYPES[ext]) return IMAGE_TYPES[ext];
  const sample = head.subarray(0, SNIFF_BYTES);
  if (sample.includes(0)) return 'application/octet-stream';
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(sample, { stream: sample.length < head.length });
    return 'text/plain; charset=utf-8';
  } catch {
    return 'application/octet-stream';
  }
}

function safeHeaders(reply: FastifyReply): void {
  reply.header('x-content-type-options', 'nosniff');
  reply.header('content-security-policy', 'sandbox');
}

/** GET {repo}/raw/{ref}/{path}: the file's bytes (ETag = blob sha, 304, one Range → 206). */
export async function serveRaw(
  deps: Deps,
  viewer: Viewer,
  repoRef: RepoAt,
  refAndPath: string,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const o = await openRepo(deps, viewer, repoRef);
  if (!o.dir) throw refNotFound(refAndPath.split('/')[0] ?? '');
  const { objects, limits } = o.readers;
  const found = await resolveRefAndPath(objects, o.dir, refAndPath);
  if (!found) throw new AppError(404, 'not_found', 'No branch, tag or commit begins this path.');
  if (found.path === '') throw badRequest('Raw takes {ref}/{path} of a file.');
  const entry = await lookupPath(objects, o.dir, found.ref.sha, found.path);
  if (!entry || (entry.type !== 'file' && entry.type !== 'symlink')) throw pathNotFound(found.path);
  const info = (await objects.info(o.dir, [entry.oid]))[0];
  if (!info) throw pathNotFound(found.path);
  let size = info.size;
  let etag = `"${entry.oid}"`;
  // A Git LFS pointer whose object the repo holds: the object's bytes instead (docs/lfs.md)
  let lfsOid: string | null = null;
  if (entry.type === 'file' && size <= MAX_POINTER_BYTES) {
    const small = await objects.one(o.dir, entry.oid);
    const pointer = small ? parsePointer(small.data) : null;
    const held = pointer ? await heldObject(deps.db, o.repo.uuid, pointer.oid) : null;
    if (pointer && held !== null) {
      lfsOid = pointer.oid;
      size = held;
      etag = `"${pointer.oid}"`;
    }
  }
  safeHeaders(reply);
  reply.header('etag', etag);
  reply.header('accept-ranges', 'bytes');
  reply.header(
    'cache-control',
    immutableCache(o.repo, found.ref.kind === 'sha' ? found.ref.name : undefined) ?? 'private, no-cache',
  );
  if (etagMatches(request.headers['if-none-match'], etag)) return reply.status(304).send();
  const range = parseRange(request.headers.range, size);
  if (range === 'bad') {
    reply.header('content-range', `bytes */${size}`);
    throw new AppError(416, 'range_not_satisfiable', `The range is outside the file (${size} bytes).`);
  }
  const start = range ? range.start : 0;
  const end = range ? range.end : size - 1;
  if (range) {
    reply.status(206);
    reply.header('content-range', `bytes ${start}-${end}/${size}`);
  } else reply.status(200);
  reply.header('content-length', Math.max(0, end - start + 1));

  if (lfsOid) {
    if (size === 0) {
      reply.header('content-type', rawContentType(found.path, Buffer.alloc(0)));
      return reply.send(Buffer.alloc(0));
    }
    const head = await readHead(deps.blobs.get(lfsOid, { start: 0, end: Math.min(size, SNIFF_BYTES) - 1 }));
    reply.header('content-type', rawContentType(found.path, head));
    const stream = deps.blobs.get(lfsOid, { start, end });
    reply.raw.on('close', () => stream.destroy());
    return reply.send(stream);
  }
  if (size <= MAX_INLINE_BYTES) {
    const blob = await objects.one(o.dir, entry.oid);
    if (!blob) throw pathNotFound(found.path);
    reply.header('content-type', rawContentType(found.path, blob.data));
    return reply.send(blob.data.subarray(start, end + 1));
  }
  // A large file: its own `git cat-file blob`, streamed (the first bytes decide the type).
  const { stdout, abort } = await limits.spawn(o.dir, ['cat-file', 'blob', entry.oid]);
  reply.raw.on('close', abort);
  const head = await peek(stdout, SNIFF_BYTES);
  reply.header('content-type', rawContentType(found.path, head));
  return reply.send(range ? stdout.pipe(slice(start, end)) : stdout);
}

async function readHead(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Reads at least `n` bytes (or to the end) and puts them back: the stream still starts at byte 0. */
function peek(stream: Readable, n: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let len = 0;
    const done = () => {
      stream.off('readable', onReadable);
      stream.off('end', done);
      stream.off('error', reject);
      const head = Buffer.concat(chunks, len);
      if (len > 0) stream.unshift(head);
      resolve(head);
    };
    const onReadable = () => {
      let chunk: Buffer | null;
      while (len < n && (chunk = stream.read() as Buffer | null) !== null) {
        chunks.push(chunk);
        len += chunk.length;
      }
      if (len >= n) done();
    };
    stream.on('readable', onReadable);
    stream.on('end', done);
    stream.on('error', reject);
  });
}

/** Bytes `start` to `end` (inclusive) of a stream. */
function slice(start: number, end: number): Transform {
  let pos = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      const from = Math.max(0, start - pos);
      const to = Math.min(chunk.length, end + 1 - pos);
      pos += chunk.length;
      cb(null, to > from ? chunk.subarray(from, to) : undefined);
    },
  });
}

const ARCHIVE_FORMATS = [
  { suffix: '.tar.gz', format: 'tar.gz', type: 'application/gzip' },
  { suffix: '.zip', format: 'zip', type: 'application/zip' },
] as const;

/** GET {repo}/archive/{ref}.tar.gz and .zip: `git archive`, streamed. */
export async function serveArchive(
  deps: Deps,
  viewer: Viewer,
  repoRef: RepoAt,
  name: string,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const kind = ARCHIVE_FORMATS.find((f) => name.endsWith(f.suffix));
  if (!kind) throw new AppError(404, 'not_found', 'Archives are {ref}.tar.gz or {ref}.zip.');
  const ref = name.slice(0, -kind.suffix.length);
  const o = await openRepo(deps, viewer, repoRef);
  const { sha } = await commitOf(o, ref);
  const base = `${o.repo.slug}-${sha.slice(0, 7)}`;
  const { stdout, abort } = await o.readers.limits.spawn(o.dir!, [
    'archive',
    `--format=${kind.format}`,
    `--prefix=${base}/`,
    sha,
  ]);
  reply.raw.on('close', abort);
  safeHeaders(reply);
  reply.header('content-type', kind.type);
  reply.header('content-disposition', `attachment; filename="${base}${kind.suffix}"`);
  reply.header('cache-control', immutableCache(o.repo, ref) ?? 'private, no-cache');
  return reply.status(200).send(stdout);
}
