/**
 * What threads and pulls share in the issue tracker (README "Issue tracker"): their labels,
 * assignees and milestone. Each label and assignee is one row (item_labels, item_assignees), so
 * adding one inserts a row and never rewrites a set a concurrent change also wrote.
 */
import {
  type Expression,
  expressionBuilder,
  type Kysely,
  PostgresAdapter,
  type RawBuilder,
  type Selectable,
  sql,
  type SqlBool,
} from 'kysely';
import { levelAtLeast, type RepoRow, storedUserRepoLevel } from '../access/index.ts';
import type { LabelsTable, MilestonesTable } from '../db/tables/threads.ts';
import type { DB } from '../db/types.ts';
import { badRequest, notFound } from '../errors.ts';
import type { TxContext } from '../core/command.ts';
import type { EventKind } from '../events/kinds.ts';
import { actorOf } from '../events/service.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';

export type LabelRow = Selectable<LabelsTable>;
export type MilestoneRow = Selectable<MilestonesTable>;
export type ItemKind = 'thread' | 'pull';

export const MAX_LABELS = 50;
export const MAX_ASSIGNEES = 10;

export interface LabelRef {
  uuid: string;
  name: string;
  color: string;
}
export interface UserRef {
  uuid: string;
  username: string;
}
export interface MilestoneRef {
  number: number;
  title: string;
  state: string;
}

export interface Decorations {
  labels: LabelRef[];
  assignees: UserRef[];
}

const byName = (a: { name: string }, b: { name: string }) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : 1);

/** The labels and assignees of some threads or pulls, sorted (labels by name, assignees by username). */
export async function decorations(db: Kysely<DB>, itemUuids: string[]): Promise<Map<string, Decorations>> {
  const out = new Map<string, Decorations>(itemUuids.map((u) => [u, { labels: [], assignees: [] }]));
  if (itemUuids.length === 0) return out;
  const [labels, assignees] = await Promise.all([
    db
      .selectFrom('item_labels as il')
      .innerJoin('labels as l', 'l.uuid', 'il.label_uuid')
      .select(['il.item_uuid', 'l.uuid', 'l.name', 'l.color'])
      .where('il.item_uuid', 'in', itemUuids)
      .execute(),
    db
      .selectFrom('item_assignees as ia')
      .innerJoin('users as u', 'u.uuid', 'ia.user_uuid')
      .select(['ia.item_uuid', 'u.uuid', 'u.username'])
      .where('ia.item_uuid', 'in', itemUuids)
      .execute(),
  ]);
  for (const l of labels) out.get(l.item_uuid)!.labels.push({ uuid: l.uuid, name: l.name, color: l.color });
  for (const a of assignees) out.get(a.item_uuid)!.assignees.push({ uuid: a.uuid, username: a.username });
  for (const d of out.values()) {
    d.labels.sort(byName);
    d.assignees.sort((a, b) => (a.username < b.username ? -1 : 1));
  }
  return out;
}

/** The milestones named by some rows, by uuid. */
export async function milestoneRefs(db: Kysely<DB>, uuids: Array<string | null>): Promise<Map<string, MilestoneRef>> {
  const wanted = [...new Set(uuids.filter((u): u is string => u !== null))];
  if (wanted.length === 0) return new Map();
  const rows = await db
    .selectFrom('milestones')
    .select(['uuid', 'number', 'title', 'state'])
    .where('uuid', 'in', wanted)
    .execute();
  return new Map(rows.map((r) => [r.uuid, { number: r.number, title: r.title, state: r.state }]));
}

/** The labels usable in a repo: its own, and its team's when a team owns it. */
export function usableLabels(db: Kysely<DB>, repo: Pick<RepoRow, 'uuid' | 'owner_kind' | 'owner_uuid'>) {
  return db
    .selectFrom('labels')
    .selectAll()
    .where((eb) =>
      repo.owner_kind === 'team'
        ? eb.or([eb('repo_uuid', '=', repo.uuid), eb('team_uuid', '=', repo.owner_uuid)])
        : eb('repo_uuid', '=', repo.uuid),
    );
}

