import { EventEmitter } from 'node:events';
import type { EventRecord } from './service.ts';

/**
 * Fan-out of committed events to live subscribers (the SSE stream). `publish` is called after
 * the writing transaction commits. The in-process implementation serves one instance (SQLite);
 * a cross-instance implementation (PostgreSQL LISTEN/NOTIFY) also delivers what other instances
 * committed.
 */
export interface EventBus {
  publish(event: EventRecord): void;
  subscribe(listener: (event: EventRecord) => void): () => void;
  /** Starts listening for other instances' events (no-op in process). */
  start(): Promise<void>;
  close(): Promise<void>;
}

export class InProcessBus implements EventBus {
  private readonly emitter = new EventEmitter();

  constructor() {
    this.emitter.setMaxListeners(0);
  }

  publish(event: EventRecord): void {
    this.emitter.emit('event', event);
  }

  subscribe(listener: (event: EventRecord) => void): () => void {
    this.emitter.on('event', listener);
    return () => this.emitter.off('event', listener);
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
  }
}
