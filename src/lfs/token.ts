/**
 * The short-lived header `git-lfs-authenticate` answers over SSH (docs/lfs.md), also put on the
 * batch API's actions: a message naming the user, the repo, the most it may do (`read` to
 * download, `write` to upload) and when it ends, signed with the server secret. It is sent as
 * `X-Weft-LFS-Token` (not `Authorization`, which carries API tokens).
 */
import type { ServerSecret } from '../secrets/server-secret.ts';

export const LFS_TOKEN_HEADER = 'x-weft-lfs-token';
const PURPOSE = 'lfs-token';
/** How long a token lasts (git-lfs asks for a new one when it ends). */
export const LFS_TOKEN_SECONDS = 15 * 60;

export interface LfsGrant {
  /** the user the token acts as */
  user: string;
  repo: string;
  level: 'read' | 'write';
  /** unix seconds */
  expires: number;
}

export function issueLfsToken(
  secret: ServerSecret,
  grant: Omit<LfsGrant, 'expires'>,
  now = Date.now(),
): { token: string; expiresIn: number } {
  const message = Buffer.from(
    JSON.stringify({ u: grant.user, r: grant.repo, l: grant.level, e: Math.floor(now / 1000) + LFS_TOKEN_SECONDS }),
  ).toString('base64url');
  return { token: `${message}.${secret.sign(PURPOSE, message)}`, expiresIn: LFS_TOKEN_SECONDS };
}

/** The grant a token carries, or null when it is malformed, altered or expired. */
export function readLfsToken(secret: ServerSecret, token: string, now = Date.now()): LfsGrant | null {
  const [message, signature, extra] = token.split('.');
  if (!message || !signature || extra !== undefined || message.length > 1000) return null;
  if (!secret.verify(PURPOSE, message, signature)) return null;
  try {
    const body = JSON.parse(Buffer.from(message, 'base64url').toString('utf8')) as { u: string; r: string; l: string; e: number };
    if (typeof body.u !== 'string' || typeof body.r !== 'string' || (body.l !== 'read' && body.l !== 'write')) return null;
    if (typeof body.e !== 'number' || body.e * 1000 < now) return null;
    return { user: body.u, repo: body.r, level: body.l, expires: body.e };
  } catch {
    return null;
  }
}
