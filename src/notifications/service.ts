/**
 * The inbox (docs/notifications.md): a user's notifications, read through the repo rule at read
 * time (a notification whose subject its user can no longer read is left out, not deleted: it
 * comes back with access), marked read or done by its user; and the subscriptions (repo watch
 * levels, per-thread/pull overrides) the fan-out (fanout.ts) reads.
 */
import { type Kysely, type SqlBool, sql } from 'kysely';
import { repoReadableBy } from '../access/index.ts';
import { command } from '../core/command.ts';
import { compiledOnce } from '../db/fast-path.ts';
import { nothing } from '../core/targets.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../errors.ts';
import type { Viewer } from '../viewer.ts';
import { runTitle } from './ci.ts';
import { type Reason, updatedEvent } from './fanout.ts';
import { type MailSetting, type MailSettings, mailSettings, validTimezone } from './mail.ts';
import { catchUp, pendingUnread } from './watch.ts';

export interface NotificationJson {
  uuid: string;
  subject: { kind: 'thread' | 'pull' | 'run'; repo: string; number: number; title: string; url: string };
  reason: Reason;
  reasons: Reason[];
  unread: boolean;
  done: boolean;
  updated_at: string;
  last_event_id: string;
  last_actor: { uuid: string; username: string } | null;
}

export type InboxState = 'unread' | 'read' | 'done' | 'all';

export interface InboxFilter {
  state?: InboxState;
  reason?: string;
  /** `{owner}/{slug}` */
  repo?: string;
}

/** The caller's notifications with the subject's repo readable by them now (`repos` is the repo rule's alias). */
function inbox(db: Kysely<DB>, viewer: Viewer) {
  return db
    .selectFrom('notifications as n')
    .innerJoin('repos', 'repos.uuid', 'n.repo_uuid')
    .leftJoin('teams as ot', (j) => j.onRef('ot.uuid', '=', 'repos.owner_uuid').on('repos.owner_kind', '=', 'team'))
    .leftJoin('users as ou', (j) => j.onRef('ou.uuid', '=', 'repos.owner_uuid').on('repos.owner_kind', '=', 'user'))
    .leftJoin('threads as t', (j) => j.onRef('t.uuid', '=', 'n.subject_uuid').on('n.subject_kind', '=', 'thread'))
    .leftJoin('pulls as p', (j) => j.onRef('p.uuid', '=', 'n.subject_uuid').on('n.subject_kind', '=', 'pull'))
    .leftJoin('ci_runs as cr', (j) => j.onRef('cr.uuid', '=', 'n.subject_uuid').on('n.subject_kind', '=', 'run'))
    .where('n.user_uuid', '=', viewer.uuid)
    .where(repoReadableBy(viewer))
    .where((eb) => eb.or([eb('t.uuid', 'is not', null), eb('p.uuid', 'is not', null), eb('cr.uuid', 'is not', null)]))
    .where('t.removed_at', 'is', null);
}

function stateFilter(state: InboxState | undefined): (q: ReturnType<typeof inbox>) => ReturnType<typeof inbox> {
  return (q) => {
    switch (state ?? 'default') {
      case 'unread':
        return q.where('n.unread', '=', 1).where('n.done', '=', 0);
      case 'read':
        return q.where('n.unread', '=', 0).where('n.done', '=', 0);
      case 'done':
        return q.where('n.done', '=', 1);
      case 'all':
        return q;
      default:
        return q.where('n.done', '=', 0);
    }
  };
}

