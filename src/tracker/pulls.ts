/**
 * The issue tracker's side of pulls (README "Issue tracker"): labels, assignees and milestone as
 * on threads, drafts and review requests. The pull JSON is filled at the HTTP edge
 * (`decoratePulls`, called where the branch tips are read).
 */
import { type Kysely, sql } from 'kysely';
import {
  assertCanEditPullMeta,
  assertCanTriage,
  levelAtLeast,
  type PullAccess,
  type RepoAccess,
  type RepoRef,
  storedUserRepoLevel,
} from '../access/index.ts';
import { command, type TxContext } from '../core/command.ts';
import { onPull } from '../core/targets.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { changeItemSet, emitItemChanges, MAX_ASSIGNEES, type MilestoneRef, type UserRef, replaceItemTracking } from './items.ts';

export interface PullTracking {
  labels: Array<{ uuid: string; name: string; color: string }>;
  assignees: UserRef[];
  milestone: MilestoneRef | null;
  draft: boolean;
  requested_reviewers: UserRef[];
  /** Who turned auto-merge on, how and when (docs/ci.md "Auto-merge"), or null. */
  auto_merge: { enabled_by: UserRef; merge_strategy: string; enabled_at: string } | null;
}

/**
 * Fills the tracker fields of some pulls (labels, assignees, milestone, draft, requested
 * reviewers) and their auto-merge in one statement: a UNION ALL of the pulls' own row (draft,
 * milestone) and their label, assignee, review-request and auto-merge rows, so a pull read costs
 * one statement more, not six.
 */
export async function decoratePulls<T extends { uuid: string }>(db: Kysely<DB>, pulls: T[]): Promise<Array<T & PullTracking>> {
  if (pulls.length === 0) return [];
  const uuids = pulls.map((p) => p.uuid);
  const rows = await db
    .selectFrom('pulls as p')
    .leftJoin('milestones as m', 'm.uuid', 'p.milestone_uuid')
    .select([
      sql<string>`'pull'`.as('kind'),
      'p.uuid as item',
      'm.uuid as id',
      'm.title as name',
      'm.state as extra',
      'm.number as num',
      sql<number | null>`p.draft`.as('flag'),
    ])
    .where('p.uuid', 'in', uuids)
    .unionAll(
      db
        .selectFrom('item_labels as il')
        .innerJoin('labels as l', 'l.uuid', 'il.label_uuid')
        .select([
          sql<string>`'label'`.as('kind'),
          'il.item_uuid as item',
          'l.uuid as id',
          'l.name as name',
          'l.color as extra',
          sql<number | null>`null`.as('num'),
          sql<number | null>`null`.as('flag'),
        ])
        .where('il.item_uuid', 'in', uuids),
    )
    .unionAll(
      db
        .selectFrom('item_assignees as ia')
        .innerJoin('users as u', 'u.uuid', 'ia.user_uuid')
        .select([
          sql<string>`'assignee'`.as('kind'),
          'ia.item_uuid as item',
          'u.uuid as id',
          'u.username as name',
          sql<string | null>`null`.as('extra'),
          sql<number | null>`null`.as('num'),
          sql<number | null>`null`.as('flag'),
        ])
        .where('ia.item_uuid', 'in', uuids),
    )
    .unionAll(
      db
        .selectFrom('review_requests as rr')
        .innerJoin('users as u', 'u.uuid', 'rr.user_uuid')
        .select([
          sql<string>`'reviewer'`.as('kind'),
          'rr.pull_uuid as item',
          'u.uuid as id',
          'u.username as name',
          sql<string | null>`null`.as('extra'),
          sql<number | null>`null`.as('num'),
          sql<number | null>`null`.as('flag'),
        ])
        .where('rr.pull_uuid', 'in', uuids),
    )
    .unionAll(
      db
        .selectFrom('pull_auto_merges as am')
        .innerJoin('users as u', 'u.uuid', 'am.enabled_by_uuid')
        .select([
          sql<string>`'automerge'`.as('kind'),
          'am.pull_uuid as item',
          'u.uuid as id',
          'u.username as name',
          // the strategy and the time in one text column: '{strategy} {enabled_at}'
          sql<string | null>`am.merge_strategy || ' ' || am.enabled_at`.as('extra'),
          sql<number | null>`null`.as('num'),
          sql<number | null>`null`.as('flag'),
        ])
        .where('am.pull_uuid', 'in', uuids),
    )
    .execute();
  const out = new Map<string, PullTracking>(
    uuids.map((u) => [
      u,
      { labels: [], assignees: [], milestone: null, draft: false, requested_reviewers: [], auto_merge: null },
    ]),
  );
  for (const r of rows) {
    const t = out.get(r.item);
    if (!t || r.id === null || r.name === null) {
      if (t && r.kind === 'pull') t.draft = Number(r.flag) === 1;
      continue;
    }
    if (r.kind === 'pull') {
      t.draft = Number(r.flag) === 1;
      t.milestone = { number: Number(r.num), title: r.name, state: r.extra ?? 'open' };
    } else if (r.kind === 'label') t.labels.push({ uuid: r.id, name: r.name, color: r.extra ?? '' });
    else if (r.kind === 'assignee') t.assignees.push({ uuid: r.id, username: r.name });
    else if (r.kind === 'automerge') {
      const [strategy, at] = (r.extra ?? '').split(' ');
      t.auto_merge = { enabled_by: { uuid: r.id, username: r.name }, merge_strategy: strategy ?? '', enabled_at: at ?? '' };
    } else t.requested_reviewers.push({ uuid: r.id, username: r.name });
  }
  const byUsername = (a: UserRef, b: UserRef) => (a.username < b.username ? -1 : a.username > b.username ? 1 : 0);
  for (const t of out.values()) {
    t.labels.sort((a, b) => (a.name.toLowerCase() < b.name.toLowerCase() ? -1 : 1));
    t.assignees.sort(byUsername);
    t.requested_reviewers.sort(byUsername);
  }
  return pulls.map((p) => ({ ...p, ...out.get(p.uuid)! }));
}

