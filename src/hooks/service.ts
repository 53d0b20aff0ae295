/**
 * Webhooks (README "Webhooks"): hooks at the repo, team and site level, their secrets, and the
 * deliveries API. Every change is one transaction that decides access inside it with the row
 * lock and emits its event there (site hooks emit none). Delivery itself is in dispatch.ts (which
 * events reach which hook) and sender.ts (the attempts).
 */
import { randomUUID } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import { type Kysely, type Selectable, sql } from 'kysely';
import { type HookOwner, type HookScopeRef, assertNotArchived, requireHookScope } from '../access/index.ts';
import type { HookAttemptsTable, HookDeliveriesTable, HooksTable } from '../db/tables/hooks.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { AppError, badRequest, notFound } from '../errors.ts';
import { command } from '../core/command.ts';
import { decide } from '../core/targets.ts';
import type { TxContext } from '../core/transaction.ts';
import { EVENTS_PER_TRANSACTION, actorOf } from '../events/service.ts';
import type { PageParams } from '../http/paging.ts';
import type { Viewer } from '../viewer.ts';
import { checkEvents, globToRegExp } from './filter.ts';
import type { CreateHookBody, Delivery, Hook, UpdateHookBody } from './schemas.ts';
import { hookUrlWarnings } from './warnings.ts';
import { checkSecret, generateSecret } from './signing.ts';

export type HookRow = Selectable<HooksTable>;
export type DeliveryRow = Selectable<HookDeliveriesTable>;
export type AttemptRow = Selectable<HookAttemptsTable>;
export type HookJson = Static<typeof Hook>;
export type DeliveryJson = Static<typeof Delivery>;

/** How long the secret before a rotation keeps signing. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;
/** Deliveries are kept this long (a periodic job removes older ones). */
export const DELIVERY_RETENTION_MS = 30 * 24 * 3600_000;

export const JOB_SEND = 'hook-send';
export const JOB_RETRY = 'hook-retry';

function checkUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw badRequest('url must be an absolute http:// or https:// URL.');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw badRequest('url must be an http:// or https:// URL.');
  if (parsed.username || parsed.password) throw badRequest('url must not carry credentials; sign with the secret instead.');
  return url;
}

function checkBranchFilter(filter: string | null | undefined): string | null | undefined {
  if (filter === undefined || filter === null) return filter;
  globToRegExp(filter);
  return filter;
}

export function hookToJson(row: HookRow, createdBy: string): HookJson {
  return {
    uuid: row.uuid,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    branch_filter: row.branch_filter,
    active: row.active === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
    created_by_username: createdBy,
    last_delivery_at: row.last_delivery_at,
    last_status: row.last_status as HookJson['last_status'],
    consecutive_failures: row.consecutive_failures,
    disabled_reason: row.disabled_reason as HookJson['disabled_reason'],
  };
}

const hookSummary = (row: HookRow) => ({
  uuid: row.uuid,
  url: row.url,
  events: JSON.parse(row.events) as string[],
  active: row.active === 1,
});

/** The event scope of a hook's owner, or null for a site hook (which emits no events). */
export const hookScopeOf = (row: { scope: string; owner_uuid: string | null }): string | null =>
  row.scope === 'site' ? null : `${row.scope}:${row.owner_uuid}`;

/** Emits a hook event in the hook's repo or team scope; site hooks emit none. */
export async function emitHookEvent(
  tx: TxContext,
  viewer: Viewer | null,
  row: HookRow,
  kind: 'hook-created' | 'hook-updated' | 'hook-deleted' | 'hook-disabled',
  extra: Record<string, unknown> = {},
): Promise<void> {
  const scope = hookScopeOf(row);
  if (scope === null) return;
  const payload = kind === 'hook-disabled' ? { hook_uuid: row.uuid, ...extra } : { hook: hookSummary(row), ...extra };
  await tx.emit({
    kind,
    scopes: [scope],
    actor: viewer ? actorOf(viewer) : null,
    payload: { [`${row.scope}_uuid`]: row.owner_uuid, ...payload },
  });
}

async function usernameOf(db: Kysely<DB>, uuid: string): Promise<string> {
  const u = await db.selectFrom('users').select('username').where('uuid', '=', uuid).executeTakeFirst();
  return u?.username ?? '';
}

