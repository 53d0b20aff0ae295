/**
 * Which events reach which hook (README "Webhooks"). One dispatcher per instance follows the event
 * store in id order from a cursor kept in the database (`hook_dispatch`), reading only settled
 * events (events/order.ts), and writes a delivery for every active hook an event matches, in the
 * same transaction that moves the cursor: an event is matched exactly once, across restarts,
 * crashes and instances (the cursor row is locked; on PostgreSQL another instance skips it). It
 * then asks the job queue to send each touched hook's first attempts (sender.ts). A hook Weft
 * disabled (failures, gone) still gets a delivery of each matching event, `skipped` with the
 * reason, so nothing is lost: a bulk redelivery sends them once the receiver is back.
 */
import { randomUUID } from 'node:crypto';
import type { Deps } from '../deps.ts';
import { EventFollower, type FollowStep, eventsAfterCursor } from '../events/follow.ts';
import { inTransaction } from '../core/transaction.ts';
import { type HookFilter, hookFilter, matches } from './filter.ts';
import { JOB_SEND } from './service.ts';

const BATCH = 500;

interface ActiveHook {
  uuid: string;
  scope: string;
  owner_uuid: string | null;
  since: number;
  filter: HookFilter;
  /** why Weft disabled it (failures, gone): its deliveries are written as skipped; null when active */
  skipReason: string | null;
  /** paused after a timeout (a sender lease with no holder, sender.ts): the sweep asks for it when the pause ends */
  pausedUntil: string | null;
}

/** The disabled reasons under which a hook still records (as skipped) what it would have sent. */
const SKIPPING = ['failures', 'gone'];

export class HookDispatcher extends EventFollower {
  /** Called after commit with each hook that got deliveries to send (the sender's kick). */
  onTouched: ((hookUuid: string) => void) | null = null;

  constructor(private readonly deps: Deps) {
    super(deps.bus, 'dispatching webhook deliveries');
  }

  protected step(): Promise<FollowStep> {
    return this.dispatchOnce();
  }

