import { randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import { type Kysely, type Selectable, sql } from 'kysely';
import {
  assertCanChangeInvite,
  assertCanCreateInvite,
  assertCanSeeInvite,
  inviteLimitApplies,
  inviteListOwnerFilter,
} from '../access/index.ts';
import { containsText } from '../db/like.ts';
import type { SignupInvitesTable } from '../db/tables/limits.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { AppError, badRequest, conflict, notFound } from '../errors.ts';
import { actorOf, type EventKind } from '../events/service.ts';
import { command, type TxContext } from '../core/command.ts';
import { decide } from '../core/targets.ts';
import { takeFromWindow } from '../http/rate-counter.ts';
import { minAccountAgeMs, readSettings } from '../settings/service.ts';
import { canonicalTimestamp } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import type { CreateInviteBody, ListInvitesQuery, SignupInvite, UpdateInviteBody } from './schemas.ts';

export type InviteRow = Selectable<SignupInvitesTable>;
export type InviteJson = Static<typeof SignupInvite>;
type InviteView = InviteRow & {
  created_by_username: string;
  accepted_by_username: string | null;
};

/** The per-creator 24-hour invite quota is counted under this scope (no rule can name it). */
const INVITE_QUOTA_SCOPE = 'invite-quota';
const DAY_SECONDS = 86_400;

export function inviteStatus(row: InviteRow, nowMs: number): InviteJson['status'] {
  if (row.accepted_at !== null) return 'accepted';
  return Date.parse(row.expires_at) <= nowMs ? 'expired' : 'pending';
}

const inviteToJson = (row: InviteView, nowMs: number): InviteJson => ({
  uuid: row.uuid,
  email: row.email,
  expires_at: row.expires_at,
  status: inviteStatus(row, nowMs),
  created_at: row.created_at,
  created_by_username: row.created_by_username,
  accepted_at: row.accepted_at,
  accepted_by_uuid: row.accepted_by_uuid,
  accepted_by_username: row.accepted_by_username,
});

const invitesWithUsers = (db: Kysely<DB>) =>
  db
    .selectFrom('signup_invites as i')
    .innerJoin('users as c', 'c.uuid', 'i.created_by_uuid')
    .leftJoin('users as a', 'a.uuid', 'i.accepted_by_uuid')
    .selectAll('i')
    .select(['c.username as created_by_username', 'a.username as accepted_by_username']);

async function findInvite(db: Kysely<DB>, uuid: string): Promise<InviteView> {
  const row = await invitesWithUsers(db).where('i.uuid', '=', uuid).executeTakeFirst();
  if (!row) throw notFound('Signup invite');
  return row;
}

function futureTimestamp(value: string, nowMs: number): string {
  const canonical = canonicalTimestamp(value);
  if (!canonical) throw badRequest('expires_at must be an ISO 8601 timestamp.');
  if (Date.parse(canonical) <= nowMs) throw badRequest('expires_at must be in the future.');
  return canonical;
}

const normalEmail = (email: string | null | undefined): string | null => (email ? email.trim() : null);

async function emitInviteEvent(tx: TxContext, viewer: Viewer, kind: EventKind, invite: InviteJson, creatorUuid: string) {
  const scopes = [...new Set([`user:${creatorUuid}`, `user:${viewer.uuid}`])];
  await tx.emit({ kind, scopes, actor: actorOf(viewer), payload: { invite } });
}

export async function createInvite(deps: Deps, viewer: Viewer, input: Static<typeof CreateInviteBody>): Promise<InviteJson> {
  const nowMs = deps.clock.now().getTime();
  const expiresAt = futureTimestamp(input.expires_at, nowMs);
  const creating = decide(async (db, v: Viewer) => {
    const settings = await readSettings(db);
    await assertCanCreateInvite(db, v, settings, minAccountAgeMs(settings), nowMs);
    return settings;
  });
  return command(deps, viewer, creating, async (tx) => {
    const settings = tx.access;
    if (inviteLimitApplies(viewer)) {
      // Counted in this transaction: a create that fails later does not use up the quota, and a
      // deleted invite still counts (the quota is about invites made, not invites kept).
      const quota = await takeFromWindow(deps, INVITE_QUOTA_SCOPE, viewer.uuid, settings.signup_invite_max_per_24h, DAY_SECONDS);
      if (!quota.allowed) {
        throw new AppError(
          429,
          'rate_limited',
          `You may create at most ${quota.limit} signup invites in 24 hours. Retry in ${quota.resetSeconds} seconds.`,
          undefined,
          {
            'retry-after': String(quota.resetSeconds),
            'ratelimit-limit': String(quota.limit),
            'ratelimit-remaining': '0',
            'ratelimit-reset': String(quota.resetSeconds),
          },
        );
      }
    }
    const now = new Date(nowMs).toISOString();
    const row: InviteRow = {
      uuid: randomUUID(),
      email: normalEmail(input.email),
      expires_at: expiresAt,
      created_by_uuid: viewer.uuid,
      created_at: now,
      updated_at: now,
      accepted_at: null,
      accepted_by_uuid: null,
    };
    await tx.db.insertInto('signup_invites').values(row).execute();
    const json = inviteToJson({ ...row, created_by_username: viewer.username, accepted_by_username: null }, nowMs);
    await emitInviteEvent(tx, viewer, 'invite-created', json, viewer.uuid);
    return json;
  });
}

export async function getInvite(deps: Deps, viewer: Viewer, uuid: string): Promise<InviteJson> {
  const row = await findInvite(deps.db, uuid);
  assertCanSeeInvite(viewer, row);
  return inviteToJson(row, deps.clock.now().getTime());
}

function assertPending(row: InviteRow, nowMs: number): void {
  const status = inviteStatus(row, nowMs);
  if (status !== 'pending')
    throw conflict('invite_not_pending', `The invite is ${status}: only a pending invite can be changed.`);
}

/** An invite the viewer may change (its creator, or staff; 404 to anyone else). */
const changing = (uuid: string) =>
  decide(async (db, v: Viewer) => {
    const row = await findInvite(db, uuid);
    assertCanChangeInvite(v, row);
    return row;
  });

export async function updateInvite(
  deps: Deps,
  viewer: Viewer,
  uuid: string,
  input: Static<typeof UpdateInviteBody>,
): Promise<InviteJson> {
  const nowMs = deps.clock.now().getTime();
  const expiresAt = input.expires_at === undefined ? undefined : futureTimestamp(input.expires_at, nowMs);
  return command(deps, viewer, changing(uuid), async (tx) => {
    const row = tx.access;
    assertPending(row, nowMs);
    const changes: Partial<InviteRow> = {};
    if (expiresAt !== undefined) changes.expires_at = expiresAt;
    if (input.email !== undefined) changes.email = normalEmail(input.email);
    if (Object.keys(changes).length === 0) return inviteToJson(row, nowMs);
    changes.updated_at = new Date(nowMs).toISOString();
    // Guarded by "still pending": a signup accepting it concurrently wins or loses as a whole.
    const res = await tx.db
      .updateTable('signup_invites')
      .set(changes)
      .where('uuid', '=', uuid)
      .where('accepted_at', 'is', null)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) throw conflict('invite_not_pending', 'The invite was accepted meanwhile.');
    const json = inviteToJson({ ...row, ...changes }, nowMs);
    await emitInviteEvent(tx, viewer, 'invite-updated', json, row.created_by_uuid);
    return json;
  });
}

