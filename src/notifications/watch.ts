/**
 * Watchers read their repos' activity (docs/notifications.md "Watchers"): a repo's watchers are
 * its thousands, and writing a notification for each of them on every batch was most of the
 * fan-out's cost (bench/README.md "Notifications"). So the fan-out records each subject's latest
 * activity once (`watch_activity`, a row per subject) and tells each watcher's live badge; a
 * watcher's inbox takes in what is new for it (`catchUp`) when it is next read — the list, the
 * count, one notification, a mark. What it takes in is what the fan-out would have written: a
 * notification per subject, reason `subscribed`, unread and not done, with the activity's time,
 * last event and actor. The watchers who get mail (`instant` or `daily`, with mail set up) are
 * still written by the fan-out at once: their mail is sent from their notifications, read or not.
 *
 * A watcher's `caught_up` (on `repo_subscriptions`) is the activity `seq` its inbox has taken in;
 * it starts at the fan-out's cursor when the user starts watching. What is left out, as the
 * fan-out leaves it out: a subject the watcher subscribed to or unsubscribed from explicitly (the
 * fan-out writes or skips them by name), activity whose last actor is the watcher (their own),
 * and repos they cannot read now (their activity waits: it is taken in if access comes back).
 */
import { type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import { inTransaction } from '../core/transaction.ts';
import type { Dialect } from '../db/index.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import type { Bulk } from './concerned.ts';
import { readableBy } from './readers.ts';

/**
 * Which watchers the fan-out writes at once: `mail` those who get mail about notifications now
 * (their setting `instant`, no row: the default, or `daily`, and not bouncing), `none` when mail
 * is not set up, `all` every watcher (tests of the fan-out's ranges).
 */
export type WrittenAtOnce = 'none' | 'mail' | 'all';

/** Whether the fan-out writes this watcher (a user column) at once (`WrittenAtOnce`). */
export function writtenAtOnce(user: RawBuilder<unknown>, mode: WrittenAtOnce): RawBuilder<SqlBool> {
  if (mode === 'none') return sql<SqlBool>`1 = 0`;
  if (mode === 'all') return sql<SqlBool>`1 = 1`;
  return sql<SqlBool>`coalesce((select case when ms.email_notifications = 'off' or ms.email_bouncing = 1 then 0 else 1 end
    from user_mail_settings ms where ms.user_uuid = ${user}), 1) = 1`;
}

/** A subject's activity in a batch: its last event and actor (the fan-out's bulk statement reads it too). */
export function activityOf(b: Bulk) {
  return {
    subject_uuid: b.subject.uuid,
    subject_kind: b.subject.kind,
    repo_uuid: b.subject.repo_uuid,
    event_id: b.eventId,
    actor_uuid: b.actor?.uuid ?? null,
    actor_username: b.actor?.username ?? null,
  };
}

/**
 * The batch's subjects' latest activity, one row each (in the transaction that moves the cursor
 * past the batch): its last event and actor, `seq` the cursor after the batch, `updated_at` now.
 */
export async function recordActivity(db: Kysely<DB>, bulk: Bulk[], seq: number, now: string): Promise<void> {
  if (bulk.length === 0) return;
  await db
    .insertInto('watch_activity')
    .values(bulk.map((b) => ({ ...activityOf(b), seq, updated_at: now })))
    .onConflict((oc) =>
      oc.column('subject_uuid').doUpdateSet((eb) => ({
        event_id: eb.ref('excluded.event_id'),
        actor_uuid: eb.ref('excluded.actor_uuid'),
        actor_username: eb.ref('excluded.actor_username'),
        seq: eb.ref('excluded.seq'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .execute();
}

/** The signal of a repo's new activity for its watchers (across instances, never stored). */
export const WATCH_ACTIVITY = 'watch-activity';

/**
 * After the batch's activity commits: one signal per repo to every instance (`watch:{repo}`),
 * whose `WatchNudger` tells its own live streams of the repo's watchers. A signal is a nudge,
 * not a notification: one lost in a crash leaves a badge stale until the next activity or page
 * load, never an inbox short (the activity is in the store with the cursor).
 */
export function nudgeWatchers(deps: Deps, bulk: Bulk[]): void {
  for (const repo of new Set(bulk.map((b) => b.subject.repo_uuid)))
    deps.bus.signal({ scope: `watch:${repo}`, kind: WATCH_ACTIVITY, key: repo, data: { repo_uuid: repo } });
}

/** How long the nudger gathers a repo's signals before it tells the streams (one query a repo). */
const NUDGE_GATHER_MS = 200;

/**
 * One per instance: on a repo's activity signal, the users with a live stream on this instance
 * asking for `notification-updated` in their own scope (the header's badge), who watch the repo
 * and may read it now, get a `notification-updated` signal (`change: activity`, no uuids: their
 * inbox takes the activity in when the badge asks for the count). A repo's thousands of watchers
 * cost what its online watchers on this instance cost; signals within NUDGE_GATHER_MS are one.
 */
export class WatchNudger {
  private unsubscribe: (() => void) | null = null;
  private readonly due = new Map<string, NodeJS.Timeout>();

  constructor(private readonly deps: Deps) {}

  start(): void {
    this.unsubscribe ??= this.deps.bus.onSignal((signal) => {
      if (signal.kind !== WATCH_ACTIVITY || typeof signal.data.repo_uuid !== 'string') return;
      const repo = signal.data.repo_uuid;
      if (this.due.has(repo)) return;
      this.due.set(
        repo,
        setTimeout(() => {
          this.due.delete(repo);
          this.nudge(repo).catch((err) => console.error('weft: telling watchers of new activity failed', err));
        }, NUDGE_GATHER_MS),
      );
    });
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    for (const timer of this.due.values()) clearTimeout(timer);
    this.due.clear();
  }

  private async nudge(repo: string): Promise<void> {
    const users = this.deps.live.scopesAsking('notification-updated', 'user:').map((scope) => scope.slice(5));
    if (users.length === 0) return;
    const wu = sql.ref('w.user_uuid');
    for (let i = 0; i < users.length; i += 500) {
      const rows = await this.deps.db
        .selectFrom('repo_subscriptions as w')
        .select('w.user_uuid')
        .where('w.repo_uuid', '=', repo)
        .where('w.level', '=', 'watching')
        .where('w.user_uuid', 'in', users.slice(i, i + 500))
        .where(readableBy(repo, wu))
        .execute();
      for (const r of rows)
        this.deps.live.deliverSignal({
          scope: `user:${r.user_uuid}`,
          kind: 'notification-updated',
          key: r.user_uuid,
          data: { user_uuid: r.user_uuid, notification_uuids: [], change: 'activity' },
        });
    }
  }
}

/**
 * An upsert's update of a notification by new activity (`excluded` the activity's row): its
 * reason, appended to `reasons` when missing, unread and not done again, the activity's time,
 * last event and actor.
 */
export const BUMP = sql`reason = excluded.reason,
  reasons = case when notifications.reasons like '%"' || excluded.reason || '"%' then notifications.reasons
    when notifications.reasons = '[]' then '["' || excluded.reason || '"]'
    else substr(notifications.reasons, 1, length(notifications.reasons) - 1) || ',"' || excluded.reason || '"]' end,
  unread = 1, done = 0, updated_at = excluded.updated_at, last_event_id = excluded.last_event_id,
  last_actor_uuid = excluded.last_actor_uuid, last_actor_username = excluded.last_actor_username`;

/** A new notification's uuid made by the database (a v4 UUID on both). */
export const uuidSql = (dialect: Dialect) =>
  dialect === 'postgres'
    ? sql`gen_random_uuid()::text`
    : sql`lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' ||
        substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`;

/**
 * Takes into the caller's notifications the activity of the repos they watch that is new for
 * them: one read when there is none (the common case: a statement on two indexes), else one
 * short transaction (an `INSERT … SELECT … ON CONFLICT` of the subjects, then `caught_up`). Safe
 * to run twice at once (two tabs, two instances): a notification takes an activity only if it
 * is newer than its own last event, and `caught_up` only moves forward.
 */
export async function catchUp(deps: Deps, user: string): Promise<void> {
  const pending = await deps.db
    .selectFrom('repo_subscriptions as w')
    .innerJoin('watch_activity as a', (j) => j.onRef('a.repo_uuid', '=', 'w.repo_uuid').onRef('a.seq', '>', 'w.caught_up'))
    .select((eb) => eb.fn.max('a.seq').as('seq'))
    .where('w.user_uuid', '=', user)
    .where('w.level', '=', 'watching')
    .executeTakeFirst();
  if (pending?.seq === null || pending?.seq === undefined) return;
  const upTo = Number(pending.seq);
  const me = user;
  await inTransaction(deps, async (tx) => {
    await sql`insert into notifications (uuid, user_uuid, subject_kind, subject_uuid, repo_uuid, reason, reasons, unread, done,
        updated_at, last_event_id, last_actor_uuid, last_actor_username, created_at)
      select ${uuidSql(tx.dialect)}, w.user_uuid, a.subject_kind, a.subject_uuid, a.repo_uuid, 'subscribed', '["subscribed"]', 1, 0,
        a.updated_at, a.event_id, a.actor_uuid, a.actor_username, a.updated_at
      ${newActivityOf(me, sql`and a.seq <= ${upTo}`)}
      on conflict (user_uuid, subject_uuid) do update set ${BUMP}
      where notifications.last_event_id < excluded.last_event_id`.execute(tx.db);
    // the repos taken in (the ones the caller cannot read now keep their place: their activity waits)
    await sql`update repo_subscriptions set caught_up = ${upTo}
      where user_uuid = ${me} and level = 'watching' and caught_up < ${upTo}
        and ${readableBy(sql.ref('repo_subscriptions.repo_uuid'), sql`${me}`)}`.execute(tx.db);
  });
}

/**
 * How many of the caller's subjects their watched repos' activity would make unread that
 * `catchUp` has not taken in yet, without taking it in (the badge's count is a read: it asks
 * after every activity signal, and a write for each online watcher was most of a burst's cost on
 * PostgreSQL, bench/README.md "Session 10"). The activity counts as `catchUp` would take it in:
 * past the watcher's `caught_up`, not their own, not a subject they subscribed to or unsubscribed
 * from by name, in a repo they may read now, about a subject the inbox shows (a thread not removed,
 * a pull, a run), and not already counted: their notification about it is not unread and not done,
 * and is older than the activity (a newer one is not bumped). `repos`: the caller's token's
 * repos, when it is restricted to some.
 */
export function pendingUnread(user: string, repos: readonly string[] | null = null): RawBuilder<number | string> {
  // a token restricted to some repos (README "Scoped tokens") counts their activity only
  const reach = repos === null ? sql`` : repos.length ? sql`and a.repo_uuid in (${sql.join([...repos])})` : sql`and 1 = 0`;
  return sql<number | string>`select count(*)
    ${newActivityOf(user, reach)}
      and exists (select 1 from threads t where a.subject_kind = 'thread' and t.uuid = a.subject_uuid and t.removed_at is null
        union all select 1 from pulls p where a.subject_kind = 'pull' and p.uuid = a.subject_uuid
        union all select 1 from ci_runs cr where a.subject_kind = 'run' and cr.uuid = a.subject_uuid)
      and not exists (select 1 from notifications n where n.user_uuid = ${user} and n.subject_uuid = a.subject_uuid
        and ((n.unread = 1 and n.done = 0) or n.last_event_id >= a.event_id))`;
}

/**
 * The activity `catchUp` takes in for `me` (the `from … where` of its select, and of the
 * count's): in the repos they watch, past their `caught_up`, not their own, not about a subject
 * they subscribed to or unsubscribed from by name, in a repo they may read now; `more` narrows it.
 */
function newActivityOf(me: string, more: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`from repo_subscriptions w join watch_activity a on a.repo_uuid = w.repo_uuid and a.seq > w.caught_up
    where w.user_uuid = ${me} and w.level = 'watching' and (a.actor_uuid is null or a.actor_uuid <> ${me})
      and not exists (select 1 from subject_subscriptions s where s.user_uuid = ${me} and s.subject_uuid = a.subject_uuid)
      and ${readableBy(sql.ref('w.repo_uuid'), sql`${me}`)} ${more}`;
}
