import { fileURLToPath } from 'node:url';
import type { TestApp } from './helpers.ts';

/** Shared by the foundation tests (users, tokens, auth, conventions, events, openapi, ops). */

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export async function countRows(t: TestApp, table: 'users' | 'api_tokens' | 'events'): Promise<number> {
  const row = await t.deps.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/**
 * Counts of the foundation tables, to show that a refused request changed nothing. The events
 * counted leave out `notification-updated`: the notification fan-out (src/notifications) writes
 * those in the background, after earlier writes, whatever the request in between did.
 */
export async function snapshot(t: TestApp): Promise<{ users: number; tokens: number; events: number }> {
  const events = await t.deps.db
    .selectFrom('events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('kind', '!=', 'notification-updated')
    .executeTakeFirstOrThrow();
  return { users: await countRows(t, 'users'), tokens: await countRows(t, 'api_tokens'), events: Number(events.n) };
}

export const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const TOKEN_SECRET = /^weft_[0-9A-Za-z]{40}$/;
