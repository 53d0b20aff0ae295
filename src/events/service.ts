import { type Kysely, type Transaction, sql } from 'kysely';
import type { Dialect } from '../db/index.ts';
import type { DB } from '../db/types.ts';
import { nowIso } from '../time.ts';
import { type EventKind, assertDeclaredEvent } from './kinds.ts';
import { type RepoOwnerInfo, actorClassKey, actorClasses } from './actor-index.ts';

export type { EventKind } from './kinds.ts';
import type { EventActor, EventRecord } from '../db/rows.ts';

export type { EventActor, EventRecord } from '../db/rows.ts';

/** The event actor for a request's viewer. */
export const actorOf = (viewer: { uuid: string; username: string }): EventActor => ({
  uuid: viewer.uuid,
  username: viewer.username,
});

export interface EventInput {
  /** a kind declared in events/kinds.ts, with what its payload names (README "Event privacy") */
  kind: EventKind;
  scopes: string[];
  actor: EventActor | null;
  payload: Record<string, unknown>;
}

/**
 * Event order without a global lock (README "Event order"). On PostgreSQL an event's id is
 * `xid * 65536 + position`: the writing transaction's id (`pg_current_xact_id()`) and the event's
 * position within that transaction. Readers only read events of transactions below the oldest one
 * still running (`settledBelow`), so an event can never commit below an id a reader has already
 * passed. On SQLite there is one writer at a time and the plain increasing id is already in
 * commit order.
 */
export const EVENTS_PER_TRANSACTION = 65_536;

/**
 * The index key of a team's activity (README "Performance"): an `event_scopes` row, never a scope
 * a client can name (GET /events refuses the kind) and never in an event's `scopes`.
 */
export const teamActivityKey = (teamUuid: string): string => `team-activity:${teamUuid}`;

/**
 * Writes the `event_scopes` rows of some events: one per scope (with the kind beside it, for
 * kind-filtered pages), plus the activity key of every team the event concerns: a team scope, or
 * the scope of a repo the team owns (repos never change owner). A team's activity is then one
 * index range read in id order, whatever the number of its repos. And, for an event with an actor,
 * the actor's activity keys of the classes of callers who may read it (events/actor-index.ts).
 */
async function writeScopeRows(
  db: Transaction<DB>,
  dialect: Dialect,
  events: Array<{ id: number; kind: string; scopes: string[]; actorUuid: string | null }>,
): Promise<void> {
  const repoUuids = new Set<string>();
  for (const e of events) for (const scope of e.scopes) if (scope.startsWith('repo:')) repoUuids.add(scope.slice(5));
  const repos = new Map<string, RepoOwnerInfo>();
  if (repoUuids.size) {
    const owners = await db
      .selectFrom('repos')
      .select(['uuid', 'owner_kind', 'owner_uuid', 'visibility'])
      .where('uuid', 'in', [...repoUuids])
      .execute();
    for (const o of owners) repos.set(o.uuid, o);
  }
  const rows: Array<{ event_id: number; scope: string; kind: string }> = [];
  for (const e of events) {
    const keys = new Set(e.scopes);
    for (const scope of e.scopes) {
      const repo = scope.startsWith('repo:') ? repos.get(scope.slice(5)) : undefined;
      const team = scope.startsWith('team:') ? scope.slice(5) : repo?.owner_kind === 'team' ? repo.owner_uuid : undefined;
      if (team) keys.add(teamActivityKey(team));
    }
    // who may read this actor's event (events/actor-index.ts)
    if (e.actorUuid !== null) for (const cls of actorClasses(e.scopes, repos)) keys.add(actorClassKey(e.actorUuid, cls));
    for (const scope of keys) rows.push({ event_id: e.id, scope, kind: e.kind });
  }
  if (rows.length === 0) return;
  if (rows.length < MANY) {
    await db.insertInto('event_scopes').values(rows).execute();
    return;
  }
  // many rows: one JSON parameter (no statement of thousands of parameters to build and compile)
  const json = JSON.stringify(rows.map((r) => [r.event_id, r.scope, r.kind]));
  const source =
    dialect === 'postgres'
      ? sql`select (j.value->>0)::bigint, j.value->>1, j.value->>2 from jsonb_array_elements(${json}::jsonb) j`
      : sql`select json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]') from json_each(${json}) j`;
  await sql`insert into event_scopes (event_id, scope, kind) ${source}`.execute(db);
}

/** From this many rows, an insert of events or scope rows passes them as one JSON parameter. */
const MANY = 100;

/**
 * Many events in one statement with the rows as one JSON parameter (a badge event for each of a
 * repo's thousands of watchers: building a statement of thousands of parameters held the
 * server's thread for tens of milliseconds). Rows are inserted in the array's order, so SQLite's
 * increasing ids follow it as a multi-row `VALUES` does; PostgreSQL's are `first` onwards.
 */
async function insertManyEvents(
  db: Transaction<DB>,
  first: number | null,
  inputs: EventInput[],
  created_at: string,
): Promise<Array<{ id: number }>> {
  const json = JSON.stringify(
    inputs.map((input) => [
      input.kind,
      JSON.stringify(input.scopes),
      input.actor?.uuid ?? null,
      input.actor?.username ?? null,
      JSON.stringify(input.payload),
    ]),
  );
  const result =
    first !== null
      ? await sql<{ id: number }>`insert into events (id, kind, scopes, actor_uuid, actor_username, payload, created_at)
          select ${first} + j.ord - 1, j.value->>0, j.value->>1, j.value->>2, j.value->>3, j.value->>4, ${created_at}
          from jsonb_array_elements(${json}::jsonb) with ordinality as j(value, ord)
          returning id`.execute(db)
      : await sql<{ id: number }>`insert into events (kind, scopes, actor_uuid, actor_username, payload, created_at)
          select json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'),
            json_extract(j.value, '$[3]'), json_extract(j.value, '$[4]'), ${created_at}
          from json_each(${json}) j where true order by j.key
          returning id`.execute(db);
  return result.rows.map((r) => ({ id: Number(r.id) }));
}

