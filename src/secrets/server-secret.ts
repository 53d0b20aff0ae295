import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The server secret (docs/secrets.md): one 32-byte key that seals what Weft must keep but never
 * show (sign-in source secrets, CI secrets, mirror credentials) and signs what it hands out and
 * must recognise later (reply-by-mail addresses, unsubscribe links).
 *
 * Where the key comes from: `SECRET_KEY` when set (any string of at least 32 characters, hashed to
 * 32 bytes), else the file `DATA_DIR/secret.key`, made once (exclusively, so two instances
 * starting together on one DATA_DIR agree) with mode 0600. Keys that were current before a
 * rotation are kept in `SECRET_KEY_PREVIOUS` (comma-separated) or `DATA_DIR/secret.key.previous`
 * so values sealed with them still open until `weft rotate-secret-key` has re-sealed them.
 *
 * A sealed value is text: `s1.<key id>.<base64url(nonce | ciphertext | tag)>`, AES-256-GCM with a
 * fresh 12-byte nonce, and the purpose (such as `ci-secret`) as additional authenticated data, so a
 * value sealed for one purpose cannot be opened as another.
 */
export class SecretKeyError extends Error {}

const PREFIX = 's1';
const MIN_SECRET_KEY_LENGTH = 32;

interface Key {
  id: string;
  bytes: Buffer;
}

function keyOf(bytes: Buffer): Key {
  return { id: createHash('sha256').update(bytes).digest('hex').slice(0, 8), bytes };
}

function keyFromText(text: string, source: string): Key {
  const trimmed = text.trim();
  if (trimmed.length < MIN_SECRET_KEY_LENGTH) {
    throw new SecretKeyError(`${source} must be at least ${MIN_SECRET_KEY_LENGTH} characters (got ${trimmed.length})`);
  }
  return keyOf(createHash('sha256').update(trimmed).digest());
}

export interface ServerSecretSource {
  /** SECRET_KEY, or null to use the key file under dataDir */
  secretKey: string | null;
  /** SECRET_KEY_PREVIOUS, comma-separated */
  previousKeys?: string | null;
  dataDir: string;
}

export const KEY_FILE = 'secret.key';
export const PREVIOUS_KEY_FILE = 'secret.key.previous';

