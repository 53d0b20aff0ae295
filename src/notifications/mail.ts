/**
 * Notification mail (docs/notifications.md "Mail"), sent through the job queue with nodemailer
 * over SMTP (SMTP_URL, MAIL_FROM). The fan-out enqueues, in the transaction that updates the
 * inbox, one `notification-mail` job per notification whose user wants mail at once (its dedupe
 * key batches the activity of MAIL_BATCH_MS, default one minute, into one mail) or one
 * `notification-digest` job per user for their next 08:00 in their timezone. A job sends the
 * activity since the last mail (`mailed_event_id`) to its own user only, after checking that they
 * may still read the subject; an SMTP failure is retried with the queue's back-off, a permanent
 * (5xx) refusal marks the address bouncing and mail to it stops.
 */
import { type Kysely, sql } from 'kysely';
import nodemailer from 'nodemailer';
import type { Config } from '../config.ts';
import { runAfterCommit } from '../db/tx.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { boundedMarkdown } from '../markdown/bounded.ts';
import { runTitle } from './ci.ts';
import { readersOf } from './readers.ts';
import { replyAddress } from './reply-token.ts';

export const JOB_MAIL = 'notification-mail';
export const JOB_DIGEST = 'notification-digest';
export const UNSUBSCRIBE_PURPOSE = 'notification-unsubscribe';

export type MailSetting = 'off' | 'instant' | 'daily';

export interface MailSettings {
  email_notifications: MailSetting;
  timezone: string;
  email_bouncing: boolean;
}

export const mailConfigured = (deps: Deps): boolean => Boolean(deps.config.smtpUrl && deps.config.mailFrom);

/** A user's settings (the defaults when they set none). */
export async function mailSettings(db: Kysely<DB>, userUuid: string): Promise<MailSettings> {
  const row = await db.selectFrom('user_mail_settings').selectAll().where('user_uuid', '=', userUuid).executeTakeFirst();
  return {
    email_notifications: (row?.email_notifications as MailSetting | undefined) ?? 'instant',
    timezone: row?.timezone ?? 'UTC',
    email_bouncing: row?.email_bouncing === 1,
  };
}

export function validTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The next 08:00 in `tz` after `now` (an instant). */
export function nextEightAm(now: Date, tz: string): Date {
  const parts = (d: Date) => {
    const f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    }).formatToParts(d);
    const get = (t: string) => Number(f.find((p) => p.type === t)!.value);
    return { y: get('year'), m: get('month'), d: get('day'), h: get('hour'), mi: get('minute'), s: get('second') };
  };
  /** The instant whose wall clock in tz is the given local time (offset read at a nearby instant). */
  const at = (y: number, m: number, d: number): Date => {
    const guess = Date.UTC(y, m - 1, d, 8, 0, 0);
    const p = parts(new Date(guess));
    const offset = Date.UTC(p.y, p.m - 1, p.d, p.h, p.mi, p.s) - guess;
    return new Date(guess - offset);
  };
  const p = parts(now);
  let when = at(p.y, p.m, p.d);
  if (when.getTime() <= now.getTime()) {
    const next = new Date(Date.UTC(p.y, p.m - 1, p.d + 1));
    when = at(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate());
  }
  return when;
}

/**
 * What the fan-out does for mail after it wrote notifications (in its transaction), set-based:
 * one `INSERT … SELECT` of the `notification-mail` jobs of the notifications whose users want
 * mail at once (no settings row: the default, instant) and are not bouncing, their dedupe key
 * batching the activity of MAIL_BATCH_MS into one mail; then one `notification-digest` job per
 * user on `daily` (a few: each at their own 08:00).
 */
