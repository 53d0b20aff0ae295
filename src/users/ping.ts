import { assertCanPing } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { actorOf } from '../events/service.ts';
import { inTransaction } from '../core/transaction.ts';
import { createMarkdownRenderer } from '../markdown/render.ts';
import type { Viewer } from '../viewer.ts';
import { requireActiveUser } from './service.ts';

/** README "User ping": the longest ping message, in characters. */
export const MAX_PING_LENGTH = 1000;

const markdown = createMarkdownRenderer();

export interface PingResult {
  event_id: string;
  kind: 'user-mention';
  from: { uuid: string; username: string };
  to: { uuid: string; username: string };
  body: string;
  body_html: string;
  created_at: string;
}

/**
 * Pings a user: a `user-mention` event in the target's user scope, carrying the message and its
 * HTML (the same Markdown renderer as replies: sanitised, `@mentions` linked). An unknown or
 * inactive target is 404; the target's `ping_mentions` may refuse (403). The body's length is
 * checked by the route schema (at most MAX_PING_LENGTH characters, 400 beyond).
 */
export async function pingUser(deps: Deps, viewer: Viewer, username: string, body: string): Promise<PingResult> {
  const target = await requireActiveUser(deps.db, username);
  await assertCanPing(deps.db, viewer, target);
  const from = actorOf(viewer);
  const to = { uuid: target.uuid, username: target.username };
  const body_html = markdown.render(body);
  return inTransaction(deps, async (tx) => {
    const event = await tx.emit({
      kind: 'user-mention',
      scopes: [`user:${target.uuid}`],
      actor: from,
      payload: { from, to, body, body_html },
    });
    return { event_id: event.id, kind: 'user-mention', from, to, body, body_html, created_at: event.created_at };
  });
}