export interface PullTrackingInput {
  labels?: string[];
  assignees?: string[];
  milestone?: number | null;
  draft?: boolean;
}

export const hasTracking = (i: PullTrackingInput) =>
  i.labels !== undefined || i.assignees !== undefined || i.milestone !== undefined || i.draft !== undefined;

/** Checks who may set these fields: labels, assignees and milestone need write access; draft the author or write access. */
export function assertMaySetTracking(
  access: RepoAccess,
  viewer: Viewer,
  pull: { author_uuid: string },
  i: PullTrackingInput,
): void {
  if (i.labels !== undefined || i.assignees !== undefined || i.milestone !== undefined) assertCanTriage(access);
  if (i.draft !== undefined) assertCanEditPullMeta(access, viewer, pull.author_uuid);
}

/**
 * Applies a PUT's tracker fields inside its command and emits their events (`pull-labeled`, ...,
 * `pull-ready-for-review`, `pull-converted-to-draft`); true when something changed.
 */
export async function setPullTracking(
  tx: TxContext,
  viewer: Viewer,
  access: RepoAccess,
  pull: { uuid: string; draft: number; milestone_uuid: string | null },
  input: PullTrackingInput,
  scopes: string[],
  payload: Record<string, unknown>,
): Promise<boolean> {
  const changes = await replaceItemTracking(tx.db, 'pulls', access.repo, pull, input);
  await emitItemChanges(tx, viewer, 'pull', scopes, payload, changes);
  let changed = Boolean(
    changes.labeled?.length ||
    changes.unlabeled?.length ||
    changes.assigned?.length ||
    changes.unassigned?.length ||
    changes.milestoned ||
    changes.demilestoned,
  );
  if (input.draft !== undefined && (input.draft ? 1 : 0) !== pull.draft) {
    await tx.db
      .updateTable('pulls')
      .set({ draft: input.draft ? 1 : 0 })
      .where('uuid', '=', pull.uuid)
      .execute();
    await tx.emit({
      kind: input.draft ? 'pull-converted-to-draft' : 'pull-ready-for-review',
      scopes,
      actor: actorOf(viewer),
      payload: { ...payload, draft: input.draft },
    });
    changed = true;
  }
  if (changed) await tx.db.updateTable('pulls').set({ updated_at: nowIso() }).where('uuid', '=', pull.uuid).execute();
  return changed;
}

