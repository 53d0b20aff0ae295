import { performance } from 'node:perf_hooks';
import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../errors.ts';
import type { Viewer } from '../viewer.ts';
import { type EventRecord, eventFromRow } from '../events/service.ts';
import { readableBound } from '../events/order.ts';
import { canReadScope, parseScope } from '../events/scopes.ts';
import { type EventViewer, eventViewer, scopeGatedViewer } from '../access/events.ts';

export interface CursorQuery {
  scope: string;
  kind?: string;
  before_id?: string;
  after_id?: string;
  perPage: number;
  /**
   * Scopes the caller is already known to read (a page that resolved the repo and pull once):
   * no access check is made again for them (docs/architecture.md "The read path").
   */
  known?: readonly string[];
  /** the readable bound the page already read (`resumeState`, web/live.ts): not read again */
  settled?: number | null;
}

export interface CursorPage {
  results: EventRecord[];
  /** cursor values, or null when nothing newer / older exists now */
  nextAfterId: string | null;
  previousBeforeId: string | null;
}

async function requireReadableScope(deps: Deps, viewer: Viewer, scope: string): Promise<void> {
  parseScope(scope);
  if (!(await canReadScope(deps, viewer, scope))) throw notFound('Scope');
}

/**
 * docs/behaviour.md "Events and scopes": a page is always ascending by id. No cursor: the newest events; before_id: the
 * ones just before; after_id: the ones just after.
 */
export async function eventPage(deps: Deps, viewer: Viewer, q: CursorQuery): Promise<CursorPage> {
  if (q.before_id !== undefined && q.after_id !== undefined) {
    throw badRequest('Use either before_id or after_id, not both.');
  }
  const known = q.known ?? [];
  if (known.includes(q.scope)) parseScope(q.scope);
  else await requireReadableScope(deps, viewer, q.scope);
  // One bound for the whole page, so its rows and its cursors agree; it waits for the events
  // committed before this read to settle (read-your-writes, events/order.ts).
  const settled = q.settled !== undefined ? q.settled : await readableBound(deps.db, deps.dialect);
  // Filters and order on the scope's index entries (scope, kind, event_id) alone, never on the
  // joined event row, so a page reads about per_page entries at any depth; the page's event rows
  // are read by id after (README "Performance").
  const base = () => {
    let query = deps.db.selectFrom('event_scopes as s').where('s.scope', '=', q.scope);
    if (q.kind) query = query.where('s.kind', '=', q.kind);
    // Only settled events (events/order.ts), so a cursor never passes an id that commits later.
    if (settled !== null) query = query.where('s.event_id', '<', settled);
    return query;
  };
  // The page's ids from the index (a subquery with its own order and limit), then those event
  // rows by id in the same statement, in ascending order.
  let keys;
  if (q.after_id !== undefined) {
    keys = base().select('s.event_id').where('s.event_id', '>', Number(q.after_id)).orderBy('s.event_id', 'asc').limit(q.perPage);
  } else {
    let query = base().select('s.event_id');
    if (q.before_id !== undefined) query = query.where('s.event_id', '<', Number(q.before_id));
    keys = query.orderBy('s.event_id', 'desc').limit(q.perPage);
  }
  const rows = await deps.db.selectFrom('events').selectAll().where('id', 'in', keys).orderBy('id', 'asc').execute();
  // Each event as this caller may see it (README "Event privacy"); one about a thing hidden from
  // the caller is left out, so a page may hold fewer than per_page events. Its cursors are the
  // ends of the rows read, so paging never skips or repeats an event.
  const show = eventViewer(deps, viewer, [q.scope, ...known]);
  const results = await shownEvents(show, rows.map(eventFromRow));
  // ordered, so the planner walks the index from the bound (unordered, PostgreSQL may scan the table)
  const exists = async (op: '<' | '>', bound: number) =>
    (await base()
      .select('s.event_id')
      .where('s.event_id', op, bound)
      .orderBy('s.event_id', op === '<' ? 'desc' : 'asc')
      .limit(1)
      .executeTakeFirst()) !== undefined;
  const nearest = async (op: '<=' | '>=', bound: number): Promise<number | null> => {
    const row = await base()
      .select('s.event_id')
      .where('s.event_id', op, bound)
      .orderBy('s.event_id', op === '<=' ? 'desc' : 'asc')
      .limit(1)
      .executeTakeFirst();
    return row === undefined ? null : Number(row.event_id);
  };
  let previousBeforeId: number | null = null;
  let nextAfterId: number | null = null;
  if (rows.length > 0) {
    // The page's own ends are the cursors, when something lies beyond them.
    const first = Number(rows[0]!.id);
    const last = Number(rows.at(-1)!.id);
    // Below the fixed bound nothing new can appear, so a short page, or the newest page, already
    // says that nothing lies beyond its far end: no query for that side.
    const short = rows.length < q.perPage;
    const olderPossible = q.after_id !== undefined || !short;
    const newerPossible = q.after_id !== undefined ? !short : q.before_id !== undefined;
    if (olderPossible && (await exists('<', first))) previousBeforeId = first;
    if (newerPossible && (await exists('>', last))) nextAfterId = last;
  } else if (q.after_id !== undefined) {
    // Past the newest end: previous leads to the nearest events at or before the cursor.
    const x = Number(q.after_id);
    const newest = await nearest('<=', x);
    if (newest !== null) previousBeforeId = newest + 1;
    if (await exists('>', x)) nextAfterId = x;
  } else if (q.before_id !== undefined) {
    // Past the oldest end: next leads to the nearest events at or after the cursor.
    const x = Number(q.before_id);
    const oldest = await nearest('>=', x);
    if (oldest !== null) nextAfterId = oldest - 1;
    if (await exists('<', x)) previousBeforeId = x;
  }
  return {
    results,
    previousBeforeId: previousBeforeId === null ? null : String(previousBeforeId),
    nextAfterId: nextAfterId === null ? null : String(nextAfterId),
  };
}

