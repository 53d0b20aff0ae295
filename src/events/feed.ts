import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../errors.ts';
import type { Viewer } from '../viewer.ts';
import { type EventRecord, type EventRow, eventFromRow } from './service.ts';
import { canReadScope, parseScope, scopeChecker } from './scopes.ts';

export interface CursorQuery {
  scope: string;
  kind?: string;
  before_id?: string;
  after_id?: string;
  perPage: number;
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
 * decisions §8: a page is always ascending by id. No cursor: the newest events; before_id: the
 * ones just before; after_id: the ones just after.
 */
export async function eventPage(deps: Deps, viewer: Viewer, q: CursorQuery): Promise<CursorPage> {
  if (q.before_id !== undefined && q.after_id !== undefined) {
    throw badRequest('Use either before_id or after_id, not both.');
  }
  await requireReadableScope(deps, viewer, q.scope);
  const base = () => {
    let query = deps.db
      .selectFrom('event_scopes as s')
      .innerJoin('events as e', 'e.id', 's.event_id')
      .where('s.scope', '=', q.scope);
    if (q.kind) query = query.where('e.kind', '=', q.kind);
    return query;
  };
  let rows: EventRow[];
  if (q.after_id !== undefined) {
    rows = await base().selectAll('e').where('e.id', '>', Number(q.after_id)).orderBy('e.id', 'asc').limit(q.perPage).execute();
  } else {
    let query = base().selectAll('e');
    if (q.before_id !== undefined) query = query.where('e.id', '<', Number(q.before_id));
    rows = (await query.orderBy('e.id', 'desc').limit(q.perPage).execute()).reverse();
  }
  const results = rows.map(eventFromRow);
  const first = rows[0]?.id;
  const last = rows.at(-1)?.id;
  // Bounds for "anything older / newer": the page's own ends, or the cursor for an empty page.
  const olderThan = first ?? (q.after_id !== undefined ? Number(q.after_id) + 1 : q.before_id !== undefined ? Number(q.before_id) : null);
  const newerThan = last ?? (q.before_id !== undefined ? Number(q.before_id) - 1 : q.after_id !== undefined ? Number(q.after_id) : null);
  const exists = async (op: '<' | '>', bound: number | null) =>
    bound !== null && (await base().select('e.id').where('e.id', op, bound).limit(1).executeTakeFirst()) !== undefined;
  return {
    results,
    previousBeforeId: (await exists('<', olderThan)) ? String(olderThan) : null,
    nextAfterId: (await exists('>', newerThan)) ? String(newerThan) : null,
  };
}

export async function getEvent(deps: Deps, viewer: Viewer, id: string): Promise<EventRecord> {
  if (!/^\d{1,15}$/.test(id)) throw notFound('Event');
  const row = await deps.db.selectFrom('events').selectAll().where('id', '=', Number(id)).executeTakeFirst();
  if (!row) throw notFound('Event');
  const event = eventFromRow(row);
  const canRead = scopeChecker(deps, viewer);
  for (const scope of event.scopes) if (await canRead(scope)) return event;
  throw notFound('Event');
}

/**
 * Events matching a base filter, newest first, that the viewer may read: scanned in batches
 * (visibility is per event) until a page plus one is found. Used by the activity feeds.
 */
export async function visibleEventsNewestFirst(
  deps: Deps,
  viewer: Viewer,
  fetchBatch: (beforeId: number | null, size: number) => Promise<EventRecord[]>,
  offset: number,
  limit: number,
): Promise<EventRecord[]> {
  const canRead = scopeChecker(deps, viewer);
  const found: EventRecord[] = [];
  let before: number | null = null;
  const wanted = offset + limit;
  for (;;) {
    const batch = await fetchBatch(before, 200);
    for (const event of batch) {
      let visible = false;
      for (const scope of event.scopes) {
        if (await canRead(scope)) {
          visible = true;
          break;
        }
      }
      if (visible) found.push(event);
      if (found.length >= wanted) return found.slice(offset, wanted);
    }
    if (batch.length < 200) return found.slice(offset, wanted);
    before = Number(batch.at(-1)!.id);
  }
}
