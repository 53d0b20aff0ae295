/**
 * A repo's milestones (README "Issue tracker"): numbered per repo, titles unique in the repo, with
 * live counts of their open and closed threads and pulls. Read access lists; write access writes.
 * Deleting one clears it from its threads and pulls (on delete set null).
 */
import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import { assertRepoNeed, type RepoAccess, type RepoRef, repoContextOf } from '../access/index.ts';
import { command, type TxContext } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import type { EventKind } from '../events/kinds.ts';
import { actorOf } from '../events/service.ts';
import { repoScopes } from '../repos/view.ts';
import { nowIso } from '../time.ts';
import type { RepoAt, Viewer } from '../viewer.ts';
import type { MilestoneRow } from './items.ts';

export interface MilestoneJson {
  uuid: string;
  number: number;
  title: string;
  description: string;
  due_on: string | null;
  state: 'open' | 'closed';
  open_threads: number;
  closed_threads: number;
  open_pulls: number;
  closed_pulls: number;
  created_at: string;
  closed_at: string | null;
}
export interface MilestoneInput {
  title?: string;
  description?: string;
  due_on?: string | null;
  state?: 'open' | 'closed';
}
type PageArgs = { offset: number; limit: number };
const WRITE = { level: 'write', write: true } as const;

function cleanTitle(raw: string): string {
  const title = raw.trim();
  if (title.length < 1 || title.length > 256) throw badRequest('title must be 1-256 characters.');
  return title;
}
function cleanDue(raw: string | null): string | null {
  if (raw === null) return null;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(raw) || Number.isNaN(Date.parse(`${raw}T00:00:00Z`))) {
    throw badRequest('due_on must be a date (YYYY-MM-DD) or null.');
  }
  return raw;
}

/** The milestones as JSON, with their counts (one grouped statement each for threads and pulls). */
async function withCounts(db: Kysely<DB>, rows: MilestoneRow[]): Promise<MilestoneJson[]> {
  if (rows.length === 0) return [];
  const uuids = rows.map((r) => r.uuid);
  const [threads, pulls] = await Promise.all([
    db
      .selectFrom('threads')
      .select(['milestone_uuid', 'state', (eb) => eb.fn.countAll().as('n')])
      .where('milestone_uuid', 'in', uuids)
      .where('removed_at', 'is', null)
      .groupBy(['milestone_uuid', 'state'])
      .execute(),
    db
      .selectFrom('pulls')
      .select(['milestone_uuid', 'status', (eb) => eb.fn.countAll().as('n')])
      .where('milestone_uuid', 'in', uuids)
      .groupBy(['milestone_uuid', 'status'])
      .execute(),
  ]);
  return rows.map((r) => {
    const t = threads.filter((c) => c.milestone_uuid === r.uuid);
    const p = pulls.filter((c) => c.milestone_uuid === r.uuid);
    const sum = (list: Array<{ n: unknown }>) => list.reduce((a, c) => a + Number(c.n), 0);
    return {
      uuid: r.uuid,
      number: r.number,
      title: r.title,
      description: r.description,
      due_on: r.due_on,
      state: r.state as 'open' | 'closed',
      open_threads: sum(t.filter((c) => c.state === 'open')),
      closed_threads: sum(t.filter((c) => c.state !== 'open')),
      open_pulls: sum(p.filter((c) => c.status === 'open')),
      closed_pulls: sum(p.filter((c) => c.status !== 'open')),
      created_at: r.created_at,
      closed_at: r.closed_at,
    };
  });
}

async function findMilestone(db: Kysely<DB>, repoUuid: string, number: number): Promise<MilestoneRow> {
  const row = await db
    .selectFrom('milestones')
    .selectAll()
    .where('repo_uuid', '=', repoUuid)
    .where('number', '=', number)
    .executeTakeFirst();
  if (!row) throw notFound('Milestone');
  return row;
}

async function assertTitleFree(db: Kysely<DB>, repoUuid: string, title: string, except: string | null): Promise<void> {
  let q = db
    .selectFrom('milestones')
    .select('uuid')
    .where('repo_uuid', '=', repoUuid)
    .where('title_key', '=', title.toLowerCase());
  if (except) q = q.where('uuid', '!=', except);
  if (await q.executeTakeFirst()) throw conflict('conflict', `A milestone titled ${JSON.stringify(title)} exists in this repo.`);
}

async function emitMilestone(tx: TxContext, viewer: Viewer, access: RepoAccess, kind: EventKind, m: MilestoneRow, extra = {}) {
  await tx.emit({
    kind,
    scopes: repoScopes(access.repo),
    actor: actorOf(viewer),
    payload: {
      repo_uuid: access.repo.uuid,
      milestone: { uuid: m.uuid, number: m.number, title: m.title, state: m.state },
      ...extra,
    },
  });
}