/** The events the caller may see, as they may see them, in order. */
export async function shownEvents(show: EventViewer, events: EventRecord[]): Promise<EventRecord[]> {
  const shown: EventRecord[] = [];
  // one at a time: the checks are memoised, and a page must not take the whole pool
  for (const event of events) {
    const e = await show(event);
    if (e) shown.push(e);
  }
  return shown;
}

/** One event, as the caller may see it; 404 when it is hidden from them (README "Event privacy"). */
export async function getEvent(deps: Deps, viewer: Viewer, id: string): Promise<EventRecord> {
  if (!/^\d{1,16}$/.test(id)) throw notFound('Event');
  const row = await deps.db.selectFrom('events').selectAll().where('id', '=', Number(id)).executeTakeFirst();
  if (!row) throw notFound('Event');
  const shown = await eventViewer(deps, viewer)(eventFromRow(row));
  if (!shown) throw notFound('Event');
  return shown;
}

/** One row of a feed's scan: an event's id and its scopes (JSON text) only. */
export interface ScanRow {
  id: number | string;
  scopes: string;
}

/** The deepest an activity feed's `page` reaches: page × per_page up to this many events (README "Activity feeds"). */
export const MAX_FEED_DEPTH = 1_000;
/** The most events one activity-feed request scans (ids and scopes); past it the page ends early. */
export const FEED_SCAN_BUDGET = 5_000;
/** A feed's scan gives the event loop back after this much work, so other requests interleave. */
const YIELD_AFTER_MS = 1;

/** 400 for a page that reaches past MAX_FEED_DEPTH events: it points to the before_id cursor. */
export function assertFeedDepth(page: number, perPage: number): void {
  if (page * perPage <= MAX_FEED_DEPTH) return;
  throw badRequest(
    `page ${page} of ${perPage} reaches past the first ${MAX_FEED_DEPTH} events of this feed; to read further back, pass the ` +
      'id of the oldest event you have as before_id (with page=1): each such page costs about one page.',
  );
}

/** A feed's events, and where its scan stopped when it ran out of budget before filling the page. */
export interface FeedWindow {
  events: EventRecord[];
  /** set when the scan budget ran out: the id below which the next request should continue (before_id) */
  continueBefore: string | null;
}

/** The most feed scans one instance runs at once; more wait their turn (cheap requests never do). */
const MAX_CONCURRENT_SCANS = 2;
let runningScans = 0;
const waitingScans: Array<() => void> = [];