async function findHook(db: Kysely<DB>, owner: HookOwner, uuid: string): Promise<HookRow> {
  let q = db.selectFrom('hooks').selectAll().where('uuid', '=', uuid).where('scope', '=', owner.scope);
  q = owner.uuid === null ? q.where('owner_uuid', 'is', null) : q.where('owner_uuid', '=', owner.uuid);
  const row = await q.executeTakeFirst();
  if (!row) throw notFound('Hook');
  return row;
}

/** The highest event id a transaction of this moment could already have committed: a new hook takes later ones. */
async function sinceEventId(tx: TxContext): Promise<number> {
  if (tx.dialect === 'postgres') {
    const r = await sql<{ base: string }>`select pg_current_xact_id()::text::bigint * ${EVENTS_PER_TRANSACTION} as base`.execute(
      tx.db,
    );
    return Number(r.rows[0]!.base) + EVENTS_PER_TRANSACTION - 1;
  }
  const r = await tx.db
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('top'))
    .executeTakeFirst();
  return Number(r?.top ?? 0);
}

/** The write target of a hooks path: its owner, decided and locked in the write's transaction. */
const hookTarget = (ref: HookScopeRef, item = false) => decide((db, viewer) => requireHookScope(db, viewer, ref, true, item));

export async function listHooks(deps: Deps, viewer: Viewer, ref: HookScopeRef, p: PageParams): Promise<HookJson[]> {
  const owner = await requireHookScope(deps.db, viewer, ref, false);
  let q = deps.db
    .selectFrom('hooks as h')
    .leftJoin('users as u', 'u.uuid', 'h.created_by_uuid')
    .selectAll('h')
    .select('u.username')
    .where('h.scope', '=', owner.scope);
  q = owner.uuid === null ? q.where('h.owner_uuid', 'is', null) : q.where('h.owner_uuid', '=', owner.uuid);
  const rows = await q.orderBy('h.created_at').orderBy('h.uuid').limit(p.limit).offset(p.offset).execute();
  return rows.map((r) => hookToJson(r, r.username ?? ''));
}

export async function getHook(deps: Deps, viewer: Viewer, ref: HookScopeRef, uuid: string): Promise<HookJson> {
  const owner = await requireHookScope(deps.db, viewer, ref, false);
  const row = await findHook(deps.db, owner, uuid);
  return hookToJson(row, await usernameOf(deps.db, row.created_by_uuid));
}

export async function createHook(
  deps: Deps,
  viewer: Viewer,
  ref: HookScopeRef,
  input: Static<typeof CreateHookBody>,
): Promise<HookJson & { secret: string; warnings: string[] }> {
  const url = checkUrl(input.url);
  const events = checkEvents(input.events);
  const branchFilter = checkBranchFilter(input.branch_filter) ?? null;
  const secret = input.secret === undefined ? generateSecret() : checkSecret(input.secret);
  const created = await command(deps, viewer, hookTarget(ref), async (tx) => {
    const owner = tx.access;
    const now = deps.clock.now().toISOString();
    const row: HookRow = {
      uuid: randomUUID(),
      scope: owner.scope,
      owner_uuid: owner.uuid,
      url,
      events: JSON.stringify(events),
      branch_filter: branchFilter,
      active: input.active === false ? 0 : 1,
      secret,
      previous_secret: null,
      previous_secret_until: null,
      retired_secrets: '[]',
      created_by_uuid: viewer.uuid,
      since_event_id: 0,
      last_delivery_at: null,
      last_status: null,
      consecutive_failures: 0,
      disabled_reason: null,
      sender_until: null,
      sender_token: null,
      created_at: now,
      updated_at: now,
    };
    await emitHookEvent(tx, viewer, row, 'hook-created');
    row.since_event_id = await sinceEventId(tx);
    await tx.db.insertInto('hooks').values(row).execute();
    return { ...hookToJson(row, viewer.username), secret };
  });
  return { ...created, warnings: await hookUrlWarnings(deps, url) };
}

