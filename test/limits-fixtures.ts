import type { Clock } from '../src/time.ts';
import type { TestApp } from './helpers.ts';

/** A clock the test moves by hand. */
export class ManualClock implements Clock {
  constructor(public ms = Date.parse('2030-01-01T00:00:00.000Z')) {}
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

export async function createRule(
  t: TestApp,
  scope: string,
  max_requests: number,
  window_seconds: number,
  is_enabled = true,
): Promise<{ uuid: string }> {
  const res = await t.req('POST', '/api/v1/rate-limits', { body: { scope, max_requests, window_seconds, is_enabled } });
  if (res.status !== 201) throw new Error(`rule ${scope}: ${res.status} ${res.text}`);
  return res.body;
}

export async function setSettings(t: TestApp, body: Record<string, unknown>): Promise<void> {
  const res = await t.req('PUT', '/api/v1/site-settings', { body });
  if (res.status !== 200) throw new Error(`settings: ${res.status} ${res.text}`);
}

export async function countHits(t: TestApp): Promise<number> {
  const row = await t.deps.db
    .selectFrom('rate_limit_hits')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export const tokenBody = (name = 'ci') => ({ name });
