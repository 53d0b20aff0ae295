import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * The encrypted archive framing (WEFT_BACKUP_PASSPHRASE): a header (magic, scrypt salt, base
 * nonce), then segments of at most 1 MiB, each AES-256-GCM with its own nonce (the base nonce
 * with the segment number in its last 4 bytes) and tag. The segment number and a "last" flag are
 * authenticated too, so segments cannot be reordered, dropped or the file cut short unnoticed.
 */
export const ENCRYPTED_MAGIC = Buffer.from('WEFTENC1');
const SALT_BYTES = 16;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const SEGMENT = 1 << 20;
export const HEADER_BYTES = ENCRYPTED_MAGIC.length + SALT_BYTES + NONCE_BYTES;
const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

export class BackupCryptoError extends Error {}

function keyOf(passphrase: string, salt: Buffer): Buffer {
  return scryptSync(passphrase, salt, 32, SCRYPT);
}

function nonceOf(base: Buffer, counter: number): Buffer {
  const nonce = Buffer.from(base);
  nonce.writeUInt32BE((nonce.readUInt32BE(8) ^ counter) >>> 0, 8);
  return nonce;
}

function aadOf(counter: number, last: boolean): Buffer {
  const aad = Buffer.alloc(5);
  aad.writeUInt32BE(counter, 0);
  aad[4] = last ? 1 : 0;
  return aad;
}

/** Encrypts a byte stream into the framing above. */
export function encryptStream(passphrase: string): Transform {
  const salt = randomBytes(SALT_BYTES);
  const base = randomBytes(NONCE_BYTES);
  const key = keyOf(passphrase, salt);
  let counter = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let headerSent = false;
  const seal = (self: Transform, plain: Buffer, last: boolean) => {
    if (!headerSent) {
      self.push(Buffer.concat([ENCRYPTED_MAGIC, salt, base]));
      headerSent = true;
    }
    const cipher = createCipheriv('aes-256-gcm', key, nonceOf(base, counter));
    cipher.setAAD(aadOf(counter, last));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    const head = Buffer.alloc(5);
    head[0] = last ? 1 : 0;
    head.writeUInt32BE(body.length, 1);
    self.push(Buffer.concat([head, body, cipher.getAuthTag()]));
    counter++;
  };
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      pending.push(chunk);
      pendingBytes += chunk.length;
      while (pendingBytes >= SEGMENT) {
        const all = Buffer.concat(pending);
        seal(this, all.subarray(0, SEGMENT), false);
        pending = [all.subarray(SEGMENT)];
        pendingBytes = all.length - SEGMENT;
      }
      cb();
    },
    flush(cb: TransformCallback) {
      seal(this, Buffer.concat(pending), true);
      cb();
    },
  });
}

/** Decrypts the framing; fails with BackupCryptoError on a wrong passphrase or altered bytes. */
export function decryptStream(passphrase: string): Transform {
  let buf: Buffer = Buffer.alloc(0);
  let key: Buffer | null = null;
  let base: Buffer | null = null;
  let counter = 0;
  let done = false;
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
      try {
        if (!key) {
          if (buf.length < HEADER_BYTES) return cb();
          if (!buf.subarray(0, ENCRYPTED_MAGIC.length).equals(ENCRYPTED_MAGIC))
            throw new BackupCryptoError('not an encrypted Weft backup');
          const salt = buf.subarray(ENCRYPTED_MAGIC.length, ENCRYPTED_MAGIC.length + SALT_BYTES);
          base = Buffer.from(buf.subarray(ENCRYPTED_MAGIC.length + SALT_BYTES, HEADER_BYTES));
          key = keyOf(passphrase, salt);
          buf = buf.subarray(HEADER_BYTES);
        }
        while (buf.length >= 5) {
          if (done) throw new BackupCryptoError('the archive has bytes after its last segment');
          const last = buf[0] === 1;
          const len = buf.readUInt32BE(1);
          if (len > SEGMENT) throw new BackupCryptoError('the archive is damaged (a segment is too long)');
          if (buf.length < 5 + len + TAG_BYTES) break;
          const decipher = createDecipheriv('aes-256-gcm', key, nonceOf(base!, counter));
          decipher.setAAD(aadOf(counter, last));
          decipher.setAuthTag(buf.subarray(5 + len, 5 + len + TAG_BYTES));
          let plain: Buffer;
          try {
            plain = Buffer.concat([decipher.update(buf.subarray(5, 5 + len)), decipher.final()]);
          } catch {
            throw new BackupCryptoError(
              counter === 0
                ? 'cannot decrypt the archive: wrong WEFT_BACKUP_PASSPHRASE, or the file is damaged'
                : 'the archive is damaged',
            );
          }
          this.push(plain);
          buf = buf.subarray(5 + len + TAG_BYTES);
          counter++;
          if (last) done = true;
        }
        cb();
      } catch (err) {
        cb(err as Error);
      }
    },
    flush(cb: TransformCallback) {
      if (!done) return cb(new BackupCryptoError('the archive is cut short'));
      cb();
    },
  });
}