export async function enqueueMail(deps: Deps, db: Kysely<DB>, changed: Array<{ user: string; uuid: string }>): Promise<void> {
  if (!mailConfigured(deps) || changed.length === 0) return;
  const now = deps.clock.now();
  const runAt = new Date(now.getTime() + deps.config.mailBatchMs).toISOString();
  const pairs = JSON.stringify(changed.map((c) => [c.uuid, c.user]));
  const source =
    deps.dialect === 'postgres'
      ? sql`select j.value->>0 as uuid, j.value->>1 as user_uuid from jsonb_array_elements(${pairs}::jsonb) j`
      : sql`select json_extract(j.value, '$[0]') as uuid, json_extract(j.value, '$[1]') as user_uuid from json_each(${pairs}) j`;
  await sql`insert into jobs (kind, payload, dedupe_key, run_at, locked_until, attempts, last_error, failed_at, created_at)
    select ${JOB_MAIL}, '{"notification_uuid":"' || c.uuid || '"}', ${`${JOB_MAIL}:`} || c.uuid, ${runAt}, null, 0, null, null,
      ${now.toISOString()}
    from (${source}) c left join user_mail_settings s on s.user_uuid = c.user_uuid
    where coalesce(s.email_notifications, 'instant') = 'instant' and coalesce(s.email_bouncing, 0) = 0
    on conflict (dedupe_key) do nothing`.execute(db);
  const users = [...new Set(changed.map((c) => c.user))];
  for (let i = 0; i < users.length; i += 500)
    for (const s of await db
      .selectFrom('user_mail_settings')
      .select(['user_uuid', 'timezone'])
      .where('user_uuid', 'in', users.slice(i, i + 500))
      .where('email_notifications', '=', 'daily')
      .where('email_bouncing', '=', 0)
      .execute())
      await deps.jobs.enqueue(db, {
        kind: JOB_DIGEST,
        payload: { user_uuid: s.user_uuid },
        runAt: nextEightAm(now, s.timezone).toISOString(),
        dedupeKey: `${JOB_DIGEST}:${s.user_uuid}`,
      });
  // the queue is woken once the transaction commits (before that no worker could see the jobs)
  runAfterCommit(deps.db, () => deps.jobs.wake());
}

// ---------------------------------------------------------------------------------------------
// composing

const host = (deps: Deps): string => new URL(deps.config.publicUrl).hostname || 'weft.invalid';

/** The signed token of an unsubscribe link: user, what (s: the subject, r: the repo) and its uuid. */
export function unsubscribeToken(deps: Deps, user: string, what: 's' | 'r', uuid: string): string {
  const message = `${user}.${what}.${uuid}`;
  return `${Buffer.from(message).toString('base64url')}.${deps.secret.sign(UNSUBSCRIBE_PURPOSE, message)}`;
}

