/**
 * The notification fan-out (docs/notifications.md). One loop per instance follows the event store
 * in id order from a cursor kept in the database (`notification_dispatch`), reading only settled
 * events (events/order.ts), computes for each event about a thread or a pull who is concerned and
 * why, and upserts one notification per (user, subject) in the same transaction that moves the
 * cursor: an event is fanned out exactly once across restarts, crashes and instances (the cursor
 * row is locked for the batch; on PostgreSQL another instance skips it while it is held).
 *
 * Who is concerned (the reasons of docs/notifications.md): the event's own target (an assignee
 * just assigned, a reviewer just requested, the users and team members it `@`-mentions, the
 * author of a subject closed, reopened or merged), then the standing relations (author,
 * assignees, requested reviewers, earlier repliers and reviewers, watchers and subscribers),
 * filtered by each user's repo level and subject override, never the actor, and only users who
 * may read the repo at that moment (the repo rule's SQL over the candidates, one statement).
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { inTransaction } from '../core/transaction.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { type CursorEvent, EventFollower, type FollowStep, eventsAfterCursor } from '../events/follow.ts';
import type { EventInput } from '../events/service.ts';
import { findMentions } from '../references/parse.ts';
import { enqueueMail, registerMailJobs } from './mail.ts';
import { readersOf } from './readers.ts';

const BATCH = 200;

export type Reason =
  'author' | 'assigned' | 'mention' | 'team_mention' | 'review_requested' | 'comment' | 'state_change' | 'subscribed' | 'ci';

export const REASONS: readonly Reason[] = [
  'author',
  'assigned',
  'mention',
  'team_mention',
  'review_requested',
  'comment',
  'state_change',
  'subscribed',
  'ci',
];

/** The kinds that notify, with where their text (mentions) lives. */
const NOTIFYING: Record<string, { text?: 'thread' | 'pull' | 'reply' | 'review'; state?: boolean }> = {
  'thread-created': { text: 'thread' },
  'reply-created': { text: 'reply' },
  'thread-closed': { state: true },
  'thread-reopened': { state: true },
  'thread-assigned': {},
  'pull-opened': { text: 'pull' },
  'pull-merged': { state: true },
  'pull-updated': {},
  'pull-assigned': {},
  'pull-ready-for-review': {},
  'review-submitted': { text: 'review' },
  'review-requested': {},
};

type RawEvent = CursorEvent;

interface Subject {
  kind: 'thread' | 'pull';
  uuid: string;
  repo_uuid: string;
  author_uuid: string;
}

/** What one (user, subject) gets from one batch: the last event's facts and the reasons in order. */
interface Touch {
  user: string;
  subject: Subject;
  reasons: Reason[];
  eventId: number;
  actor: { uuid: string; username: string } | null;
  at: string;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

function subjectRef(e: { scopes: string[] }): { kind: 'thread' | 'pull'; uuid: string } | null {
  for (const s of e.scopes) {
    if (s.startsWith('thread:')) return { kind: 'thread', uuid: s.slice(7) };
    if (s.startsWith('pull:')) return { kind: 'pull', uuid: s.slice(5) };
  }
  return null;
}

export class NotificationFanout extends EventFollower {
  /** Called after a batch committed with the users whose inbox changed (mail, tests). */
  onCommitted: ((users: string[]) => void) | null = null;

  constructor(private readonly deps: Deps) {
    super(deps.bus, 'the notification fan-out');
    registerMailJobs(deps);
  }

  protected step(): Promise<FollowStep> {
    return this.runOnce();
  }