export async function deleteInvite(deps: Deps, viewer: Viewer, uuid: string): Promise<void> {
  const nowMs = deps.clock.now().getTime();
  await command(deps, viewer, changing(uuid), async (tx) => {
    const row = tx.access;
    assertPending(row, nowMs);
    const res = await tx.db
      .deleteFrom('signup_invites')
      .where('uuid', '=', uuid)
      .where('accepted_at', 'is', null)
      .executeTakeFirst();
    if (Number(res.numDeletedRows) !== 1) throw conflict('invite_not_pending', 'The invite was accepted meanwhile.');
    await emitInviteEvent(tx, viewer, 'invite-deleted', inviteToJson(row, nowMs), row.created_by_uuid);
  });
}

export async function listInvites(
  deps: Deps,
  viewer: Viewer,
  query: Static<typeof ListInvitesQuery>,
  page: { offset: number; limit: number },
): Promise<InviteJson[]> {
  const nowMs = deps.clock.now().getTime();
  const now = new Date(nowMs).toISOString();
  // The page's keys first (the filters and the order on signup_invites, joining the accepted user
  // only for a search), then their rows with names: a deep page skips index entries, never joins
  // the invites it skips (README "Performance").
  let q = deps.db.selectFrom('signup_invites as i').leftJoin('users as a', 'a.uuid', 'i.accepted_by_uuid').select('i.uuid');
  const owner = inviteListOwnerFilter(viewer);
  if (owner !== null) q = q.where('i.created_by_uuid', '=', owner);
  if (query.status === 'accepted') q = q.where('i.accepted_at', 'is not', null);
  if (query.status === 'pending') q = q.where('i.accepted_at', 'is', null).where('i.expires_at', '>', now);
  if (query.status === 'expired') q = q.where('i.accepted_at', 'is', null).where('i.expires_at', '<=', now);
  const search = query.search?.trim();
  if (search) {
    q = q.where((eb) =>
      eb.or([
        eb('i.uuid', '=', search.toLowerCase()),
        containsText('i.email', search),
        containsText('a.username', search),
        containsText('a.display_name', search),
        containsText('a.email', search),
      ]),
    );
  }
  const sort = query.sort ?? 'created_at';
  const desc = sort.startsWith('-');
  const key = sort.replace(/^-/, '');
  const dir = desc ? 'desc' : 'asc';
  if (key === 'email') q = q.orderBy(sql`coalesce(lower(i.email), '')`, dir);
  else q = q.orderBy(key === 'expires_at' ? 'i.expires_at' : 'i.created_at', dir);
  if (key !== 'created_at') q = q.orderBy('i.created_at', dir);
  const keys = q.orderBy('i.uuid', dir).offset(page.offset).limit(page.limit);
  let rows = invitesWithUsers(deps.db).where('i.uuid', 'in', keys);
  if (key === 'email') rows = rows.orderBy(sql`coalesce(lower(i.email), '')`, dir);
  else rows = rows.orderBy(key === 'expires_at' ? 'i.expires_at' : 'i.created_at', dir);
  if (key !== 'created_at') rows = rows.orderBy('i.created_at', dir);
  return (await rows.orderBy('i.uuid', dir).execute()).map((row) => inviteToJson(row, nowMs));
}
