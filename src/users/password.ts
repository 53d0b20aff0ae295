import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const N = 16384;

/**
 * scrypt's cost for new hashes: 16384, or WEFT_PASSWORD_SCRYPT_N when it is a power of two from
 * 1024 to 1048576. The test scripts set 1024 (package.json `test:files`): the suite makes
 * thousands of users, each hash 60 ms of CPU at 16384. A stored hash keeps its own cost, so
 * verifying never depends on this setting. Never lower it in production.
 */
function cost(): number {
  const n = Number(process.env.WEFT_PASSWORD_SCRYPT_N);
  return Number.isInteger(n) && n >= 1024 && n <= 1048576 && (n & (n - 1)) === 0 ? n : N;
}
const R = 8;
const P = 1;
const KEYLEN = 32;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, KEYLEN, { N: n, r, p, maxmem: 64 * 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** scrypt (memory-hard), stored as `scrypt$N$r$p$salt$hash`. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const n = cost();
  const key = await derive(password, salt, n, R, P);
  return `scrypt$${n}$${R}$${P}$${salt.toString('base64')}$${key.toString('base64')}`;
}

let dummy: Promise<string> | null = null;

/** A hash of nothing anyone knows, to verify against when there is no real one. */
export function dummyPasswordHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(32).toString('hex'));
  return dummy;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [algo, n, r, p, salt, hash] = stored.split('$');
  if (algo !== 'scrypt' || !n || !r || !p || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const key = await derive(password, Buffer.from(salt, 'base64'), Number(n), Number(r), Number(p));
  return key.length === expected.length && timingSafeEqual(key, expected);
}