/** The repo `{owner}/{slug}` names, or null (absent: the filter matches nothing). */
async function repoUuidOf(db: Kysely<DB>, fullName: string): Promise<string | null> {
  const [owner, slug] = fullName.toLowerCase().split('/', 2);
  if (!owner || !slug) return null;
  const row = await db
    .selectFrom('repos')
    .leftJoin('teams as ot', (j) => j.onRef('ot.uuid', '=', 'repos.owner_uuid').on('repos.owner_kind', '=', 'team'))
    .leftJoin('users as ou', (j) => j.onRef('ou.uuid', '=', 'repos.owner_uuid').on('repos.owner_kind', '=', 'user'))
    .select('repos.uuid')
    .where('repos.slug', '=', slug)
    .where((eb) => eb.or([eb('ot.slug', '=', owner), eb('ou.username', '=', owner)]))
    .executeTakeFirst();
  return row?.uuid ?? null;
}

const COLUMNS = [
  'n.uuid',
  'n.subject_kind',
  'n.reason',
  'n.reasons',
  'n.unread',
  'n.done',
  'n.updated_at',
  'n.last_event_id',
  'n.last_actor_uuid',
  'n.last_actor_username',
  'repos.slug as repo_slug',
  'repos.owner_kind',
  'ot.slug as team_slug',
  'ou.username as owner_username',
  't.number as thread_number',
  't.title as thread_title',
  'p.number as pull_number',
  'p.title as pull_title',
  'cr.number as run_number',
  'cr.workflow_name as run_workflow',
  'cr.head_branch as run_branch',
  'cr.conclusion as run_conclusion',
] as const;

type Row = {
  uuid: string;
  subject_kind: string;
  reason: string;
  reasons: string;
  unread: number;
  done: number;
  updated_at: string;
  last_event_id: number | string;
  last_actor_uuid: string | null;
  last_actor_username: string | null;
  repo_slug: string;
  owner_kind: string;
  team_slug: string | null;
  owner_username: string | null;
  thread_number: number | null;
  thread_title: string | null;
  pull_number: number | null;
  pull_title: string | null;
  run_number: number | null;
  run_workflow: string | null;
  run_branch: string | null;
  run_conclusion: string | null;
};

const SEGMENT = { thread: 'threads', pull: 'pulls', run: 'runs' } as const;

function toJson(publicUrl: string, r: Row): NotificationJson {
  const owner = (r.owner_kind === 'team' ? r.team_slug : r.owner_username) ?? '-';
  const kind = r.subject_kind === 'pull' ? 'pull' : r.subject_kind === 'run' ? 'run' : 'thread';
  const number = (kind === 'pull' ? r.pull_number : kind === 'run' ? r.run_number : r.thread_number) ?? 0;
  const title =
    (kind === 'pull'
      ? r.pull_title
      : kind === 'run'
        ? runTitle({ workflow_name: r.run_workflow ?? '', head_branch: r.run_branch, conclusion: r.run_conclusion })
        : r.thread_title) ?? '';
  const ownerPath = `${r.owner_kind === 'team' ? 'teams' : 'users'}/${encodeURIComponent(owner)}`;
  return {
    uuid: r.uuid,
    subject: {
      kind,
      repo: `${owner}/${r.repo_slug}`,
      number,
      title,
      url: `${publicUrl}/${ownerPath}/${encodeURIComponent(r.repo_slug)}/${SEGMENT[kind]}/${number}`,
    },
    reason: r.reason as Reason,
    reasons: JSON.parse(r.reasons) as Reason[],
    unread: r.unread === 1,
    done: r.done === 1,
    updated_at: r.updated_at,
    last_event_id: String(r.last_event_id),
    last_actor: r.last_actor_uuid ? { uuid: r.last_actor_uuid, username: r.last_actor_username ?? '' } : null,
  };
}

