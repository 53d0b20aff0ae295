/**
 * The notification fan-out (docs/notifications.md). One loop per instance follows the event store
 * in id order from a cursor kept in the database (`notification_dispatch`), reading only settled
 * events (events/order.ts), asks concerned.ts who each event about a thread or a pull concerns and
 * why, and upserts one notification per (user, subject).
 *
 * Bounded (docs/notifications.md "Bounded"): the recipients of a batch are written in chunks of
 * about a thousand notifications (more on PostgreSQL), in recipient uuid order, each chunk one
 * short transaction with one set-based upsert, the mail jobs and one `notification-updated` event
 * per recipient for the whole batch, on the background writer (`database.writer`: on a SQLite
 * file a worker thread's connection, so the server's thread is not held while SQLite writes);
 * the loop yields to the event loop between chunks. Each chunk's transaction locks the cursor
 * row, checks that it still says what this loop last wrote (else another instance took over:
 * this one stops) and records the chunk's last recipient (`batch_end`, `done_user`); the last
 * chunk moves the cursor past the batch. An event is thus fanned out exactly once across restarts, crashes and instances: a
 * restarted loop re-reads the same batch (settled events up to `batch_end`) and resumes after
 * `done_user`. After a batch, the next one waits COALESCE_MS so that a burst's events gather
 * into fewer, larger batches (one upsert per (user, subject) and one badge event per user for
 * all of them). A repo's watchers who get no mail are not written here: the batch records each
 * subject's activity once and their inboxes read it in (watch.ts).
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
import { enqueueMail, mailConfigured, registerMailJobs } from './mail.ts';
import { readableBy } from './readers.ts';
import { BUMP, type WrittenAtOnce, activityOf, nudgeWatchers, recordActivity, uuidSql, writtenAtOnce } from './watch.ts';

export { REASONS, type Reason } from './concerned.ts';

const BATCH = 1000;
/** Notifications written per chunk transaction. */
const CHUNK: Record<Dialect, number> = { sqlite: 1000, postgres: 5000 };
/**
 * Ranges of fewer notifications stay on the main connection (WEFT_NOTIFY_WRITER_FROM: tests set 0
 * to send every range to the background writer). With 0 as the default the bench's requests were
 * held less (bench/README.md "Session 9"), but a clean-clone CI run then met SQLITE_BUSY in an
 * unrelated test: an `UPDATE … RETURNING` went past the write gate (fixed in write-gate.ts). Kept
 * at 100: on session 12's machine 0 changed nothing measurable (bench/README.md "Session 12").
 */
