import { hash } from 'node:crypto';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

/**
 * Serialized JSON bodies of answers that are a pure function of immutable git objects and of
 * nothing about the caller (a contents answer: the entry's type, object id and path), kept ready
 * to send: the bytes, a strong ETag and, once asked for, their brotli and gzip encodings. A large
 * listing (10,000 entries, ~1.4 MB of JSON) otherwise costs every request its serialization, the
 * ETag hook's hash and the compression. Bounded by bytes, least recently used first out;
 * concurrent misses of one key share one computation. The key names content only (like the tree
 * cache of src/git/trees.ts), so one entry may serve every repository that holds the same
 * objects: access is checked before.
 */

export type BodyEncoding = 'br' | 'gzip';

export interface SerializedBody {
  bytes: Buffer;
  /** a strong entity tag: the body's SHA-1 (base64url), in double quotes */
  etag: string;
  /** the body compressed, by content coding (made on first use) */
  encoded: Partial<Record<BodyEncoding, Buffer>>;
}

/** Total bytes kept. */
export const MAX_BODY_CACHE_BYTES = 32 * 1024 * 1024;
/** A body larger than this is served but not kept. */
const MAX_ONE_BODY = MAX_BODY_CACHE_BYTES / 4;
/** Bookkeeping per entry besides its bytes (key, headers, map slot). */
const OVERHEAD = 256;

const bodies = new Map<string, SerializedBody>();
const pending = new Map<string, Promise<SerializedBody>>();
/** the bodies now in `bodies` (an encoding made later is charged to the cache only for them) */
const kept = new WeakSet<SerializedBody>();
let cachedBytes = 0;

const sizeOf = (key: string, body: SerializedBody) =>
  OVERHEAD + key.length + body.bytes.length + (body.encoded.br?.length ?? 0) + (body.encoded.gzip?.length ?? 0);

/** JSON bytes and their strong ETag. */
export function serialize(value: unknown): SerializedBody {
  const bytes = Buffer.from(JSON.stringify(value));
  return { bytes, etag: `"${hash('sha1', bytes, 'base64url')}"`, encoded: {} };
}

/** The body of `key`, made by `make` (and kept) when it is not cached. */
export function cachedBody(key: string, make: () => Promise<unknown>): Promise<SerializedBody> {
  const hit = bodies.get(key);
  if (hit) {
    // most recently used last
    bodies.delete(key);
    bodies.set(key, hit);
    return Promise.resolve(hit);
  }
  const running = pending.get(key);
  if (running) return running;
  const made = make()
    .then((value) => {
      const body = serialize(value);
      remember(key, body);
      return body;
    })
    .finally(() => pending.delete(key));
  pending.set(key, made);
  return made;
}

function remember(key: string, body: SerializedBody): void {
  const size = sizeOf(key, body);
  if (size > MAX_ONE_BODY) return;
  const old = bodies.get(key);
  if (old) {
    bodies.delete(key);
    kept.delete(old);
    cachedBytes -= sizeOf(key, old);
  }
  bodies.set(key, body);
  kept.add(body);
  cachedBytes += size;
  evict();
}

function evict(): void {
  for (const [k, v] of bodies) {
    if (cachedBytes <= MAX_BODY_CACHE_BYTES) break;
    bodies.delete(k);
    kept.delete(v);
    cachedBytes -= sizeOf(k, v);
  }
}

/**
 * The body in `encoding`, compressed once (brotli at quality 4 as the compression of other
 * answers, gzip at zlib's default level); kept with the body while it is cached.
 */
export function encodedBody(body: SerializedBody, encoding: BodyEncoding): Buffer {
  const done = body.encoded[encoding];
  if (done) return done;
  const out =
    encoding === 'br'
      ? brotliCompressSync(body.bytes, {
          params: {
            [constants.BROTLI_PARAM_QUALITY]: 4,
            [constants.BROTLI_PARAM_SIZE_HINT]: body.bytes.length,
          },
        })
      : gzipSync(body.bytes);
  body.encoded[encoding] = out;
  // charged to the cache when the body is in it (a body too large to keep keeps its encodings alone)
  if (kept.has(body)) {
    cachedBytes += out.length;
    evict();
  }
  return out;
}

/**
 * The content coding to send for an Accept-Encoding header: brotli or gzip, whichever the client
 * weighs higher (brotli on a tie, as the compression of other answers prefers it); null for
 * neither (identity).
 */
export function pickEncoding(header: string | undefined): BodyEncoding | null {
  if (!header) return null;
  const q: Record<string, number> = {};
  for (const part of header.toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    const weight = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)).find(Boolean);
    const token = name!.trim() === 'x-gzip' ? 'gzip' : name!.trim();
    if (token) q[token] = weight ? Number(weight[1]) : 1;
  }
  const of = (e: BodyEncoding) => q[e] ?? q['*'] ?? 0;
  const br = of('br');
  const gzip = of('gzip');
  if (br <= 0 && gzip <= 0) return null;
  return br >= gzip ? 'br' : 'gzip';
}

/** Bytes held (tests). */
export function bodyCacheBytes(): number {
  return cachedBytes;
}