/** Labels by name (case-insensitive) among those usable in the repo; an unknown name is 400 naming it. */
export async function resolveLabels(db: Kysely<DB>, repo: RepoRow, names: string[]): Promise<LabelRow[]> {
  const keys = [...new Set(names.map((n) => n.trim().toLowerCase()))];
  if (keys.length > MAX_LABELS) throw badRequest(`labels: at most ${MAX_LABELS}.`);
  if (keys.length === 0) return [];
  const rows = await usableLabels(db, repo).where('name_key', 'in', keys).execute();
  const found = new Set(rows.map((r) => r.name_key));
  const missing = names.find((n) => !found.has(n.trim().toLowerCase()));
  if (missing !== undefined) throw badRequest(`labels: no label named ${JSON.stringify(missing)} in this repo.`);
  return rows;
}

/** Users by username who can write to the repo; anyone else is 400 naming them. */
export async function resolveAssignees(db: Kysely<DB>, repo: RepoRow, usernames: string[]): Promise<UserRef[]> {
  const keys = [...new Set(usernames.map((n) => n.trim().toLowerCase()))];
  if (keys.length > MAX_ASSIGNEES) throw badRequest(`assignees: at most ${MAX_ASSIGNEES}.`);
  if (keys.length === 0) return [];
  const users = await db
    .selectFrom('users')
    .select(['uuid', 'username', 'is_staff', 'is_active'])
    .where('username', 'in', keys)
    .execute();
  const byKey = new Map(users.map((u) => [u.username, u]));
  for (const key of keys) {
    const user = byKey.get(key);
    if (!user || !levelAtLeast(await storedUserRepoLevel(db, user, repo), 'write')) {
      throw badRequest(`assignees: ${JSON.stringify(key)} cannot be assigned (not a user with write access to the repo).`);
    }
  }
  return keys.map((k) => ({ uuid: byKey.get(k)!.uuid, username: byKey.get(k)!.username }));
}

/** The milestone with this number in the repo (null clears); an unknown number is 400 naming it. */
export async function resolveMilestone(db: Kysely<DB>, repoUuid: string, number: number | null): Promise<MilestoneRow | null> {
  if (number === null) return null;
  const row = await db
    .selectFrom('milestones')
    .selectAll()
    .where('repo_uuid', '=', repoUuid)
    .where('number', '=', number)
    .executeTakeFirst();
  if (!row) throw badRequest(`milestone: no milestone number ${number} in this repo.`);
  return row;
}

export type SetMode = 'replace' | 'add' | 'remove';

/** Adds, removes or replaces an item's labels; returns what changed. Over MAX_LABELS is 400. */
export async function changeLabels(
  db: Kysely<DB>,
  itemUuid: string,
  labels: LabelRow[],
  mode: SetMode,
): Promise<{ added: LabelRow[]; removed: LabelRow[] }> {
  const current = await db
    .selectFrom('item_labels as il')
    .innerJoin('labels as l', 'l.uuid', 'il.label_uuid')
    .selectAll('l')
    .where('il.item_uuid', '=', itemUuid)
    .execute();
  const have = new Set(current.map((l) => l.uuid));
  const want = new Set(labels.map((l) => l.uuid));
  const added = mode === 'remove' ? [] : labels.filter((l) => !have.has(l.uuid));
  const removed = mode === 'add' ? [] : current.filter((l) => (mode === 'replace' ? !want.has(l.uuid) : want.has(l.uuid)));
  if (removed.length) {
    await db
      .deleteFrom('item_labels')
      .where('item_uuid', '=', itemUuid)
      .where(
        'label_uuid',
        'in',
        removed.map((l) => l.uuid),
      )
      .execute();
  }
  if (added.length) {
    const now = nowIso();
    await db
      .insertInto('item_labels')
      .values(added.map((l) => ({ item_uuid: itemUuid, label_uuid: l.uuid, created_at: now })))
      .onConflict((oc) => oc.doNothing())
      .execute();
    if (current.length - removed.length + added.length > MAX_LABELS)
      throw badRequest(`labels: at most ${MAX_LABELS} on one item.`);
  }
  return { added: added.sort(byName), removed: removed.sort(byName) };
}

