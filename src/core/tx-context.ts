import type { Transaction } from 'kysely';
import type { Dialect } from '../db/dialect.ts';
import type { DB } from '../db/types.ts';
import type { EventInput, EventRecord } from '../events/service.ts';

/** A transaction plus `emit`, which records an event in that same transaction (the outbox). */
export interface TxContext {
  db: Transaction<DB>;
  dialect: Dialect;
  emit(event: EventInput): Promise<EventRecord>;
  /** Several events with one insert per table (bulk producers such as the timer scheduler). */
  emitMany(events: EventInput[]): Promise<EventRecord[]>;
  /** Runs `fn` after the outermost transaction commits (jobs to wake, files to remove, ...). */
  afterCommit(fn: () => void | Promise<void>): void;
}
