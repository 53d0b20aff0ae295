/** Webhook secrets and signatures (Standard Webhooks 1.0, and GitHub's X-Hub-Signature-256). */
import { createHmac, randomBytes } from 'node:crypto';
import { badRequest } from '../errors.ts';

const PREFIX = 'whsec_';

export const generateSecret = (): string => PREFIX + randomBytes(32).toString('base64');

/** A given secret: `whsec_` and canonical base64 of 24 to 64 bytes, else 400. */
export function checkSecret(secret: string): string {
  const b64 = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : '';
  const bytes = Buffer.from(b64, 'base64');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || bytes.toString('base64') !== b64 || bytes.length < 24 || bytes.length > 64) {
    throw badRequest('secret must be whsec_ followed by the base64 of 24 to 64 random bytes.');
  }
  return secret;
}

/** `v1,<base64 HMAC-SHA256>` of `{id}.{timestamp}.{body}`, keyed with the secret's decoded bytes. */
export function standardSignature(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** `sha256=<hex HMAC-SHA256 of the body>`, keyed with the whole secret string (what GitHub receivers are configured with). */
export const hubSignature = (secret: string, body: string): string =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
