import { sql } from 'kysely';
import { withTransaction } from '../db/tx.ts';
import type { Deps } from '../deps.ts';

/** The outcome of counting one request against the stored rule of its operation. */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  /** requests left in the window after this one (0 when refused) */
  remaining: number;
  /** whole seconds until the window has room for one more request */
  resetSeconds: number;
  /** when allowed: the time the request was counted at (to give it back, `refundRequest`) */
  atMs?: number;
}

// Namespace of the PostgreSQL advisory locks that serialise counting per (operation, caller).
const RATE_LOCK_CLASS = 7_401_010;
const SWEEP_EVERY_MS = 60_000;
const lastSweep = new WeakMap<Deps, number>();

/**
 * Counts a request of `caller` against the rule for `scope`, deciding before the operation runs.
 * Returns null when no rule applies (none stored, the rule disabled, or `rate_limits_enabled`
 * off). Otherwise an exact sliding window: the request is refused when `max_requests` requests
 * were counted in the last `window_seconds`; a refused request is not counted and writes nothing.
 * The rule and the setting are read on every call, so a change made on any instance applies to
 * the next request everywhere. Counting is race-free: per key, a PostgreSQL transaction-scoped
 * advisory lock (shared by every instance on the database), and SQLite's write lock (transactions
 * begin IMMEDIATE).
 */
export async function countRequest(deps: Deps, scope: string, caller: string): Promise<RateDecision | null> {
  const rule = await deps.db
    .selectFrom('rate_limit_rules as r')
    .innerJoin('site_settings as s', (j) => j.on('s.id', '=', 1))
    .select(['r.max_requests', 'r.window_seconds', 'r.is_enabled', 's.rate_limits_enabled'])
    .where('r.scope', '=', scope)
    .executeTakeFirst();
  if (!rule || rule.is_enabled !== 1 || rule.rate_limits_enabled !== 1) return null;
  const decision = await takeFromWindow(deps, scope, caller, rule.max_requests, rule.window_seconds);
  maybeSweep(deps);
  return decision;
}

/**
 * The sliding-window counter itself: refuses when `limit` requests of `caller` under `scope` were
 * counted in the last `windowSeconds`, else counts this one. Joins the transaction open in this
 * async context, if any (so a count rolls back with the write it guards).
 */
export async function takeFromWindow(
  deps: Deps,
  scope: string,
  caller: string,
  limit: number,
  windowSeconds: number,
): Promise<RateDecision> {
  const windowMs = windowSeconds * 1000;
  return withTransaction(deps.db, async ({ trx, nested }) => {
    if (deps.dialect === 'postgres') {
      // A count lost in a crash lets a caller a few requests over the limit at worst: not worth
      // waiting for a WAL flush on every instrumented request. Only when this transaction is our
      // own (joined ones, such as an invite's, keep the caller's durability).
      if (!nested) await sql`set local synchronous_commit = off`.execute(trx);
      await sql`select pg_advisory_xact_lock(${RATE_LOCK_CLASS}, hashtext(${`${scope}\n${caller}`}))`.execute(trx);
    }
    const nowMs = deps.clock.now().getTime();
    const windowStart = nowMs - windowMs;
    const inWindow = trx
      .selectFrom('rate_limit_hits')
      .where('scope', '=', scope)
      .where('caller', '=', caller)
      .where('at_ms', '>', windowStart);
    const stats = await inWindow
      .select((eb) => [eb.fn.countAll<number | string>().as('n'), eb.fn.min<number | null>('at_ms').as('oldest')])
      .executeTakeFirstOrThrow();
    const count = Number(stats.n);
    const secondsUntil = (atMs: number) => Math.max(1, Math.ceil((atMs + windowMs - nowMs) / 1000));
    if (count >= limit) {
      if (limit === 0) return { allowed: false, limit, remaining: 0, resetSeconds: windowSeconds };
      // Room comes back when the (count - limit + 1)-th oldest counted request leaves the window
      // (more than one when the rule was lowered after they were counted).
      const freeing = await inWindow
        .select('at_ms')
        .orderBy('at_ms')
        .offset(count - limit)
        .limit(1)
        .executeTakeFirstOrThrow();
      return { allowed: false, limit, remaining: 0, resetSeconds: secondsUntil(Number(freeing.at_ms)) };
    }
    await trx.insertInto('rate_limit_hits').values({ scope, caller, at_ms: nowMs }).execute();
    await trx
      .deleteFrom('rate_limit_hits')
      .where('scope', '=', scope)
      .where('caller', '=', caller)
      .where('at_ms', '<=', windowStart)
      .execute();
    const oldest = stats.oldest === null ? nowMs : Number(stats.oldest);
    return { allowed: true, limit, remaining: limit - count - 1, resetSeconds: secondsUntil(oldest), atMs: nowMs };
  });
}

/**
 * Gives back one request counted by `countRequest` (a sign-in that succeeded: only failed ones
 * count). Deletes one hit of that caller counted at `atMs`.
 */
export async function refundRequest(deps: Deps, scope: string, caller: string, atMs: number): Promise<void> {
  await sql`delete from rate_limit_hits where id = (select id from rate_limit_hits
      where scope = ${scope} and caller = ${caller} and at_ms = ${atMs} limit 1)`.execute(deps.db);
}

/** Hits under a scope that no rule names (the invite quota) are kept this long. */
export const UNRULED_WINDOW_SECONDS = 86_400;

/** Deletes counted requests that no rule's window covers any more (callers who never came back). */
export async function sweepRateLimitHits(deps: Deps): Promise<void> {
  const nowMs = deps.clock.now().getTime();
  await sql`delete from rate_limit_hits where at_ms + 1000 * coalesce(
      (select r.window_seconds from rate_limit_rules r where r.scope = rate_limit_hits.scope), ${UNRULED_WINDOW_SECONDS}) <= ${nowMs}`.execute(
    deps.db,
  );
}

function maybeSweep(deps: Deps): void {
  const now = Date.now();
  if (now - (lastSweep.get(deps) ?? 0) < SWEEP_EVERY_MS) return;
  lastSweep.set(deps, now);
  sweepRateLimitHits(deps).catch(() => {
    // best effort: the next sweep retries; stale rows never change a decision (counts look at the window only)
  });
}
