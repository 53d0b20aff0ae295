import { randomUUID } from 'node:crypto';
import { type Kysely, type Selectable, sql } from 'kysely';
import { assertCanManageTokensOf, tokenRestrictionFor, tokenVisibleTo } from '../access/index.ts';
import { resolutionFromRow, tokenWithRepoRead } from '../access/repo-read.ts';
import { compiledOnce, fastPathOn } from '../db/fast-path.ts';
import type { ApiTokensTable, DB, UsersTable } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../errors.ts';
import { command, type TxContext } from '../core/command.ts';
import { decide } from '../core/targets.ts';
import { canonicalTimestamp, nowIso } from '../time.ts';
import { type AuthenticatedUser, type RepoResolution, type RepoTarget, type Viewer, authenticatedUserOf } from '../viewer.ts';
import { MAX_SECRET_LENGTH } from '../config.ts';
import { hashSecret, hashesEqual, newTokenSecret } from './secret.ts';

type TokenRow = Selectable<ApiTokensTable>;
type TokenWithUser = TokenRow & { username: string };

export interface TokenJson {
  uuid: string;
  name: string;
  username: string;
  scopes: string[] | null;
  repos: string[] | null;
  expires_at: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface CreatedToken extends TokenJson {
  token: string;
}

export function tokenToJson(row: TokenWithUser): TokenJson {
  return {
    uuid: row.uuid,
    name: row.name,
    username: row.username,
    scopes: parseList(row.scopes),
    repos: parseList(row.repos),
    expires_at: row.expires_at,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
  };
}

/** A stored JSON list (scopes, repos); null stays null (unrestricted). */
function parseList(stored: string | null): string[] | null {
  if (stored === null) return null;
  const value: unknown = JSON.parse(stored);
  return Array.isArray(value) ? value.map(String) : null;
}

// last_used_at is kept to the minute: a request writes it only when the stored value is older.
const LAST_USED_GRANULARITY_MS = 60_000;

// Every authenticated request runs this lookup: it is compiled once (see compiledOnce). It also
// reads the caller's public user fields, so GET /user needs no second query.
const tokenByHash = compiledOnce((db, hash: string) =>
  db
    .selectFrom('api_tokens as t')
    .innerJoin('users as u', 'u.uuid', 't.user_uuid')
    .select([
      't.uuid as token_uuid',
      't.token_hash',
      't.expires_at',
      't.revoked_at',
      't.last_used_at',
      't.scopes',
      't.repos',
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
      sql<number>`(select ss.require_two_factor from site_settings ss where ss.id = 1)`.as('site_two_factor'),
    ])
    .where('t.token_hash', '=', hash),
);

type TokenLookupRow = Awaited<ReturnType<typeof tokenByHash>>[number];

/** The caller's user record as read with their token (everything but the password hash). */
export type { AuthenticatedUser } from '../viewer.ts';

/**
 * Resolves a secret to its viewer and user record; null for unknown, revoked, expired or
 * deactivated. last_used_at is written at most once a minute per token, not on every request.
 *
 * With a `target` (the route's declared repo, `config.repo`) and the fast path on, the same
 * statement reads the repo, and the answer carries its resolution; otherwise it has none and the
 * auth hook resolves the repo with a statement of its own (docs/architecture.md "The read path").
 */
export async function authenticate(
  deps: Deps,
  secret: string,
  target?: RepoTarget,
): Promise<{ viewer: Viewer; user: AuthenticatedUser; repo?: RepoResolution } | null> {
  if (secret.length > MAX_SECRET_LENGTH) return null;
  const hash = hashSecret(secret);
  if (!fastPathOn()) target = undefined;
  const read = target ? await tokenWithRepoRead(deps.database, hash, target) : undefined;
  const [row] = read ? [read.token as TokenLookupRow] : target ? [] : await tokenByHash(deps.database, hash);
  if (!row || !hashesEqual(row.token_hash, hash)) return null;
  const now = Date.now();
  if (row.revoked_at !== null || row.is_active !== 1) return null;
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now) return null;
  if (row.last_used_at === null || now - Date.parse(row.last_used_at) >= LAST_USED_GRANULARITY_MS) {
    // At most one write per token per minute. Awaited so the request that makes it sees it
    // (GET /api-tokens/self) and no write is left running when the server stops.
    await deps.db
      .updateTable('api_tokens')
      .set({ last_used_at: new Date(now).toISOString() })
      .where('uuid', '=', row.token_uuid)
      .execute()
      .catch(() => {
        /* a missed last_used_at write is harmless; the next request retries */
      });
  }
  const user = authenticatedUserOf(row);
  const viewer: Viewer = {
    uuid: row.uuid,
    username: row.username,
    isStaff: row.is_staff === 1,
    tokenUuid: row.token_uuid,
    scopes: parseList(row.scopes),
    repos: parseList(row.repos),
    twoFactor: Number(row.has_two_factor) === 1,
    siteRequiresTwoFactor: Number(row.site_two_factor) === 1,
  };
  if (read && target) return { viewer, user, repo: resolutionFromRow(viewer, target, read.row) };
  return { viewer, user };
}

