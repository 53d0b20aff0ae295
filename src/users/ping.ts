import { assertCanPing } from '../access/index.ts';
import type { Deps } from '../deps.ts';
import { actorOf } from '../events/service.ts';
import { command } from '../core/command.ts';
import { decide } from '../core/targets.ts';
import { boundedMarkdown } from '../markdown/bounded.ts';
import type { Viewer } from '../viewer.ts';
import { requireActiveUser } from './service.ts';

/** README "User ping": the longest ping message, in characters. */
export const MAX_PING_LENGTH = 1000;

const markdown = { render: (text: string) => boundedMarkdown().render(text) };

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
  const body_html = markdown.render(body);
  const pinging = decide(async (db, v: Viewer) => {
    const target = await requireActiveUser(db, username);
    await assertCanPing(db, v, target);
    return target;
  });
  return command(deps, viewer, pinging, async (tx) => {
    const target = tx.access;
    const from = actorOf(viewer);
    const to = { uuid: target.uuid, username: target.username };
    const event = await tx.emit({
      kind: 'user-mention',
      scopes: [`user:${target.uuid}`],
      actor: from,
      payload: { from, to, body, body_html },
    });
    return { event_id: event.id, kind: 'user-mention', from, to, body, body_html, created_at: event.created_at };
  });
}