/** Adds, removes or replaces an item's assignees; returns what changed. Over MAX_ASSIGNEES is 400. */
export async function changeAssignees(
  db: Kysely<DB>,
  itemUuid: string,
  users: UserRef[],
  mode: SetMode,
): Promise<{ added: UserRef[]; removed: UserRef[] }> {
  const current = await db
    .selectFrom('item_assignees as ia')
    .innerJoin('users as u', 'u.uuid', 'ia.user_uuid')
    .select(['u.uuid', 'u.username'])
    .where('ia.item_uuid', '=', itemUuid)
    .execute();
  const have = new Set(current.map((u) => u.uuid));
  const want = new Set(users.map((u) => u.uuid));
  const added = mode === 'remove' ? [] : users.filter((u) => !have.has(u.uuid));
  const removed = mode === 'add' ? [] : current.filter((u) => (mode === 'replace' ? !want.has(u.uuid) : want.has(u.uuid)));
  if (removed.length) {
    await db
      .deleteFrom('item_assignees')
      .where('item_uuid', '=', itemUuid)
      .where(
        'user_uuid',
        'in',
        removed.map((u) => u.uuid),
      )
      .execute();
  }
  if (added.length) {
    const now = nowIso();
    await db
      .insertInto('item_assignees')
      .values(added.map((u) => ({ item_uuid: itemUuid, user_uuid: u.uuid, created_at: now })))
      .onConflict((oc) => oc.doNothing())
      .execute();
    if (current.length - removed.length + added.length > MAX_ASSIGNEES) {
      throw badRequest(`assignees: at most ${MAX_ASSIGNEES} on one item.`);
    }
  }
  return { added, removed };
}

/**
 * POST/DELETE .../labels and .../assignees on a thread or a pull: adds or removes the named labels
 * (removing none that exist is 404) or assignees; returns what changed.
 */
export async function changeItemSet(
  db: Kysely<DB>,
  repo: RepoRow,
  itemUuid: string,
  what: 'labels' | 'assignees',
  mode: 'add' | 'remove',
  names: string[],
): Promise<ItemChanges> {
  if (what === 'labels') {
    const labels =
      mode === 'add'
        ? await resolveLabels(db, repo, names)
        : await usableLabels(db, repo)
            .where(
              'name_key',
              'in',
              names.map((n) => n.toLowerCase()),
            )
            .execute();
    if (mode === 'remove' && labels.length === 0) throw notFound('Label');
    const { added, removed } = await changeLabels(db, itemUuid, labels, mode);
    return { labeled: added, unlabeled: removed };
  }
  const users =
    mode === 'add'
      ? await resolveAssignees(db, repo, names)
      : await db
          .selectFrom('users')
          .select(['uuid', 'username'])
          .where(
            'username',
            'in',
            names.map((n) => n.toLowerCase()),
          )
          .execute();
  const { added, removed } = await changeAssignees(db, itemUuid, users, mode);
  return { assigned: added, unassigned: removed };
}

/** The row alias of a list query's items: `t` (threads) or `p` (pulls). */
type ItemAlias = 't' | 'p';
const itemColumn = (alias: ItemAlias, column: 'uuid' | 'milestone_uuid') => sql.ref<string | null>(`${alias}.${column}`);

/** A username named by a list filter; an unknown one is 400 naming it. */
export async function filterUserUuid(db: Kysely<DB>, field: string, username: string): Promise<string> {
  const row = await db.selectFrom('users').select('uuid').where('username', '=', username.toLowerCase()).executeTakeFirst();
  if (!row) throw badRequest(`${field}: no user named ${JSON.stringify(username)}.`);
  return row.uuid;
}

/**
 * One filter of a list: its condition on a row, and when it names a set of items of its own (a
 * label's, an assignee's, a word's), that set as a query of one column `uuid` read from its index.
 */
export interface ListFilter {
  where: Expression<SqlBool>;
  /**
   * The same condition as a check of one row by key, for the page query (which reads its rows in
   * the list's order and stops at a page): its subquery is fenced by `offset 0`, which PostgreSQL
   * never turns into a join. Two EXISTS on common labels were otherwise planned as a merge join of
   * both labels' index entries and a primary-key lookup per row of the intersection (2,000 rows,
   * 8,144 buffers, 45-88 ms at 100,000 threads) before the sort, where checking the sort index's
   * rows in order finds a page in about 1,500 rows (bench/README.md "Issue lists"). SQLite reads
   * an EXISTS per row either way (and takes no OFFSET without a LIMIT): there it is `where`.
   * Counts use `where` (a count reads every match).
   */
  check: Expression<SqlBool>;
  set?: RawBuilder<unknown>;
  /** the same condition on another column of item uuids (with `set`) */
  probe?: (uuid: RawBuilder<unknown>) => RawBuilder<SqlBool>;
}

