import { EventEmitter } from 'node:events';
import type { EventRecord } from './service.ts';

/**
 * In-process fan-out of committed events to live subscribers (the SSE stream). Cross-instance
 * delivery plugs in here: an adapter publishes what other instances committed.
 */
export class EventBus {
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
}