const WRITER_FROM = Number(process.env.WEFT_NOTIFY_WRITER_FROM ?? 100);
/**
 * After a batch with events, the next one waits this long for a burst to gather (the first event
 * after a quiet spell is taken at once): at most a few batches a second, each with every event
 * that came meanwhile, instead of one per event competing with the writes for the server.
 */
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
  /**
   * From this many notifications (estimated: touches plus watchers x subjects) a range is written
   * on the background writer, `database.writer` (on a SQLite file, a worker thread's connection:
   * docs/notifications.md "Bounded"); smaller ranges on the main connection.
   */
  writerFrom = WRITER_FROM;
  /**
   * What this loop has written (bench/notify.ts reports CPU per batch and times the lag by
   * `through`, without asking the database): batches, ranges, notifications, and the cursor as of
   * its last commit that moved it past a batch.
   */
  readonly stats = { batches: 0, ranges: 0, notifications: 0, through: 0 };
  /**
   * Every watcher written at once, as those who get mail are (watch.ts): tests of the ranges and
   * their crash protocol over many watchers set it.
   */
  writeEveryWatcher = false;
  private heavyAt: number | null = null;

  constructor(private readonly deps: Deps) {
    super(deps.bus, 'the notification fan-out');
    registerMailJobs(deps);
    this.chunkSize = CHUNK[deps.dialect];
  }

  private watchersAtOnce(): WrittenAtOnce {
    return this.writeEveryWatcher ? 'all' : mailConfigured(this.deps) ? 'mail' : 'none';
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
    const t0 = performance.now();
    const { touches, bulk } = await withCi(this.deps.db, events, await concerned(this.deps.db, events));
    const ranges = await this.rangesOf(bulk, touches, cursor.done);
    const t1 = performance.now();
    // a burst's events gather: the next batch starts COALESCE_MS after this one at the soonest
    if (events.length > 0) this.heavyAt = Date.now();
    for (let i = 0; i < ranges.length; i++) {
      const range = ranges[i]!;
      const final = i === ranges.length - 1;
      const next: Cursor = final
        ? { last: end, batchEnd: null, done: null }
        : { last: cursor.last, batchEnd: end, done: range.hi };
      const inRange = touches.filter((t) => t.user >= range.lo && (range.hi === null || t.user < range.hi));
      // a range of some size on the background writer (a worker thread on SQLite); a small one,
      // which a round trip per statement to the worker would slow down more than it weighs, here
      const size = inRange.length + range.watchers * bulk.length;
      const on = size >= this.writerFrom ? this.deps.database.writer : this.deps.db;
      const users = await this.writeChunk(cursor, next, inRange, bulk, range, on, final ? end : null);
      // another instance moved the cursor (or holds it): it goes on from there
      if (users === null) return 'idle';
      if (users.length) this.onCommitted?.(users);
      this.stats.ranges++;
      cursor = next;
      if (!final) await yieldLoop();
    }
    if (events.length) this.stats.batches++;
    if (TRACE)
      console.error(
        `trace batch ${events.length} events, ${bulk.length} subjects, ${ranges.length} ranges: concerned ${(t1 - t0).toFixed(1)} ms, written ${(performance.now() - t1).toFixed(1)} ms`,
      );
    return full;
  }

  /**
   * The batch's recipients cut into ranges of user uuids of about `chunkSize` notifications: the
   * bounds are every n-th watcher written at once (who gets mail: watch.ts) of the subjects' repos
   * (n = chunkSize / subjects), or with none of them (mail not set up: no watcher is read) every
   * `chunkSize`-th user touched, from `done` (a batch in progress: the users before it are
   * written) to the end. At least one range (maybe empty: it moves the cursor).
   */
  private async rangesOf(bulk: Bulk[], touches: Touch[], done: string | null): Promise<Range[]> {
    const lo = done ?? '';
    const bounds: string[] = [];
    const perRange = (subjects: number) => Math.max(1, Math.floor(this.chunkSize / subjects));
    let watchersLeft = 0;
    let watchersPerRange = 0;
    const atOnce = this.watchersAtOnce();
    if (bulk.length && atOnce !== 'none') {
      // only the watchers written at once (without mail set up, none: their inboxes read the activity)
      const repos = [...new Set(bulk.map((b) => b.subject.repo_uuid))];
      const users = await this.deps.db
        .selectFrom('repo_subscriptions')
        .select('user_uuid')
        .distinct()
        .where('repo_uuid', 'in', repos)
        .where('level', '=', 'watching')
        .where('user_uuid', '>=', lo)
        .where(writtenAtOnce(sql.ref('repo_subscriptions.user_uuid'), atOnce))
        .orderBy('user_uuid')
        .execute();
      const n = perRange(bulk.length);
      for (let i = n; i < users.length; i += n) bounds.push(users[i]!.user_uuid);
      watchersLeft = users.length - bounds.length * n;
      watchersPerRange = n;
    } else if (touches.length > this.chunkSize) {
      const users = [...new Set(touches.map((t) => t.user).filter((u) => u >= lo))].sort();
      for (let i = this.chunkSize; i < users.length; i += this.chunkSize) bounds.push(users[i]!);
    }
    const ranges: Range[] = [];
    let from = lo;
    for (const b of bounds) {
      ranges.push({ lo: from, hi: b, watchers: watchersPerRange });
      from = b;
    }
    ranges.push({ lo: from, hi: null, watchers: watchersLeft });
    return ranges;
  }

  /**
   * One range of users in its own transaction: the cursor row locked and checked to be at
   * `from`, the special users' touches upserted, every subject's bulk written by one statement, their mail
   * jobs and one badge event per user, and in the batch's last range (`seq`: the cursor after it)
   * the subjects' activity the other watchers read (watch.ts), the cursor set to `to`. The users whose inbox changed; null when the cursor is not
   * at `from` (or is held).
   */
  private async writeChunk(
    from: Cursor,
    to: Cursor,
    chunk: Touch[],
    bulk: Bulk[],
    range: Range,
    on: Kysely<DB>,
    seq: number | null,
  ): Promise<string[] | null> {
    const started = performance.now();
    return inTransaction(
      this.deps,
      async (tx) => {
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
        // PostgreSQL's JIT would compile the bulk statement (its estimated cost, with the repo
        // rule's subqueries, passes jit_above_cost) for seconds to run it for milliseconds
        if (tx.dialect === 'postgres') await sql`set local jit = off`.execute(tx.db);
        const now = this.deps.clock.now().toISOString();
        const t0 = performance.now();
        const locked = t0 - started;
        const mail = this.watchersAtOnce();
        const changed = await upsert(tx.db, tx.dialect, chunk, now);
        // every subject's watchers who get mail and holders in the range: one statement
        changed.push(...(await writeBulk(tx.db, tx.dialect, bulk, range, now, mail)));
        if (seq !== null) await recordActivity(tx.db, bulk, seq, now);
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
            `trace chunk ${changed.length} begin+lock ${locked.toFixed(1)} upsert ${(t1 - t0).toFixed(1)} mail ${(t2 - t1).toFixed(1)} events ${(performance.now() - t2).toFixed(1)}`,
          );
        await tx.db
          .updateTable('notification_dispatch')
          .set({ last_event_id: to.last, batch_end: to.batchEnd, done_user: to.done })
          .where('id', '=', 1)
          .execute();
        tx.afterCommit(() => {
          this.stats.notifications += changed.length;
          if (seq !== null) this.stats.through = Math.max(this.stats.through, to.last);
          // the watchers who read their activity: their open pages ask for the count again (watch.ts)
          if (seq !== null) nudgeWatchers(this.deps, bulk);
        });
        return [...byUser.keys()];
      },
      on,
    );
  }
}

