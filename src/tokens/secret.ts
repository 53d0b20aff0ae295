import { hash, randomInt, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A new token secret: `weft_` + 40 base62 characters (docs/behaviour.md "Users and tokens"). */
export function newTokenSecret(): string {
  let out = 'weft_';
  for (let i = 0; i < 40; i++) out += BASE62[randomInt(62)];
  return out;
}

/** Secrets are stored only as their SHA-256 hash. */
export const hashSecret = (secret: string): string => hash('sha256', secret, 'hex');

export function hashesEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}