export async function updateHook(
  deps: Deps,
  viewer: Viewer,
  ref: HookScopeRef,
  uuid: string,
  input: Static<typeof UpdateHookBody>,
): Promise<HookJson> {
  const url = input.url === undefined ? undefined : checkUrl(input.url);
  const events = input.events === undefined ? undefined : checkEvents(input.events);
  const branchFilter = checkBranchFilter(input.branch_filter);
  return command(deps, viewer, hookTarget(ref, true), async (tx) => {
    const owner = tx.access;
    const row = await lockHook(tx, owner, uuid);
    const changes: Partial<HookRow> = {};
    if (url !== undefined && url !== row.url) changes.url = url;
    if (events !== undefined && JSON.stringify(events) !== row.events) changes.events = JSON.stringify(events);
    if (branchFilter !== undefined && branchFilter !== row.branch_filter) changes.branch_filter = branchFilter;
    if (input.active === true && (row.active !== 1 || row.disabled_reason !== null || row.consecutive_failures !== 0)) {
      Object.assign(changes, { active: 1, disabled_reason: null, consecutive_failures: 0 });
      // a pause after timeouts (a sender lease with no holder: sender.ts) ends with the re-enabling
      if (row.sender_token === null) changes.sender_until = null;
    }
    if (input.active === false && row.active !== 0) changes.active = 0;
    const fields = Object.keys(changes).filter((f) => f !== 'sender_until');
    if (fields.length === 0) return hookToJson(row, await usernameOf(tx.db, row.created_by_uuid));
    const updated: HookRow = { ...row, ...changes, updated_at: deps.clock.now().toISOString() };
    await tx.db
      .updateTable('hooks')
      .set({ ...changes, updated_at: updated.updated_at })
      .where('uuid', '=', row.uuid)
      .execute();
    await emitHookEvent(tx, viewer, updated, 'hook-updated', { fields });
    // re-enabled: its pending first attempts go out again
    if (changes.active === 1) await deps.jobs.enqueue(tx.db, { kind: JOB_SEND, payload: { hook_uuid: row.uuid } });
    return hookToJson(updated, await usernameOf(tx.db, row.created_by_uuid));
  });
}

/**
 * The hook row, locked for the rest of the transaction (PostgreSQL; SQLite runs one writer at a
 * time); then 403 repo_archived on an archived repo unless `archivedLater` (404 before 403).
 */
async function lockHook(tx: TxContext, owner: HookOwner, uuid: string, archivedLater = false): Promise<HookRow> {
  let q = tx.db.selectFrom('hooks').selectAll().where('uuid', '=', uuid).where('scope', '=', owner.scope);
  q = owner.uuid === null ? q.where('owner_uuid', 'is', null) : q.where('owner_uuid', '=', owner.uuid);
  if (tx.dialect === 'postgres') q = q.forUpdate();
  const row = await q.executeTakeFirst();
  if (!row) throw notFound('Hook');
  if (owner.archived && !archivedLater) assertNotArchived({ repo: { is_archived: 1 } });
  return row;
}

export async function deleteHook(deps: Deps, viewer: Viewer, ref: HookScopeRef, uuid: string): Promise<void> {
  await command(deps, viewer, hookTarget(ref, true), async (tx) => {
    const owner = tx.access;
    const row = await lockHook(tx, owner, uuid);
    const deliveries = tx.db.selectFrom('hook_deliveries').select('uuid').where('hook_uuid', '=', row.uuid);
    await tx.db.deleteFrom('hook_attempts').where('delivery_uuid', 'in', deliveries).execute();
    await tx.db.deleteFrom('hook_deliveries').where('hook_uuid', '=', row.uuid).execute();
    await tx.db.deleteFrom('hooks').where('uuid', '=', row.uuid).execute();
    await emitHookEvent(tx, viewer, row, 'hook-deleted');
  });
}

export async function rotateSecret(deps: Deps, viewer: Viewer, ref: HookScopeRef, uuid: string): Promise<{ secret: string }> {
  return command(deps, viewer, hookTarget(ref, true), async (tx) => {
    const owner = tx.access;
    const row = await lockHook(tx, owner, uuid);
    const now = deps.clock.now();
    const nowIso = now.toISOString();
    const secret = generateSecret();
    // every secret still inside its overlap keeps signing until its own end (a second rotation drops none)
    const retired = (JSON.parse(row.retired_secrets || '[]') as Array<{ secret: string; until: string }>).filter(
      (r) => r.until > nowIso,
    );
    if (row.previous_secret && row.previous_secret_until && row.previous_secret_until > nowIso)
      retired.unshift({ secret: row.previous_secret, until: row.previous_secret_until });
    await tx.db
      .updateTable('hooks')
      .set({
        secret,
        previous_secret: row.secret,
        previous_secret_until: new Date(now.getTime() + ROTATION_OVERLAP_MS).toISOString(),
        retired_secrets: JSON.stringify(retired),
        updated_at: nowIso,
      })
      .where('uuid', '=', row.uuid)
      .execute();
    await emitHookEvent(tx, viewer, row, 'hook-updated', { fields: ['secret'] });
    return { secret };
  });
}