/** Resolves a secret to its viewer; null for unknown, revoked, expired or deactivated. */
export async function authenticateSecret(deps: Deps, secret: string): Promise<Viewer | null> {
  return (await authenticate(deps, secret))?.viewer ?? null;
}

function validExpiry(value: string | null | undefined): string | null {
  if (value === undefined || value === null) return null;
  const canonical = canonicalTimestamp(value);
  if (!canonical) throw badRequest('expires_at must be an ISO 8601 timestamp.');
  if (Date.parse(canonical) <= Date.now()) throw badRequest('expires_at must be in the future.');
  return canonical;
}

/** Creates a token for `owner` inside a transaction; the secret is returned once, never stored. */
export async function createTokenFor(
  tx: TxContext,
  owner: Selectable<UsersTable>,
  input: { name: string; expires_at?: string | null; secret?: string; scopes?: string[] | null; repos?: string[] | null },
  actor: Viewer | null,
): Promise<CreatedToken> {
  const secret = input.secret ?? newTokenSecret();
  const row: TokenRow = {
    uuid: randomUUID(),
    user_uuid: owner.uuid,
    name: input.name,
    token_hash: hashSecret(secret),
    expires_at: validExpiry(input.expires_at),
    created_at: nowIso(),
    last_used_at: null,
    revoked_at: null,
    scopes: input.scopes === undefined || input.scopes === null ? null : JSON.stringify(input.scopes),
    repos: input.repos === undefined || input.repos === null ? null : JSON.stringify(input.repos),
  };
  await tx.db.insertInto('api_tokens').values(row).execute();
  await tx.emit({
    kind: 'token-created',
    scopes: [`user:${owner.uuid}`],
    actor: actor ? { uuid: actor.uuid, username: actor.username } : { uuid: owner.uuid, username: owner.username },
    payload: {
      token_uuid: row.uuid,
      name: row.name,
      username: owner.username,
      expires_at: row.expires_at,
    },
  });
  return { ...tokenToJson({ ...row, username: owner.username }), token: secret };
}

async function ownerFor(db: Kysely<DB>, viewer: Viewer, username: string | null | undefined) {
  const wanted = username?.trim().toLowerCase();
  // a username given but blank is bad input, not "the caller"
  if (wanted === '') throw badRequest('username must not be blank; omit it (or send null) for your own tokens.');
  if (wanted === undefined || wanted === viewer.username) {
    return db.selectFrom('users').selectAll().where('uuid', '=', viewer.uuid).executeTakeFirstOrThrow();
  }
  assertCanManageTokensOf(viewer, wanted);
  const row = await db.selectFrom('users').selectAll().where('username', '=', wanted).executeTakeFirst();
  if (!row) throw notFound('User');
  return row;
}

export async function createToken(
  deps: Deps,
  viewer: Viewer,
  input: {
    name: string;
    expires_at?: string | null;
    username?: string | null;
    scopes?: string[] | null;
    repos?: string[] | null;
  },
): Promise<CreatedToken> {
  const name = input.name.trim();
  if (!name) throw badRequest('name must not be blank.');
  validExpiry(input.expires_at);
  return command(
    deps,
    viewer,
    decide((db, v: Viewer) => ownerFor(db, v, input.username)),
    async (tx) => {
      const owner = tx.access;
      const { scopes, repos } = await tokenRestrictionFor(tx.db, viewer, input);
      return createTokenFor(tx, owner, { name, expires_at: input.expires_at, scopes, repos }, viewer);
    },
  );
}

