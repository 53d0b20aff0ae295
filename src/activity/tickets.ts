import { randomUUID } from 'node:crypto';
import type { Deps } from '../deps.ts';
import { badRequest, notFound, unauthorized } from '../errors.ts';
import { command } from '../core/command.ts';
import { decide } from '../core/targets.ts';
import { hashSecret, newTokenSecret } from '../tokens/secret.ts';
import type { Viewer } from '../viewer.ts';
import { canReadStreamScope, parseStreamScope } from '../events/scopes.ts';

/** README "Web interface": a stream ticket opens its stream within this time of being made. */
export const TICKET_TTL_MS = 60_000;

export interface TicketJson {
  ticket: string;
  expires_at: string;
}

/** The credential a ticket was made with; the stream it opens lasts while that credential does. */
export interface TicketCredential {
  kind: 'token' | 'session';
  uuid: string;
}

/**
 * Makes a ticket for one scope (and optionally one kind): 404 when the caller may not read the
 * scope, as for the stream itself. Expired tickets are swept in the same transaction.
 */
export async function createTicket(
  deps: Deps,
  viewer: Viewer,
  credential: TicketCredential,
  input: { scope: string; kind?: string },
): Promise<TicketJson> {
  parseStreamScope(input.scope);
  // Decided in the write's transaction, with its connection (the scope readers read deps.db).
  const readable = decide(async (db, v: Viewer) => {
    if (!(await canReadStreamScope({ ...deps, db }, v, input.scope))) throw notFound('Scope');
  });
  const secret = newTokenSecret().replace(/^weft_/, 'weft_tk_');
  const now = Date.now();
  const expires_at = new Date(now + TICKET_TTL_MS).toISOString();
  await command(deps, viewer, readable, async (tx) => {
    await tx.db
      .deleteFrom('stream_tickets')
      .where('expires_at', '<', new Date(now - TICKET_TTL_MS).toISOString())
      .execute();
    await tx.db
      .insertInto('stream_tickets')
      .values({
        uuid: randomUUID(),
        secret_hash: hashSecret(secret),
        user_uuid: viewer.uuid,
        credential_kind: credential.kind,
        credential_uuid: credential.uuid,
        scope: input.scope,
        kind: input.kind ?? null,
        created_at: new Date(now).toISOString(),
        expires_at,
      })
      .execute();
  });
  return { ticket: secret, expires_at };
}

/** The caller a credential stands for while it is valid (not revoked, not expired, user active). */
export async function credentialViewer(deps: Deps, credential: TicketCredential): Promise<Viewer | null> {
  const now = Date.now();
  if (credential.kind === 'token') {
    const row = await deps.db
      .selectFrom('api_tokens as t')
      .innerJoin('users as u', 'u.uuid', 't.user_uuid')
      .select(['t.uuid as credential_uuid', 't.revoked_at', 't.expires_at', 'u.uuid', 'u.username', 'u.is_staff', 'u.is_active'])
      .where('t.uuid', '=', credential.uuid)
      .executeTakeFirst();
    if (!row || row.revoked_at !== null || row.is_active !== 1) return null;
    if (row.expires_at !== null && Date.parse(row.expires_at) <= now) return null;
    return { uuid: row.uuid, username: row.username, isStaff: row.is_staff === 1, tokenUuid: row.credential_uuid };
  }
  const row = await deps.db
    .selectFrom('web_sessions as s')
    .innerJoin('users as u', 'u.uuid', 's.user_uuid')
    .select(['s.uuid as credential_uuid', 's.revoked_at', 's.expires_at', 'u.uuid', 'u.username', 'u.is_staff', 'u.is_active'])
    .where('s.uuid', '=', credential.uuid)
    .executeTakeFirst();
  if (!row || row.revoked_at !== null || row.is_active !== 1 || Date.parse(row.expires_at) <= now) return null;
  return { uuid: row.uuid, username: row.username, isStaff: row.is_staff === 1, tokenUuid: row.credential_uuid };
}

/**
 * Opens a ticket: its caller, scope and kind. 401 when the ticket is unknown or past its 60 s, or
 * its credential has ended; 400 when the request names another scope or kind than the ticket.
 * A ticket may open its stream more than once within its 60 s (an EventSource reconnecting).
 */
export async function redeemTicket(
  deps: Deps,
  secret: string,
  asked: { scope: string; kind?: string },
): Promise<{ viewer: Viewer; credential: TicketCredential; scope: string; kind: string | null }> {
  const row =
    secret.length <= 200
      ? await deps.db.selectFrom('stream_tickets').selectAll().where('secret_hash', '=', hashSecret(secret)).executeTakeFirst()
      : undefined;
  if (!row || Date.parse(row.expires_at) <= Date.now()) throw unauthorized('The stream ticket is unknown or expired.');
  if (row.scope !== asked.scope) throw badRequest('The stream ticket is for another scope.');
  if ((row.kind ?? undefined) !== asked.kind) throw badRequest('The stream ticket is for another kind.');
  const credential: TicketCredential = {
    kind: row.credential_kind === 'session' ? 'session' : 'token',
    uuid: row.credential_uuid,
  };
  const viewer = await credentialViewer(deps, credential);
  if (!viewer) throw unauthorized('The credential the stream ticket was made with has ended.');
  return { viewer, credential, scope: row.scope, kind: row.kind };
}