export async function listMilestones(
  deps: Deps,
  viewer: Viewer,
  ref: RepoAt,
  opts: PageArgs & { state?: 'open' | 'closed' | 'all'; sort?: 'due_on' | 'title' },
): Promise<MilestoneJson[]> {
  const { repo } = await repoContextOf(deps.database, viewer, ref);
  let q = deps.db.selectFrom('milestones').selectAll().where('repo_uuid', '=', repo.uuid);
  const state = opts.state ?? 'open';
  if (state !== 'all') q = q.where('state', '=', state);
  q = opts.sort === 'title' ? q.orderBy('title_key') : opts.sort === 'due_on' ? q.orderBy('due_on') : q;
  const rows = await q.orderBy('number').offset(opts.offset).limit(opts.limit).execute();
  return withCounts(deps.db, rows);
}

export async function getMilestone(deps: Deps, viewer: Viewer, ref: RepoAt, number: number): Promise<MilestoneJson> {
  const { repo } = await repoContextOf(deps.database, viewer, ref);
  return (await withCounts(deps.db, [await findMilestone(deps.db, repo.uuid, number)]))[0]!;
}

export async function createMilestone(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  input: MilestoneInput & { title: string },
): Promise<MilestoneJson> {
  const title = cleanTitle(input.title);
  const dueOn = cleanDue(input.due_on ?? null);
  return command(deps, viewer, onRepo(ref, WRITE), async (tx) => {
    const access = tx.access;
    await assertTitleFree(tx.db, access.repo.uuid, title, null);
    // the repo row is locked (onRepo): the next number is max + 1
    const max = await tx.db
      .selectFrom('milestones')
      .select((eb) => eb.fn.max('number').as('n'))
      .where('repo_uuid', '=', access.repo.uuid)
      .executeTakeFirst();
    const now = nowIso();
    const state = input.state ?? 'open';
    const row: MilestoneRow = {
      uuid: randomUUID(),
      repo_uuid: access.repo.uuid,
      number: Number(max?.n ?? 0) + 1,
      title,
      title_key: title.toLowerCase(),
      description: input.description ?? '',
      due_on: dueOn,
      state,
      created_at: now,
      updated_at: now,
      closed_at: state === 'closed' ? now : null,
    };
    await tx.db.insertInto('milestones').values(row).execute();
    await emitMilestone(tx, viewer, access, 'milestone-created', row);
    return (await withCounts(tx.db, [row]))[0]!;
  });
}

export async function updateMilestone(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  input: MilestoneInput,
): Promise<MilestoneJson> {
  const title = input.title === undefined ? undefined : cleanTitle(input.title);
  const dueOn = input.due_on === undefined ? undefined : cleanDue(input.due_on);
  return command(deps, viewer, onRepo(ref, { level: 'read', lock: true }), async (tx) => {
    const access = tx.access;
    const row = await findMilestone(tx.db, access.repo.uuid, number);
    assertRepoNeed(access, WRITE);
    if (title !== undefined && title.toLowerCase() !== row.title_key)
      await assertTitleFree(tx.db, access.repo.uuid, title, row.uuid);
    const now = nowIso();
    const next: MilestoneRow = {
      ...row,
      ...(title !== undefined ? { title, title_key: title.toLowerCase() } : {}),
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(dueOn !== undefined ? { due_on: dueOn } : {}),
      ...(input.state !== undefined ? { state: input.state } : {}),
    };
    const changed = (['title', 'description', 'due_on', 'state'] as const).filter((k) => next[k] !== row[k]);
    if (changed.length === 0) return (await withCounts(tx.db, [row]))[0]!;
    if (next.state !== row.state) next.closed_at = next.state === 'closed' ? now : null;
    next.updated_at = now;
    await tx.db
      .updateTable('milestones')
      .set({
        title: next.title,
        title_key: next.title_key,
        description: next.description,
        due_on: next.due_on,
        state: next.state,
        closed_at: next.closed_at,
        updated_at: now,
      })
      .where('uuid', '=', row.uuid)
      .execute();
    const closed = next.state === 'closed' && row.state !== 'closed';
    await emitMilestone(tx, viewer, access, closed ? 'milestone-closed' : 'milestone-updated', next, { changed });
    return (await withCounts(tx.db, [next]))[0]!;
  });
}

export async function deleteMilestone(deps: Deps, viewer: Viewer, ref: RepoRef, number: number): Promise<void> {
  await command(deps, viewer, onRepo(ref, { level: 'read', lock: true }), async (tx) => {
    const access = tx.access;
    const row = await findMilestone(tx.db, access.repo.uuid, number);
    assertRepoNeed(access, WRITE);
    await tx.db.updateTable('threads').set({ milestone_uuid: null }).where('milestone_uuid', '=', row.uuid).execute();
    await tx.db.updateTable('pulls').set({ milestone_uuid: null }).where('milestone_uuid', '=', row.uuid).execute();
    await tx.db.deleteFrom('milestones').where('uuid', '=', row.uuid).execute();
    await emitMilestone(tx, viewer, access, 'milestone-deleted', row);
  });
}