/** The caller's inbox, newest `updated_at` first: one statement, O(page) on the (user, updated_at) index. */
export async function listNotifications(
  deps: Deps,
  viewer: Viewer,
  filter: InboxFilter,
  page: { offset: number; limit: number },
  after?: string,
): Promise<NotificationJson[]> {
  const from = after === undefined ? null : readInboxCursor(after);
  await catchUp(deps, viewer.uuid);
  let repoUuid: string | null | undefined;
  if (filter.repo !== undefined) {
    repoUuid = await repoUuidOf(deps.db, filter.repo);
    if (repoUuid === null) return [];
  }
  let q = stateFilter(filter.state)(inbox(deps.db, viewer));
  if (filter.reason !== undefined) q = q.where('n.reason', '=', filter.reason);
  if (repoUuid) q = q.where('n.repo_uuid', '=', repoUuid);
  // keyset paging: the rows after the cursor's (updated_at, uuid), one range of the inbox index
  if (from) q = q.where(sql<SqlBool>`(n.updated_at, n.uuid) < (${from[0]}, ${from[1]})`);
  const rows = await q
    .select([...COLUMNS])
    .orderBy('n.updated_at', 'desc')
    .orderBy('n.uuid', 'desc')
    .offset(page.offset)
    .limit(page.limit)
    .execute();
  return rows.map((r) => toJson(deps.config.publicUrl, r as Row));
}

/** A keyset cursor of the inbox: the last row's (updated_at, uuid); `next` carries it as `after`. */
export function inboxCursor(n: NotificationJson): string {
  return Buffer.from(JSON.stringify([n.updated_at, n.uuid])).toString('base64url');
}

function readInboxCursor(cursor: string): [string, string] {
  try {
    const [at, uuid] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof at === 'string' && typeof uuid === 'string') return [at, uuid];
  } catch {
    // refused below
  }
  throw badRequest('after: not a cursor of this list (take it from the `next` link of a page).');
}

/**
 * The caller's unread count (unread and not done, readable now): their notifications' and the
 * watched repos' activity their inbox has not taken in yet (`pendingUnread`: counted, not taken
 * in, so that the badge's count stays a read).
 */
export async function unreadCount(deps: Deps, viewer: Viewer): Promise<number> {
  const rows = viewer.repos
    ? (await unreadCountSql(deps.db, viewer).execute(deps.db)).rows
    : await (viewer.isStaff ? staffUnreadCount : userUnreadCount)(deps.database, viewer.uuid);
  return Number(rows[0]?.n ?? 0);
}

/**
 * One statement, so one snapshot (a catch-up committing meanwhile moves activity from one count
 * to the other): the stored unread notifications plus the activity not taken in yet.
 */
function unreadCountSql(db: Kysely<DB>, viewer: Viewer) {
  const stored = stateFilter('unread')(inbox(db, viewer)).select((eb) => eb.fn.countAll<number | string>().as('n'));
  return sql<{ n: number | string }>`select (${stored}) + (${pendingUnread(viewer.uuid, viewer.repos ?? null)}) as n`;
}

/**
 * The badge's count, asked after every activity signal, compiled once (db/fast-path.ts): on
 * PostgreSQL a named prepared statement, whose plan is kept (planning the statement, with the
 * repo rule twice, cost several times its run: bench/README.md "Session 10").
 */
const countFor = (isStaff: boolean) =>
  compiledOnce((db, user: string) => ({
    compile: () => unreadCountSql(db, { uuid: user, username: '', isStaff, tokenUuid: '' }).compile(db),
  }));
const userUnreadCount = countFor(false);
const staffUnreadCount = countFor(true);

/** One of the caller's notifications (readable now), or 404: another user's uuid is 404. */
export async function getNotification(deps: Deps, viewer: Viewer, uuid: string, caughtUp = false): Promise<NotificationJson> {
  if (!caughtUp) await catchUp(deps, viewer.uuid);
  const row = await inbox(deps.db, viewer)
    .select([...COLUMNS])
    .where('n.uuid', '=', uuid)
    .executeTakeFirst();
  if (!row) throw notFound('Notification');
  return toJson(deps.config.publicUrl, row as Row);
}