/** Runs `fn` once fewer than MAX_CONCURRENT_SCANS scans are running (first come, first served). */
async function inScanTurn<T>(fn: () => Promise<T>): Promise<T> {
  if (runningScans >= MAX_CONCURRENT_SCANS) await new Promise<void>((resolve) => waitingScans.push(resolve));
  else runningScans++;
  try {
    return await fn();
  } finally {
    // hand the slot straight to the next waiter, or free it
    const next = waitingScans.shift();
    if (next) next();
    else runningScans--;
  }
}

/** Resolves on the next turn of the event loop (after pending I/O), when `since` is YIELD_AFTER_MS old. */
async function breathe(since: { t: number }): Promise<void> {
  if (performance.now() - since.t < YIELD_AFTER_MS) return;
  await new Promise((resolve) => setImmediate(resolve));
  since.t = performance.now();
}

/**
 * Events of a feed, newest first, that the viewer may see (README "Event privacy"), as they may
 * see them; used by the activity feeds. The scan reads only ids and scopes, rules out the events
 * none of whose scopes the caller may read (they would be hidden: `ScopeGatedViewer`), and loads
 * the full rows of the rest a page's worth at a time, so a feed whose caller sees most events reads
 * about a page of rows, and one whose caller sees few parses little.
 *
 * The work of one request is bounded (README "Activity feeds"): the routes refuse a page deeper
 * than MAX_FEED_DEPTH events, the scan stops after FEED_SCAN_BUDGET rows (the page then ends
 * early and says where to continue), every few milliseconds of work it yields to the event loop,
 * and at most MAX_CONCURRENT_SCANS scans run at once per instance, so deep pagers on SQLite
 * (synchronous queries) cannot starve other requests.
 */
export async function visibleEventsNewestFirst(
  deps: Deps,
  viewer: Viewer,
  scanBatch: (beforeId: number | null, size: number) => Promise<ScanRow[]>,
  loadEvents: (ids: number[]) => Promise<EventRecord[]>,
  window: { offset: number; limit: number; beforeId?: number | null },
): Promise<FeedWindow> {
  return inScanTurn(() => scanFeed(deps, viewer, scanBatch, loadEvents, window));
}

async function scanFeed(
  deps: Deps,
  viewer: Viewer,
  scanBatch: (beforeId: number | null, size: number) => Promise<ScanRow[]>,
  loadEvents: (ids: number[]) => Promise<EventRecord[]>,
  window: { offset: number; limit: number; beforeId?: number | null },
): Promise<FeedWindow> {
  const { offset, limit } = window;
  const { show, mayShow } = scopeGatedViewer(deps, viewer);
  const found: EventRecord[] = [];
  const since = { t: performance.now() };
  const done = (continueBefore: string | null): FeedWindow => ({ events: found.slice(offset, offset + limit), continueBefore });
  // a before_id cursor starts the scan below it: a page after a cursor reads about a page
  let before: number | null = window.beforeId ?? null;
  const wanted = offset + limit;
  let scanned = 0;
  for (;;) {
    const size = Math.min(200, FEED_SCAN_BUDGET - scanned);
    const batch = await scanBatch(before, size);
    scanned += batch.length;
    const candidates: number[] = [];
    for (const row of batch) {
      if (await mayShow(JSON.parse(row.scopes) as string[])) candidates.push(Number(row.id));
      await breathe(since);
    }
    for (let i = 0; i < candidates.length;) {
      const chunk = candidates.slice(i, i + Math.max(wanted - found.length, 1));
      i += chunk.length;
      const byId = new Map((await loadEvents(chunk)).map((e) => [Number(e.id), e]));
      for (const id of chunk) {
        const event = byId.get(id);
        const shown = event && (await show(event));
        if (shown) found.push(shown);
        if (found.length >= wanted) return done(null);
        await breathe(since);
      }
    }
    if (batch.length < size) return done(null);
    before = Number(batch.at(-1)!.id);
    // the budget ran out with more rows to read: the page ends here, and says where to go on
    if (scanned >= FEED_SCAN_BUDGET) return done(String(before));
    await breathe(since);
  }
}
