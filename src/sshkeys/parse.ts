/**
 * OpenSSH public key lines (README "Git over SSH"): parsed with ssh2's key parser, checked for a
 * type and strength the server accepts, and fingerprinted as `ssh-keygen -lf` prints it.
 */
import { createHash, createPublicKey } from 'node:crypto';
import type Ssh2 from 'ssh2';
import { lazyRequire } from '../lazy-require.ts';
import { badRequest } from '../errors.ts';

// ssh2 is loaded when first needed, not when the server starts
const ssh2 = {
  get utils() {
    return loadSsh2().utils;
  },
};
const loadSsh2 = lazyRequire<typeof Ssh2>('ssh2');

/** The key types accepted: ed25519, ECDSA on the NIST curves, RSA of at least MIN_RSA_BITS. */
export const KEY_TYPES = ['ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521', 'ssh-rsa'];
export const MIN_RSA_BITS = 2048;

export interface ParsedKey {
  /** the OpenSSH type name */
  keyType: string;
  /** `type base64`, the comment dropped: the same key material always gives the same text */
  publicKey: string;
  /** SHA256:<base64 without padding> of the key blob */
  fingerprint: string;
}

/** `SHA256:…` of a key blob, as ssh-keygen -lf and OpenSSH's logs print it. */
export const fingerprintOf = (blob: Buffer): string =>
  `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;

const LINE_RE = /^([a-z0-9@.-]{1,64}) ([A-Za-z0-9+/]{1,16000}={0,2})(?: [^\r\n\0]*)?$/;

/** Parses one public key line; 400 invalid_request for a malformed, private, unsupported or weak key. */
export function parsePublicKey(line: string): ParsedKey {
  const match = LINE_RE.exec(line.trim());
  if (!match) throw badRequest('key must be one OpenSSH public key line: "TYPE BASE64 [comment]".');
  const [, type, base64] = match as unknown as [string, string, string];
  if (type === 'ssh-dss') throw badRequest('DSA keys are too weak: use ed25519, ECDSA or RSA of at least 2048 bits.');
  if (!KEY_TYPES.includes(type)) throw badRequest(`Unsupported key type ${type}: use ${KEY_TYPES.join(', ')}.`);
  const blob = Buffer.from(base64, 'base64');
  if (blob.toString('base64') !== base64) throw badRequest('key is not valid base64.');
  const parsed = ssh2.utils.parseKey(`${type} ${base64}`);
  if (parsed instanceof Error || Array.isArray(parsed) || parsed.isPrivateKey() || parsed.type !== type) {
    throw badRequest('key is not a valid OpenSSH public key.');
  }
  if (!parsed.getPublicSSH().equals(blob)) throw badRequest('key is not a valid OpenSSH public key.');
  if (type === 'ssh-rsa') {
    const bits = createPublicKey(parsed.getPublicPEM()).asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < MIN_RSA_BITS) throw badRequest(`RSA keys must have at least ${MIN_RSA_BITS} bits; this one has ${bits}.`);
  }
  return { keyType: type, publicKey: `${type} ${base64}`, fingerprint: fingerprintOf(blob) };
}
