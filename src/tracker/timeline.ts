/**
 * The timeline of a thread or a pull (README "Issue tracker"): built from the events in its scope
 * (`thread:<uuid>`, `pull:<uuid>`), oldest first, each shown as the caller may see it (README
 * "Event privacy"); there is no second copy of what happened. A page reads its events through the
 * (scope, kind, event_id) index of event_scopes.
 */
import type { EventRecord } from '../events/service.ts';
import { eventFromRow } from '../events/service.ts';
import { eventViewer } from '../access/events.ts';
import { shownEvents } from '../activity/feed.ts';
import { readableBound } from '../events/order.ts';
import type { Deps } from '../deps.ts';
import type { Viewer } from '../viewer.ts';

export interface TimelineEntry {
  kind: string;
  actor: { uuid: string; username: string } | null;
  created_at: string;
  [field: string]: unknown;
}

type Mapper = (p: Record<string, unknown>) => Record<string, unknown> | null;

const pick =
  (...fields: string[]): Mapper =>
  (p) =>
    Object.fromEntries(fields.map((f) => [f, p[f] ?? null]));

/** Event kind → timeline kind and the fields it keeps (null: not an entry). */
const ENTRIES: Record<string, [string, Mapper]> = {
  'reply-created': ['reply', (p) => ({ reply: { uuid: p.reply_uuid, number: p.number } })],
  'thread-closed': ['closed', pick('state_reason', 'closed_by')],
  'thread-reopened': ['reopened', () => ({})],
  'thread-updated': ['renamed', (p) => (p.renamed ? (p.renamed as Record<string, unknown>) : null)],
  'thread-labeled': ['labeled', pick('label')],
  'thread-unlabeled': ['unlabeled', pick('label')],
  'thread-assigned': ['assigned', pick('assignee')],
  'thread-unassigned': ['unassigned', pick('assignee')],
  'thread-milestoned': ['milestoned', pick('milestone')],
  'thread-demilestoned': ['demilestoned', pick('milestone')],
  'thread-locked': ['locked', () => ({})],
  'thread-referenced': ['referenced', pick('source')],
  'pull-referenced': ['referenced', pick('source')],
  'thread-unlocked': ['unlocked', () => ({})],
  'pull-labeled': ['labeled', pick('label')],
  'pull-unlabeled': ['unlabeled', pick('label')],
  'pull-assigned': ['assigned', pick('assignee')],
  'pull-unassigned': ['unassigned', pick('assignee')],
  'pull-milestoned': ['milestoned', pick('milestone')],
  'pull-demilestoned': ['demilestoned', pick('milestone')],
  'pull-ready-for-review': ['ready_for_review', () => ({})],
  'pull-converted-to-draft': ['converted_to_draft', () => ({})],
  'review-requested': ['review_requested', pick('reviewer')],
  'review-request-removed': ['review_request_removed', pick('reviewer')],
  'review-submitted': ['review', (p) => ({ review: { uuid: p.review_uuid ?? null, status: p.status ?? null } })],
  'pull-merged': ['merged', pick('merge_commit_sha', 'merge_strategy')],
  'pull-updated': [
    'pull',
    (p) => {
      if (p.action === 'closed') return { kind: 'closed' };
      if (p.action === 'reopened') return { kind: 'reopened' };
      if (p.action === 'synchronized')
        return { kind: 'pushed', before: p.before ?? null, after: p.head_sha ?? null, commits: p.commits ?? [] };
      if (p.renamed) return { kind: 'renamed', ...(p.renamed as Record<string, unknown>) };
      return null;
    },
  ],
};

const THREAD_KINDS = Object.keys(ENTRIES).filter((k) => k.startsWith('thread-') || k === 'reply-created');
const PULL_KINDS = Object.keys(ENTRIES).filter((k) => !k.startsWith('thread-') && k !== 'reply-created');

export function toEntry(e: EventRecord): TimelineEntry | null {
  const rule = ENTRIES[e.kind];
  if (!rule) return null;
  const fields = rule[1](e.payload);
  if (fields === null) return null;
  return { kind: rule[0], actor: e.actor, created_at: e.created_at, ...fields } as TimelineEntry;
}

/** One page of the timeline of the thread or pull whose scope is `scope` (its readability already checked). */
export async function timelinePage(
  deps: Deps,
  viewer: Viewer,
  scope: string,
  kind: 'thread' | 'pull',
  page: { offset: number; limit: number },
): Promise<TimelineEntry[]> {
  const settled = await readableBound(deps.db, deps.dialect);
  let keys = deps.db
    .selectFrom('event_scopes as s')
    .select('s.event_id')
    .where('s.scope', '=', scope)
    .where('s.kind', 'in', kind === 'thread' ? THREAD_KINDS : PULL_KINDS);
  if (settled !== null) keys = keys.where('s.event_id', '<', settled);
  const ids = await keys.orderBy('s.event_id', 'asc').offset(page.offset).limit(page.limit).execute();
  if (ids.length === 0) return [];
  const rows = await deps.db
    .selectFrom('events')
    .selectAll()
    .where(
      'id',
      'in',
      ids.map((r) => r.event_id),
    )
    .orderBy('id', 'asc')
    .execute();
  const shown = await shownEvents(eventViewer(deps, viewer, [scope]), rows.map(eventFromRow));
  return shown.map(toEntry).filter((e): e is TimelineEntry => e !== null);
}