/** Marks one notification read/unread and/or done/not done. */
export async function updateNotification(
  deps: Deps,
  viewer: Viewer,
  uuid: string,
  input: { unread?: boolean; done?: boolean },
): Promise<NotificationJson> {
  await getNotification(deps, viewer, uuid);
  await command(deps, viewer, nothing, async (tx) => {
    const set: { unread?: number; done?: number } = {};
    if (input.unread !== undefined) set.unread = input.unread ? 1 : 0;
    if (input.done !== undefined) set.done = input.done ? 1 : 0;
    // done implies read, as GitHub's "done" does
    if (input.done === true && input.unread === undefined) set.unread = 0;
    if (Object.keys(set).length === 0) return;
    await tx.db.updateTable('notifications').set(set).where('uuid', '=', uuid).where('user_uuid', '=', viewer.uuid).execute();
    const change = input.done !== undefined ? (input.done ? 'done' : 'undone') : input.unread ? 'unread' : 'read';
    await tx.emit(updatedEvent(viewer.uuid, [uuid], change));
  });
  return getNotification(deps, viewer, uuid, true);
}

/** Marks read every unread notification of the caller updated at or before `before` (default now), optionally of one repo. */
export async function markAllRead(deps: Deps, viewer: Viewer, input: { before?: string; repo?: string }): Promise<number> {
  let repoUuid: string | null = null;
  if (input.repo !== undefined) {
    repoUuid = await repoUuidOf(deps.db, input.repo);
    if (repoUuid === null) return 0;
  }
  const before = input.before ?? deps.clock.now().toISOString();
  await catchUp(deps, viewer.uuid);
  return command(deps, viewer, nothing, async (tx) => {
    let q = tx.db
      .updateTable('notifications')
      .set({ unread: 0 })
      .where('user_uuid', '=', viewer.uuid)
      .where('unread', '=', 1)
      .where('updated_at', '<=', new Date(before).toISOString());
    if (repoUuid) q = q.where('repo_uuid', '=', repoUuid);
    // only what the caller can read now (the rest is not theirs to see, nor to mark)
    q = q.where((eb) =>
      eb.exists(
        eb
          .selectFrom('repos')
          .select(sql`1`.as('x'))
          .whereRef('repos.uuid', '=', 'notifications.repo_uuid')
          .where(repoReadableBy(viewer)),
      ),
    );
    const res = await q.executeTakeFirst();
    const marked = Number(res.numUpdatedRows);
    if (marked > 0) await tx.emit(updatedEvent(viewer.uuid, [], 'read'));
    return marked;
  });
}

// ---------------------------------------------------------------------------------------------
// subscriptions

export type WatchLevel = 'watching' | 'participating' | 'ignoring';

export async function repoSubscription(db: Kysely<DB>, viewer: Viewer, repoUuid: string): Promise<{ level: WatchLevel }> {
  const row = await db
    .selectFrom('repo_subscriptions')
    .select('level')
    .where('user_uuid', '=', viewer.uuid)
    .where('repo_uuid', '=', repoUuid)
    .executeTakeFirst();
  return { level: (row?.level as WatchLevel | undefined) ?? 'participating' };
}

/** Sets (or with null, removes: back to the default `participating`) the caller's level on a readable repo. */
export async function setRepoSubscription(
  db: Kysely<DB>,
  viewer: Viewer,
  repoUuid: string,
  level: WatchLevel | null,
  now: string,
): Promise<{ level: WatchLevel }> {
  const current = await repoSubscription(db, viewer, repoUuid);
  // still watching: what the inbox has taken in stays (watch.ts)
  if (level === 'watching' && current.level === 'watching') return { level };
  await db.deleteFrom('repo_subscriptions').where('user_uuid', '=', viewer.uuid).where('repo_uuid', '=', repoUuid).execute();
  if (level !== null && level !== 'participating') {
    // a new watcher takes in the activity from here on: the fan-out's cursor now
    const cursor = await db.selectFrom('notification_dispatch').select('last_event_id').where('id', '=', 1).executeTakeFirst();
    await db
      .insertInto('repo_subscriptions')
      .values({
        user_uuid: viewer.uuid,
        repo_uuid: repoUuid,
        level,
        created_at: now,
        caught_up: Number(cursor?.last_event_id ?? 0),
      })
      .execute();
  }
  return { level: level ?? 'participating' };
}