export function readUnsubscribeToken(deps: Deps, token: string): { user: string; what: 's' | 'r'; uuid: string } | null {
  const [m, sig] = token.split('.', 2);
  if (!m || !sig) return null;
  const message = Buffer.from(m, 'base64url').toString('utf8');
  if (!deps.secret.verify(UNSUBSCRIBE_PURPOSE, message, sig)) return null;
  const [user, what, uuid] = message.split('.');
  if (!user || (what !== 's' && what !== 'r') || !uuid) return null;
  return { user, what, uuid };
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const VERB: Record<string, string> = {
  'thread-created': 'opened the thread',
  'reply-created': 'replied',
  'thread-closed': 'closed the thread',
  'thread-reopened': 'reopened the thread',
  'thread-assigned': 'assigned',
  'pull-opened': 'opened the pull',
  'pull-merged': 'merged the pull',
  'pull-updated': 'changed the pull',
  'pull-assigned': 'assigned',
  'pull-ready-for-review': 'marked the pull ready for review',
  'review-submitted': 'reviewed',
  'review-requested': 'requested a review',
};

interface Activity {
  who: string;
  verb: string;
  text: string;
}

export interface Subject {
  notification: string;
  user: string;
  kind: 'thread' | 'pull' | 'run';
  uuid: string;
  repoUuid: string;
  repoSlug: string;
  owner: string;
  ownerKind: string;
  number: number;
  title: string;
  reason: string;
  from: number;
  to: number;
}

export async function subjectOf(db: Kysely<DB>, notificationUuid: string): Promise<Subject | null> {
  const n = await db
    .selectFrom('notifications as n')
    .innerJoin('repos as r', 'r.uuid', 'n.repo_uuid')
    .leftJoin('teams as ot', (j) => j.onRef('ot.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'team'))
    .leftJoin('users as ou', (j) => j.onRef('ou.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'user'))
    .leftJoin('threads as t', (j) => j.onRef('t.uuid', '=', 'n.subject_uuid').on('n.subject_kind', '=', 'thread'))
    .leftJoin('pulls as p', (j) => j.onRef('p.uuid', '=', 'n.subject_uuid').on('n.subject_kind', '=', 'pull'))
    .leftJoin('ci_runs as cr', (j) => j.onRef('cr.uuid', '=', 'n.subject_uuid').on('n.subject_kind', '=', 'run'))
    .select([
      'n.uuid',
      'n.user_uuid',
      'n.subject_kind',
      'n.subject_uuid',
      'n.repo_uuid',
      'n.reason',
      'n.mailed_event_id',
      'n.last_event_id',
      'r.slug',
      'r.owner_kind',
      'ot.slug as team_slug',
      'ou.username as owner_username',
      't.number as t_number',
      't.title as t_title',
      'p.number as p_number',
      'p.title as p_title',
      'cr.number as r_number',
      'cr.workflow_name as r_workflow',
      'cr.head_branch as r_branch',
      'cr.conclusion as r_conclusion',
    ])
    .where('n.uuid', '=', notificationUuid)
    .executeTakeFirst();
  if (!n) return null;
  const kind = n.subject_kind === 'pull' ? 'pull' : n.subject_kind === 'run' ? 'run' : 'thread';
  const number = kind === 'pull' ? n.p_number : kind === 'run' ? n.r_number : n.t_number;
  if (number === null || number === undefined) return null;
  return {
    notification: n.uuid,
    user: n.user_uuid,
    kind,
    uuid: n.subject_uuid,
    repoUuid: n.repo_uuid,
    repoSlug: n.slug,
    owner: (n.owner_kind === 'team' ? n.team_slug : n.owner_username) ?? '-',
    ownerKind: n.owner_kind,
    number,
    title:
      (kind === 'pull'
        ? n.p_title
        : kind === 'run'
          ? runTitle({ workflow_name: n.r_workflow ?? '', head_branch: n.r_branch, conclusion: n.r_conclusion })
          : n.t_title) ?? '',
    reason: n.reason,
    from: Number(n.mailed_event_id),
    to: Number(n.last_event_id),
  };
}

/** The subject's activity after `from` up to `to`, not the recipient's own, oldest first, at most 20. */
async function activityOf(db: Kysely<DB>, s: Subject): Promise<Activity[]> {
  const ids = db
    .selectFrom('event_scopes')
    .select('event_id')
    .where('scope', '=', `${s.kind}:${s.uuid}`)
    .where('event_id', '>', s.from)
    .where('event_id', '<=', s.to);
  const events = await db
    .selectFrom('events')
    .select(['id', 'kind', 'actor_uuid', 'actor_username', 'payload'])
    .where('id', 'in', ids)
    .where('kind', 'in', Object.keys(VERB))
    .orderBy('id', 'desc')
    .limit(20)
    .execute();
  const out: Activity[] = [];
  for (const e of events.reverse()) {
    if (e.actor_uuid === s.user) continue;
    const payload = JSON.parse(e.payload) as Record<string, unknown>;
    let text = '';
    if (e.kind === 'reply-created' && typeof payload.reply_uuid === 'string')
      text =
        (await db.selectFrom('replies').select('body').where('uuid', '=', payload.reply_uuid).executeTakeFirst())?.body ?? '';
    else if (e.kind === 'review-submitted' && typeof payload.review_uuid === 'string')
      text =
        (await db.selectFrom('reviews').select('body').where('uuid', '=', payload.review_uuid).executeTakeFirst())?.body ?? '';
    else if (e.kind === 'thread-created')
      text = (await db.selectFrom('threads').select('body').where('uuid', '=', s.uuid).executeTakeFirst())?.body ?? '';
    else if (e.kind === 'pull-opened')
      text = (await db.selectFrom('pulls').select('body').where('uuid', '=', s.uuid).executeTakeFirst())?.body ?? '';
    out.push({ who: e.actor_username ?? 'someone', verb: VERB[e.kind] ?? e.kind, text });
  }
  // reason `ci`: the run that completed (the user's own run: not in the subject's scope)
  const last = await db.selectFrom('events').select(['kind', 'payload']).where('id', '=', s.to).executeTakeFirst();
  if (last?.kind === 'run-completed' && s.to > s.from) {
    type RunPart = { number?: number; workflow?: { name?: string }; head_branch?: string | null; conclusion?: string | null };
    const run = (JSON.parse(last.payload) as { run?: RunPart }).run ?? {};
    const title = runTitle({
      workflow_name: run.workflow?.name ?? '',
      head_branch: run.head_branch ?? null,
      conclusion: run.conclusion ?? null,
    });
    out.push({ who: `Run #${String(run.number ?? '')}`, verb: `completed: ${title}`, text: '' });
  }
  return out;
}

export interface ComposedMail {
  to: string;
  from: string;
  subject: string;
  text: string;
  html: string;
  messageId: string;
  headers: Record<string, string>;
  replyTo?: string;
}

function subjectUrl(deps: Deps, s: Subject): string {
  return `${deps.config.publicUrl}/${s.ownerKind === 'team' ? 'teams' : 'users'}/${encodeURIComponent(s.owner)}/${encodeURIComponent(s.repoSlug)}/${s.kind === 'pull' ? 'pulls' : s.kind === 'run' ? 'runs' : 'threads'}/${s.number}`;
}

function compose(deps: Deps, to: string, s: Subject, activity: Activity[]): ComposedMail {
  const h = host(deps);
  const url = subjectUrl(deps, s);
  const md = boundedMarkdown();
  const unsubscribe = `${deps.config.publicUrl}/notifications/unsubscribe/${unsubscribeToken(deps, s.user, 's', s.uuid)}`;
  const text = [
    ...activity.map((a) => `${a.who} ${a.verb}${a.text ? `:\n\n${a.text}` : '.'}\n`),
    `-- \nView it on Weft: ${url}\nYou are receiving this because: ${s.reason.replace('_', ' ')}.\nUnsubscribe: ${unsubscribe}\n`,
  ].join('\n');
  const html = `<!doctype html><html><body>${activity
    .map(
      (a) =>
        `<p><strong>${escapeHtml(a.who)}</strong> ${escapeHtml(a.verb)}</p>${a.text ? `<div>${md.render(a.text)}</div>` : ''}`,
    )
    .join('\n')}<hr><p><a href="${escapeHtml(url)}">View it on Weft</a> &middot; you are receiving this because: ${escapeHtml(
    s.reason.replace('_', ' '),
  )} &middot; <a href="${escapeHtml(unsubscribe)}">unsubscribe</a></p></body></html>`;
  const thread = `<${s.kind}.${s.uuid}@${h}>`;
  const reply = replyAddress(deps, s.notification);
  return {
    to,
    from: deps.config.mailFrom!,
    subject: `[${s.owner}/${s.repoSlug}] ${s.title} (${s.kind === 'pull' ? '!' : s.kind === 'run' ? 'run ' : '#'}${s.number})`,
    text,
    html,
    messageId: `<${s.notification}.${s.to}@${h}>`,
    headers: {
      'In-Reply-To': thread,
      References: thread,
      'List-ID': `<${s.repoSlug}.${s.owner}.${h}>`,
      'List-Unsubscribe': reply ? `<${unsubscribe}>, <mailto:${reply}?subject=unsubscribe>` : `<${unsubscribe}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
      'X-Weft-Reason': s.reason,
      'Auto-Submitted': 'auto-generated',
    },
    ...(reply ? { replyTo: reply } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// sending

let transport: { url: string; t: nodemailer.Transporter } | null = null;

function transporter(deps: Deps): nodemailer.Transporter {
  const url = deps.config.smtpUrl!;
  if (transport?.url !== url) transport = { url, t: nodemailer.createTransport(url) };
  return transport.t;
}

/** A permanent refusal (5xx) of the receiving server: no retry. */
const permanent = (err: unknown): boolean => {
  const code = (err as { responseCode?: number }).responseCode;
  return typeof code === 'number' && code >= 500 && code < 600;
};

export async function sendMail(deps: Deps, mail: ComposedMail): Promise<void> {
  await transporter(deps).sendMail({
    from: mail.from,
    to: mail.to,
    subject: mail.subject,
    text: mail.text,
    html: mail.html,
    messageId: mail.messageId,
    headers: mail.headers,
    ...(mail.replyTo ? { replyTo: mail.replyTo } : {}),
  });
}

async function markBouncing(deps: Deps, user: string, detail: string): Promise<void> {
  const now = deps.clock.now().toISOString();
  await deps.db
    .insertInto('user_mail_settings')
    .values({
      user_uuid: user,
      email_notifications: 'instant',
      timezone: 'UTC',
      email_bouncing: 1,
      bounce_detail: detail,
      updated_at: now,
    })
    .onConflict((oc) => oc.column('user_uuid').doUpdateSet({ email_bouncing: 1, bounce_detail: detail, updated_at: now }))
    .execute();
}

/** Sends to the user's own address; a 5xx refusal marks it bouncing (no retry), other failures throw (retried). */
async function deliver(deps: Deps, user: string, mail: ComposedMail): Promise<boolean> {
  try {
    await sendMail(deps, mail);
    return true;
  } catch (err) {
    if (!permanent(err)) throw err;
    await markBouncing(deps, user, String((err as Error).message).slice(0, 500));
    return false;
  }
}

async function recipient(deps: Deps, user: string): Promise<{ email: string; settings: MailSettings } | null> {
  const u = await deps.db.selectFrom('users').select(['email', 'is_active']).where('uuid', '=', user).executeTakeFirst();
  if (!u || u.is_active !== 1 || !u.email) return null;
  const settings = await mailSettings(deps.db, user);
  if (settings.email_bouncing) return null;
  return { email: u.email, settings };
}

/** The `notification-mail` job: the activity of one notification since its last mail. */
export async function sendNotificationMail(deps: Deps, notificationUuid: string): Promise<void> {
  if (!mailConfigured(deps)) return;
  const s = await subjectOf(deps.db, notificationUuid);
  if (!s || s.to <= s.from) return;
  const to = await recipient(deps, s.user);
  if (!to || to.settings.email_notifications !== 'instant') return;
  // only what the user may read now
  if (!(await readersOf(deps.db, s.repoUuid, [s.user])).has(s.user)) return;
  const activity = await activityOf(deps.db, s);
  if (activity.length > 0) {
    const sent = await deliver(deps, s.user, compose(deps, to.email, s, activity));
    if (!sent) return;
  }
  await deps.db
    .updateTable('notifications')
    .set({ mailed_event_id: s.to })
    .where('uuid', '=', s.notification)
    .where('mailed_event_id', '<', s.to)
    .execute();
}

/** The `notification-digest` job: one mail with every notification updated since its last mail. */
export async function sendDigest(deps: Deps, user: string): Promise<void> {
  if (!mailConfigured(deps)) return;
  const to = await recipient(deps, user);
  if (!to || to.settings.email_notifications !== 'daily') return;
  const rows = await deps.db
    .selectFrom('notifications')
    .select(['uuid', 'repo_uuid', 'last_event_id', 'mailed_event_id'])
    .where('user_uuid', '=', user)
    .where('done', '=', 0)
    .whereRef('last_event_id', '>', 'mailed_event_id')
    .orderBy('updated_at', 'desc')
    .limit(200)
    .execute();
  const subjects: Subject[] = [];
  const readable = new Map<string, boolean>();
  for (const r of rows) {
    if (!readable.has(r.repo_uuid)) readable.set(r.repo_uuid, (await readersOf(deps.db, r.repo_uuid, [user])).has(user));
    if (!readable.get(r.repo_uuid)) continue;
    const s = await subjectOf(deps.db, r.uuid);
    if (s) subjects.push(s);
  }
  if (subjects.length > 0) {
    const h = host(deps);
    const lines: string[] = [];
    const parts: string[] = [];
    for (const s of subjects) {
      const activity = await activityOf(deps.db, s);
      const url = subjectUrl(deps, s);
      lines.push(
        `[${s.owner}/${s.repoSlug}] ${s.title} (${s.kind === 'pull' ? '!' : s.kind === 'run' ? 'run ' : '#'}${s.number}) - ${s.reason}`,
      );
      for (const a of activity) lines.push(`  ${a.who} ${a.verb}`);
      lines.push(`  ${url}`, '');
      parts.push(
        `<h3><a href="${escapeHtml(url)}">${escapeHtml(`[${s.owner}/${s.repoSlug}] ${s.title}`)}</a></h3><ul>${activity
          .map((a) => `<li>${escapeHtml(`${a.who} ${a.verb}`)}</li>`)
          .join('')}</ul>`,
      );
    }
    const unsubscribe = `${deps.config.publicUrl}/settings/notifications`;
    const day = deps.clock.now().toISOString().slice(0, 10);
    const sent = await deliver(deps, user, {
      to: to.email,
      from: deps.config.mailFrom!,
      subject: `Your Weft digest: ${subjects.length} updated`,
      text: `${lines.join('\n')}\n-- \nMail settings: ${unsubscribe}\n`,
      html: `<!doctype html><html><body>${parts.join('\n')}<hr><p><a href="${escapeHtml(unsubscribe)}">Mail settings</a></p></body></html>`,
      messageId: `<digest.${user}.${day}.${subjects[0]!.to}@${h}>`,
      headers: {
        'List-ID': `<digest.${h}>`,
        'List-Unsubscribe': `<${unsubscribe}>`,
        'X-Weft-Reason': 'digest',
        'Auto-Submitted': 'auto-generated',
      },
    });
    if (!sent) return;
  }
  for (const s of subjects)
    await deps.db
      .updateTable('notifications')
      .set({ mailed_event_id: s.to })
      .where('uuid', '=', s.notification)
      .where('mailed_event_id', '<', s.to)
      .execute();
}

/** `weft send-test-mail ADDRESS`: one plain mail with the configured settings (SMTP_URL, MAIL_FROM). */
export async function sendTestMail(config: Config, address: string): Promise<void> {
  if (!config.smtpUrl || !config.mailFrom) throw new Error('SMTP_URL and MAIL_FROM must be set to send mail.');
  const t = nodemailer.createTransport(config.smtpUrl);
  try {
    await t.sendMail({
      from: config.mailFrom,
      to: address,
      subject: 'Weft test mail',
      text: `This is a test mail from Weft at ${config.publicUrl}.\n`,
      headers: { 'Auto-Submitted': 'auto-generated' },
    });
  } finally {
    t.close();
  }
}

export function registerMailJobs(deps: Deps): void {
  deps.jobs.register(JOB_MAIL, async (payload) => sendNotificationMail(deps, String(payload.notification_uuid)));
  deps.jobs.register(JOB_DIGEST, async (payload) => sendDigest(deps, String(payload.user_uuid)));
}
