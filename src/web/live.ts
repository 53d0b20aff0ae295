import { sql } from 'kysely';
import type { Deps } from '../deps.ts';
import { eventHtml } from '../activity/event-html.ts';
import { EVENT_KINDS } from '../events/kinds.ts';
import { readableBound } from '../events/order.ts';
import type { EventRecord } from '../events/service.ts';
import { type Html, html, trusted } from './html.ts';
import { RenderCache } from './render-cache.ts';

/** Events as HTML, by their record as the reader sees it (its payload redacted for the reader or not). */
const eventCache = new RenderCache(4 * 1024 * 1024);

/** Every event kind: the names htmx's SSE extension listens for. */
const KINDS = Object.keys(EVENT_KINDS).join(',');

/**
 * The resume point rendered into a live page (README "Web interface"): every event committed
 * after the page's lists were read has a larger id. Read before the lists, so an event may be
 * both listed and replayed; the page's script drops the second copy by its id.
 */
export async function resumePoint(deps: Deps): Promise<string> {
  return (await resumeState(deps)).after;
}

/**
 * `resumePoint` and the readable bound it was read under (null where events commit in order:
 * SQLite), which the page's own event list takes instead of reading it again (`activityOfScope`).
 */
export async function resumeState(deps: Deps): Promise<{ after: string; settled: number | null }> {
  const bound = await readableBound(deps.db, deps.dialect);
  if (bound !== null) return { after: String(Math.max(0, bound - 1)), settled: bound };
  const { rows } = await sql<{ top: number | string | null }>`select max(id) as top from events`.execute(deps.db);
  return { after: String(rows[0]?.top ?? 0), settled: null };
}

/**
 * A live list of events, newest first: the events given (newest first), then new ones as they happen, through
 * one `GET /api/v1/tail-events?html=true` stream of all its scopes (`scope=A,B,…`; the session
 * cookie authenticates it; an event in several of them comes once), each event keyed by its id.
 * One stream per page: a browser opens at most 6 connections to a server over HTTP/1.1, a stream
 * holding one for as long as the page is open.
 */
export function liveFeed(opts: { id: string; scopes: string[]; after: string; events: EventRecord[]; label: string }): Html {
  const streams = opts.scopes.length
    ? html`<div
        hidden
        hx-ext="sse"
        sse-connect="/api/v1/tail-events?scope=${opts.scopes.map(encodeURIComponent).join(',')}&html=true&last_event_id=${opts.after}"
        sse-swap="${KINDS}"
        hx-target="#${opts.id}"
        hx-swap="afterbegin"
      ></div>`
    : '';
  return html`<section class="box" aria-labelledby="${opts.id}-h">
    <h2 id="${opts.id}-h">
      ${opts.label}
      ${opts.scopes.length ? html`<span class="badge" id="live-status" role="status">connecting&hellip;</span>` : ''}
    </h2>
    ${streams} ${opts.events.length === 0 ? html`<p class="muted feed-empty">Nothing yet.</p>` : ''}
    <div id="${opts.id}" class="feed">
      ${opts.events.map((e) => trusted(eventCache.get(JSON.stringify(e), () => eventHtml(e))))}
    </div>
  </section>`;
}