/** A range of user uuids: from `lo` (included) to `hi` (excluded; null: to the end). */
interface Range {
  lo: string;
  hi: string | null;
  /** the subjects' repos' watchers written at once in the range (each gets a notification per subject) */
  watchers: number;
}

/**
 * The bulk of every subject of a batch in one range of users, in one set-based statement (so a
 * batch costs one statement per range, whatever the number of its subjects): the subjects are one
 * JSON parameter, joined in SQL with
 * - the watchers of their repos in the range who may read the repo now (the repo rule in SQL, once
 *   per user and repo): reason `subscribed`, added to `reasons` when missing;
 * - the other holders of a notification about them in the range (not watching, not ignoring the
 *   repo, who may read it now): their reason kept;
 * both leaving out each subject's special users (their touches are written by `upsert`). One
 * `INSERT … SELECT … ON CONFLICT (user, subject) DO UPDATE … RETURNING`: a watcher's row is made
 * or updated, a holder's updated (unread, not done, the subject's last event and actor of the
 * batch, its reason appended to `reasons` when missing: a holder's always is there). The
 * notifications changed, per user.
 *
 * The per-row checks (the holder's repo level, the repo rule) are scalar subqueries, not
 * `EXISTS`/`NOT EXISTS`: PostgreSQL turns those into joins whose shape follows the statistics,
 * and with `repo_subscriptions` analyzed before a repo's thousands of watchers arrived it
 * planned the holders' `NOT EXISTS` as a nested loop over all of the repo's watchers for every
 * row (bench/README.md "One statement per range"). A scalar subquery is a primary-key lookup
 * per row on both databases, whatever the statistics say. The holders' rows are first probed
 * against the range's watchers (a hashed `NOT IN` over the materialized CTE, no plan choice): a
 * subject's holders are mostly its watchers, who are written by the first branch, and the probe
 * spares each of them the level lookup (bench/README.md "Fewer index entries").
 */