  /** One batch: 'more' when a full batch was read, 'unsettled' when committed events wait to settle. */
  async runOnce(): Promise<FollowStep> {
    const users = new Set<string>();
    const step = await inTransaction(this.deps, async (tx) => {
      users.clear();
      const read = await eventsAfterCursor(tx.db, tx.dialect, 'notification_dispatch', BATCH);
      if (typeof read === 'string') return read;
      const { events } = read;
      const touches = await concerned(tx.db, events);
      const changed = await upsert(tx.db, touches, this.deps.clock.now().toISOString());
      // mail: a job per notification (batched by its dedupe key) or a digest per user, in this transaction
      await enqueueMail(this.deps, tx.db, changed);
      const last = Number(events[events.length - 1]!.id);
      await tx.db.updateTable('notification_dispatch').set({ last_event_id: last }).where('id', '=', 1).execute();
      // the live badge: one `notification-updated` per user whose inbox changed in this batch
      const byUser = new Map<string, string[]>();
      for (const c of changed) {
        const list = byUser.get(c.user) ?? [];
        list.push(c.uuid);
        byUser.set(c.user, list);
      }
      const inputs: EventInput[] = [...byUser].map(([user, uuids]) => updatedEvent(user, uuids.slice(0, 100), 'activity'));
      for (let i = 0; i < inputs.length; i += 1000) await tx.emitMany(inputs.slice(i, i + 1000));
      for (const u of byUser.keys()) users.add(u);
      return events.length === BATCH ? ('more' as const) : ('idle' as const);
    });
    if (users.size) this.onCommitted?.([...users]);
    return step;
  }
}

/** The `notification-updated` event of one user's inbox (in their user scope, for them alone). */
export function updatedEvent(
  user: string,
  uuids: string[],
  change: 'activity' | 'read' | 'unread' | 'done' | 'undone',
): EventInput {
  return {
    kind: 'notification-updated',
    scopes: [`user:${user}`],
    actor: null,
    payload: { user_uuid: user, notification_uuids: uuids, change },
  };
}

/** Who each event concerns, collapsed per (user, subject) over the batch, in event order. */
async function concerned(db: Kysely<DB>, raw: RawEvent[]): Promise<Touch[]> {
  const events = raw
    .filter((e) => Object.hasOwn(NOTIFYING, e.kind))
    .map((e) => {
      const scopes = JSON.parse(e.scopes) as string[];
      const payload = JSON.parse(e.payload) as Record<string, unknown>;
      return { ...e, scopes, payload, subject: subjectRef({ scopes }) };
    })
    .filter((e) => e.subject !== null && (e.kind !== 'pull-updated' || e.payload.action !== 'edited'));
  if (events.length === 0) return [];

  const threadUuids = [...new Set(events.filter((e) => e.subject!.kind === 'thread').map((e) => e.subject!.uuid))];
  const pullUuids = [...new Set(events.filter((e) => e.subject!.kind === 'pull').map((e) => e.subject!.uuid))];
  const subjects = new Map<string, Subject>();
  const bodies = new Map<string, string>();
  if (threadUuids.length) {
    for (const t of await db
      .selectFrom('threads')
      .select(['uuid', 'repo_uuid', 'author_uuid', 'body'])
      .where('uuid', 'in', threadUuids)
      .execute()) {
      subjects.set(t.uuid, { kind: 'thread', uuid: t.uuid, repo_uuid: t.repo_uuid, author_uuid: t.author_uuid });
      bodies.set(`thread:${t.uuid}`, t.body);
    }
  }
  if (pullUuids.length) {
    for (const p of await db
      .selectFrom('pulls')
      .select(['uuid', 'repo_uuid', 'author_uuid', 'body'])
      .where('uuid', 'in', pullUuids)
      .execute()) {
      subjects.set(p.uuid, { kind: 'pull', uuid: p.uuid, repo_uuid: p.repo_uuid, author_uuid: p.author_uuid });
      bodies.set(`pull:${p.uuid}`, p.body);
    }
  }
  const subjectUuids = [...subjects.keys()];
  if (subjectUuids.length === 0) return [];
  const repoUuids = [...new Set([...subjects.values()].map((s) => s.repo_uuid))];

  // the texts the events carry (mentions)
  const replyUuids = events.filter((e) => NOTIFYING[e.kind]!.text === 'reply').map((e) => str(e.payload.reply_uuid) ?? '-');
  const reviewUuids = events.filter((e) => NOTIFYING[e.kind]!.text === 'review').map((e) => str(e.payload.review_uuid) ?? '-');
  if (replyUuids.length)
    for (const r of await db.selectFrom('replies').select(['uuid', 'body']).where('uuid', 'in', replyUuids).execute())
      bodies.set(`reply:${r.uuid}`, r.body);
  if (reviewUuids.length)
    for (const r of await db.selectFrom('reviews').select(['uuid', 'body']).where('uuid', 'in', reviewUuids).execute())
      bodies.set(`review:${r.uuid}`, r.body);
  const textOf = (e: (typeof events)[number]): string => {
    const where = NOTIFYING[e.kind]!.text;
    if (where === 'thread' || where === 'pull') return bodies.get(`${where}:${e.subject!.uuid}`) ?? '';
    if (where === 'reply') return bodies.get(`reply:${str(e.payload.reply_uuid)}`) ?? '';
    if (where === 'review') return bodies.get(`review:${str(e.payload.review_uuid)}`) ?? '';
    return '';
  };
  const mentionsOf = new Map<number, string[]>();
  const names = new Set<string>();
  for (const e of events) {
    const found = findMentions(textOf(e));
    mentionsOf.set(e.id, found);
    for (const n of found) names.add(n);
  }
  const userByName = new Map<string, string>();
  const teamMembersByName = new Map<string, string[]>();
  if (names.size) {
    for (const u of await db
      .selectFrom('users')
      .select(['uuid', 'username'])
      .where('username', 'in', [...names])
      .execute())
      userByName.set(u.username.toLowerCase(), u.uuid);
    for (const m of await db
      .selectFrom('teams as t')
      .innerJoin('team_members as m', 'm.team_uuid', 't.uuid')
      .select(['t.slug', 'm.user_uuid'])
      .where('t.slug', 'in', [...names])
      .execute()) {
      const list = teamMembersByName.get(m.slug.toLowerCase()) ?? [];
      list.push(m.user_uuid);
      teamMembersByName.set(m.slug.toLowerCase(), list);
    }
  }

  // the standing relations, read after the batch's writes (the state as of now)
  const assignees = new Map<string, Set<string>>();
  for (const a of await db
    .selectFrom('item_assignees')
    .select(['item_uuid', 'user_uuid'])
    .where('item_uuid', 'in', subjectUuids)
    .execute())
    (assignees.get(a.item_uuid) ?? assignees.set(a.item_uuid, new Set()).get(a.item_uuid)!).add(a.user_uuid);
  const requested = new Map<string, Set<string>>();
  if (pullUuids.length)
    for (const r of await db
      .selectFrom('review_requests')
      .select(['pull_uuid', 'user_uuid'])
      .where('pull_uuid', 'in', pullUuids)
      .execute())
      (requested.get(r.pull_uuid) ?? requested.set(r.pull_uuid, new Set()).get(r.pull_uuid)!).add(r.user_uuid);
  const participants = new Map<string, Set<string>>();
  const addParticipant = (subject: string, user: string) =>
    (participants.get(subject) ?? participants.set(subject, new Set()).get(subject)!).add(user);
  if (threadUuids.length)
    for (const r of await db
      .selectFrom('replies')
      .select(['thread_uuid', 'author_uuid'])
      .distinct()
      .where('thread_uuid', 'in', threadUuids)
      .where('removed_at', 'is', null)
      .execute())
      addParticipant(r.thread_uuid, r.author_uuid);
  if (pullUuids.length)
    for (const r of await db
      .selectFrom('reviews')
      .select(['pull_uuid', 'author_uuid'])
      .distinct()
      .where('pull_uuid', 'in', pullUuids)
      .where('removed_at', 'is', null)
      .execute())
      addParticipant(r.pull_uuid, r.author_uuid);
  const repoLevel = new Map<string, Map<string, string>>();
  const watchers = new Map<string, string[]>();
  for (const s of await db
    .selectFrom('repo_subscriptions')
    .select(['repo_uuid', 'user_uuid', 'level'])
    .where('repo_uuid', 'in', repoUuids)
    .execute()) {
    (repoLevel.get(s.repo_uuid) ?? repoLevel.set(s.repo_uuid, new Map()).get(s.repo_uuid)!).set(s.user_uuid, s.level);
    if (s.level === 'watching') (watchers.get(s.repo_uuid) ?? watchers.set(s.repo_uuid, []).get(s.repo_uuid)!).push(s.user_uuid);
  }
  const override = new Map<string, Map<string, boolean>>();
  for (const s of await db
    .selectFrom('subject_subscriptions')
    .select(['subject_uuid', 'user_uuid', 'subscribed'])
    .where('subject_uuid', 'in', subjectUuids)
    .execute())
    (override.get(s.subject_uuid) ?? override.set(s.subject_uuid, new Map()).get(s.subject_uuid)!).set(
      s.user_uuid,
      s.subscribed === 1,
    );

  // who already has a notification about the subject stays concerned (a mention subscribes, as on GitHub)
  const holders = new Map<string, Map<string, Reason>>();
  for (const n of await db
    .selectFrom('notifications')
    .select(['subject_uuid', 'user_uuid', 'reason'])
    .where('subject_uuid', 'in', subjectUuids)
    .execute())
    (holders.get(n.subject_uuid) ?? holders.set(n.subject_uuid, new Map()).get(n.subject_uuid)!).set(
      n.user_uuid,
      n.reason as Reason,
    );

  // per event: each concerned user's reasons, most specific first
  const perEvent: Array<{ e: (typeof events)[number]; subject: Subject; users: Map<string, Reason[]> }> = [];
  for (const e of events) {
    const subject = subjects.get(e.subject!.uuid);
    if (!subject) continue;
    const users = new Map<string, Reason[]>();
    const add = (user: string | null | undefined, reason: Reason) => {
      if (!user) return;
      const list = users.get(user) ?? [];
      if (!list.includes(reason)) list.push(reason);
      users.set(user, list);
    };
    // the event's own targets
    if (e.kind === 'review-requested') add(str((e.payload.reviewer as { uuid?: unknown } | null)?.uuid), 'review_requested');
    if (e.kind.endsWith('-assigned')) add(str((e.payload.assignee as { uuid?: unknown } | null)?.uuid), 'assigned');
    for (const name of mentionsOf.get(e.id) ?? []) {
      add(userByName.get(name), 'mention');
      for (const m of teamMembersByName.get(name) ?? []) add(m, 'team_mention');
    }
    const stateChange = NOTIFYING[e.kind]!.state || (e.kind === 'pull-updated' && e.payload.action !== 'edited');
    if (stateChange) add(subject.author_uuid, 'state_change');
    // the standing relations
    add(subject.author_uuid, 'author');
    for (const u of assignees.get(subject.uuid) ?? []) add(u, 'assigned');
    for (const u of requested.get(subject.uuid) ?? []) add(u, 'review_requested');
    for (const u of participants.get(subject.uuid) ?? []) add(u, 'comment');
    for (const u of watchers.get(subject.repo_uuid) ?? []) add(u, 'subscribed');
    for (const [u, on] of override.get(subject.uuid) ?? []) if (on) add(u, 'subscribed');
    for (const [u, reason] of holders.get(subject.uuid) ?? []) add(u, reason);
    // the actor is never notified of their own activity; levels and overrides filter the rest
    if (e.actor_uuid) users.delete(e.actor_uuid);
    const direct = new Set<string>();
    if (e.kind === 'review-requested') direct.add(str((e.payload.reviewer as { uuid?: unknown } | null)?.uuid) ?? '');
    for (const name of mentionsOf.get(e.id) ?? []) direct.add(userByName.get(name) ?? '');
    for (const [u, reasons] of users) {
      const explicit = override.get(subject.uuid)?.get(u);
      const level = repoLevel.get(subject.repo_uuid)?.get(u) ?? 'participating';
      // explicitly unsubscribed, or ignoring the repo: direct mentions and review requests only
      const quiet = explicit === false || (explicit === undefined && level === 'ignoring');
      if (quiet && !direct.has(u)) users.delete(u);
      else if (quiet)
        users.set(
          u,
          reasons.filter((r) => r === 'mention' || r === 'review_requested'),
        );
    }
    perEvent.push({ e, subject, users });
  }

  // who may read each repo now: the repo rule's SQL over the candidates, one statement per repo
  const candidates = new Map<string, Set<string>>();
  for (const p of perEvent)
    for (const u of p.users.keys())
      (candidates.get(p.subject.repo_uuid) ?? candidates.set(p.subject.repo_uuid, new Set()).get(p.subject.repo_uuid)!).add(u);
  const readers = new Map<string, Set<string>>();
  for (const [repo, users] of candidates) readers.set(repo, await readersOf(db, repo, [...users]));

  const touches = new Map<string, Touch>();
  for (const { e, subject, users } of perEvent) {
    const can = readers.get(subject.repo_uuid) ?? new Set();
    for (const [u, reasons] of users) {
      if (!can.has(u) || reasons.length === 0) continue;
      const key = `${u}:${subject.uuid}`;
      const t = touches.get(key);
      const actor = e.actor_uuid ? { uuid: e.actor_uuid, username: e.actor_username ?? '' } : null;
      // the notification's reason is its latest activity's; `reasons` keep the earlier ones
      if (t) {
        t.reasons = [...t.reasons.filter((r) => r !== reasons[0]), reasons[0]!];
        t.eventId = e.id;
        t.actor = actor;
      } else touches.set(key, { user: u, subject, reasons: [reasons[0]!], eventId: e.id, actor, at: '' });
    }
  }
  return [...touches.values()];
}

/**
 * Writes the touches: a new notification, or the existing one made unread (and not done) again
 * with its reasons extended, its latest event and actor. The uuids changed, per user.
 */
async function upsert(db: Kysely<DB>, touches: Touch[], now: string): Promise<Array<{ user: string; uuid: string }>> {
  if (touches.length === 0) return [];
  const changed: Array<{ user: string; uuid: string }> = [];
  // existing rows of these (user, subject) pairs, per subject
  const bySubject = new Map<string, Touch[]>();
  for (const t of touches) (bySubject.get(t.subject.uuid) ?? bySubject.set(t.subject.uuid, []).get(t.subject.uuid)!).push(t);
  const existing = new Map<string, { uuid: string; reasons: string }>();
  for (const [subject, list] of bySubject) {
    for (let i = 0; i < list.length; i += 500) {
      const rows = await db
        .selectFrom('notifications')
        .select(['uuid', 'user_uuid', 'reasons'])
        .where('subject_uuid', '=', subject)
        .where(
          'user_uuid',
          'in',
          list.slice(i, i + 500).map((t) => t.user),
        )
        .execute();
      for (const r of rows) existing.set(`${r.user_uuid}:${subject}`, { uuid: r.uuid, reasons: r.reasons });
    }
  }
  const rows = touches.map((t) => {
    const old = existing.get(`${t.user}:${t.subject.uuid}`);
    const before = old ? (JSON.parse(old.reasons) as Reason[]) : [];
    const reasons = [...before];
    for (const r of t.reasons) if (!reasons.includes(r)) reasons.push(r);
    const uuid = old?.uuid ?? randomUUID();
    changed.push({ user: t.user, uuid });
    return {
      uuid,
      user_uuid: t.user,
      subject_kind: t.subject.kind,
      subject_uuid: t.subject.uuid,
      repo_uuid: t.subject.repo_uuid,
      reason: t.reasons[t.reasons.length - 1]!,
      reasons: JSON.stringify(reasons),
      unread: 1,
      done: 0,
      updated_at: now,
      last_event_id: t.eventId,
      last_actor_uuid: t.actor?.uuid ?? null,
      last_actor_username: t.actor?.username ?? null,
      created_at: now,
    };
  });
  for (let i = 0; i < rows.length; i += 300) {
    await db
      .insertInto('notifications')
      .values(rows.slice(i, i + 300))
      .onConflict((oc) =>
        oc.columns(['user_uuid', 'subject_uuid']).doUpdateSet((eb) => ({
          reason: eb.ref('excluded.reason'),
          reasons: eb.ref('excluded.reasons'),
          unread: 1,
          done: 0,
          updated_at: eb.ref('excluded.updated_at'),
          last_event_id: eb.ref('excluded.last_event_id'),
          last_actor_uuid: eb.ref('excluded.last_actor_uuid'),
          last_actor_username: eb.ref('excluded.last_actor_username'),
        })),
      )
      .execute();
  }
  return changed;
}