// ---------------------------------------------------------------- deliveries

export function deliveryToJson(row: DeliveryRow, last: AttemptRow | undefined): DeliveryJson {
  return {
    uuid: row.uuid,
    event_id: row.event_id === null ? null : String(row.event_id),
    event_kind: row.event_kind,
    status: row.status as DeliveryJson['status'],
    skip_reason: row.skip_reason,
    attempts: row.attempts,
    next_attempt_at: row.next_attempt_at,
    created_at: row.created_at,
    last_attempt: last
      ? {
          at: last.at,
          duration_ms: last.duration_ms,
          request_headers: JSON.parse(last.request_headers) as Record<string, string>,
          request_body: last.request_body,
          response_status: last.response_status,
          response_headers: last.response_headers === null ? null : (JSON.parse(last.response_headers) as Record<string, string>),
          response_body: last.response_body,
          error: last.error,
        }
      : null,
  };
}

async function withLastAttempts(db: Kysely<DB>, rows: DeliveryRow[]): Promise<DeliveryJson[]> {
  const tried = rows.filter((r) => r.attempts > 0);
  const last = new Map<string, AttemptRow>();
  if (tried.length) {
    const attempts = await db
      .selectFrom('hook_attempts')
      .selectAll()
      .where((eb) => eb.or(tried.map((r) => eb.and([eb('delivery_uuid', '=', r.uuid), eb('n', '=', r.attempts)]))))
      .execute();
    for (const a of attempts) last.set(a.delivery_uuid, a);
  }
  return rows.map((r) => deliveryToJson(r, last.get(r.uuid)));
}

export async function listDeliveries(
  deps: Deps,
  viewer: Viewer,
  ref: HookScopeRef,
  uuid: string,
  status: string | undefined,
  p: PageParams,
): Promise<DeliveryJson[]> {
  const owner = await requireHookScope(deps.db, viewer, ref, false);
  const hook = await findHook(deps.db, owner, uuid);
  let q = deps.db.selectFrom('hook_deliveries').selectAll().where('hook_uuid', '=', hook.uuid);
  if (status !== undefined) q = q.where('status', '=', status);
  const rows = await q.orderBy('id', 'desc').limit(p.limit).offset(p.offset).execute();
  return withLastAttempts(deps.db, rows);
}

async function findDelivery(db: Kysely<DB>, hookUuid: string, deliveryUuid: string): Promise<DeliveryRow> {
  const row = await db
    .selectFrom('hook_deliveries')
    .selectAll()
    .where('uuid', '=', deliveryUuid)
    .where('hook_uuid', '=', hookUuid)
    .executeTakeFirst();
  if (!row) throw notFound('Delivery');
  return row;
}

export async function getDelivery(
  deps: Deps,
  viewer: Viewer,
  ref: HookScopeRef,
  uuid: string,
  deliveryUuid: string,
): Promise<DeliveryJson> {
  const owner = await requireHookScope(deps.db, viewer, ref, false);
  const hook = await findHook(deps.db, owner, uuid);
  const [json] = await withLastAttempts(deps.db, [await findDelivery(deps.db, hook.uuid, deliveryUuid)]);
  return json!;
}

const hookInactive = () =>
  new AppError(409, 'hook_inactive', 'The hook is not active: re-enable it (PUT with active: true) first.');

