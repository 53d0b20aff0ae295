import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { type Kysely, type Selectable, sql } from 'kysely';
import { assertCanManageTokensOf, tokenVisibleTo } from '../access/index.ts';
import type { DB } from '../db/types.ts';
import type { WebSessionsTable } from '../db/tables/sessions.ts';
import type { Deps } from '../deps.ts';
import { notFound } from '../errors.ts';
import { command } from '../core/command.ts';
import { inTransaction } from '../core/transaction.ts';
import { decide } from '../core/targets.ts';
import { nowIso } from '../time.ts';
import { MAX_SECRET_LENGTH } from '../config.ts';
import { hashSecret, hashesEqual, newTokenSecret } from '../tokens/secret.ts';
import type { UserRow } from '../users/service.ts';
import { type AuthenticatedUser, type Viewer, authenticatedUserOf } from '../viewer.ts';

/** README "Web interface": the session's lifetime (sliding: renewed on use). */
export const SESSION_TTL_MS = 30 * 24 * 3600 * 1000;
/** last_used_at and expires_at are written at most once a minute per session. */
const TOUCH_GRANULARITY_MS = 60_000;

type SessionRow = Selectable<WebSessionsTable>;

export interface SessionJson {
  uuid: string;
  username: string;
  user_agent: string;
  created_at: string;
  last_used_at: string;
  expires_at: string;
  revoked_at: string | null;
}

const toJson = (row: SessionRow, username: string): SessionJson => ({
  uuid: row.uuid,
  username,
  user_agent: row.user_agent,
  created_at: row.created_at,
  last_used_at: row.last_used_at,
  expires_at: row.expires_at,
  revoked_at: row.revoked_at,
});

/** Starts a session for a user whose password was checked; the secret is returned once, for the cookie. */
export async function startSession(
  deps: Deps,
  user: UserRow,
  userAgent: string | undefined,
  opts: { sourceSatisfiesTwoFactor?: boolean } = {},
): Promise<{ session: SessionJson; secret: string }> {
  const secret = newTokenSecret();
  const now = Date.now();
  const row: SessionRow = {
    uuid: randomUUID(),
    user_uuid: user.uuid,
    secret_hash: hashSecret(secret),
    user_agent: (userAgent ?? '').slice(0, 200),
    created_at: new Date(now).toISOString(),
    last_used_at: new Date(now).toISOString(),
    expires_at: new Date(now + SESSION_TTL_MS).toISOString(),
    revoked_at: null,
    two_factor: opts.sourceSatisfiesTwoFactor ? 1 : 0,
  };
  await inTransaction(deps, async (tx) => {
    await tx.db.insertInto('web_sessions').values(row).execute();
  });
  return { session: toJson(row, user.username), secret };
}

export interface SessionCaller {
  viewer: Viewer;
  user: AuthenticatedUser;
  session: { uuid: string; expires_at: string };
}

/**
 * Resolves a session cookie's secret to its caller; null for unknown, revoked or expired
 * sessions and deactivated users. Each use (at most once a minute) moves the expiry 30 days on.
 */
export async function authenticateSession(deps: Deps, secret: string): Promise<SessionCaller | null> {
  if (!secret || secret.length > MAX_SECRET_LENGTH) return null;
  const hash = hashSecret(secret);
  const row = await deps.db
    .selectFrom('web_sessions as s')
    .innerJoin('users as u', 'u.uuid', 's.user_uuid')
    .select([
      's.uuid as session_uuid',
      's.secret_hash',
      's.expires_at',
      's.revoked_at',
      's.last_used_at',
      'u.uuid',
      'u.username',
      'u.display_name',
      'u.email',
      'u.is_staff',
      'u.is_active',
      'u.ping_mentions',
      'u.created_at',
      'u.updated_at',
      'u.has_two_factor',
      's.two_factor',
      sql<number>`(select ss.require_two_factor from site_settings ss where ss.id = 1)`.as('site_two_factor'),
    ])
    .where('s.secret_hash', '=', hash)
    .executeTakeFirst();
  if (!row || !hashesEqual(row.secret_hash, hash)) return null;
  const now = Date.now();
  if (row.revoked_at !== null || row.is_active !== 1 || Date.parse(row.expires_at) <= now) return null;
  let expiresAt = row.expires_at;
  if (now - Date.parse(row.last_used_at) >= TOUCH_GRANULARITY_MS) {
    expiresAt = new Date(now + SESSION_TTL_MS).toISOString();
    await deps.db
      .updateTable('web_sessions')
      .set({ last_used_at: new Date(now).toISOString(), expires_at: expiresAt })
      .where('uuid', '=', row.session_uuid)
      .where('revoked_at', 'is', null)
      .execute()
      .catch(() => {
        /* a missed touch is harmless; the next request retries */
      });
  }
  const user = authenticatedUserOf(row);
  const viewer: Viewer = {
    uuid: row.uuid,
    username: row.username,
    isStaff: row.is_staff === 1,
    tokenUuid: row.session_uuid,
    twoFactor: Number(row.has_two_factor) === 1 || Number(row.two_factor) === 1,
    siteRequiresTwoFactor: Number(row.site_two_factor) === 1,
  };
  return { viewer, user, session: { uuid: row.session_uuid, expires_at: expiresAt } };
}

