/**
 * The background side of webhooks on one instance: the dispatcher (dispatch.ts), the job handlers
 * of the sender (sender.ts), a sweep that restarts first attempts a crashed worker left, and the
 * hourly removal of deliveries older than 30 days.
 */
import type { Deps } from '../deps.ts';
import { HookDispatcher } from './dispatch.ts';
import { HookHttp } from './net.ts';
import { HookSender } from './sender.ts';

export const JOB_PRUNE = 'hook-prune';
const SWEEP_MS = 5000;
const PRUNE_EVERY_MS = 3600_000;

export class Webhooks {
  readonly dispatcher: HookDispatcher;
  readonly sender: HookSender;
  private readonly http: HookHttp;
  private sweepTimer: NodeJS.Timeout | null = null;
  private unsubscribeHints: (() => void) | null = null;

  constructor(private readonly deps: Deps) {
    this.http = new HookHttp(deps.config.webhookMaxConcurrency, deps.config.webhookTimeoutMs);
    this.dispatcher = new HookDispatcher(deps);
    this.sender = new HookSender(deps, this.http);
    this.sender.register();
    this.dispatcher.onTouched = (hookUuid) => {
      if (!this.sender.stopping) this.sender.kick(hookUuid);
    };
    deps.jobs.register(JOB_PRUNE, async () => {
      await this.sender.prune();
      await this.schedulePrune();
    });
  }

  /** The next hourly prune, once per hour across instances (its dedupe key names the hour). */
  private async schedulePrune(): Promise<void> {
    const at = Math.ceil((this.deps.clock.now().getTime() + 1) / PRUNE_EVERY_MS) * PRUNE_EVERY_MS;
    const runAt = new Date(at).toISOString();
    await this.deps.jobs.enqueue(this.deps.db, { kind: JOB_PRUNE, payload: {}, runAt, dedupeKey: `${JOB_PRUNE}:${runAt}` });
  }

  async start(): Promise<void> {
    this.sender.stopping = false;
    // the sender reuses a creator's access only until an access-changing event is hinted
    this.unsubscribeHints ??= this.deps.bus.onNewEvents((hint) => this.sender.noteEvents(hint?.kinds ?? null));
    this.dispatcher.start();
    await this.schedulePrune().catch((err) => console.error('weft: scheduling the webhook prune failed', err));
    const sweep = () => void this.sender.sweep().catch((err) => console.error('weft: the webhook sweep failed', err));
    this.sweepTimer = setInterval(sweep, SWEEP_MS);
    this.sweepTimer.unref();
    sweep();
  }

  async stop(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = null;
    this.unsubscribeHints?.();
    this.unsubscribeHints = null;
    this.sender.stopping = true;
    await this.dispatcher.stop();
    await this.sender.settle();
  }

  /** After the job queue stopped (no attempt runs any more): closes the HTTP connections. */
  async close(): Promise<void> {
    await this.http.close();
  }
}
