/**
 * The notifications' background parts, started and stopped together by the composition root:
 * the fan-out (fanout.ts), the watchers' badge nudger (watch.ts) and, with SMTP_INBOUND_PORT and MAIL_REPLY_DOMAIN, the reply-by-mail
 * listener (inbound.ts).
 */
import type { BackgroundPart, Deps } from '../deps.ts';
import { NotificationFanout } from './fanout.ts';
import { InboundMail } from './inbound.ts';
import { WatchNudger } from './watch.ts';

export class NotificationsBackground implements BackgroundPart {
  readonly fanout: NotificationFanout;
  readonly inbound: InboundMail;
  readonly nudger: WatchNudger;

  constructor(deps: Deps) {
    this.fanout = new NotificationFanout(deps);
    this.inbound = new InboundMail(deps);
    this.nudger = new WatchNudger(deps);
  }

  async start(): Promise<void> {
    this.nudger.start();
    this.fanout.start();
    await this.inbound.start();
  }

  async stop(): Promise<void> {
    await this.inbound.stop();
    await this.fanout.stop();
    this.nudger.stop();
  }
}
