import type { Clock } from '../src/time.ts';
import type { TestApp } from './helpers.ts';

/** A clock the test moves by hand. */
export class ManualClock implements Clock {
  constructor(public ms: number) {}
  static at(iso: string): ManualClock {
    return new ManualClock(Date.parse(iso));
  }
  now(): Date {
    return new Date(this.ms);
  }
  set(iso: string): void {
    this.ms = Date.parse(iso);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** The timer-fired events of a timer, oldest first, read through the events API as `token` (its owner). */
export async function firedEvents(t: TestApp, timerUuid: string, token: string) {
  const res = await t.req('GET', `/api/v1/events?scope=timer:${timerUuid}&kind=timer-fired&per_page=100`, { token });
  if (res.status !== 200) throw new Error(`events: ${res.status} ${res.text}`);
  // biome-ignore lint/suspicious/noExplicitAny: event payloads are inspected freely
  return res.body.results as any[];
}