  /** One batch: 'more' when a full batch was read, 'unsettled' when committed events wait to settle. */
  async dispatchOnce(): Promise<FollowStep> {
    const { deps } = this;
    // no active hook: nothing to match, and no write (the cursor catches up when one is made)
    const any = await deps.db
      .selectFrom('hooks')
      .select('uuid')
      .where((eb) => eb.or([eb('active', '=', 1), eb('disabled_reason', 'in', SKIPPING)]))
      .limit(1)
      .executeTakeFirst();
    if (!any) return 'idle';
    const touchedHooks: string[] = [];
    const step = await inTransaction(deps, async (tx) => {
      touchedHooks.length = 0;
      let hooks: ActiveHook[] = [];
      const read = await eventsAfterCursor(tx.db, tx.dialect, 'hook_dispatch', BATCH, async (cursor) => {
        hooks = await this.activeHooks(tx.db);
        // events at or below every active hook's `since` match none of them: skip them at once
        return hooks.length === 0 ? null : Math.max(cursor, Math.min(...hooks.map((h) => h.since)));
      });
      if (typeof read === 'string') return read;
      const { events } = read;
      const last = Number(events[events.length - 1]!.id);
      const deliveries: Array<{
        uuid: string;
        hook_uuid: string;
        event_id: number;
        event_kind: string;
        ping: null;
        status: string;
        attempts: number;
        next_attempt_at: string | null;
        locked_until: null;
        skip_reason: string | null;
        created_at: string;
      }> = [];
      {
        // the owning team of each repo an event names (a team hook takes its repos' events)
        const teamOfRepo = new Map<string, string>();
        if (hooks.some((h) => h.scope === 'team')) {
          const repoUuids = new Set<string>();
          for (const e of events)
            for (const s of JSON.parse(e.scopes) as string[]) if (s.startsWith('repo:')) repoUuids.add(s.slice(5));
          if (repoUuids.size) {
            const owners = await tx.db
              .selectFrom('repos')
              .select(['uuid', 'owner_uuid'])
              .where('owner_kind', '=', 'team')
              .where('uuid', 'in', [...repoUuids])
              .execute();
            for (const o of owners) teamOfRepo.set(o.uuid, o.owner_uuid);
          }
        }
        const now = deps.clock.now().toISOString();
        for (const e of events) {
          const scopes = new Set(JSON.parse(e.scopes) as string[]);
          const teams = new Set<string>();
          for (const s of scopes) {
            if (s.startsWith('team:')) teams.add(s.slice(5));
            const team = s.startsWith('repo:') ? teamOfRepo.get(s.slice(5)) : undefined;
            if (team) teams.add(team);
          }
          let payload: Record<string, unknown> | null = null;
          for (const h of hooks) {
            if (Number(e.id) <= h.since) continue;
            const inScope =
              h.scope === 'site' || (h.scope === 'team' ? teams.has(h.owner_uuid!) : scopes.has(`repo:${h.owner_uuid}`));
            if (!inScope) continue;
            payload ??= JSON.parse(e.payload) as Record<string, unknown>;
            if (!matches(h.filter, e.kind, payload)) continue;
            deliveries.push({
              uuid: randomUUID(),
              hook_uuid: h.uuid,
              event_id: Number(e.id),
              event_kind: e.kind,
              ping: null,
              status: h.skipReason === null ? 'pending' : 'skipped',
              attempts: 0,
              next_attempt_at: h.skipReason === null ? now : null,
              locked_until: null,
              skip_reason: h.skipReason,
              created_at: now,
            });
          }
        }
      }
      for (let i = 0; i < deliveries.length; i += 200) {
        await tx.db
          .insertInto('hook_deliveries')
          .values(deliveries.slice(i, i + 200))
          .execute();
      }
      await tx.db.updateTable('hook_dispatch').set({ last_event_id: last }).where('id', '=', 1).execute();
      // a paused hook is not asked now: the sweep asks for it when its pause ends
      const nowIso = deps.clock.now().toISOString();
      const paused = new Set(hooks.filter((h) => h.pausedUntil !== null && h.pausedUntil > nowIso).map((h) => h.uuid));
      const touched = deliveries.filter((d) => d.skip_reason === null && !paused.has(d.hook_uuid));
      for (const hookUuid of new Set(touched.map((d) => d.hook_uuid))) {
        await deps.jobs.enqueue(tx.db, { kind: JOB_SEND, payload: { hook_uuid: hookUuid } });
        touchedHooks.push(hookUuid);
      }
      return events.length === BATCH ? 'more' : 'idle';
    });
    // committed: this instance starts sending at once (the jobs carry it to any instance, across a crash)
    for (const hookUuid of touchedHooks) this.onTouched?.(hookUuid);
    return step;
  }

  private async activeHooks(db: Deps['db']): Promise<ActiveHook[]> {
    const rows = await db
      .selectFrom('hooks')
      .select([
        'uuid',
        'scope',
        'owner_uuid',
        'since_event_id',
        'events',
        'branch_filter',
        'active',
        'disabled_reason',
        'sender_until',
        'sender_token',
      ])
      .where((eb) => eb.or([eb('active', '=', 1), eb('disabled_reason', 'in', SKIPPING)]))
      .execute();
    const out: ActiveHook[] = [];
    for (const r of rows) {
      try {
        out.push({
          uuid: r.uuid,
          scope: r.scope,
          owner_uuid: r.owner_uuid,
          since: Number(r.since_event_id),
          filter: hookFilter(JSON.parse(r.events) as string[], r.branch_filter),
          skipReason: r.active === 1 ? null : r.disabled_reason,
          pausedUntil: r.sender_token === null ? r.sender_until : null,
        });
      } catch {
        // a stored filter that no longer compiles matches nothing
      }
    }
    return out;
  }
}