/**
 * The most uuids a list reads from a filter's own set to drive the list from it: a filter that
 * matches fewer items than this is read whole (its index entries, then those rows by key, sorted);
 * otherwise the list reads its sort index and checks each row, which finds a page after about
 * page / (share of rows that match) rows, at most DRIVING_SET_MAX times the page.
 */
export const DRIVING_SET_MAX = 1000;

/**
 * How many index entries read in order cost as much as one key probe (a descent of a b-tree), for
 * the choice between intersecting large sets by probing the smallest's items in the others' keys
 * and by merging all of them in key order (bench/README.md "Sized sets": on SQLite, 10,000 probes
 * of thread_terms cost 17.8 ms where merging 30,000 entries cost 8.5): the merge is taken when it
 * reads fewer entries than PROBE_COST times the smallest set.
 */
export const PROBE_COST = 6;

/**
 * A list that walks its sort index (its sets each over DRIVING_SET_MAX, their intersection too)
 * first walks at most this many pages of index entries (a fence: the key of the last of them, read
 * from the index alone), checking each row; a page found there is the page. Otherwise the matches
 * are rarer there than the intersection's size suggested (the intersection is mostly of closed
 * threads, or pulls, or far down the order): the intersection is read up to WALK_FALLBACK_MAX items
 * and drives the list, and only one larger is walked to the end (bench/README.md "Sized sets").
 * The fence is read from index entries (64 pages of 30: 1,920 of the state's sort index, or of the
 * author's; a milestone reads its rows), a row is read only when it is checked; a page of an
 * intersection spread evenly over 2% of the rows is found in about 1,500. (The pull list keeps the
 * unbounded walk: its `q` and `mentioned` are text scans, not sets.)
 */
export const WALK_PAGES = 64;
export const WALK_FALLBACK_MAX = 4 * DRIVING_SET_MAX;

/** The most items a driving set may hold (DRIVING_SET_MAX; a test lowers it to reach the intersection path). */
let drivingSetMax = DRIVING_SET_MAX;
let probeCost = PROBE_COST;
let walkPages = WALK_PAGES;
/**
 * Tests: the driving threshold, the probe cost (0: always probe; Infinity: always merge) and the
 * pages a bounded walk reads (WALK_PAGES).
 */
export function setDrivingSetMax(max: number = DRIVING_SET_MAX, probe: number = PROBE_COST, pages = WALK_PAGES): void {
  drivingSetMax = max;
  probeCost = probe;
  walkPages = pages;
}

/**
 * A list's row is one of its driving set's items (`column` in `uuids`), where `drivenRows` gives
 * null: an IN list, which SQLite reads by key. (On PostgreSQL, one array parameter; the lists
 * select from `drivenRows` there, since a condition on the table, however written, was planned as
 * a scan of the whole table for 1,000 uuids.)
 */
export function inDrivingSet(db: Kysely<DB>, column: string, uuids: string[]): Expression<SqlBool> {
  if (isPostgres(db)) return sql<SqlBool>`${sql.ref(column)} = any(${uuids}::text[])`;
  const eb = expressionBuilder<DB, never>();
  return eb(sql.ref<string>(column), 'in', uuids);
}

export const isPostgres = (db: Kysely<DB>) => db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * On PostgreSQL, the rows of `table` whose uuids are a driving set's, each read by its primary key
 * (a lateral subquery per uuid of the array, fenced by `offset 0`: with a plain condition on the
 * table, `= any(...)` of 1,000 uuids was still planned as a Parallel Seq Scan of the 100,000
 * threads, 120 ms, where the 1,000 key lookups cost 4,000 buffer hits, a few ms); select from it
 * as the list's alias. Null elsewhere: SQLite reads `inDrivingSet`'s IN list by key.
 */
