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
import { type Kysely, sql } from 'kysely';
import { inTransaction } from '../core/transaction.ts';
import type { Dialect } from '../db/index.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { EventFollower, type FollowStep, eventsAfterCursor } from '../events/follow.ts';
import type { EventInput } from '../events/service.ts';
import { NOTIFYING, type Reason, type Touch, concerned } from './concerned.ts';
import { enqueueMail, registerMailJobs } from './mail.ts';

export { REASONS, type Reason } from './concerned.ts';

const BATCH = 200;
/** Notifications written per chunk transaction: SQLite's driver holds the event loop meanwhile. */
const CHUNK: Record<Dialect, number> = { sqlite: 300, postgres: 2500 };
/** After a batch of several chunks, the next one waits this long for the burst to gather. */
const COALESCE_MS = 250;

interface Cursor {
  last: number;
  batchEnd: number | null;
  done: string | null;
}

/** Only these kinds are read: the fan-out steps over everything else (its own badge events too). */
const NOTIFYING_KINDS = Object.keys(NOTIFYING);

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
    const touches = await concerned(this.deps.db, events);
    const chunks = chunksOf(touches, cursor.done, this.chunkSize);
    if (chunks.length > 1) this.heavyAt = Date.now();
    for (let i = 0; i < chunks.length; i++) {
      const chunk = chunks[i]!;
      const final = i === chunks.length - 1;
      const next: Cursor = final
        ? { last: end, batchEnd: null, done: null }
        : { last: cursor.last, batchEnd: end, done: chunk.at(-1)!.user };
      const users = await this.writeChunk(cursor, next, chunk);
      // another instance moved the cursor (or holds it): it goes on from there
      if (users === null) return 'idle';
      if (users.length) this.onCommitted?.(users);
      cursor = next;
      if (!final) await yieldLoop();
    }
    return full;
  }

  /**
   * One chunk in its own transaction: the cursor row locked and checked to be at `from`, the
   * chunk's notifications upserted, their mail jobs and one badge event per user, the cursor set to
   * `to`. The users whose inbox changed; null when the cursor is not at `from` (or is held).
   */
  private async writeChunk(from: Cursor, to: Cursor, chunk: Touch[]): Promise<string[] | null> {
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
      const changed = await upsert(tx.db, tx.dialect, chunk, this.deps.clock.now().toISOString());
      // mail: a job per notification (batched by its dedupe key) or a digest per user
      await enqueueMail(this.deps, tx.db, changed);
      // the live badge: one `notification-updated` per user whose inbox changed in this batch
      const byUser = new Map<string, string[]>();
      for (const c of changed) (byUser.get(c.user) ?? byUser.set(c.user, []).get(c.user)!).push(c.uuid);
      const inputs: EventInput[] = [...byUser].map(([user, uuids]) => updatedEvent(user, uuids.slice(0, 100), 'activity'));
      for (let i = 0; i < inputs.length; i += 1000) await tx.emitMany(inputs.slice(i, i + 1000));
      await tx.db
        .updateTable('notification_dispatch')
        .set({ last_event_id: to.last, batch_end: to.batchEnd, done_user: to.done })
        .where('id', '=', 1)
        .execute();
      return [...byUser.keys()];
    });
  }
}

/**
 * The touches of the users after `done` (uuid order), cut into chunks of about `size`
 * notifications; a user's touches stay in one chunk (one badge event per user per batch). At least
 * one chunk (maybe empty: it moves the cursor).
 */
function chunksOf(touches: Touch[], done: string | null, size: number): Touch[][] {
  const byUser = new Map<string, Touch[]>();
  for (const t of touches)
    if (done === null || t.user > done) (byUser.get(t.user) ?? byUser.set(t.user, []).get(t.user)!).push(t);
  const chunks: Touch[][] = [];
  let current: Touch[] = [];
  for (const user of [...byUser.keys()].sort()) {
    current.push(...byUser.get(user)!);
    if (current.length >= size) {
      chunks.push(current);
      current = [];
    }
  }
  if (current.length || chunks.length === 0) chunks.push(current);
  return chunks;
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