/** Whether the caller gets this subject's activity: the explicit override, else what the repo level and relations give. */
export async function subjectSubscription(
  db: Kysely<DB>,
  viewer: Viewer,
  subject: { uuid: string; repo_uuid: string },
): Promise<{ subscribed: boolean; explicit: boolean; level: WatchLevel }> {
  // one statement (pages show it beside everything else): the explicit choice, the repo level, and
  // whether the caller takes part (a notification about it exists)
  const row = await db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('subject_subscriptions')
        .select('subscribed')
        .where('user_uuid', '=', viewer.uuid)
        .where('subject_uuid', '=', subject.uuid)
        .as('explicit'),
      eb
        .selectFrom('repo_subscriptions')
        .select('level')
        .where('user_uuid', '=', viewer.uuid)
        .where('repo_uuid', '=', subject.repo_uuid)
        .as('level'),
      eb
        .selectFrom('notifications')
        .select('uuid')
        .where('user_uuid', '=', viewer.uuid)
        .where('subject_uuid', '=', subject.uuid)
        .limit(1)
        .as('part'),
    ])
    .executeTakeFirstOrThrow();
  const level = (row.level as WatchLevel | null) ?? 'participating';
  if (row.explicit !== null && row.explicit !== undefined)
    return { subscribed: Number(row.explicit) === 1, explicit: true, level };
  if (level === 'watching') return { subscribed: true, explicit: false, level };
  if (level === 'ignoring') return { subscribed: false, explicit: false, level };
  return { subscribed: row.part !== null && row.part !== undefined, explicit: false, level };
}

/** Sets (or with null, removes) the caller's explicit subscription to a thread or pull. */
export async function setSubjectSubscription(
  db: Kysely<DB>,
  viewer: Viewer,
  subjectUuid: string,
  subscribed: boolean | null,
  now: string,
): Promise<void> {
  await db
    .deleteFrom('subject_subscriptions')
    .where('user_uuid', '=', viewer.uuid)
    .where('subject_uuid', '=', subjectUuid)
    .execute();
  if (subscribed !== null)
    await db
      .insertInto('subject_subscriptions')
      .values({ user_uuid: viewer.uuid, subject_uuid: subjectUuid, subscribed: subscribed ? 1 : 0, created_at: now })
      .execute();
}

// ---------------------------------------------------------------------------------------------
// mail settings

/** Saves the caller's mail settings; saving also confirms the address (clears `email_bouncing`). */
export async function putMailSettings(
  deps: Deps,
  viewer: Viewer,
  input: { email_notifications?: MailSetting; timezone?: string },
): Promise<MailSettings> {
  if (input.timezone !== undefined && !validTimezone(input.timezone))
    throw badRequest('timezone must be an IANA time zone name, such as Europe/Berlin or UTC.');
  await command(deps, viewer, nothing, async (tx) => {
    const now = deps.clock.now().toISOString();
    const current = await mailSettings(tx.db, viewer.uuid);
    const row = {
      user_uuid: viewer.uuid,
      email_notifications: input.email_notifications ?? current.email_notifications,
      timezone: input.timezone ?? current.timezone,
      email_bouncing: 0,
      bounce_detail: null,
      updated_at: now,
    };
    await tx.db
      .insertInto('user_mail_settings')
      .values(row)
      .onConflict((oc) =>
        oc.column('user_uuid').doUpdateSet({
          email_notifications: row.email_notifications,
          timezone: row.timezone,
          email_bouncing: 0,
          bounce_detail: null,
          updated_at: now,
        }),
      )
      .execute();
  });
  return mailSettings(deps.db, viewer.uuid);
}