/** The `events` row of an input, but its id. */
function eventValues(input: EventInput, created_at: string) {
  return {
    kind: input.kind,
    scopes: JSON.stringify(input.scopes),
    actor_uuid: input.actor?.uuid ?? null,
    actor_username: input.actor?.username ?? null,
    payload: JSON.stringify(input.payload),
    created_at,
  };
}

/**
 * Writes one event and its scope rows in the transaction `db` (the outbox); publishing it after
 * commit is the caller's part (`tx.emit` of src/core/transaction.ts does both).
 */
export async function insertEvent(db: Transaction<DB>, dialect: Dialect, input: EventInput): Promise<EventRecord> {
  assertDeclaredEvent(input);
  const created_at = nowIso();
  const values = eventValues(input, created_at);
  let row: { id: number };
  // bench/pulls.ts only: the old global lock, for the "before" figure.
  if (dialect === 'postgres' && process.env.WEFT_EVENT_ORDER_LOCK === '1')
    await sql`select pg_advisory_xact_lock(7401002)`.execute(db);
  if (dialect === 'postgres') {
    // Only this transaction writes ids in its own range, so max + 1 cannot race.
    const result = await sql<{ id: number }>`
      insert into events (id, kind, scopes, actor_uuid, actor_username, payload, created_at)
      select coalesce((select max(e.id) + 1 from events e where e.id >= b.base and e.id < b.base + ${EVENTS_PER_TRANSACTION}), b.base),
        ${values.kind}, ${values.scopes}, ${values.actor_uuid}, ${values.actor_username}, ${values.payload}, ${values.created_at}
      from (select pg_current_xact_id()::text::bigint * ${EVENTS_PER_TRANSACTION} as base) b
      returning id`.execute(db);
    row = result.rows[0]!;
    if (row.id % EVENTS_PER_TRANSACTION === EVENTS_PER_TRANSACTION - 1) {
      throw new Error(`one transaction may emit at most ${EVENTS_PER_TRANSACTION - 1} events`);
    }
  } else {
    row = await db.insertInto('events').values(values).returning('id').executeTakeFirstOrThrow();
  }
  const scopes = [...new Set(input.scopes)];
  await writeScopeRows(db, dialect, [{ id: row.id, kind: input.kind, scopes, actorUuid: input.actor?.uuid ?? null }]);
  return {
    id: String(row.id),
    kind: input.kind,
    scopes,
    actor: input.actor,
    payload: input.payload,
    created_at,
  };
}

export type EventRow = {
  id: number;
  kind: string;
  scopes: string;
  actor_uuid: string | null;
  actor_username: string | null;
  payload: string;
  created_at: string;
};

export function eventFromRow(row: EventRow): EventRecord {
  return {
    id: String(row.id),
    kind: row.kind,
    scopes: JSON.parse(row.scopes) as string[],
    actor: row.actor_uuid ? { uuid: row.actor_uuid, username: row.actor_username ?? '' } : null,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    created_at: row.created_at,
  };
}

export async function getEventRow(db: Kysely<DB>, id: number): Promise<EventRow | undefined> {
  return db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Writes several events in the transaction `db` with one insert per table (for producers that
 * write events in bulk, such as the timer scheduler; `tx.emitMany`). Ids increase in the order of
 * `inputs`; publishing after commit is the caller's part.
 */
export async function insertEvents(db: Transaction<DB>, dialect: Dialect, inputs: EventInput[]): Promise<EventRecord[]> {
  if (inputs.length === 0) return [];
  for (const input of inputs) assertDeclaredEvent(input);
  const created_at = nowIso();
  // PostgreSQL: ids in this transaction's own range (see EVENTS_PER_TRANSACTION), after any it
  // already used; SQLite: the table's increasing id.
  let first: number | null = null;
  if (dialect === 'postgres') {
    const r = await sql<{ next: string }>`
      select coalesce((select max(e.id) + 1 from events e where e.id >= b.base and e.id < b.base + ${EVENTS_PER_TRANSACTION}), b.base) as next
      from (select pg_current_xact_id()::text::bigint * ${EVENTS_PER_TRANSACTION} as base) b`.execute(db);
    first = Number(r.rows[0]!.next);
    if ((first % EVENTS_PER_TRANSACTION) + inputs.length >= EVENTS_PER_TRANSACTION - 1) {
      throw new Error(`one transaction may emit at most ${EVENTS_PER_TRANSACTION - 1} events`);
    }
  }
  const rows =
    inputs.length < MANY
      ? await db
          .insertInto('events')
          .values(
            inputs.map((input, i) => ({
              ...(first === null ? {} : { id: first + i }),
              ...eventValues(input, created_at),
            })),
          )
          .returning('id')
          .execute()
      : await insertManyEvents(db, first, inputs, created_at);
  // Ids of one multi-row insert are assigned in row order; RETURNING's order is not promised.
  const ids = rows.map((r) => r.id).sort((a, b) => a - b);
  const records = inputs.map((input, i) => ({
    id: String(ids[i]),
    kind: input.kind,
    scopes: [...new Set(input.scopes)],
    actor: input.actor,
    payload: input.payload,
    created_at,
  }));
  await writeScopeRows(
    db,
    dialect,
    records.map((r) => ({ id: Number(r.id), kind: r.kind, scopes: r.scopes, actorUuid: r.actor?.uuid ?? null })),
  );
  return records;
}