/** A new attempt of a delivery now, with the same webhook-id (also of a successful or failed one). */
export async function redeliver(
  deps: Deps,
  viewer: Viewer,
  ref: HookScopeRef,
  uuid: string,
  deliveryUuid: string,
): Promise<{ delivery_uuid: string }> {
  return command(deps, viewer, hookTarget(ref, true), async (tx) => {
    const owner = tx.access;
    const hook = await lockHook(tx, owner, uuid, true);
    const delivery = await findDelivery(tx.db, hook.uuid, deliveryUuid);
    if (owner.archived) assertNotArchived({ repo: { is_archived: 1 } });
    if (hook.active !== 1) throw hookInactive();
    const now = deps.clock.now().toISOString();
    await tx.db
      .updateTable('hook_deliveries')
      .set({ status: 'pending', next_attempt_at: now })
      .where('uuid', '=', delivery.uuid)
      .execute();
    await deps.jobs.enqueue(tx.db, { kind: JOB_RETRY, payload: { delivery_uuid: delivery.uuid } });
    return { delivery_uuid: delivery.uuid };
  });
}

/** The most deliveries one bulk redelivery puts back in line (the oldest first). */
export const BULK_REDELIVER_MAX = 1000;

/**
 * Puts a hook's failed or skipped deliveries (created at or after `since`) back in line: they
 * become pending with no `next_attempt_at`, and the hook's sender sends them with its first
 * attempts, in delivery (event) order, as one job (`hook-send`). At most BULK_REDELIVER_MAX per call.
 */
export async function redeliverMany(
  deps: Deps,
  viewer: Viewer,
  ref: HookScopeRef,
  uuid: string,
  input: { status: 'failed' | 'skipped'; since?: string | undefined },
): Promise<{ count: number }> {
  let since: string | undefined;
  if (input.since !== undefined) {
    const at = Date.parse(input.since);
    if (!Number.isFinite(at)) throw badRequest('since must be a date-time such as 2026-01-31T12:00:00Z.');
    since = new Date(at).toISOString();
  }
  return command(deps, viewer, hookTarget(ref), async (tx) => {
    const owner = tx.access;
    const hook = await lockHook(tx, owner, uuid);
    if (hook.active !== 1) throw hookInactive();
    let q = tx.db
      .selectFrom('hook_deliveries')
      .select('id')
      .where('hook_uuid', '=', hook.uuid)
      .where('status', '=', input.status);
    if (since !== undefined) q = q.where('created_at', '>=', since);
    const ids = (await q.orderBy('id').limit(BULK_REDELIVER_MAX).execute()).map((r) => r.id);
    if (ids.length === 0) return { count: 0 };
    // a pause after timeouts (sender.ts) ends: the receiver is said to be back
    await tx.db
      .updateTable('hooks')
      .set({ sender_until: null })
      .where('uuid', '=', hook.uuid)
      .where('sender_token', 'is', null)
      .execute();
    for (let i = 0; i < ids.length; i += 500) {
      await tx.db
        .updateTable('hook_deliveries')
        .set({ status: 'pending', next_attempt_at: null, locked_until: null })
        .where('id', 'in', ids.slice(i, i + 500))
        .execute();
    }
    await deps.jobs.enqueue(tx.db, { kind: JOB_SEND, payload: { hook_uuid: hook.uuid } });
    return { count: ids.length };
  });
}

/** A delivery of a `ping` event, in line with the hook's other first attempts. */
export async function ping(deps: Deps, viewer: Viewer, ref: HookScopeRef, uuid: string): Promise<{ delivery_uuid: string }> {
  return command(deps, viewer, hookTarget(ref, true), async (tx) => {
    const owner = tx.access;
    const hook = await lockHook(tx, owner, uuid);
    if (hook.active !== 1) throw hookInactive();
    const now = deps.clock.now().toISOString();
    const deliveryUuid = randomUUID();
    const event = {
      id: null,
      kind: 'ping',
      scopes: [],
      actor: actorOf(viewer),
      payload: { hook: hookSummary(hook), zen: 'Signed, retried, recorded.' },
      created_at: now,
    };
    await tx.db
      .insertInto('hook_deliveries')
      .values({
        uuid: deliveryUuid,
        hook_uuid: hook.uuid,
        event_id: null,
        event_kind: 'ping',
        ping: JSON.stringify(event),
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        locked_until: null,
        created_at: now,
      })
      .execute();
    await deps.jobs.enqueue(tx.db, { kind: JOB_SEND, payload: { hook_uuid: hook.uuid } });
    return { delivery_uuid: deliveryUuid };
  });
}
