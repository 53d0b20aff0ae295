/**
 * A receiving SMTP server on 127.0.0.1 for the mail tests (the smtp-server package), keeping the
 * delivered messages parsed with mailparser, and a header reader.
 */
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface Received {
  to: string[];
  raw: string;
  mail: ParsedMail;
}

/** A receiving SMTP server on 127.0.0.1: keeps every message; refuses RCPT TO of `refuse` with 550. */
export class Inbox {
  received: Received[] = [];
  refuse = new Set<string>();
  private server: SMTPServer | null = null;
  constructor(readonly port: number) {}
  async start(): Promise<this> {
    this.server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onRcptTo: (address, _session, cb) =>
        this.refuse.has(address.address) ? cb(Object.assign(new Error('no such mailbox'), { responseCode: 550 })) : cb(),
      onData: (stream, session, cb) => {
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          simpleParser(raw).then(
            (mail) => {
              this.received.push({ to: session.envelope.rcptTo.map((r) => r.address), raw, mail });
              cb();
            },
            (err: Error) => cb(err),
          );
        });
      },
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    return this;
  }
  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }
  to(address: string): Received[] {
    return this.received.filter((r) => r.to.includes(address));
  }
}

/** A header as sent (unfolded), from the message's header lines. */
export const header = (r: Received, name: string): string => {
  const found = r.mail.headerLines.find((h) => h.key === name.toLowerCase());
  return found
    ? found.line
        .slice(found.line.indexOf(':') + 1)
        .replace(/\r?\n[ \t]+/g, ' ')
        .trim()
    : '';
};
