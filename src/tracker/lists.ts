/**
 * What the thread list and the pull list share (README "Issue tracker", docs/tracker.md "How a
 * list is read"): the words and mentions of their texts (tables thread_terms and pull_terms) and
 * the `q` and `mentioned` filters read from them, the keys of a filtered list (driven by a small
 * set, or its sort index walked with a check per row), and keyset paging by (sort value, number).
 */
import { type Expression, type Kysely, type RawBuilder, sql, type SqlBool } from 'kysely';
import { threadTerms, wordsOf } from '../db/terms.ts';
import type { DB } from '../db/types.ts';
import { badRequest } from '../errors.ts';
import { drivenRows, drivingSet, filterUserUuid, inDrivingSet, isPostgres, type ListFilter } from './items.ts';

/** The items of a list, the table of their texts' terms and its column of item uuids. */
const TERMS = {
  threads: { table: 'thread_terms', item: 'thread_uuid', alias: 't' },
  pulls: { table: 'pull_terms', item: 'pull_uuid', alias: 'p' },
} as const;
export type ListItems = keyof typeof TERMS;

/** The most words of `q` a list uses (README "Issue tracker"). */
export const Q_WORDS_MAX = 10;

/**
 * Replaces the terms (words, @-mentions) one source gives an item's list filters: a thread's or a
 * pull's title and body (source: the item itself), a reply, a submitted review. `null` drops them
 * (a removed reply or review). Inside the write's own transaction.
 */
export async function indexTerms(
  db: Kysely<DB>,
  items: ListItems,
  repoUuid: string,
  itemUuid: string,
  sourceUuid: string,
  text: string | null,
): Promise<void> {
  const { table, item } = TERMS[items];
  await sql`delete from ${sql.table(table)} where source_uuid = ${sourceUuid}`.execute(db);
  if (text === null) return;
  const terms = threadTerms(text);
  for (let i = 0; i < terms.length; i += 500) {
    const values = terms.slice(i, i + 500).map((term) => sql`(${repoUuid}, ${term}, ${itemUuid}, ${sourceUuid})`);
    await sql`insert into ${sql.table(table)} (repo_uuid, term, ${sql.ref(item)}, source_uuid) values ${sql.join(
      values,
    )} on conflict do nothing`.execute(db);
  }
}

/** Items with a term (a word, `@username`): the terms key (repo, term, item) gives them. */
function termFilter(db: Kysely<DB>, items: ListItems, repoUuid: string, term: string): ListFilter {
  const { table, item, alias } = TERMS[items];
  const has = (uuid: RawBuilder<unknown>, fence: RawBuilder<unknown>) =>
    sql<SqlBool>`exists (select 1 from ${sql.table(table)} tt where tt.repo_uuid = ${repoUuid} and tt.term = ${term} and ${sql.ref(
      `tt.${item}`,
    )} = ${uuid}${fence})`;
  const probe = (uuid: RawBuilder<unknown>) => has(uuid, sql``);
  return {
    where: probe(sql.ref(`${alias}.uuid`)),
    check: has(sql.ref(`${alias}.uuid`), isPostgres(db) ? sql` offset 0` : sql``),
    set: sql`select distinct ${sql.ref(item)} as uuid from ${sql.table(table)} where repo_uuid = ${repoUuid} and term = ${term}`,
    probe,
  };
}

/**
 * The `mentioned` filter (a user `@`-mentioned; an unknown user is 400) and the words of `q` (at
 * most Q_WORDS_MAX, every one must appear), each read from the list's terms.
 */
export async function textFilters(
  db: Kysely<DB>,
  items: ListItems,
  repoUuid: string,
  filters: { mentioned?: string; q?: string },
): Promise<ListFilter[]> {
  const out: ListFilter[] = [];
  if (filters.mentioned !== undefined) {
    const name = filters.mentioned.toLowerCase();
    await filterUserUuid(db, 'mentioned', name);
    out.push(termFilter(db, items, repoUuid, `@${name}`));
  }
  for (const word of wordsOf(filters.q ?? '').slice(0, Q_WORDS_MAX)) out.push(termFilter(db, items, repoUuid, word));
  return out;
}

/** A query of a list's keys, as far as the shared steps narrow, order and read it. */
interface KeyQuery<Q> {
  where(cond: Expression<SqlBool>): Q;
  orderBy(expr: RawBuilder<unknown>, direction: 'asc' | 'desc'): Q;
  offset(n: number): Q;
  limit(n: number): Q;
  execute(): Promise<Array<{ uuid: string }>>;
}

