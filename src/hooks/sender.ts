/**
 * The attempts (README "Webhooks"). A hook's first attempts go out one at a time in delivery
 * order (event order) by whichever worker holds the hook's sender lease (`hooks.sender_until`);
 * jobs (`hook-send`) only ask a worker to take it, so a job that finds it held returns at once and
 * the holder, after releasing it, looks again. Retries and redeliveries are `hook-retry` jobs, one
 * per attempt, each claiming its delivery (`locked_until`) so two workers never send it at once.
 * A failure is recorded at once, in one transaction with the delivery's and the hook's state;
 * successful first attempts in groups (SuccessGroup: up to 25, within 50 ms).
 *
 * Fairness (one hung receiver must not delay another hook): attempts take a slot of the
 * instance's FairSlots (net.ts: two per hook, a quarter of the slots for degraded hooks); a retry
 * job hands its attempt over and returns at once, so attempts never hold the job queue; and a
 * hook whose first attempt timed out pauses its first attempts for a back-off (its sender lease
 * is kept until then, with no holder) instead of sending the next one into the same timeout.
 * Every attempt uses the allow-list and the creator's access in force at that moment: a batch
 * reuses them (for at most a second) only while the event bus has told of no event of a kind
 * that changes access or settings (ACCESS_KINDS) since they were read (a hint without kinds, from
 * a reconnection, counts as one), so no cache outlives a visibility, membership or setting change.
 */
import { randomUUID } from 'node:crypto';
import { hookCreator } from '../access/hooks.ts';
import { type EventViewer, eventViewer } from '../access/events.ts';
import type { Deps } from '../deps.ts';
import { inTransaction } from '../core/transaction.ts';
import { type EventRecord, type EventRow, eventFromRow, getEventRow } from '../events/service.ts';
import { readSettings } from '../settings/service.ts';
import type { Viewer } from '../viewer.ts';
import { ADDRESS_NOT_ALLOWED, type HookHttp, type HttpOutcome, type Lane } from './net.ts';
import { DELIVERY_RETENTION_MS, type DeliveryRow, type HookRow, JOB_RETRY, JOB_SEND, emitHookEvent } from './service.ts';
import { hubSignature, standardSignature } from './signing.ts';
import { weftVersion } from '../version.ts';

/** Delays before retries 1..8, in seconds (then the delivery is failed). */
export const RETRY_DELAYS_S = [10, 60, 300, 1800, 7200, 21600, 43200, 86400];
export const MAX_ATTEMPTS = RETRY_DELAYS_S.length + 1;
/** Failed attempts in a row (since the last success) that disable a hook. */
export const DISABLE_AFTER_FAILURES = 20;
const BATCH = 50;
/** The pause of a hook's first attempts after a timeout: doubling from 10 s up to 5 min (±20 %). */
const PAUSE_BASE_MS = 10_000;
const PAUSE_MAX_MS = 300_000;

const USER_AGENT = `Weft-Hookshot/${weftVersion()}`;

type Result = 'sent' | 'disabled' | 'timeout';

/**
 * Event kinds whose commit may change what a hook's creator reads (visibility, membership, a
 * user's activity or staff flag, a team's state) or the allow-list (site settings).
 */
export const ACCESS_KINDS: ReadonlySet<string> = new Set([
  'user-updated',
  'team-updated',
  'member-added',
  'member-updated',
  'member-removed',
  'repo-updated',
  'repo-deleted',
  'settings-updated',
]);
/** The longest a batch reuses the creator's access. */
const ACCESS_REUSE_MS = 1000;

/** The creator's access as read at `at`, when the access epoch was `epoch`. */
interface AccessCache {
  who: Creator | null;
  epoch: number;
  at: number;
}

/** A hook's creator and the event viewer that shows events as they may see them. */
interface Creator {
  viewer: Viewer;
  show: EventViewer;
}

/** The delay before the next attempt after failed attempt `n`, with ±20 % jitter and at least a Retry-After. */
export function retryDelayMs(n: number, outcome: HttpOutcome, now: number): number {
  const base = RETRY_DELAYS_S[n - 1]! * 1000;
  let delay = base * (0.8 + Math.random() * 0.4);
  if (outcome.status === 429 || outcome.status === 503) {
    const header = outcome.headers?.['retry-after'];
    if (header !== undefined) {
      const seconds = /^\d+$/.test(header.trim()) ? Number(header) * 1000 : Date.parse(header) - now;
      if (Number.isFinite(seconds) && seconds > delay) delay = Math.min(seconds, 7 * 86_400_000);
    }
  }
  return Math.round(delay);
}

