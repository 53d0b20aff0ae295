/**
 * The notifications' background parts, started and stopped together by the composition root:
 * the fan-out (fanout.ts) and, with SMTP_INBOUND_PORT and MAIL_REPLY_DOMAIN, the reply-by-mail
 * listener (inbound.ts).
 */
import type { BackgroundPart, Deps } from '../deps.ts';
import { NotificationFanout } from './fanout.ts';
import { InboundMail } from './inbound.ts';

export class NotificationsBackground implements BackgroundPart {
  readonly fanout: NotificationFanout;
  readonly inbound: InboundMail;

  constructor(deps: Deps) {
    this.fanout = new NotificationFanout(deps);
    this.inbound = new InboundMail(deps);
  }

  async start(): Promise<void> {
    this.fanout.start();
    await this.inbound.start();
  }

  async stop(): Promise<void> {
    await this.inbound.stop();
    await this.fanout.stop();
  }
}