async function writeBulk(
  db: Kysely<DB>,
  dialect: Dialect,
  bulk: Bulk[],
  range: Range,
  now: string,
  mail: WrittenAtOnce,
): Promise<Array<{ user: string; uuid: string }>> {
  if (bulk.length === 0) return [];
  const subjects = JSON.stringify(bulk.map(activityOf));
  const repos = [...new Set(bulk.map((b) => b.subject.repo_uuid))];
  // (subject, user) of the special users: keys an anti-join probes (hashed / an ephemeral index)
  const special = bulk.flatMap((b) => b.special.map((u) => `${b.subject.uuid}:${u}`));
  const inRange = (col: RawBuilder<unknown>) =>
    range.hi === null ? sql<SqlBool>`${col} >= ${range.lo}` : sql<SqlBool>`${col} >= ${range.lo} and ${col} < ${range.hi}`;
  const pg = dialect === 'postgres';
  const subjectRows = pg
    ? sql`select * from jsonb_to_recordset(${subjects}::jsonb) as j(subject_uuid text, subject_kind text, repo_uuid text,
        event_id bigint, actor_uuid text, actor_username text)`
    : sql`select json_extract(j.value, '$.subject_uuid') as subject_uuid, json_extract(j.value, '$.subject_kind') as subject_kind,
        json_extract(j.value, '$.repo_uuid') as repo_uuid, json_extract(j.value, '$.event_id') as event_id,
        json_extract(j.value, '$.actor_uuid') as actor_uuid, json_extract(j.value, '$.actor_username') as actor_username
        from json_each(${subjects}) j`;
  const inRepos = pg
    ? sql<SqlBool>`w.repo_uuid = any(${repos}::text[])`
    : sql<SqlBool>`w.repo_uuid in (select value from json_each(${JSON.stringify(repos)}))`;
  const specialKeys = pg ? sql`select unnest(${special}::text[])` : sql`select value from json_each(${JSON.stringify(special)})`;
  const key = (user: RawBuilder<unknown>) => sql`(subj.subject_uuid || ':' || ${user})`;
  const wu = sql.ref('w.user_uuid');
  const nu = sql.ref('n.user_uuid');
  const rows = await sql<{ uuid: string; user_uuid: string }>`with subj as materialized (${subjectRows}),
    watchers as materialized (select w.user_uuid, w.repo_uuid from repo_subscriptions w
      where ${inRepos} and w.level = 'watching' and ${inRange(wu)} and ${writtenAtOnce(wu, mail)}
        and ${readableBy(sql.ref('w.repo_uuid'), wu)}),
    src as (
      select w.user_uuid, subj.subject_uuid, subj.subject_kind, subj.repo_uuid, subj.event_id, subj.actor_uuid,
        subj.actor_username, 'subscribed' as reason, '["subscribed"]' as reasons
      from watchers w join subj on subj.repo_uuid = w.repo_uuid
      where ${key(wu)} not in (${specialKeys})
      union all
      select n.user_uuid, subj.subject_uuid, subj.subject_kind, subj.repo_uuid, subj.event_id, subj.actor_uuid,
        subj.actor_username, n.reason, n.reasons
      from subj join notifications n on n.subject_uuid = subj.subject_uuid
      where ${inRange(nu)} and (n.user_uuid, subj.repo_uuid) not in (select w.user_uuid, w.repo_uuid from watchers w)
        and ${key(nu)} not in (${specialKeys})
        and coalesce((select x.level from repo_subscriptions x where x.user_uuid = n.user_uuid
          and x.repo_uuid = subj.repo_uuid), 'participating') not in ('watching', 'ignoring')
        and ${readableBy(sql.ref('subj.repo_uuid'), nu)})
    insert into notifications (uuid, user_uuid, subject_kind, subject_uuid, repo_uuid, reason, reasons, unread, done,
      updated_at, last_event_id, last_actor_uuid, last_actor_username, created_at)
    select ${uuidSql(dialect)}, src.user_uuid, src.subject_kind, src.subject_uuid, src.repo_uuid, src.reason, src.reasons, 1, 0,
      cast(${now} as text), src.event_id, src.actor_uuid, src.actor_username, cast(${now} as text)
    from src where true
    on conflict (user_uuid, subject_uuid) do update set ${BUMP}
    returning uuid, user_uuid`.execute(db);
  return rows.rows.map((r) => ({ user: r.user_uuid, uuid: r.uuid }));
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