/** Writes a file atomically (temp file, fsync, rename) with mode 0600. */
function writeSecretFile(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

/** Reads DATA_DIR/secret.key, making it once if it does not exist (first writer wins). */
function keyFileText(dataDir: string): string {
  const path = join(dataDir, KEY_FILE);
  if (!existsSync(path)) {
    mkdirSync(dirname(path), { recursive: true });
    try {
      const fd = openSync(path, 'wx', 0o600);
      try {
        writeSync(fd, `${randomBytes(32).toString('base64url')}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  // another instance may have created it an instant ago and not yet written it: wait for the text
  for (let i = 0; i < 50; i++) {
    const text = readFileSync(path, 'utf8');
    if (text.trim().length > 0) return text;
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  }
  throw new SecretKeyError(`${path} is empty: remove it to make a new key, or restore it from a backup`);
}

export class ServerSecret {
  readonly current: Key;
  private readonly byId: Map<string, Key>;
  /** where the key came from, for messages: `SECRET_KEY` or the key file's path */
  readonly origin: string;

  constructor(current: Key, previous: Key[], origin: string) {
    this.current = current;
    this.origin = origin;
    this.byId = new Map([...previous, current].map((k) => [k.id, k]));
  }

  static load(source: ServerSecretSource): ServerSecret {
    const previousTexts: string[] = [];
    let current: Key;
    let origin: string;
    if (source.secretKey !== null && source.secretKey !== '') {
      current = keyFromText(source.secretKey, 'SECRET_KEY');
      origin = 'SECRET_KEY';
      if (source.previousKeys) previousTexts.push(...source.previousKeys.split(','));
    } else {
      current = keyFromText(keyFileText(source.dataDir), join(source.dataDir, KEY_FILE));
      origin = join(source.dataDir, KEY_FILE);
      const prevPath = join(source.dataDir, PREVIOUS_KEY_FILE);
      if (existsSync(prevPath)) previousTexts.push(...readFileSync(prevPath, 'utf8').split('\n'));
      if (source.previousKeys) previousTexts.push(...source.previousKeys.split(','));
    }
    const previous = previousTexts.filter((t) => t.trim() !== '').map((t) => keyFromText(t, 'a previous secret key'));
    return new ServerSecret(current, previous, origin);
  }

  /** A server secret from fixed text (tests and tools). */
  static fromText(text: string): ServerSecret {
    return new ServerSecret(keyFromText(text, 'the secret key'), [], 'text');
  }

  /** Seals `plain` for `purpose` with the current key. */
  seal(purpose: string, plain: string | Buffer): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.current.bytes, nonce);
    cipher.setAAD(Buffer.from(purpose, 'utf8'));
    const body = Buffer.concat([cipher.update(typeof plain === 'string' ? Buffer.from(plain, 'utf8') : plain), cipher.final()]);
    return `${PREFIX}.${this.current.id}.${Buffer.concat([nonce, body, cipher.getAuthTag()]).toString('base64url')}`;
  }

  /** Opens a value sealed for `purpose` by this key or a previous one; throws SecretKeyError otherwise. */
  openBytes(purpose: string, sealed: string): Buffer {
    const [prefix, id, data, extra] = sealed.split('.');
    if (prefix !== PREFIX || !id || data === undefined || extra !== undefined) throw new SecretKeyError('not a sealed value');
    const key = this.byId.get(id);
    if (!key)
      throw new SecretKeyError(`sealed with an unknown key (${id}): is SECRET_KEY or ${KEY_FILE} the one it was sealed with?`);
    const raw = Buffer.from(data, 'base64url');
    if (raw.length < 28) throw new SecretKeyError('sealed value is cut short');
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(purpose, 'utf8'));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    try {
      return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]);
    } catch {
      throw new SecretKeyError('sealed value does not open: altered, or sealed for another purpose');
    }
  }

  open(purpose: string, sealed: string): string {
    return this.openBytes(purpose, sealed).toString('utf8');
  }

  /** Whether `sealed` was sealed with the current key (rotation skips those). */
  isCurrent(sealed: string): boolean {
    return sealed.split('.')[1] === this.current.id;
  }

  /** An HMAC-SHA256 signature of `message` for `purpose`, base64url (signed addresses and links). */
  sign(purpose: string, message: string): string {
    return signWith(this.current.bytes, purpose, message);
  }

  /**
   * Whether `signature` signs `message` for `purpose` with this key or a previous one (constant
   * time). With `bytes`, the signature is its first `bytes` bytes (short tokens, e.g. mail addresses).
   */
  verify(purpose: string, message: string, signature: string, bytes?: number): boolean {
    const given = Buffer.from(signature, 'base64url');
    let ok = false;
    for (const key of this.byId.values()) {
      const full = Buffer.from(signWith(key.bytes, purpose, message), 'base64url');
      const want = bytes === undefined ? full : full.subarray(0, bytes);
      if (want.length === given.length && timingSafeEqual(want, given)) ok = true;
    }
    return ok;
  }
}

function signWith(key: Buffer, purpose: string, message: string): string {
  return createHmac('sha256', key).update(purpose).update('\0').update(message).digest('base64url');
}

/**
 * Makes a new key file for `weft rotate-secret-key` (only when the key lives under DATA_DIR): the
 * old key moves to secret.key.previous first, so a crash between the two writes loses nothing.
 */
export function rotateKeyFile(dataDir: string): { previous: string; next: string } {
  const path = join(dataDir, KEY_FILE);
  const prevPath = join(dataDir, PREVIOUS_KEY_FILE);
  const old = keyFileText(dataDir).trim();
  const previous = existsSync(prevPath)
    ? readFileSync(prevPath, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
    : [];
  if (!previous.includes(old)) writeSecretFile(prevPath, [...previous, old].join('\n') + '\n');
  const next = randomBytes(32).toString('base64url');
  writeSecretFile(path, `${next}\n`);
  return { previous: old, next };
}

/** Forgets the previous keys once everything is re-sealed with the current one. */
export function forgetPreviousKeys(dataDir: string): void {
  const prevPath = join(dataDir, PREVIOUS_KEY_FILE);
  if (existsSync(prevPath)) writeSecretFile(prevPath, '');
}
