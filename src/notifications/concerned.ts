/**
 * Who an event concerns and why (docs/notifications.md "Reasons"): the event's own target (an
 * assignee just assigned, a reviewer just requested, the users and team members it `@`-mentions,
 * the author of a subject closed, reopened or merged), then the standing relations (author,
 * assignees, requested reviewers, earlier repliers and reviewers, watchers and subscribers),
 * filtered by each user's repo level and subject override, never the actor, and only users who
 * may read the repo at that moment (the repo rule's SQL over the candidates). Reads only: the
 * fan-out (fanout.ts) writes what this answers. The watchers and holders without another relation
 * (a repo's thousands) are not listed: they are each subject's `Bulk`, which the fan-out writes
 * set-based in SQL, so this costs what the special users cost, whatever the number of watchers.
 */
import type { Kysely } from 'kysely';
import type { DB } from '../db/types.ts';
import type { CursorEvent } from '../events/follow.ts';
import { findMentions } from '../references/parse.ts';
import { readersOf } from './readers.ts';

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
export const NOTIFYING: Record<string, { text?: 'thread' | 'pull' | 'reply' | 'review'; state?: boolean }> = {
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

export interface Subject {
  kind: 'thread' | 'pull' | 'run';
  uuid: string;
  repo_uuid: string;
  author_uuid: string;
}

/** What one (user, subject) gets from one batch: the last event's facts and the reasons in order. */
export interface Touch {
  user: string;
  subject: Subject;
  reasons: Reason[];
  eventId: number;
  actor: { uuid: string; username: string } | null;
}

/**
 * The rest of a subject's audience, written set-based (fanout.ts): the repo's watchers and the
 * users holding a notification about it, except its `special` users (whose touches are listed),
 * each with the standing reason (`subscribed`, else the reason they hold), the subject's last
 * event and actor of the batch, if they may read the repo now and do not ignore it.
 */
export interface Bulk {
  subject: Subject;
  eventId: number;
  actor: { uuid: string; username: string } | null;
  special: string[];
}

/** What a batch of events concerns: the touches of the special users and each subject's bulk. */
export interface Concerned {
  touches: Touch[];
  bulk: Bulk[];
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

function subjectRef(e: { scopes: string[] }): { kind: 'thread' | 'pull'; uuid: string } | null {
  for (const s of e.scopes) {
    if (s.startsWith('thread:')) return { kind: 'thread', uuid: s.slice(7) };
    if (s.startsWith('pull:')) return { kind: 'pull', uuid: s.slice(5) };
  }
  return null;
}

/** Who each event concerns, collapsed per (user, subject) over the batch, in event order. */
export async function concerned(db: Kysely<DB>, raw: RawEvent[]): Promise<Concerned> {
  const events = raw
    .filter((e) => Object.hasOwn(NOTIFYING, e.kind))
    .map((e) => {
      const scopes = JSON.parse(e.scopes) as string[];
      const payload = JSON.parse(e.payload) as Record<string, unknown>;
      return { ...e, scopes, payload, subject: subjectRef({ scopes }) };
    })
    .filter((e) => e.subject !== null && (e.kind !== 'pull-updated' || e.payload.action !== 'edited'));
  if (events.length === 0) return { touches: [], bulk: [] };

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
  if (subjectUuids.length === 0) return { touches: [], bulk: [] };
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

  // The special users of each subject: everyone with a relation other than watching the repo or
  // already holding a notification (author, assignees, requested reviewers, participants,
  // explicit subscriptions either way) and everyone an event names (targets, actors). Their
  // reasons are computed here; the other watchers and holders, thousands maybe, are the bulk,
  // written set-based by the fan-out (fanout.ts) with the standing reason alone.
  const specialOf = new Map<string, Set<string>>();
  for (const uuid of subjectUuids) {
    const subject = subjects.get(uuid)!;
    const set = new Set<string>([subject.author_uuid]);
    for (const list of [assignees.get(uuid), requested.get(uuid), participants.get(uuid), override.get(uuid)?.keys()])
      for (const u of list ?? []) set.add(u);
    specialOf.set(uuid, set);
  }
  for (const e of events) {
    const set = specialOf.get(e.subject!.uuid);
    if (!set) continue;
    if (e.actor_uuid) set.add(e.actor_uuid);
    const reviewer = str((e.payload.reviewer as { uuid?: unknown } | null)?.uuid);
    const assignee = str((e.payload.assignee as { uuid?: unknown } | null)?.uuid);
    if (e.kind === 'review-requested' && reviewer) set.add(reviewer);
    if (e.kind.endsWith('-assigned') && assignee) set.add(assignee);
    for (const name of mentionsOf.get(e.id) ?? []) {
      const u = userByName.get(name);
      if (u) set.add(u);
      for (const m of teamMembersByName.get(name) ?? []) set.add(m);
    }
  }
  const specialAll = [...new Set([...specialOf.values()].flatMap((set) => [...set]))];

  // the special users' repo levels and the notifications they hold (500 users a statement)
  const repoLevel = new Map<string, Map<string, string>>();
  const watchers = new Map<string, string[]>();
  const holders = new Map<string, Map<string, Reason>>();
  for (let i = 0; i < specialAll.length; i += 500) {
    const some = specialAll.slice(i, i + 500);
    for (const s of await db
      .selectFrom('repo_subscriptions')
      .select(['repo_uuid', 'user_uuid', 'level'])
      .where('repo_uuid', 'in', repoUuids)
      .where('user_uuid', 'in', some)
      .execute()) {
      (repoLevel.get(s.repo_uuid) ?? repoLevel.set(s.repo_uuid, new Map()).get(s.repo_uuid)!).set(s.user_uuid, s.level);
      if (s.level === 'watching')
        (watchers.get(s.repo_uuid) ?? watchers.set(s.repo_uuid, []).get(s.repo_uuid)!).push(s.user_uuid);
    }
    // who already has a notification about the subject stays concerned (a mention subscribes, as on GitHub)
    for (const n of await db
      .selectFrom('notifications')
      .select(['subject_uuid', 'user_uuid', 'reason'])
      .where('subject_uuid', 'in', subjectUuids)
      .where('user_uuid', 'in', some)
      .execute())
      (holders.get(n.subject_uuid) ?? holders.set(n.subject_uuid, new Map()).get(n.subject_uuid)!).set(
        n.user_uuid,
        n.reason as Reason,
      );
  }

  // Per subject: the standing relations once (each user's reasons, most specific first), then
  // its events in order. Users an event names (its targets, the author of a state change, the
  // actor) get that event's own reasons; every other user's reasons are the standing ones for
  // every event of the subject, so a watcher costs the same whatever the number of events.
  type Ev = (typeof events)[number];
  const bySubject = new Map<string, Ev[]>();
  for (const e of events)
    if (subjects.has(e.subject!.uuid))
      (bySubject.get(e.subject!.uuid) ?? bySubject.set(e.subject!.uuid, []).get(e.subject!.uuid)!).push(e);
  const targetsOf = (e: Ev, subject: Subject): Map<string, Reason[]> => {
    const users = new Map<string, Reason[]>();
    const add = (user: string | null | undefined, reason: Reason) => {
      if (!user) return;
      const list = users.get(user) ?? [];
      if (!list.includes(reason)) list.push(reason);
      users.set(user, list);
    };
    if (e.kind === 'review-requested') add(str((e.payload.reviewer as { uuid?: unknown } | null)?.uuid), 'review_requested');
    if (e.kind.endsWith('-assigned')) add(str((e.payload.assignee as { uuid?: unknown } | null)?.uuid), 'assigned');
    for (const name of mentionsOf.get(e.id) ?? []) {
      add(userByName.get(name), 'mention');
      for (const m of teamMembersByName.get(name) ?? []) add(m, 'team_mention');
    }
    const stateChange = NOTIFYING[e.kind]!.state || (e.kind === 'pull-updated' && e.payload.action !== 'edited');
    if (stateChange) add(subject.author_uuid, 'state_change');
    return users;
  };
  const directOf = (e: Ev): Set<string> => {
    const direct = new Set<string>();
    if (e.kind === 'review-requested') direct.add(str((e.payload.reviewer as { uuid?: unknown } | null)?.uuid) ?? '');
    for (const name of mentionsOf.get(e.id) ?? []) direct.add(userByName.get(name) ?? '');
    return direct;
  };
  const actorOf = (e: Ev) => (e.actor_uuid ? { uuid: e.actor_uuid, username: e.actor_username ?? '' } : null);

  const watching = new Map<string, Set<string>>();
  for (const [repo, list] of watchers) watching.set(repo, new Set(list));
  const perSubject: Array<{ subject: Subject; touched: Map<string, Omit<Touch, 'user' | 'subject'>> }> = [];
  const bulk: Bulk[] = [];
  for (const [subjectUuid, list] of bySubject) {
    const subject = subjects.get(subjectUuid)!;
    const subjectAssignees = assignees.get(subject.uuid);
    const subjectRequested = requested.get(subject.uuid);
    const subjectParticipants = participants.get(subject.uuid);
    const repoWatchers = watching.get(subject.repo_uuid);
    const subjectOverride = override.get(subject.uuid);
    const subjectHolders = holders.get(subject.uuid);
    /** A user's standing reasons, most specific first. */
    const standing = (u: string): Reason[] => {
      const out: Reason[] = [];
      const add = (r: Reason) => {
        if (!out.includes(r)) out.push(r);
      };
      if (subject.author_uuid === u) add('author');
      if (subjectAssignees?.has(u)) add('assigned');
      if (subjectRequested?.has(u)) add('review_requested');
      if (subjectParticipants?.has(u)) add('comment');
      if (repoWatchers?.has(u) || subjectOverride?.get(u) === true) add('subscribed');
      const held = subjectHolders?.get(u);
      if (held) add(held);
      return out;
    };
    // everyone with a standing relation (the first reason is computed per user below)
    const related = new Set<string>([subject.author_uuid]);
    for (const set of [subjectAssignees, subjectRequested, subjectParticipants, repoWatchers])
      for (const u of set ?? []) related.add(u);
    for (const [u, on] of subjectOverride ?? []) if (on) related.add(u);
    for (const u of subjectHolders?.keys() ?? []) related.add(u);
    // explicitly unsubscribed, or ignoring the repo: direct mentions and review requests only
    const levels = repoLevel.get(subject.repo_uuid);
    const quiet = (u: string) => {
      const explicit = subjectOverride?.get(u);
      return explicit === false || (explicit === undefined && levels?.get(u) === 'ignoring');
    };
    const targets = list.map((e) => targetsOf(e, subject));
    const named = new Set<string>();
    for (let i = 0; i < list.length; i++) {
      for (const u of targets[i]!.keys()) named.add(u);
      if (list[i]!.actor_uuid) named.add(list[i]!.actor_uuid!);
    }
    const touched = new Map<string, Omit<Touch, 'user' | 'subject'>>();
    // the named users: event by event (the actor is never notified of their own activity)
    for (const u of named) {
      const own = standing(u);
      for (let i = 0; i < list.length; i++) {
        const e = list[i]!;
        if (e.actor_uuid === u) continue;
        let reasons = [...(targets[i]!.get(u) ?? [])];
        for (const r of own) if (!reasons.includes(r)) reasons.push(r);
        if (quiet(u)) reasons = directOf(e).has(u) ? reasons.filter((r) => r === 'mention' || r === 'review_requested') : [];
        if (reasons.length === 0) continue;
        const t = touched.get(u);
        // the notification's reason is its latest activity's; `reasons` keep the earlier ones
        if (t) {
          t.reasons = [...t.reasons.filter((r) => r !== reasons[0]), reasons[0]!];
          t.eventId = e.id;
          t.actor = actorOf(e);
        } else touched.set(u, { reasons: [reasons[0]!], eventId: e.id, actor: actorOf(e) });
      }
    }
    // everyone else: the standing reason, from the subject's last event
    const last = list[list.length - 1]!;
    const lastActor = actorOf(last);
    for (const u of related)
      if (!named.has(u) && !quiet(u)) touched.set(u, { reasons: [standing(u)[0]!], eventId: last.id, actor: lastActor });
    perSubject.push({ subject, touched });
    bulk.push({ subject, eventId: last.id, actor: lastActor, special: [...specialOf.get(subject.uuid)!] });
  }

  // who may read each repo now: the repo rule's SQL over the candidates
  const candidates = new Map<string, Set<string>>();
  for (const p of perSubject)
    for (const u of p.touched.keys())
      (candidates.get(p.subject.repo_uuid) ?? candidates.set(p.subject.repo_uuid, new Set()).get(p.subject.repo_uuid)!).add(u);
  const readers = new Map<string, Set<string>>();
  for (const [repo, users] of candidates) readers.set(repo, await readersOf(db, repo, [...users], true));

  const touches: Touch[] = [];
  for (const { subject, touched } of perSubject) {
    const can = readers.get(subject.repo_uuid) ?? new Set();
    for (const [u, t] of touched) if (can.has(u)) touches.push({ user: u, subject, ...t });
  }
  return { touches, bulk };
}
