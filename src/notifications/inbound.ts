/**
 * Reply by mail (docs/notifications.md "Reply by mail"): an SMTP listener on SMTP_INBOUND_PORT
 * (the `smtp-server` package; a reverse proxy or the MX forwards to it) that takes mail for
 * `reply+{token}@{MAIL_REPLY_DOMAIN}` and turns a reply into a reply on the thread, or a
 * `commented` review on the pull, as the notification's user, through the write pipeline (so
 * access is decided at that moment, as for any write). The token is checked at RCPT TO only for
 * its shape (a forged token is accepted and dropped: the sender learns nothing); mails over
 * 10 MiB are refused at DATA. Auto-replies, bounces, forged or expired tokens, empty replies and
 * replies the user may no longer make change nothing and get no answer. The SMTP answer is sent
 * once the mail is handled, so a sender's retry after a temporary failure (451) is safe.
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { attach } from '../attachments/service.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { AppError } from '../errors.ts';
import { createReview } from '../pulls/reviews-service.ts';
import { createReply } from '../threads/service.ts';
import { cleanContentType, sanitizeFilename, streamToBlob, uploadFiles, type StoredFile } from '../uploads/service.ts';
import type { RepoRef, Viewer } from '../viewer.ts';
import { subjectOf } from './mail.ts';
import { readReplyToken } from './reply-token.ts';
import { putPullSubscription, putThreadSubscription } from './subscriptions.ts';

/** Mails larger than this are refused at DATA (552). */
export const INBOUND_MAX_BYTES = 10 * 1024 * 1024;

const RECIPIENT = /^reply\+([a-z2-7]{45})$/i;

/** What became of one recipient of an inbound mail (logs and tests). */
export type InboundOutcome =
  'replied' | 'reviewed' | 'unsubscribed' | 'auto_reply' | 'bounce' | 'bad_token' | 'no_user' | 'empty' | 'refused' | 'duplicate';

/**
 * The new text of a reply: quoted lines (`>`), the `On … wrote:` line, a signature after `-- `,
 * and a forwarded or Outlook-style quoted message (`-----Original Message-----`, a `From:`/`Sent:`
 * block) removed; an answer written between quoted lines is kept.
 */
export function replyText(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const trimmed = line.trim();
    if (line === '-- ' || line === '--') break;
    if (/^-{2,}\s*(original message|forwarded message)\s*-{2,}$/i.test(trimmed)) break;
    if (/^from:\s/i.test(trimmed) && /^(sent|date):\s/i.test((lines[i + 1] ?? '').trim())) break;
    if (line.startsWith('>')) continue;
    // "On Mon, 1 Jan 2026 at 10:00, Alice <a@example.com> wrote:", possibly wrapped over two lines
    if (/^on\s/i.test(trimmed)) {
      if (/wrote:$/i.test(trimmed)) continue;
      const next = (lines[i + 1] ?? '').trim();
      if (/wrote:$/i.test(next) && (lines[i + 2] ?? '').startsWith('>')) {
        i++;
        continue;
      }
    }
    out.push(line);
  }
  return out
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** An auto-reply or a list mail (RFC 3834 `Auto-Submitted`, `Precedence`, the common vendor headers). */
export function isAutomatic(mail: ParsedMail): boolean {
  const h = (name: string): string => {
    const v = mail.headers.get(name);
    return typeof v === 'string' ? v.trim().toLowerCase() : v === undefined ? '' : String(v).toLowerCase();
  };
  const auto = h('auto-submitted');
  if (auto !== '' && !auto.startsWith('no')) return true;
  if (['bulk', 'auto_reply', 'list', 'junk'].includes(h('precedence'))) return true;
  if (h('x-autoreply') !== '' || h('x-autorespond') !== '' || h('x-auto-response-suppress').includes('all')) return true;
  return false;
}

/** A bounce: the null sender, or a delivery report. */
const isBounce = (session: SMTPServerSession, mail: ParsedMail): boolean => {
  const from = session.envelope.mailFrom;
  if (!from || from.address === '') return true;
  const type = mail.headers.get('content-type') as { value?: string } | undefined;
  return type?.value?.toLowerCase() === 'multipart/report';
};

export class InboundMail {
  private server: SMTPServer | null = null;
  /** Called with each recipient's outcome (logs and tests). */
  onHandled: ((outcome: InboundOutcome) => void) | null = null;

  constructor(private readonly deps: Deps) {}

  get enabled(): boolean {
    return this.deps.config.smtpInboundPort > 0 && Boolean(this.deps.config.mailReplyDomain);
  }

  async start(): Promise<void> {
    if (!this.enabled || this.server) return;
    const domain = this.deps.config.mailReplyDomain!.toLowerCase();
    const server = new SMTPServer({
      banner: 'Weft reply by mail',
      authOptional: true,
      disabledCommands: ['AUTH', 'STARTTLS'],
      size: INBOUND_MAX_BYTES,
      logger: false,
      onRcptTo: (address, _session, cb) => {
        const at = address.address.lastIndexOf('@');
        const local = address.address.slice(0, at);
        if (at < 0 || address.address.slice(at + 1).toLowerCase() !== domain || !RECIPIENT.test(local))
          return cb(Object.assign(new Error('No such mailbox here'), { responseCode: 550 }));
        cb();
      },
      onData: (stream, session, cb) => {
        const chunks: Buffer[] = [];
        let size = 0;
        stream.on('data', (c: Buffer) => {
          size += c.length;
          if (size <= INBOUND_MAX_BYTES) chunks.push(c);
        });
        stream.on('end', () => {
          if ((stream as { sizeExceeded?: boolean }).sizeExceeded || size > INBOUND_MAX_BYTES)
            return cb(Object.assign(new Error('Message exceeds 10 MiB'), { responseCode: 552 }));
          this.handle(Buffer.concat(chunks), session).then(
            () => cb(),
            (err: unknown) => {
              console.error('weft: an inbound mail failed', err);
              cb(Object.assign(new Error('Try again later'), { responseCode: 451 }));
            },
          );
        });
      },
    });
    server.on('error', (err) => console.error('weft: the inbound SMTP listener:', err));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.deps.config.smtpInboundPort, this.deps.config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
  }