/**
 * The secrets a delivery is signed with now: the current one, then every retired one still
 * inside its 24-hour overlap (newest first).
 */
export function signingSecrets(hook: HookRow, now: Date): string[] {
  const nowIso = now.toISOString();
  const out = [hook.secret];
  if (hook.previous_secret && hook.previous_secret_until && hook.previous_secret_until > nowIso) out.push(hook.previous_secret);
  for (const r of JSON.parse(hook.retired_secrets || '[]') as Array<{ secret: string; until: string }>) {
    if (r.until > nowIso && !out.includes(r.secret)) out.push(r.secret);
  }
  return out;
}

const isSuccess = (o: HttpOutcome): boolean => o.error === null && o.status !== null && o.status >= 200 && o.status < 300;

/** How many successful first attempts, or how long (ms), a group gathers before it is recorded. */
const GROUP_MAX = 25;
const GROUP_MS = 50;

/**
 * Successful first attempts of one hook, recorded together in one transaction (a multi-row
 * insert and two updates) at most GROUP_MS after the first of them, and before anything else of
 * the hook is recorded; a failure is recorded alone, after the group.
 */
class SuccessGroup {
  private items: Array<{
    delivery: DeliveryRow;
    headers: Record<string, string>;
    outcome: HttpOutcome;
    at: string;
    body: string;
  }> = [];
  private since = 0;

  constructor(
    private readonly sender: HookSender,
    private readonly hook: HookRow,
  ) {}

  add(delivery: DeliveryRow, headers: Record<string, string>, outcome: HttpOutcome, at: string, body: string): void {
    if (this.items.length === 0) this.since = Date.now();
    this.items.push({ delivery, headers, outcome, at, body });
  }

  due(_now: number): boolean {
    return this.items.length >= GROUP_MAX || (this.items.length > 0 && Date.now() - this.since >= GROUP_MS);
  }

  async flush(): Promise<void> {
    if (this.items.length === 0) return;
    const items = this.items;
    this.items = [];
    await this.sender.recordSuccesses(this.hook, items);
  }
}

export class HookSender {
  /** Set on shutdown: a sending loop stops between attempts (what is left is sent later). */
  stopping = false;
  /** A claim outlives the longest attempt (WEBHOOK_TIMEOUT_MS) with room to record it. */
  private readonly leaseMs: number;
  /** Hooks whose last attempt on this instance timed out, with how many in a row. */
  private readonly timeouts = new Map<string, number>();

  constructor(
    private readonly deps: Deps,
    private readonly http: HookHttp,
  ) {
    this.leaseMs = http.timeoutMs + 5_000;
  }

  register(): void {
    // the jobs only start the work: a slow receiver must not hold the job queue's batch (and every
    // other job behind it); the hook's lease, the delivery's claim and the sweep carry it across a crash
    this.deps.jobs.register(JOB_SEND, async (payload) => this.kick(String(payload.hook_uuid)));
    this.deps.jobs.register(JOB_RETRY, async (payload) => this.retrySoon(String(payload.delivery_uuid)));
  }

  private now(): Date {
    return this.deps.clock.now();
  }

  /** The allow-list in force now, for the attempt about to be made. */
  private async refreshAllowList(): Promise<void> {
    const settings = await readSettings(this.deps.db);
    this.http.setAllowList(JSON.parse(settings.webhook_allowed_hosts) as string[]);
  }

  /** A hook is degraded while its last attempts failed: it then shares a quarter of the slots (net.ts). */
  private laneOf(hook: HookRow): Lane {
    return { hook: hook.uuid, degraded: hook.consecutive_failures > 0 || this.timeouts.has(hook.uuid) };
  }

  private readonly retrying = new Map<string, Promise<void>>();

  /** Starts a retry on this instance without waiting for it (once at a time per delivery). */
  retrySoon(deliveryUuid: string): void {
    if (this.retrying.has(deliveryUuid) || this.stopping) return;
    const run = this.retry(deliveryUuid)
      .catch((err) => console.error(`weft: retrying webhook delivery ${deliveryUuid} failed`, err))
      .finally(() => this.retrying.delete(deliveryUuid));
    this.retrying.set(deliveryUuid, run);
  }

  private readonly draining = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();