type EventShape = (pull: PullAccess['pull']) => Promise<{ scopes: string[]; payload: Record<string, unknown> }>;

/** POST/DELETE {repo}/pulls/{n}/labels and .../assignees: one change that keeps every concurrent one. */
export async function changePullSet(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  what: 'labels' | 'assignees',
  mode: 'add' | 'remove',
  names: string[],
  shape: (db: Kysely<DB>) => EventShape,
): Promise<void> {
  await command(deps, viewer, onPull(ref, number, { level: 'read', write: true }), async (tx) => {
    const { access, pull } = tx.access;
    assertCanTriage(access);
    const changes = await changeItemSet(tx.db, access.repo, pull.uuid, what, mode, names);
    const { scopes, payload } = await shape(tx.db)(pull);
    await emitItemChanges(tx, viewer, 'pull', scopes, payload, changes);
  });
}

/**
 * POST/DELETE {repo}/pulls/{n}/requested-reviewers: the author or write access; each reviewer
 * must be able to read the repo and not be the author (400 naming them).
 */
export async function changeReviewRequests(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
  mode: 'add' | 'remove',
  usernames: string[],
  shape: (db: Kysely<DB>) => EventShape,
): Promise<void> {
  await command(deps, viewer, onPull(ref, number, { level: 'read', write: true }), async (tx) => {
    const { access, pull } = tx.access;
    assertCanEditPullMeta(access, viewer, pull.author_uuid);
    if (pull.status === 'merged') throw conflict('pull_merged', 'The pull is merged and can no longer change.');
    const keys = [...new Set(usernames.map((u) => u.trim().toLowerCase()))];
    if (keys.length > MAX_ASSIGNEES) throw badRequest(`usernames: at most ${MAX_ASSIGNEES}.`);
    const users = await tx.db
      .selectFrom('users')
      .select(['uuid', 'username', 'is_staff', 'is_active'])
      .where('username', 'in', keys)
      .execute();
    const byName = new Map(users.map((u) => [u.username, u]));
    const { scopes, payload } = await shape(tx.db)(pull);
    const now = nowIso();
    for (const key of keys) {
      const user = byName.get(key);
      if (mode === 'add') {
        if (!user || !levelAtLeast(await storedUserRepoLevel(tx.db, user, access.repo), 'read')) {
          throw badRequest(`usernames: ${JSON.stringify(key)} cannot review this repo.`);
        }
        if (user.uuid === pull.author_uuid) throw badRequest(`usernames: ${JSON.stringify(key)} is the pull's author.`);
        const res = await tx.db
          .insertInto('review_requests')
          .values({ pull_uuid: pull.uuid, user_uuid: user.uuid, created_at: now })
          .onConflict((oc) => oc.doNothing())
          .executeTakeFirst();
        if (Number(res.numInsertedOrUpdatedRows ?? 0) === 0) continue;
        await tx.emit({
          kind: 'review-requested',
          scopes,
          actor: actorOf(viewer),
          payload: { ...payload, reviewer: { uuid: user.uuid, username: user.username } },
        });
      } else {
        if (!user) continue;
        const res = await tx.db
          .deleteFrom('review_requests')
          .where('pull_uuid', '=', pull.uuid)
          .where('user_uuid', '=', user.uuid)
          .executeTakeFirst();
        if (Number(res.numDeletedRows) === 0) continue;
        await tx.emit({
          kind: 'review-request-removed',
          scopes,
          actor: actorOf(viewer),
          payload: { ...payload, reviewer: { uuid: user.uuid, username: user.username } },
        });
      }
    }
  });
}

/** A review by a requested reviewer ends their request (inside the review's command). */
export async function endReviewRequest(tx: TxContext, pullUuid: string, userUuid: string): Promise<void> {
  await tx.db.deleteFrom('review_requests').where('pull_uuid', '=', pullUuid).where('user_uuid', '=', userUuid).execute();
}