export const TOKEN_ORDERINGS = ['created_at', '-created_at', 'name', '-name', 'last_used_at', '-last_used_at'] as const;

export async function listTokens(
  deps: Deps,
  viewer: Viewer,
  opts: { username?: string; name?: string; ordering?: string; offset: number; limit: number },
): Promise<TokenJson[]> {
  const ordering = opts.ordering ?? 'created_at';
  if (!(TOKEN_ORDERINGS as readonly string[]).includes(ordering)) {
    throw badRequest(`ordering must be one of ${TOKEN_ORDERINGS.join(', ')}.`);
  }
  const owner = await ownerFor(deps.db, viewer, opts.username);
  const column = ordering.replace(/^-/, '') as 'created_at' | 'name' | 'last_used_at';
  const direction = ordering.startsWith('-') ? 'desc' : 'asc';
  // One owner: their username is known, so the page is read from api_tokens alone (no join per
  // row, and a deep page skips index entries only).
  let q = deps.db.selectFrom('api_tokens as t').selectAll('t').where('t.user_uuid', '=', owner.uuid);
  if (opts.name !== undefined) q = q.where('t.name', '=', opts.name);
  // nulls (never used) sort last either way, the same on both dialects
  // (literal SQL, not bound values: the expression is the one api_tokens_user_last_used_idx indexes)
  if (column === 'last_used_at') q = q.orderBy(sql`case when t.last_used_at is null then 1 else 0 end`);
  const rows = await q.orderBy(`t.${column}`, direction).orderBy('t.uuid').offset(opts.offset).limit(opts.limit).execute();
  return rows.map((row) => tokenToJson({ ...row, username: owner.username }));
}

/** A token the viewer may see: their own, or anyone's for staff. Others are 404. */
async function visibleToken(db: Kysely<DB>, viewer: Viewer, uuid: string): Promise<TokenWithUser> {
  const row = await db
    .selectFrom('api_tokens as t')
    .innerJoin('users as u', 'u.uuid', 't.user_uuid')
    .selectAll('t')
    .select('u.username')
    .where('t.uuid', '=', uuid)
    .executeTakeFirst();
  if (!row || !tokenVisibleTo(viewer, row)) throw notFound('API token');
  return row;
}

/** A token the viewer may see and change (a write's target). */
const aToken = (uuid: string) => decide((db, v: Viewer) => visibleToken(db, v, uuid));

export async function getToken(deps: Deps, viewer: Viewer, uuid: string): Promise<TokenJson> {
  return tokenToJson(await visibleToken(deps.db, viewer, uuid));
}

export async function deleteToken(deps: Deps, viewer: Viewer, uuid: string): Promise<void> {
  await command(deps, viewer, aToken(uuid), async (tx) => {
    const row = tx.access;
    const deleted = await tx.db.deleteFrom('api_tokens').where('uuid', '=', uuid).executeTakeFirst();
    // A concurrent delete got there first: this one deleted nothing and reports nothing.
    if (Number(deleted.numDeletedRows) === 0) throw notFound('API token');
    await tx.emit({
      kind: 'token-deleted',
      scopes: [`user:${row.user_uuid}`],
      actor: { uuid: viewer.uuid, username: viewer.username },
      payload: { token_uuid: row.uuid, name: row.name, username: row.username },
    });
  });
}

/** Revoking is idempotent: a revoked token keeps its first revoked_at, and one event. */
export async function revokeToken(deps: Deps, viewer: Viewer, uuid: string): Promise<TokenJson> {
  return command(deps, viewer, aToken(uuid), async (tx) => {
    const row = tx.access;
    if (row.revoked_at !== null) return tokenToJson(row);
    const revoked_at = nowIso();
    const updated = await tx.db
      .updateTable('api_tokens')
      .set({ revoked_at })
      .where('uuid', '=', uuid)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    // A concurrent revoke (or delete) got there first: answer with what it left.
    if (Number(updated.numUpdatedRows) === 0) return tokenToJson(await visibleToken(tx.db, viewer, uuid));
    await tx.emit({
      kind: 'token-revoked',
      scopes: [`user:${row.user_uuid}`],
      actor: { uuid: viewer.uuid, username: viewer.username },
      payload: { token_uuid: row.uuid, name: row.name, username: row.username },
    });
    return tokenToJson({ ...row, revoked_at });
  });
}