/**
 * The CSRF token of a session: an HMAC of a fixed label keyed by the session's secret. It is
 * bound to the session (another session's token does not match), needs no storage, and cannot be
 * computed from what the database holds (the secret's hash).
 */
export function csrfTokenFor(sessionSecret: string): string {
  return createHmac('sha256', sessionSecret).update('weft-csrf-v1').digest('base64url');
}

export function csrfTokenMatches(sessionSecret: string, given: unknown): boolean {
  if (typeof given !== 'string' || given.length > 100) return false;
  const a = Buffer.from(csrfTokenFor(sessionSecret));
  const b = Buffer.from(given);
  return a.length === b.length && timingSafeEqual(a, b);
}

async function ownerUuid(
  db: Kysely<DB>,
  viewer: Viewer,
  username: string | undefined,
): Promise<{ uuid: string; username: string }> {
  const wanted = username?.trim().toLowerCase();
  if (!wanted || wanted === viewer.username) return { uuid: viewer.uuid, username: viewer.username };
  assertCanManageTokensOf(viewer, wanted);
  const row = await db.selectFrom('users').select(['uuid', 'username']).where('username', '=', wanted).executeTakeFirst();
  if (!row) throw notFound('User');
  return row;
}

/** A user's sessions, newest first (revoked and expired ones too, until they are a year old). */
export async function listSessions(
  deps: Deps,
  viewer: Viewer,
  opts: { username?: string; offset: number; limit: number },
): Promise<SessionJson[]> {
  const owner = await ownerUuid(deps.db, viewer, opts.username);
  const rows = await deps.db
    .selectFrom('web_sessions')
    .selectAll()
    .where('user_uuid', '=', owner.uuid)
    .orderBy('created_at', 'desc')
    .orderBy('uuid', 'desc')
    .offset(opts.offset)
    .limit(opts.limit)
    .execute();
  return rows.map((row) => toJson(row, owner.username));
}

async function visibleSession(
  db: Kysely<DB>,
  viewer: Viewer,
  uuid: string,
  lock = false,
): Promise<SessionRow & { username: string }> {
  let query = db
    .selectFrom('web_sessions as s')
    .innerJoin('users as u', 'u.uuid', 's.user_uuid')
    .selectAll('s')
    .select('u.username')
    .where('s.uuid', '=', uuid);
  // PostgreSQL: the session's row, so two revocations take turns (SQLite writes one at a time)
  if (lock) query = query.forUpdate('s');
  const row = await query.executeTakeFirst();
  if (!row || !tokenVisibleTo(viewer, row)) throw notFound('Session');
  return row;
}

export async function getSession(deps: Deps, viewer: Viewer, uuid: string): Promise<SessionJson> {
  const row = await visibleSession(deps.db, viewer, uuid);
  return toJson(row, row.username);
}

/** Ends a session (sign-out, or revoked from another one); revoking twice changes nothing. */
export async function revokeSession(deps: Deps, viewer: Viewer, uuid: string): Promise<SessionJson> {
  const target = decide((db, v: Viewer) => visibleSession(db, v, uuid, deps.dialect === 'postgres'));
  return command(deps, viewer, target, async (tx) => {
    const row = tx.access;
    if (row.revoked_at !== null) return toJson(row, row.username);
    const revoked_at = nowIso();
    await tx.db
      .updateTable('web_sessions')
      .set({ revoked_at })
      .where('uuid', '=', uuid)
      .where('revoked_at', 'is', null)
      .execute();
    return toJson({ ...row, revoked_at }, row.username);
  });
}
