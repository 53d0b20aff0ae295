import type { Deps } from '../deps.ts';
import { eventPage } from '../activity/feed.ts';
import type { EventRecord } from '../events/service.ts';
import type { Viewer } from '../viewer.ts';

/** A scope's newest events as the caller may see them (GET /events), newest first. */
export async function activityOfScope(
  deps: Deps,
  viewer: Viewer,
  scope: string,
  perPage = 20,
  known: readonly string[] = [],
  /** the bound the page read with its resume point (web/live.ts `resumeState`) */
  settled?: number | null,
): Promise<EventRecord[]> {
  const page = await eventPage(deps, viewer, { scope, perPage, known, ...(settled !== undefined ? { settled } : {}) });
  return [...page.results].reverse();
}
