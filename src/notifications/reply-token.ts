/**
 * The reply address of notification mail (docs/notifications.md "Reply by mail"):
 * `reply+{token}@{MAIL_REPLY_DOMAIN}`. The token names one notification (so one user and one
 * subject: it cannot be reused for another) and the day it was issued, signed with the server
 * secret (HMAC, the first 10 bytes), in lower-case base32 so that a mail system folding the case
 * of the local part keeps it valid, and short enough for a local part (45 characters).
 */
import type { Deps } from '../deps.ts';

export const REPLY_PURPOSE = 'notification-reply';
/** A reply address is accepted this many days after the mail that carried it. */
export const REPLY_TOKEN_DAYS = 180;
const SIG_BYTES = 10;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const DAY_MS = 86_400_000;

function base32(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

function unbase32(text: string): Buffer | null {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const c of text.toLowerCase()) {
    const v = ALPHABET.indexOf(c);
    if (v < 0) return null;
    value = ((value << 5) | v) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

const uuidBytes = (uuid: string): Buffer => Buffer.from(uuid.replace(/-/g, ''), 'hex');
const uuidText = (b: Buffer): string => {
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

/** The token of the reply address of a mail about notification `notificationUuid`. */
export function replyToken(deps: Deps, notificationUuid: string): string {
  const day = Math.floor(deps.clock.now().getTime() / DAY_MS) & 0xffff;
  const head = Buffer.concat([uuidBytes(notificationUuid), Buffer.from([day >> 8, day & 0xff])]);
  const sig = Buffer.from(deps.secret.sign(REPLY_PURPOSE, head.toString('hex')), 'base64url').subarray(0, SIG_BYTES);
  return base32(Buffer.concat([head, sig]));
}

/** The notification a reply token names, or null when it is malformed, forged or expired. */
export function readReplyToken(deps: Deps, token: string): string | null {
  if (token.length !== 45) return null;
  const raw = unbase32(token);
  if (!raw || raw.length !== 16 + 2 + SIG_BYTES) return null;
  const head = raw.subarray(0, 18);
  if (!deps.secret.verify(REPLY_PURPOSE, head.toString('hex'), raw.subarray(18).toString('base64url'), SIG_BYTES)) return null;
  const issued = (head[16]! << 8) | head[17]!;
  const today = Math.floor(deps.clock.now().getTime() / DAY_MS) & 0xffff;
  if ((today - issued + 0x10000) % 0x10000 > REPLY_TOKEN_DAYS) return null;
  return uuidText(head.subarray(0, 16));
}

/** The reply address of a mail about a notification, when reply by mail is on; else null. */
export function replyAddress(deps: Deps, notificationUuid: string): string | null {
  const { smtpInboundPort, mailReplyDomain } = deps.config;
  if (!smtpInboundPort || !mailReplyDomain) return null;
  return `reply+${replyToken(deps, notificationUuid)}@${mailReplyDomain}`;
}