export function drivenRows(db: Kysely<DB>, table: 'threads' | 'pulls', uuids: string[]): RawBuilder<unknown> | null {
  if (!isPostgres(db)) {
    // SQLite reads an IN list of up to DRIVING_SET_MAX uuids by key; a larger one (a pull list's
    // sparse driving set, up to 20,000) it planned as a walk of the sort index testing each row
    // against the list (140 ms at 100,000 pulls): a CROSS JOIN keeps the set first
    if (uuids.length <= drivingSetMax) return null;
    return sql`(select r.* from json_each(${JSON.stringify(uuids)}) d cross join ${sql.table(table)} r on r.uuid = d.value)`;
  }
  return sql`(select x.* from unnest(${uuids}::text[]) as d(uuid) cross join lateral (select * from ${sql.table(table)} r where r.uuid = d.uuid offset 0) x)`;
}

/**
 * Each set's size, from one statement that reads at most `bound` index entries of each, in uuid
 * order: counted when it holds fewer; else, on SQLite (to rank large sets), estimated from how far
 * into the uuid range the last entry read lies. Items' uuids are random (v4), so a set of n items
 * reaches the fraction `bound` / n of the range in `bound` entries (within a few per cent at 1,001
 * entries); a wrong estimate costs time, never rows.
 */
async function sizeSets(db: Kysely<DB>, sets: ListFilter[], bound: number): Promise<number[]> {
  const counted = await sql<{ i: number | string; n: number | string; last: string | null }>`${sql.join(
    sets.map(
      (f, i) => sql`select ${sql.lit(i)} as i, count(*) as n, max(c.uuid) as last from (${f.set!} order by 1 limit ${bound}) c`,
    ),
    sql` union all `,
  )}`.execute(db);
  const estimate = !isPostgres(db);
  return sets.map((_, i) => {
    const row = counted.rows.find((r) => Number(r.i) === i)!;
    const n = Number(row.n);
    if (n < bound || !estimate || !row.last || !/^[0-9a-f]{8}/.test(row.last)) return n;
    const reached = (parseInt(row.last.slice(0, 8), 16) + 1) / 2 ** 32;
    return Math.max(n, Math.round(n / reached));
  });
}

/**
 * The items the list is driven from, or null (read the sort index, checking each row), from the
 * filters' own sets sized first (bench/README.md "Sized sets"):
 *
 * 1. One statement sizes every set from its index (sizeSets), reading at most DRIVING_SET_MAX + 1
 *    entries of each, nothing but a count and the last uuid sent back. An empty set ends the search
 *    (the list is empty); else the smallest set of at most DRIVING_SET_MAX items is read whole and
 *    drives the list; one set over that: null.
 * 2. Two sets or more, each over DRIVING_SET_MAX (their sizes estimated on SQLite): their
 *    intersection is counted up to DRIVING_SET_MAX + 1, from the smallest set with a key probe per
 *    item in the others, or on SQLite, when the entries of all the sets are fewer than PROBE_COST
 *    times the smallest's, by merging them in key order (a compound INTERSECT, which SQLite reads
 *    as a merge of the index ranges, stopping when one ends; PostgreSQL plans the semi-join
 *    itself, as a merge join of the ranges). Empty: the list is empty; at most DRIVING_SET_MAX:
 *    those items drive it; more: null, and the list walks its sort index (bounded: WALK_PAGES).
 *
 * Cost: step 1 reads at most 1,001 index entries per set; step 2 stops at 1,001 matches, so a
 * common intersection costs about 1,001 / (its share of the smallest set) entries, and an empty or
 * rare one the smallest set's probes or all the sets' entries: without an index of the pair, that
 * an intersection is empty cannot be known in less.
 */
export async function drivingSet(db: Kysely<DB>, filters: ListFilter[], max = drivingSetMax): Promise<string[] | null> {
  const keyed = filters.filter((f) => f.set);
  if (keyed.length === 0) return null;
  const bound = max + 1;
  const sizes = await sizeSets(db, keyed, bound);
  const order = keyed.map((_, i) => i).sort((x, y) => sizes[x]! - sizes[y]!);
  const least = sizes[order[0]!]!;
  if (least === 0) return [];
  if (least <= max) {
    const rows = await sql<{ uuid: string }>`${keyed[order[0]!]!.set!} limit ${bound}`.execute(db);
    return [...new Set(rows.rows.map((r) => r.uuid))];
  }
  if (keyed.length < 2) return null;
  return setIntersection(db, keyed, bound, sizes);
}

/**
 * The items in every one of some large sets (each over DRIVING_SET_MAX), or null when they are
 * more than `bound` - 1 (drivingSet step 2; the fallback of a bounded walk with a larger bound).
 */
