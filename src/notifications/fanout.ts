/**
 * The notification fan-out (docs/notifications.md). One loop per instance follows the event store
 * in id order from a cursor kept in the database (`notification_dispatch`), reading only settled
 * events (events/order.ts), asks concerned.ts who each event about a thread or a pull concerns and
 * why, and upserts one notification per (user, subject).
 *
 * Bounded (docs/notifications.md "Bounded"): the recipients of a batch are written in chunks of a
 * few hundred notifications (more on PostgreSQL, whose driver does not hold the event loop), in
 * recipient uuid order, each chunk one short transaction with one set-based upsert, the mail jobs
 * and one `notification-updated` event per recipient for the whole batch; the loop yields to the
 * event loop between chunks. Each chunk's transaction locks the cursor row, checks that it still
 * says what this loop last wrote (else another instance took over: this one stops) and records
 * the chunk's last recipient (`batch_end`, `done_user`); the last chunk moves the cursor past the
 * batch. An event is thus fanned out exactly once across restarts, crashes and instances: a
 * restarted loop re-reads the same batch (settled events up to `batch_end`) and resumes after
 * `done_user`. After a batch of several chunks, the next batch waits COALESCE_MS so that a
 * burst's events gather into fewer, larger batches (one upsert per (user, subject) and one badge
 * event per user for all of them).
 */
import { randomUUID } from 'node:crypto';
import { type Kysely, type RawBuilder, type SqlBool, sql } from 'kysely';
import { inTransaction } from '../core/transaction.ts';
import type { Dialect } from '../db/index.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { EventFollower, type FollowStep, eventsAfterCursor } from '../events/follow.ts';
import type { EventInput } from '../events/service.ts';
import { CI_KINDS, withCi } from './ci.ts';
import { type Bulk, NOTIFYING, type Reason, type Touch, concerned } from './concerned.ts';
import { enqueueMail, registerMailJobs } from './mail.ts';
import { readableBy } from './readers.ts';

export { REASONS, type Reason } from './concerned.ts';

const BATCH = 1000;
/** Notifications written per chunk transaction: SQLite's driver holds the event loop meanwhile. */
const CHUNK: Record<Dialect, number> = { sqlite: 1000, postgres: 5000 };
/** After a batch of several chunks, the next one waits this long for the burst to gather. */
const COALESCE_MS = 250;

interface Cursor {
  last: number;
  batchEnd: number | null;
  done: string | null;
}

/** Only these kinds are read: the fan-out steps over everything else (its own badge events too). */
const NOTIFYING_KINDS = [...Object.keys(NOTIFYING), ...CI_KINDS];

