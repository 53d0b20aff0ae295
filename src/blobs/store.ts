import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
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
export interface BlobStore {
  put(content: Readable, opts?: { maxBytes?: number }): Promise<StoredBlob>;
  /** A stream of the content, or of the inclusive byte range [start, end]. */
  get(sha256: string, range?: { start: number; end: number }): Readable;
  size(sha256: string): Promise<number | null>;
  delete(sha256: string): Promise<void>;
}

const SHA_RE = /^[0-9a-f]{64}$/;

export class FsBlobStore implements BlobStore {
  constructor(private readonly root: string) {}

  private pathOf(sha256: string): string {
    if (!SHA_RE.test(sha256)) throw new Error(`not a blob address: ${sha256}`);
    return join(this.root, sha256.slice(0, 2), sha256.slice(2, 4), sha256);
  }

  async put(content: Readable, opts: { maxBytes?: number } = {}): Promise<StoredBlob> {
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
    await mkdir(join(final, '..'), { recursive: true, mode: 0o700 });
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

  /** Removes temporary files left by a crash mid-upload (called at start-up). */
  async sweepTemporary(): Promise<void> {
    await rm(join(this.root, 'tmp'), { recursive: true, force: true });
  }
}