  async stop(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  /** Handles one accepted mail; throws only on a failure worth the sender's retry (the database). */
  async handle(raw: Buffer, session: SMTPServerSession): Promise<void> {
    const mail = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true });
    for (const rcpt of session.envelope.rcptTo) {
      const outcome = await this.handleOne(mail, session, rcpt.address);
      this.onHandled?.(outcome);
    }
  }

  private async handleOne(mail: ParsedMail, session: SMTPServerSession, address: string): Promise<InboundOutcome> {
    if (isBounce(session, mail)) return 'bounce';
    if (isAutomatic(mail)) return 'auto_reply';
    const token = RECIPIENT.exec(address.slice(0, address.lastIndexOf('@')))?.[1];
    const notification = token ? readReplyToken(this.deps, token) : null;
    if (!notification) return 'bad_token';
    const s = await subjectOf(this.deps.db, notification);
    if (!s) return 'bad_token';
    const user = await this.deps.db
      .selectFrom('users')
      .select(['uuid', 'username', 'is_staff', 'is_active'])
      .where('uuid', '=', s.user)
      .executeTakeFirst();
    if (!user || user.is_active !== 1) return 'no_user';
    const viewer: Viewer = { uuid: user.uuid, username: user.username, isStaff: user.is_staff === 1, tokenUuid: '' };
    const ref: RepoRef = { ownerKind: s.ownerKind === 'team' ? 'team' : 'user', ownerName: s.owner, repoSlug: s.repoSlug };
    const body = replyText(mail.text ?? '');
    try {
      // the mailto of List-Unsubscribe: a mail whose subject is "unsubscribe"
      if (body === '' && (mail.subject ?? '').trim().toLowerCase() === 'unsubscribe') {
        if (s.kind === 'pull') await putPullSubscription(this.deps, viewer, ref, s.number, false);
        else await putThreadSubscription(this.deps, viewer, ref, s.number, false);
        return 'unsubscribed';
      }
      if (body === '') return 'empty';
      const once = seenOnce(token!, mail.messageId);
      if (s.kind === 'pull') {
        const review = await createReview(this.deps, viewer, ref, s.number, { status: 'commented', body }, once);
        await this.attachFiles(viewer, ref, mail, { kind: 'review', number: s.number, reviewUuid: review.uuid });
        return 'reviewed';
      }
      const reply = await createReply(this.deps, viewer, ref, s.number, { body }, once);
      await this.attachFiles(viewer, ref, mail, { kind: 'reply', number: s.number, replyNumber: reply.number });
      return 'replied';
    } catch (err) {
      if (err instanceof AppError && err.code === DUPLICATE) return 'duplicate';
      // lost access, a locked or removed subject, a refused body: nothing changes, no answer
      if (err instanceof AppError) return 'refused';
      throw err;
    }
  }

  /** The mail's attachments (not inline images) as uploads attached to the new reply or review; upload limits apply. */
  private async attachFiles(viewer: Viewer, ref: RepoRef, mail: ParsedMail, target: Parameters<typeof attach>[3]): Promise<void> {
    const files = mail.attachments.filter((a) => !a.related && a.content.length > 0);
    if (files.length === 0) return;
    try {
      const uploads = await uploadFiles(this.deps, viewer, ref, undefined, async (plan, keep) => {
        const out: StoredFile[] = [];
        let used = 0;
        for (const a of files) {
          const filename = sanitizeFilename(a.filename ?? 'attachment');
          const blob = keep(await streamToBlob(this.deps, Readable.from([a.content]), plan, used));
          used += blob.size;
          out.push({ filename, contentType: cleanContentType(a.contentType), blob });
        }
        return out;
      });
      for (const u of uploads) await attach(this.deps, viewer, ref, target, { upload_uuid: u.uuid });
    } catch (err) {
      // the reply stands without them (too large, over the quota, no upload right); never retried,
      // which would post the reply twice
      if (!(err instanceof AppError)) console.error('weft: the attachments of an inbound mail failed', err);
    }
  }
}

const DUPLICATE = 'duplicate_mail';

/**
 * Records, in the reply's or review's transaction, that this mail (its Message-ID, answering this
 * notification) was posted, so the same mail sent again (a sender that never got the `250`) posts
 * nothing twice. A mail without a Message-ID cannot be told apart: it is posted each time.
 */
function seenOnce(token: string, messageId: string | undefined): ((db: Kysely<DB>) => Promise<void>) | undefined {
  if (!messageId) return undefined;
  const key = createHash('sha256').update(`${token.toLowerCase()}\n${messageId.trim()}`).digest('hex');
  return async (db) => {
    const done = await db
      .insertInto('inbound_mail_seen')
      .values({ mail_key: key, created_at: new Date().toISOString() })
      .onConflict((oc) => oc.column('mail_key').doNothing())
      .executeTakeFirst();
    if (Number(done.numInsertedOrUpdatedRows ?? 0) === 0) throw new AppError(409, DUPLICATE, 'This mail was posted already.');
  };
}