export async function setIntersection(
  db: Kysely<DB>,
  keyed: ListFilter[],
  bound: number,
  sized?: number[],
): Promise<string[] | null> {
  if (keyed.length === 1) {
    const rows = await sql<{ uuid: string }>`${keyed[0]!.set!} limit ${bound}`.execute(db);
    const uuids = [...new Set(rows.rows.map((r) => r.uuid))];
    return uuids.length < bound ? uuids : null;
  }
  // ranked on SQLite, which reads a semi-join as written (a probe per item of the first set);
  // PostgreSQL's planner picks the join and its order from its own statistics of the sets
  const pg = isPostgres(db);
  const sizes = sized ?? (await sizeSets(db, keyed, drivingSetMax + 1));
  const order = keyed.map((_, i) => i).sort((x, y) => sizes[x]! - sizes[y]!);
  const smallest = sizes[order[0]!]!;
  if (smallest === 0) return [];
  const entries = sizes.reduce((sum, n) => sum + n, 0);
  const merge = !pg && entries < probeCost * smallest;
  const [first, ...rest] = order.map((i) => keyed[i]!);
  const intersection = merge
    ? sql`${sql.join(
        [first!, ...rest].map((f) => f.set!),
        sql` intersect `,
      )} order by 1 limit ${bound}`
    : sql`select s.uuid from (${first!.set!}) s where ${sql.join(
        rest.map((f) => f.probe!(sql.ref('s.uuid'))),
        sql` and `,
      )} limit ${bound}`;
  const total = await sql<{ n: number | string }>`select count(*) as n from (${intersection}) i`.execute(db);
  const n = Number(total.rows[0]!.n);
  if (n === 0) return [];
  if (n >= bound) return null;
  const both = await intersection.execute(db);
  return (both.rows as Array<{ uuid: string }>).map((r) => r.uuid);
}

/** The walk's bound in pages and the fallback's bound in items (+ 1), as set (tests lower them). */
export const walkBounds = () => ({
  pages: walkPages,
  fallback: Math.round((WALK_FALLBACK_MAX / DRIVING_SET_MAX) * drivingSetMax) + 1,
});

/** The `labels` list filter (names separated by commas): one existence check on item_labels per label. */
export async function labelFilters(db: Kysely<DB>, repo: RepoRow, alias: ItemAlias, labels: string): Promise<ListFilter[]> {
  const names = labels
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const eb = expressionBuilder<DB, never>();
  const pg = isPostgres(db);
  return (await resolveLabels(db, repo, names)).map((label) => {
    const labeled = eb
      .selectFrom('item_labels as il')
      .select('il.item_uuid')
      .where('il.item_uuid', '=', itemColumn(alias, 'uuid'))
      .where('il.label_uuid', '=', label.uuid);
    return {
      where: eb.exists(labeled),
      check: eb.exists(pg ? labeled.offset(0) : labeled),
      set: sql`select item_uuid as uuid from item_labels where label_uuid = ${label.uuid}`,
      probe: (uuid) =>
        sql<SqlBool>`exists (select 1 from item_labels x where x.item_uuid = ${uuid} and x.label_uuid = ${label.uuid})`,
    };
  });
}

/** The `assignee` list filter: `*` (any), `none` or a username. */
export async function assigneeFilter(db: Kysely<DB>, alias: ItemAlias, assignee: string): Promise<ListFilter> {
  const eb = expressionBuilder<DB, never>();
  const assigned = eb
    .selectFrom('item_assignees as ia')
    .select('ia.item_uuid')
    .where('ia.item_uuid', '=', itemColumn(alias, 'uuid'));
  const fenced = <Q extends { offset(n: number): Q }>(q: Q): Q => (isPostgres(db) ? q.offset(0) : q);
  if (assignee === '*') return { where: eb.exists(assigned), check: eb.exists(fenced(assigned)) };
  if (assignee === 'none') return { where: eb.not(eb.exists(assigned)), check: eb.not(eb.exists(fenced(assigned))) };
  const uuid = await filterUserUuid(db, 'assignee', assignee);
  const theirs = assigned.where('ia.user_uuid', '=', uuid);
  return {
    where: eb.exists(theirs),
    check: eb.exists(fenced(theirs)),
    set: sql`select item_uuid as uuid from item_assignees where user_uuid = ${uuid}`,
    probe: (item) => sql<SqlBool>`exists (select 1 from item_assignees x where x.item_uuid = ${item} and x.user_uuid = ${uuid})`,
  };
}