/**
 * The keys of a list that pass `checks` (and whatever `from` adds), in no order, or null when a
 * filter's own set is empty. When one filter's set is small (a label, an assignee, a word or a
 * mention held by at most DRIVING_SET_MAX items) the keys are those items' (read by primary key,
 * so a filter that matches nothing costs nothing); otherwise each check is an existence check on
 * its index, made on the rows of the sort index in order (`page`: ListFilter.check) or on every
 * match (`count`: ListFilter.where). `from` gives the list's query on the item rows, or on the
 * driving set's rows when it is given them (PostgreSQL: tracker/items.ts drivenRows).
 */
export async function filteredKeys<Q extends KeyQuery<Q>>(
  db: Kysely<DB>,
  items: ListItems,
  checks: ListFilter[],
  use: 'page' | 'count',
  from: (driven: RawBuilder<unknown> | null) => Q,
  /** the largest set that drives the list (default DRIVING_SET_MAX) */
  drivingMax?: number,
): Promise<Q | null> {
  const driving = await drivingSet(db, checks, drivingMax);
  if (driving?.length === 0) return null;
  const driven = driving && drivenRows(db, items, driving);
  let keys = from(driven);
  for (const check of checks) keys = keys.where(use === 'page' ? check.check : check.where);
  return driving && !driven ? keys.where(inDrivingSet(db, `${TERMS[items].alias}.uuid`, driving)) : keys;
}

/** A keyset cursor of a list: the last row's sort value and number (README "Issue tracker"). */
export function listCursor(value: string | number, number: number): string {
  return Buffer.from(JSON.stringify([value, number])).toString('base64url');
}

/** A count or a number as the columns hold them (PostgreSQL's integer: a larger one or a fraction would be a 500). */
const isInt32 = (x: unknown): x is number => Number.isInteger(x) && (x as number) >= 0 && (x as number) <= 2_147_483_647;
/** A time as the columns hold them (ISO 8601 text; PostgreSQL refuses a NUL in a text parameter). */
const isTime = (x: unknown): x is string => typeof x === 'string' && /^[0-9TZ:.+-]{1,40}$/.test(x);

/** A keyset cursor's (sort value, number); 400 when it is not one of a list of this sort. */
export function readListCursor(cursor: string, numeric: boolean): [string | number, number] {
  try {
    const [value, number] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (isInt32(number) && (numeric ? isInt32(value) : isTime(value))) return [value as string | number, number];
  } catch {
    // refused below
  }
  throw badRequest('after: not a cursor of this list (take it from the `next` link of a page with the same sort).');
}

/**
 * The uuids of a page of a list's keys in the list's order (the sort column, then the number, in
 * `direction`), after the `after` cursor's row when given: as a row value, which both databases
 * read as one range of the sort index (an OR of the two comparisons is read from the index's
 * start on PostgreSQL: O(depth)). A cursor that is not one of this sort is 400.
 */
export async function pageKeys<Q extends KeyQuery<Q>>(
  keys: Q,
  items: ListItems,
  sortColumn: string,
  numeric: boolean,
  order: { direction?: 'asc' | 'desc'; after?: string },
  page: { offset: number; limit: number },
): Promise<string[]> {
  const alias = TERMS[items].alias;
  const dir = order.direction ?? 'desc';
  const sortKey = sql.ref(`${alias}.${sortColumn}`);
  let ordered = keys.orderBy(sortKey, dir);
  if (order.after !== undefined) {
    const [value, number] = readListCursor(order.after, numeric);
    const cmp = dir === 'desc' ? '<' : '>';
    ordered = ordered.where(sql<SqlBool>`(${sortKey}, ${sql.ref(`${alias}.number`)}) ${sql.raw(cmp)} (${value}, ${number})`);
  }
  const rows = await ordered
    .orderBy(sql.ref(`${alias}.number`), dir)
    .offset(page.offset)
    .limit(page.limit)
    .execute();
  return rows.map((r) => r.uuid);
}

/** Rows read by key, put back in the order of their keys. */
export function inKeyOrder<R extends { uuid: string }>(rows: R[], uuids: string[]): R[] {
  const at = new Map(uuids.map((u, i) => [u, i]));
  return rows.sort((a, b) => at.get(a.uuid)! - at.get(b.uuid)!);
}