const TRACE = process.env.WEFT_NOTIFY_TRACE === '1';
const yieldLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class NotificationFanout extends EventFollower {
  /** Called after a chunk committed with the users whose inbox changed (mail, tests). */
  onCommitted: ((users: string[]) => void) | null = null;
  /** Notifications per chunk transaction (tests make it small to cut a batch in several). */
  chunkSize: number;
  private heavyAt: number | null = null;

  constructor(private readonly deps: Deps) {
    super(deps.bus, 'the notification fan-out');
    registerMailJobs(deps);
    this.chunkSize = CHUNK[deps.dialect];
  }

  protected step(): Promise<FollowStep> {
    return this.runOnce();
  }

  /** One batch: 'more' when a full batch was read, 'unsettled' when committed events wait to settle. */
  async runOnce(): Promise<FollowStep> {
    if (this.heavyAt !== null) {
      const wait = this.heavyAt + COALESCE_MS - Date.now();
      this.heavyAt = null;
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    const read = await inTransaction(this.deps, async (tx) => {
      const found = await eventsAfterCursor(tx.db, tx.dialect, 'notification_dispatch', BATCH, undefined, NOTIFYING_KINDS);
      if (typeof found === 'string') return found;
      const row = await tx.db
        .selectFrom('notification_dispatch')
        .select(['last_event_id', 'batch_end', 'done_user'])
        .where('id', '=', 1)
        .executeTakeFirstOrThrow();
      const cursor: Cursor = {
        last: Number(row.last_event_id),
        batchEnd: row.batch_end === null ? null : Number(row.batch_end),
        done: row.done_user,
      };
      return { events: found.events, through: found.through, cursor };
    });
    if (typeof read === 'string') return read;
    let cursor = read.cursor;
    // a batch in progress (a restart after a crash between its chunks): the same events again
    const events = cursor.batchEnd === null ? read.events : read.events.filter((e) => Number(e.id) <= cursor.batchEnd!);
    const end = cursor.batchEnd ?? read.through;
    const full = read.events.length === BATCH ? ('more' as const) : ('idle' as const);

    // who is concerned: reads only, outside the chunks' transactions (the state as of now)
    const { touches, bulk } = await withCi(this.deps.db, events, await concerned(this.deps.db, events));
    const ranges = await this.rangesOf(bulk, touches, cursor.done);
    if (ranges.length > 1) this.heavyAt = Date.now();
    for (let i = 0; i < ranges.length; i++) {
      const range = ranges[i]!;
      const final = i === ranges.length - 1;
      const next: Cursor = final
        ? { last: end, batchEnd: null, done: null }
        : { last: cursor.last, batchEnd: end, done: range.hi };
      const inRange = touches.filter((t) => t.user >= range.lo && (range.hi === null || t.user < range.hi));
      const users = await this.writeChunk(cursor, next, inRange, bulk, range);
      // another instance moved the cursor (or holds it): it goes on from there
      if (users === null) return 'idle';
      if (users.length) this.onCommitted?.(users);
      cursor = next;
      if (!final) await yieldLoop();
    }
    return full;
  }

  /**
   * The batch's recipients cut into ranges of user uuids of about `chunkSize` notifications: the
   * bounds are every n-th watcher of the subjects' repos (n = chunkSize / subjects), from `done`
   * (a batch in progress: the users before it are written) to the end. At least one range (maybe
   * empty: it moves the cursor).
   */
  private async rangesOf(bulk: Bulk[], touches: Touch[], done: string | null): Promise<Range[]> {
    const lo = done ?? '';
    const bounds: string[] = [];
    if (bulk.length) {
      const repos = [...new Set(bulk.map((b) => b.subject.repo_uuid))];
      const users = await this.deps.db
        .selectFrom('repo_subscriptions')
        .select('user_uuid')
        .distinct()
        .where('repo_uuid', 'in', repos)
        .where('level', '=', 'watching')
        .where('user_uuid', '>=', lo)
        .orderBy('user_uuid')
        .execute();
      const step = Math.max(1, Math.floor(this.chunkSize / bulk.length));
      for (let i = step; i < users.length; i += step) bounds.push(users[i]!.user_uuid);
    } else if (touches.length > this.chunkSize) {
      const users = [...new Set(touches.map((t) => t.user).filter((u) => u >= lo))].sort();
      for (let i = this.chunkSize; i < users.length; i += this.chunkSize) bounds.push(users[i]!);
    }
    const ranges: Range[] = [];
    let from = lo;
    for (const b of bounds) {
      ranges.push({ lo: from, hi: b });
      from = b;
    }
    ranges.push({ lo: from, hi: null });
    return ranges;
  }

  /**
   * One range of users in its own transaction: the cursor row locked and checked to be at
   * `from`, the special users' touches upserted, each subject's bulk written set-based, their mail
   * jobs and one badge event per user, the cursor set to `to`. The users whose inbox changed;
   * null when the cursor is not at `from` (or is held).
   */
  private async writeChunk(from: Cursor, to: Cursor, chunk: Touch[], bulk: Bulk[], range: Range): Promise<string[] | null> {
    return inTransaction(this.deps, async (tx) => {
      let q = tx.db.selectFrom('notification_dispatch').select(['last_event_id', 'batch_end', 'done_user']).where('id', '=', 1);
      if (tx.dialect === 'postgres') q = q.forUpdate().skipLocked();
      const row = await q.executeTakeFirst();
      if (
        !row ||
        Number(row.last_event_id) !== from.last ||
        (row.batch_end === null ? null : Number(row.batch_end)) !== from.batchEnd ||
        row.done_user !== from.done
      )
        return null;
      const now = this.deps.clock.now().toISOString();
      const t0 = performance.now();
      const changed = await upsert(tx.db, tx.dialect, chunk, now);
      // the range's watchers who may read each repo now: the repo rule once per user, not per subject
      const readers = new Map<string, string[]>();
      for (const repo of new Set(bulk.map((b) => b.subject.repo_uuid))) readers.set(repo, await watchersIn(tx.db, repo, range));
      for (const b of bulk)
        changed.push(...(await writeBulk(tx.db, tx.dialect, b, readers.get(b.subject.repo_uuid)!, range, now)));
      const t1 = performance.now();
      // mail: set-based, a job per notification (batched by its dedupe key) or a digest per user
      await enqueueMail(this.deps, tx.db, changed);
      const t2 = performance.now();
      // the live badge: one `notification-updated` per user whose inbox changed in this batch
      const byUser = new Map<string, string[]>();
      for (const c of changed) (byUser.get(c.user) ?? byUser.set(c.user, []).get(c.user)!).push(c.uuid);
      const inputs: EventInput[] = [...byUser].map(([user, uuids]) => updatedEvent(user, uuids.slice(0, 100), 'activity'));
      for (let i = 0; i < inputs.length; i += 1000) await tx.emitMany(inputs.slice(i, i + 1000));
      if (TRACE)
        console.error(
          `trace chunk ${changed.length} upsert ${(t1 - t0).toFixed(1)} mail ${(t2 - t1).toFixed(1)} events ${(performance.now() - t2).toFixed(1)}`,
        );
      await tx.db
        .updateTable('notification_dispatch')
        .set({ last_event_id: to.last, batch_end: to.batchEnd, done_user: to.done })
        .where('id', '=', 1)
        .execute();
      return [...byUser.keys()];
    });
  }
}

/** A range of user uuids: from `lo` (included) to `hi` (excluded; null: to the end). */
interface Range {
  lo: string;
  hi: string | null;
}

/** The repo's watchers in the range who may read it now (the repo rule in SQL), in one statement. */
async function watchersIn(db: Kysely<DB>, repo: string, range: Range): Promise<string[]> {
  let q = db
    .selectFrom('repo_subscriptions as s')
    .select('s.user_uuid')
    .where('s.repo_uuid', '=', repo)
    .where('s.level', '=', 'watching')
    .where('s.user_uuid', '>=', range.lo)
    .where(readableBy(repo, sql.ref('s.user_uuid')));
  if (range.hi !== null) q = q.where('s.user_uuid', '<', range.hi);
  return (await q.execute()).map((r) => r.user_uuid);
}

/** A new notification's uuid made by the database (a v4 UUID on both). */
const uuidSql = (dialect: Dialect) =>
  dialect === 'postgres'
    ? sql`gen_random_uuid()::text`
    : sql`lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-' ||
        substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`;

/** `col` is none of `list` (a JSON array on SQLite, an array parameter on PostgreSQL). */
const notIn = (dialect: Dialect, col: RawBuilder<unknown>, list: string[]) =>
  list.length === 0
    ? sql<SqlBool>`1 = 1`
    : dialect === 'postgres'
      ? sql<SqlBool>`${col} <> all(${list}::text[])`
      : sql<SqlBool>`${col} not in (select value from json_each(${JSON.stringify(list)}))`;

/**
 * One subject's bulk in one range of users, in two set-based statements: the repo's watchers
 * (reason `subscribed`, added to `reasons` when missing) inserted or updated in one
 * `INSERT … SELECT … ON CONFLICT DO UPDATE`, then the other holders of a notification about the
 * subject (their reason unchanged) in one `UPDATE`; both leave out the subject's special users,
 * users who ignore the repo (holders) and users who may not read it now (the repo rule in SQL).
 * The notifications changed, per user.
 */
async function writeBulk(
  db: Kysely<DB>,
  dialect: Dialect,
  b: Bulk,
  watchers: string[],
  range: Range,
  now: string,
): Promise<Array<{ user: string; uuid: string }>> {
  const repo = b.subject.repo_uuid;
  const inRange = (col: RawBuilder<unknown>) =>
    range.hi === null ? sql<SqlBool>`${col} >= ${range.lo}` : sql<SqlBool>`${col} >= ${range.lo} and ${col} < ${range.hi}`;
  const text = (v: string | null) => sql`cast(${v} as text)`;
  const eventId = sql`cast(${b.eventId} as bigint)`;
  const actorUuid = text(b.actor?.uuid ?? null);
  const actorName = text(b.actor?.username ?? null);
  const special = new Set(b.special);
  const users = watchers.filter((u) => !special.has(u));
  const source =
    dialect === 'postgres'
      ? sql`select unnest(${users}::text[]) as user_uuid`
      : sql`select j.value as user_uuid from json_each(${JSON.stringify(users)}) j`;
  const written = users.length
    ? (
        await sql<{ uuid: string; user_uuid: string }>`insert into notifications (uuid, user_uuid, subject_kind,
      subject_uuid, repo_uuid, reason, reasons, unread, done, updated_at, last_event_id, last_actor_uuid, last_actor_username,
      created_at)
    select ${uuidSql(dialect)}, s.user_uuid, ${text(b.subject.kind)}, ${text(b.subject.uuid)}, ${text(repo)}, 'subscribed',
      '["subscribed"]', 1, 0, ${text(now)}, ${eventId}, ${actorUuid}, ${actorName}, ${text(now)}
    from (${source}) s where true
    on conflict (user_uuid, subject_uuid) do update set reason = excluded.reason,
      reasons = case when notifications.reasons like '%"subscribed"%' then notifications.reasons
        when notifications.reasons = '[]' then '["subscribed"]'
        else substr(notifications.reasons, 1, length(notifications.reasons) - 1) || ',"subscribed"]' end,
      unread = 1, done = 0, updated_at = excluded.updated_at, last_event_id = excluded.last_event_id,
      last_actor_uuid = excluded.last_actor_uuid, last_actor_username = excluded.last_actor_username
    returning uuid, user_uuid`.execute(db)
      ).rows
    : [];
  const nu = sql.ref('notifications.user_uuid');
  const holders = await sql<{ uuid: string; user_uuid: string }>`update notifications set unread = 1, done = 0,
      updated_at = ${now}, last_event_id = ${eventId}, last_actor_uuid = ${actorUuid}, last_actor_username = ${actorName}
    where subject_uuid = ${b.subject.uuid} and ${inRange(nu)} and ${notIn(dialect, nu, b.special)}
      and not exists (select 1 from repo_subscriptions s where s.user_uuid = notifications.user_uuid
        and s.repo_uuid = ${repo} and s.level in ('watching', 'ignoring'))
      and ${readableBy(repo, nu)}
    returning uuid, user_uuid`.execute(db);
  return [...written, ...holders.rows].map((r) => ({ user: r.user_uuid, uuid: r.uuid }));
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

/**
 * Writes the touches of one chunk: a new notification, or the existing one made unread (and not
 * done) again with its reasons extended, its latest event and actor. One read of the existing
 * rows and one set-based upsert (the rows as one JSON parameter). The uuids changed, per user.
 */
async function upsert(
  db: Kysely<DB>,
  dialect: Dialect,
  touches: Touch[],
  now: string,
): Promise<Array<{ user: string; uuid: string }>> {
  if (touches.length === 0) return [];
  const users = [...new Set(touches.map((t) => t.user))];
  const subjects = [...new Set(touches.map((t) => t.subject.uuid))];
  const existing = new Map<string, { uuid: string; reasons: string }>();
  for (const r of await db
    .selectFrom('notifications')
    .select(['uuid', 'user_uuid', 'subject_uuid', 'reasons'])
    .where('user_uuid', 'in', users)
    .where('subject_uuid', 'in', subjects)
    .execute())
    existing.set(`${r.user_uuid}:${r.subject_uuid}`, { uuid: r.uuid, reasons: r.reasons });
  const changed: Array<{ user: string; uuid: string }> = [];
  // [uuid, user, subject kind, subject, repo, reason, reasons, event id, actor uuid, actor username]
  const rows = touches.map((t) => {
    const old = existing.get(`${t.user}:${t.subject.uuid}`);
    const reasons = old ? (JSON.parse(old.reasons) as Reason[]) : [];
    for (const r of t.reasons) if (!reasons.includes(r)) reasons.push(r);
    const uuid = old?.uuid ?? randomUUID();
    changed.push({ user: t.user, uuid });
    return [
      uuid,
      t.user,
      t.subject.kind,
      t.subject.uuid,
      t.subject.repo_uuid,
      t.reasons[t.reasons.length - 1]!,
      JSON.stringify(reasons),
      t.eventId,
      t.actor?.uuid ?? null,
      t.actor?.username ?? null,
    ];
  });
  const json = JSON.stringify(rows);
  const source =
    dialect === 'postgres'
      ? sql`select j.value->>0, j.value->>1, j.value->>2, j.value->>3, j.value->>4, j.value->>5, j.value->>6,
          1, 0, ${now}, (j.value->>7)::bigint, j.value->>8, j.value->>9, ${now}
        from jsonb_array_elements(${json}::jsonb) j`
      : sql`select json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'),
          json_extract(j.value, '$[3]'), json_extract(j.value, '$[4]'), json_extract(j.value, '$[5]'),
          json_extract(j.value, '$[6]'), 1, 0, ${now}, json_extract(j.value, '$[7]'), json_extract(j.value, '$[8]'),
          json_extract(j.value, '$[9]'), ${now}
        from json_each(${json}) j where true`;
  await sql`insert into notifications (uuid, user_uuid, subject_kind, subject_uuid, repo_uuid, reason, reasons, unread, done,
      updated_at, last_event_id, last_actor_uuid, last_actor_username, created_at)
    ${source}
    on conflict (user_uuid, subject_uuid) do update set reason = excluded.reason, reasons = excluded.reasons, unread = 1,
      done = 0, updated_at = excluded.updated_at, last_event_id = excluded.last_event_id,
      last_actor_uuid = excluded.last_actor_uuid, last_actor_username = excluded.last_actor_username`.execute(db);
  return changed;
}