/** The `milestone` list filter: `*` (any), `none` or a milestone number. */
export async function milestoneFilter(
  db: Kysely<DB>,
  repoUuid: string,
  alias: ItemAlias,
  milestone: string,
): Promise<Expression<SqlBool>> {
  const eb = expressionBuilder<DB, never>();
  const column = itemColumn(alias, 'milestone_uuid');
  if (milestone === '*') return eb(column, 'is not', null);
  if (milestone === 'none') return eb(column, 'is', null);
  if (!/^[1-9][0-9]{0,9}$/.test(milestone)) throw badRequest('milestone: a milestone number, "none" or "*".');
  return eb(column, '=', (await resolveMilestone(db, repoUuid, Number(milestone)))!.uuid);
}

const labelRef = (l: LabelRow): LabelRef => ({ uuid: l.uuid, name: l.name, color: l.color });
const milestoneRef = (m: MilestoneRow): MilestoneRef => ({ number: m.number, title: m.title, state: m.state });

export interface ItemChanges {
  labeled?: LabelRow[];
  unlabeled?: LabelRow[];
  assigned?: UserRef[];
  unassigned?: UserRef[];
  milestoned?: MilestoneRow;
  demilestoned?: MilestoneRow;
}

/** One event per change, `thread-labeled`, `pull-assigned`, ..., in the item's scopes. */
export async function emitItemChanges(
  tx: TxContext,
  viewer: Viewer,
  kind: ItemKind,
  scopes: string[],
  payload: Record<string, unknown>,
  changes: ItemChanges,
): Promise<void> {
  const emit = (suffix: string, extra: Record<string, unknown>) =>
    tx.emit({ kind: `${kind}-${suffix}` as EventKind, scopes, actor: actorOf(viewer), payload: { ...payload, ...extra } });
  if (changes.demilestoned) await emit('demilestoned', { milestone: milestoneRef(changes.demilestoned) });
  if (changes.milestoned) await emit('milestoned', { milestone: milestoneRef(changes.milestoned) });
  for (const l of changes.unlabeled ?? []) await emit('unlabeled', { label: labelRef(l) });
  for (const l of changes.labeled ?? []) await emit('labeled', { label: labelRef(l) });
  for (const u of changes.unassigned ?? []) await emit('unassigned', { assignee: u });
  for (const u of changes.assigned ?? []) await emit('assigned', { assignee: u });
}

/**
 * Replaces a thread's or pull's labels, assignees and milestone with the ones given (creation,
 * PATCH, PUT), inside the caller's command; what changed, for its events.
 */
export async function replaceItemTracking(
  db: Kysely<DB>,
  table: 'threads' | 'pulls',
  repo: RepoRow,
  item: { uuid: string; milestone_uuid: string | null },
  input: { labels?: string[]; assignees?: string[]; milestone?: number | null },
): Promise<ItemChanges> {
  const changes: ItemChanges = {};
  if (input.labels !== undefined) {
    const { added, removed } = await changeLabels(db, item.uuid, await resolveLabels(db, repo, input.labels), 'replace');
    changes.labeled = added;
    changes.unlabeled = removed;
  }
  if (input.assignees !== undefined) {
    const { added, removed } = await changeAssignees(db, item.uuid, await resolveAssignees(db, repo, input.assignees), 'replace');
    changes.assigned = added;
    changes.unassigned = removed;
  }
  if (input.milestone !== undefined) {
    const next = await resolveMilestone(db, repo.uuid, input.milestone);
    if ((next?.uuid ?? null) !== item.milestone_uuid) {
      await db
        .updateTable(table)
        .set({ milestone_uuid: next?.uuid ?? null })
        .where('uuid', '=', item.uuid)
        .execute();
      if (item.milestone_uuid !== null) {
        changes.demilestoned = await db
          .selectFrom('milestones')
          .selectAll()
          .where('uuid', '=', item.milestone_uuid)
          .executeTakeFirst();
      }
      if (next) changes.milestoned = next;
    }
  }
  return changes;
}