  /** Starts draining a hook on this instance (once at a time per hook; asked again, it drains once more). */
  kick(hookUuid: string): void {
    if (this.draining.has(hookUuid)) {
      this.again.add(hookUuid);
      return;
    }
    const run = (async () => {
      try {
        do {
          this.again.delete(hookUuid);
          await this.drain(hookUuid);
        } while (this.again.has(hookUuid) && !this.stopping);
      } catch (err) {
        console.error(`weft: sending webhook deliveries of hook ${hookUuid} failed`, err);
      } finally {
        this.draining.delete(hookUuid);
      }
    })();
    this.draining.set(hookUuid, run);
  }

  /** Waits for the drains running on this instance (after `stopping` is set they end between attempts). */
  async settle(): Promise<void> {
    while (this.draining.size || this.retrying.size) await Promise.all([...this.draining.values(), ...this.retrying.values()]);
  }

  /** Sends a hook's pending first attempts in order while this worker holds its sender lease. */
  async drain(hookUuid: string): Promise<void> {
    const { db } = this.deps;
    for (;;) {
      const token = randomUUID();
      const now = this.now();
      const taken = await db
        .updateTable('hooks')
        .set({ sender_until: new Date(now.getTime() + this.leaseMs).toISOString(), sender_token: token })
        .where('uuid', '=', hookUuid)
        .where('active', '=', 1)
        .where((eb) => eb.or([eb('sender_until', 'is', null), eb('sender_until', '<', now.toISOString())]))
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) === 0) return;
      try {
        await this.sendFirstAttempts(hookUuid, token);
      } finally {
        await db
          .updateTable('hooks')
          .set({ sender_until: null, sender_token: null })
          .where('uuid', '=', hookUuid)
          .where('sender_token', '=', token)
          .execute();
      }
      // a job that came while the lease was held returned at once: look again after releasing it
      const more = await db
        .selectFrom('hook_deliveries')
        .select('id')
        .where('hook_uuid', '=', hookUuid)
        .where('status', '=', 'pending')
        .where((eb) => eb.or([eb('attempts', '=', 0), eb('next_attempt_at', 'is', null)]))
        .limit(1)
        .executeTakeFirst();
      if (!more || this.stopping) return;
    }
  }

  /**
   * Sends, in delivery order, the hook's deliveries in line: first attempts, and deliveries a
   * bulk redelivery put back in line (pending with no `next_attempt_at`).
   */
  private async sendFirstAttempts(hookUuid: string, token: string): Promise<void> {
    const { db } = this.deps;
    let leaseUntil = this.now().getTime() + this.leaseMs - 1000;
    const access: { current: AccessCache | null } = { current: null };
    for (;;) {
      const hook = await db.selectFrom('hooks').selectAll().where('uuid', '=', hookUuid).executeTakeFirst();
      if (this.stopping || !hook || hook.active !== 1 || hook.sender_token !== token) return;
      const batch = await db
        .selectFrom('hook_deliveries')
        .selectAll()
        .where('hook_uuid', '=', hookUuid)
        .where('status', '=', 'pending')
        .where((eb) => eb.or([eb('attempts', '=', 0), eb('next_attempt_at', 'is', null)]))
        .orderBy('id')
        .limit(BATCH)
        .execute();
      if (batch.length === 0) return;
      const current: HookRow = hook;
      // the whole batch claimed, and its events read, at once
      let now = this.now();
      let claimUntil = now.getTime() + this.leaseMs;
      const claimed = new Set(
        (
          await db
            .updateTable('hook_deliveries')
            .set({ locked_until: new Date(claimUntil).toISOString() })
            .where(
              'id',
              'in',
              batch.map((d) => d.id),
            )
            .where('status', '=', 'pending')
            .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now.toISOString())]))
            .returning('uuid')
            .execute()
        ).map((r) => r.uuid),
      );
      const eventIds = batch.filter((d) => d.event_id !== null).map((d) => Number(d.event_id));
      const events = new Map<number, EventRow>();
      if (eventIds.length) {
        for (const row of await db.selectFrom('events').selectAll().where('id', 'in', eventIds).execute())
          events.set(Number(row.id), row);
      }
      const group = new SuccessGroup(this, current);
      try {
        for (const [i, delivery] of batch.entries()) {
          if (this.stopping) return;
          if (!claimed.has(delivery.uuid)) continue;
          // inside the slot, just before sending: keep the hook's lease and the claims longer than
          // one attempt can take (extended every few seconds only); false when the lease was lost
          const keep = async (): Promise<boolean> => {
            now = this.now();
            if (Math.min(leaseUntil, claimUntil) - now.getTime() >= this.http.timeoutMs + 1000) return true;
            leaseUntil = claimUntil = now.getTime() + this.leaseMs;
            const kept = await db
              .updateTable('hooks')
              .set({ sender_until: new Date(leaseUntil).toISOString() })
              .where('uuid', '=', hookUuid)
              .where('sender_token', '=', token)
              .executeTakeFirst();
            if (Number(kept.numUpdatedRows) === 0) return false;
            await db
              .updateTable('hook_deliveries')
              .set({ locked_until: new Date(claimUntil).toISOString() })
              .where(
                'uuid',
                'in',
                batch.slice(i).map((d) => d.uuid),
              )
              .where('status', '=', 'pending')
              .execute();
            return true;
          };
          const result = await this.attempt(current, delivery, keep, { events, group, access });
          if (result === 'disabled' || result === null) return;
          if (result === 'timeout') {
            await group.flush();
            await this.pause(hookUuid, token);
            return;
          }
          if (group.due(this.now().getTime())) await group.flush();
        }
      } finally {
        await group.flush();
      }
    }
  }

  /**
   * After a timeout the hook's first attempts wait a back-off holding no slot: its sender lease is
   * kept until then with no holder, and the sweep asks for the hook again when it ends.
   */
  private async pause(hookUuid: string, token: string): Promise<void> {
    const n = this.timeouts.get(hookUuid) ?? 1;
    const ms = Math.min(PAUSE_MAX_MS, PAUSE_BASE_MS * 2 ** Math.min(n - 1, 10)) * (0.8 + Math.random() * 0.4);
    await this.deps.db
      .updateTable('hooks')
      .set({ sender_until: new Date(this.now().getTime() + Math.round(ms)).toISOString(), sender_token: null })
      .where('uuid', '=', hookUuid)
      .where('sender_token', '=', token)
      .execute();
  }

  /** Bumped by every event bus hint that may change access (wired by background.ts). */
  private accessEpoch = 0;

  /** Notes a hint of new events: one of an access-changing kind, or of unknown kinds, ends every reuse. */
  noteEvents(kinds: readonly string[] | null): void {
    if (kinds === null || kinds.some((k) => ACCESS_KINDS.has(k))) this.accessEpoch++;
  }

  /**
   * The creator's access for an attempt about to be sent: `cache.who` while it is under a second
   * old and no access-changing event was hinted since it was read; else read again, with the
   * allow-list, and kept in `cache`.
   */
  private async currentCreator(hook: HookRow, cache: { current: AccessCache | null }): Promise<Creator | null> {
    const c = cache.current;
    if (c && c.epoch === this.accessEpoch && Date.now() - c.at < ACCESS_REUSE_MS) return c.who;
    // the epoch first: a change hinted while the access is read ends this reuse too
    const epoch = this.accessEpoch;
    const who = await this.creatorOf(hook);
    await this.refreshAllowList();
    cache.current = { who, epoch, at: Date.now() };
    return who;
  }

  /** The hook's creator as they are now, with a fresh event viewer; null when they lost access. */
  private async creatorOf(hook: HookRow): Promise<Creator | null> {
    const viewer = await hookCreator(this.deps, hook);
    return viewer && { viewer, show: eventViewer(this.deps, viewer) };
  }

  /** Claims a delivery for one attempt; `due` also requires it to be due (a retry job). */
  private async claim(uuid: string, lease: string, now: Date, due: boolean): Promise<boolean> {
    let q = this.deps.db
      .updateTable('hook_deliveries')
      .set({ locked_until: lease })
      .where('uuid', '=', uuid)
      .where('status', '=', 'pending')
      .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now.toISOString())]));
    if (due) q = q.where('next_attempt_at', '<=', new Date(now.getTime() + 1000).toISOString());
    const r = await q.executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** A retry or redelivery of one delivery (job `hook-retry`, run by retrySoon). */
  async retry(deliveryUuid: string): Promise<void> {
    const { db } = this.deps;
    const now = this.now();
    let lease = new Date(now.getTime() + this.leaseMs).toISOString();
    if (!(await this.claim(deliveryUuid, lease, now, true))) return;
    const delivery = await db.selectFrom('hook_deliveries').selectAll().where('uuid', '=', deliveryUuid).executeTakeFirst();
    const hook = delivery && (await db.selectFrom('hooks').selectAll().where('uuid', '=', delivery.hook_uuid).executeTakeFirst());
    if (!delivery || !hook) return;
    if (hook.active !== 1) {
      await db
        .updateTable('hook_deliveries')
        .set({ status: 'failed', next_attempt_at: null, locked_until: null })
        .where('uuid', '=', deliveryUuid)
        .execute();
      return;
    }
    // inside the slot: the claim renewed from this worker's own lease (a lost claim sends nothing)
    const keep = async (): Promise<boolean> => {
      const next = new Date(this.now().getTime() + this.leaseMs).toISOString();
      const r = await db
        .updateTable('hook_deliveries')
        .set({ locked_until: next })
        .where('uuid', '=', deliveryUuid)
        .where('status', '=', 'pending')
        .where('locked_until', '=', lease)
        .executeTakeFirst();
      lease = next;
      return Number(r.numUpdatedRows) === 1;
    };
    await this.attempt(hook, delivery, keep);
  }

  /** The event as the hook's creator may see it now; null when it is hidden from them. */
  private async eventFor(
    delivery: DeliveryRow,
    creator: Creator,
    preloaded?: Map<number, EventRow>,
  ): Promise<Record<string, unknown> | null> {
    if (delivery.ping !== null) return JSON.parse(delivery.ping) as Record<string, unknown>;
    const row = preloaded?.get(Number(delivery.event_id)) ?? (await getEventRow(this.deps.db, Number(delivery.event_id)));
    if (!row) return null;
    const shown: EventRecord | null = await creator.show(eventFromRow(row));
    return shown as unknown as Record<string, unknown> | null;
  }

  /**
   * One attempt of a claimed delivery, made in a slot of the hook's lane and recorded; null when
   * `keep` found the claim lost while it waited for the slot (nothing sent, nothing recorded).
   * The creator's access, the event and the allow-list are read in the slot, just before sending.
   */
  private async attempt(
    hook: HookRow,
    delivery: DeliveryRow,
    keep: () => Promise<boolean>,
    batch?: { events: Map<number, EventRow>; group: SuccessGroup; access: { current: AccessCache | null } },
  ): Promise<Result | null> {
    const n = delivery.attempts + 1;
    type Made =
      | { kind: 'lost' }
      | { kind: 'creator_lost_access' }
      | { kind: 'hidden' }
      | { kind: 'sent'; headers: Record<string, string>; outcome: HttpOutcome; body: string };
    const made = await this.http.inSlot(this.laneOf(hook), async (): Promise<Made> => {
      if (!(await keep())) return { kind: 'lost' };
      const creator = await this.currentCreator(hook, batch?.access ?? { current: null });
      if (creator === null) return { kind: 'creator_lost_access' };
      const event = await this.eventFor(delivery, creator, batch?.events);
      if (event === null) return { kind: 'hidden' };
      const body = JSON.stringify({ hook_uuid: hook.uuid, event });
      const now = this.now();
      const timestamp = Math.floor(now.getTime() / 1000);
      const signatures = signingSecrets(hook, now).map((secret) => standardSignature(secret, delivery.uuid, timestamp, body));
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-id': delivery.uuid,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatures.join(' '),
        'x-weft-event': delivery.event_kind,
        'x-weft-hook': hook.uuid,
        'x-weft-attempt': String(n),
        'x-hub-signature-256': hubSignature(hook.secret, body),
      };
      const outcome = await this.http.send(hook.url, headers, body);
      if (outcome.error === 'timeout') this.timeouts.set(hook.uuid, (this.timeouts.get(hook.uuid) ?? 0) + 1);
      else this.timeouts.delete(hook.uuid);
      return { kind: 'sent', headers, outcome, body };
    });
    if (made.kind === 'lost') return null;
    if (made.kind === 'creator_lost_access') {
      await batch?.group.flush();
      await inTransaction(this.deps, (tx) => this.disableIn(tx, hook, 'creator_lost_access'));
      return 'disabled';
    }
    if (made.kind === 'hidden') {
      await batch?.group.flush();
      await this.record(
        hook,
        delivery,
        n,
        {},
        {
          status: null,
          headers: null,
          body: null,
          error: 'event_not_visible',
          durationMs: 0,
        },
      );
      return 'sent';
    }
    const { headers, outcome, body } = made;
    if (batch && n === 1 && isSuccess(outcome)) {
      batch.group.add(delivery, headers, outcome, this.now().toISOString(), body);
      return 'sent';
    }
    await batch?.group.flush();
    const result = await this.record(hook, delivery, n, headers, outcome, body);
    return result === 'sent' && outcome.error === 'timeout' ? 'timeout' : result;
  }

  /** Records a group of successful first attempts in one transaction. */
  async recordSuccesses(
    hook: HookRow,
    items: Array<{ delivery: DeliveryRow; headers: Record<string, string>; outcome: HttpOutcome; at: string; body: string }>,
  ): Promise<void> {
    await inTransaction(this.deps, async (tx) => {
      const kept = new Set(
        (
          await tx.db
            .updateTable('hook_deliveries')
            .set({ status: 'success', attempts: 1, next_attempt_at: null, locked_until: null })
            .where(
              'uuid',
              'in',
              items.map((i) => i.delivery.uuid),
            )
            .returning('uuid')
            .execute()
        ).map((r) => r.uuid),
      );
      const rows = items
        .filter((i) => kept.has(i.delivery.uuid))
        .map((i) => ({
          delivery_uuid: i.delivery.uuid,
          n: 1,
          at: i.at,
          duration_ms: i.outcome.durationMs,
          request_headers: JSON.stringify(i.headers),
          request_body: i.body,
          response_status: i.outcome.status,
          response_headers: i.outcome.headers === null ? null : JSON.stringify(i.outcome.headers),
          response_body: i.outcome.body,
          error: null,
        }));
      if (rows.length === 0) return;
      await tx.db
        .insertInto('hook_attempts')
        .values(rows)
        .onConflict((oc) => oc.columns(['delivery_uuid', 'n']).doNothing())
        .execute();
      await tx.db
        .updateTable('hooks')
        .set({ last_delivery_at: rows.at(-1)!.at, last_status: 'success', consecutive_failures: 0 })
        .where('uuid', '=', hook.uuid)
        .execute();
    });
  }

  /** Records an attempt and its consequences in one transaction. */
  private async record(
    hook: HookRow,
    delivery: DeliveryRow,
    n: number,
    requestHeaders: Record<string, string>,
    outcome: HttpOutcome,
    requestBody: string | null = null,
  ): Promise<Result> {
    const { deps } = this;
    const now = this.now();
    const nowIso = now.toISOString();
    const ok = isSuccess(outcome);
    const gone = outcome.status === 410;
    const final =
      ok || gone || outcome.error === ADDRESS_NOT_ALLOWED || outcome.error === 'event_not_visible' || n >= MAX_ATTEMPTS;
    const next = final ? null : new Date(now.getTime() + retryDelayMs(n, outcome, now.getTime())).toISOString();
    let disabledFor: 'gone' | 'failures' | null = null;
    await inTransaction(deps, async (tx) => {
      const kept = await tx.db
        .updateTable('hook_deliveries')
        .set({ status: ok ? 'success' : final ? 'failed' : 'pending', attempts: n, next_attempt_at: next, locked_until: null })
        .where('uuid', '=', delivery.uuid)
        .executeTakeFirst();
      // the hook (and its deliveries) were deleted meanwhile: nothing to record
      if (Number(kept.numUpdatedRows) === 0) return;

      await tx.db
        .insertInto('hook_attempts')
        .values({
          delivery_uuid: delivery.uuid,
          n,
          at: nowIso,
          duration_ms: outcome.durationMs,
          request_headers: JSON.stringify(requestHeaders),
          request_body: requestBody,
          response_status: outcome.status,
          response_headers: outcome.headers === null ? null : JSON.stringify(outcome.headers),
          response_body: outcome.body,
          error: outcome.error,
        })
        .onConflict((oc) => oc.columns(['delivery_uuid', 'n']).doNothing())
        .execute();
      if (outcome.error === 'event_not_visible') return;
      const updated = await tx.db
        .updateTable('hooks')
        .set((eb) => ({
          last_delivery_at: nowIso,
          last_status: ok ? 'success' : 'failed',
          consecutive_failures: ok ? 0 : eb('consecutive_failures', '+', 1),
        }))
        .where('uuid', '=', hook.uuid)
        .returning(['consecutive_failures', 'active'])
        .executeTakeFirst();
      if (!updated || updated.active !== 1 || ok) return;
      if (gone) disabledFor = 'gone';
      else if (updated.consecutive_failures >= DISABLE_AFTER_FAILURES) disabledFor = 'failures';
      if (disabledFor) await this.disableIn(tx, hook, disabledFor);
      else if (next !== null) {
        await deps.jobs.enqueue(tx.db, {
          kind: JOB_RETRY,
          payload: { delivery_uuid: delivery.uuid },
          runAt: next,
          dedupeKey: `hook-retry:${delivery.uuid}:${n}`,
        });
      }
    });
    return disabledFor ? 'disabled' : 'sent';
  }

  private async disableIn(
    tx: Parameters<Parameters<typeof inTransaction>[1]>[0],
    hook: HookRow,
    reason: 'gone' | 'failures' | 'creator_lost_access',
  ): Promise<void> {
    const nowIso = this.now().toISOString();
    const r = await tx.db
      .updateTable('hooks')
      .set({ active: 0, disabled_reason: reason, updated_at: nowIso, sender_until: null, sender_token: null })
      .where('uuid', '=', hook.uuid)
      .where('active', '=', 1)
      .executeTakeFirst();
    if (Number(r.numUpdatedRows) === 0) return;
    // nothing more is sent: what was waiting is failed
    await tx.db
      .updateTable('hook_deliveries')
      .set({ status: 'failed', next_attempt_at: null, locked_until: null })
      .where('hook_uuid', '=', hook.uuid)
      .where('status', '=', 'pending')
      .execute();
    await emitHookEvent(tx, null, hook, 'hook-disabled', { reason });
  }

  /**
   * Asks for the first attempts of hooks whose sender lease ran out with work left (a crashed
   * worker, or the end of a pause), and for retries that are due and unclaimed (a retry job runs
   * its attempt after the job has ended, so a crash there leaves the delivery to this sweep).
   */
  async sweep(): Promise<void> {
    const nowIso = this.now().toISOString();
    const stuck = await this.deps.db
      .selectFrom('hooks as h')
      .select('h.uuid')
      .where('h.active', '=', 1)
      .where((eb) => eb.or([eb('h.sender_until', 'is', null), eb('h.sender_until', '<', nowIso)]))
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom('hook_deliveries as d')
            .select('d.id')
            .whereRef('d.hook_uuid', '=', 'h.uuid')
            .where('d.status', '=', 'pending')
            .where((e) => e.or([e('d.attempts', '=', 0), e('d.next_attempt_at', 'is', null)]))
            .where((e) => e.or([e('d.locked_until', 'is', null), e('d.locked_until', '<', nowIso)])),
        ),
      )
      .execute();
    for (const h of stuck) {
      await this.deps.jobs.enqueue(this.deps.db, {
        kind: JOB_SEND,
        payload: { hook_uuid: h.uuid },
        dedupeKey: `hook-kick:${h.uuid}`,
      });
    }
    // a retry is due a few seconds after its job would have run it
    const late = new Date(this.now().getTime() - 5000).toISOString();
    const retries = await this.deps.db
      .selectFrom('hook_deliveries as d')
      .innerJoin('hooks as h', 'h.uuid', 'd.hook_uuid')
      .select(['d.uuid', 'd.attempts'])
      .where('h.active', '=', 1)
      .where('d.status', '=', 'pending')
      .where('d.attempts', '>', 0)
      .where('d.next_attempt_at', '<', late)
      .where((e) => e.or([e('d.locked_until', 'is', null), e('d.locked_until', '<', nowIso)]))
      .limit(500)
      .execute();
    for (const d of retries) {
      await this.deps.jobs.enqueue(this.deps.db, {
        kind: JOB_RETRY,
        payload: { delivery_uuid: d.uuid },
        dedupeKey: `hook-retry:${d.uuid}:${d.attempts}`,
      });
    }
  }

  /** Removes deliveries (and their attempts) older than the retention. */
  async prune(): Promise<number> {
    const cutoff = new Date(this.now().getTime() - DELIVERY_RETENTION_MS).toISOString();
    return inTransaction(this.deps, async (tx) => {
      const old = tx.db.selectFrom('hook_deliveries').select('uuid').where('created_at', '<', cutoff);
      await tx.db.deleteFrom('hook_attempts').where('delivery_uuid', 'in', old).execute();
      const r = await tx.db.deleteFrom('hook_deliveries').where('created_at', '<', cutoff).executeTakeFirst();
      return Number(r.numDeletedRows);
    });
  }
}
