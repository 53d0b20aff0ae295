import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** What `put` stored: the content's SHA-256 (hex, its address) and its size in bytes. */
export interface StoredBlob {
  sha256: string;
  size: number;
}

/** Thrown by `put` when the stream grows past `maxBytes`; nothing is kept. */
export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the content is larger than ${maxBytes} bytes`);
  }
}

/**
 * Content-addressed file storage: identical content is stored once. `put` streams to a
 * temporary file while hashing (never holding the content in memory) and renames it into place
 * only when complete, so a crash or a refused upload leaves no visible partial file.
 */
export interface PutOptions {
  maxBytes?: number;
  /**
   * Called with the content's address once every byte is written and before the file is
   * published there (src/blobs/lifetime.ts writes the upload's hold); a throw keeps nothing.
   */
  beforePublish?: (sha256: string) => Promise<void>;
}

export interface BlobStore {
  put(content: Readable, opts?: PutOptions): Promise<StoredBlob>;
  /** A stream of the content, or of the inclusive byte range [start, end]. */
  get(sha256: string, range?: { start: number; end: number }): Readable;
  size(sha256: string): Promise<number | null>;
  delete(sha256: string): Promise<void>;
}

const SHA_RE = /^[0-9a-f]{64}$/;

export class FsBlobStore implements BlobStore {
  constructor(readonly root: string) {}

  private pathOf(sha256: string): string {
    if (!SHA_RE.test(sha256)) throw new Error(`not a blob address: ${sha256}`);
    return join(this.root, sha256.slice(0, 2), sha256.slice(2, 4), sha256);
  }

  async put(content: Readable, opts: PutOptions = {}): Promise<StoredBlob> {
    const tmpDir = join(this.root, 'tmp');
    await mkdir(tmpDir, { recursive: true, mode: 0o700 });
    const tmp = join(tmpDir, `${Date.now()}-${randomBytes(8).toString('hex')}`);
    const hash = createHash('sha256');
    let size = 0;
    const max = opts.maxBytes ?? Number.POSITIVE_INFINITY;
    const meter = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        size += chunk.length;
        if (size > max) return cb(new BlobTooLargeError(max));
        hash.update(chunk);
        cb(null, chunk);
      },
    });
    const out = createWriteStream(tmp, { mode: 0o600 });
    try {
      await pipeline(content, meter, out);
    } catch (err) {
      // The pipeline can reject before the file stream has opened (and so created) the file:
      // remove it only once the stream has closed, or a refused upload would leave it behind.
      if (!out.closed) await new Promise<void>((resolve) => out.once('close', () => resolve()));
      await rm(tmp, { force: true });
      throw err;
    }
    const sha256 = hash.digest('hex');
    const final = this.pathOf(sha256);
    try {
      await opts.beforePublish?.(sha256);
      await mkdir(join(final, '..'), { recursive: true, mode: 0o700 });
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    // Same content already stored: the rename replaces it with identical bytes.
    await rename(tmp, final);
    return { sha256, size };
  }

  get(sha256: string, range?: { start: number; end: number }): Readable {
    return createReadStream(this.pathOf(sha256), range ? { start: range.start, end: range.end } : {});
  }

  async size(sha256: string): Promise<number | null> {
    try {
      return (await stat(this.pathOf(sha256))).size;
    } catch {
      return null;
    }
  }

  async delete(sha256: string): Promise<void> {
    await rm(this.pathOf(sha256), { force: true });
  }

  /**
   * Removes temporary files left by a crash mid-upload: those older than `olderThanMs` (the
   * longest an upload may take), so uploads in progress, on this or another instance, are untouched.
   */
  async sweepTemporary(olderThanMs: number): Promise<void> {
    const dir = join(this.root, 'tmp');
    const cutoff = Date.now() - olderThanMs;
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return;
    }
    for (const name of names) {
      const info = await stat(join(dir, name)).catch(() => null);
      if (info && info.mtimeMs < cutoff) await rm(join(dir, name), { force: true });
    }
  }
}
