import { type Html, html } from './html.ts';

/**
 * A page's live state (README "Web interface"): when one of `kinds` arrives on `scope`'s stream
 * (`GET /api/v1/tail-events`, which follows the store, so an event written on any instance
 * arrives), the page reads itself again and swaps in only the parts named by `parts` (ids), in
 * place: the first is the target, the others go out of band. Several events in a burst make one
 * read. Forms outside those parts (a review or reply being typed) are left alone.
 */
export function liveState(opts: {
  scope: string;
  after: string;
  kinds: readonly string[];
  href: string;
  parts: readonly string[];
}): Html {
  const [first, ...rest] = opts.parts;
  const triggers = opts.kinds.map((k) => `sse:${k} delay:300ms`).join(', ');
  return html`<div
    hidden
    hx-ext="sse"
    data-live-state
    sse-connect="/api/v1/tail-events?scope=${encodeURIComponent(opts.scope)}&last_event_id=${opts.after}"
  >
    <div
      hx-get="${opts.href}"
      hx-trigger="${triggers}"
      hx-select="#${first}"
      hx-target="#${first}"
      hx-swap="outerHTML"
      ${rest.length ? html`hx-select-oob="${rest.map((id) => `#${id}`).join(',')}"` : ''}
    ></div>
  </div>`;
}

/** The event kinds that change what a pull page shows of its state: status, approvals, checks, merge. */
export const PULL_STATE_KINDS = [
  'pull-updated',
  'pull-merged',
  'auto-merge-enabled',
  'auto-merge-disabled',
  'status-created',
  'review-submitted',
  'review-removed',
  'protection-created',
  'protection-updated',
  'protection-deleted',
  'protection-approver-added',
  'protection-approver-removed',
] as const;

/** The event kinds that change a thread's replies and state. */
export const THREAD_STATE_KINDS = ['reply-created', 'reply-edited', 'reply-removed', 'thread-closed', 'thread-reopened'] as const;
