import { hash } from 'node:crypto';

/**
 * Serialized JSON bodies of answers that are a pure function of immutable git objects and of
 * nothing about the caller (a directory listing: its tree oid and its path), kept ready to send:
 * the bytes and a strong ETag, serialized and hashed once instead of once per request. A large
 * listing (10,000 entries, ~1.7 MB of JSON) otherwise costs every request its serialization and
 * the ETag hook's hash. Bounded by bytes, least recently used first out; concurrent misses of one
 * key share one computation. The key names content only (like the tree cache of src/git/trees.ts),
 * so one entry may serve every repository that holds the same tree: access is checked before.
 */

export interface SerializedBody {
  bytes: Buffer;
  /** a strong entity tag: the body's hash, in double quotes */
  etag: string;
}

/** Total bytes kept. */
export const MAX_BODY_CACHE_BYTES = 32 * 1024 * 1024;
/** A body larger than this is served but not kept. */
const MAX_ONE_BODY = MAX_BODY_CACHE_BYTES / 4;
/** Bookkeeping per entry besides its bytes (key, headers, map slot). */
const OVERHEAD = 256;

const bodies = new Map<string, SerializedBody>();
const pending = new Map<string, Promise<SerializedBody>>();
let cachedBytes = 0;

/** JSON bytes and their strong ETag. */
export function serialize(value: unknown): SerializedBody {
  const bytes = Buffer.from(JSON.stringify(value));
  return { bytes, etag: `"${hash('sha256', bytes, 'base64url').slice(0, 32)}"` };
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
  const size = body.bytes.length + key.length + OVERHEAD;
  if (size > MAX_ONE_BODY) return;
  const old = bodies.get(key);
  if (old) {
    bodies.delete(key);
    cachedBytes -= old.bytes.length + key.length + OVERHEAD;
  }
  bodies.set(key, body);
  cachedBytes += size;
  for (const [k, v] of bodies) {
    if (cachedBytes <= MAX_BODY_CACHE_BYTES) break;
    bodies.delete(k);
    cachedBytes -= v.bytes.length + k.length + OVERHEAD;
  }
}

/** Bytes held (tests). */
export function bodyCacheBytes(): number {
  return cachedBytes;
}
