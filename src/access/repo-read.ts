/**
 * The hot read path of a repo path (GET {repo}, GET {repo}/pulls/{n}): the owner, the repo with
 * its owner's and creator's names, the viewer's membership and, for a pull, the pull with its
 * author's and merger's names, all in ONE statement compiled once (`compiledOnce`: a named
 * prepared statement on PostgreSQL). The access rule is the same `repoLevelFrom` that
 * `requireRepo` applies, fed from the row; nothing is cached between requests, so a removed
 * member or a revoked token is seen by the next request.
 *
 * Writes keep using `requireRepo` inside their transaction (it locks what it read).
 */
import { type Selectable, sql } from 'kysely';
import { compiledOnce } from '../db/compiled.ts';
import type { Database } from '../db/index.ts';
import type { PullsTable, ReposTable } from '../db/types.ts';
import { notFound } from '../errors.ts';
import type { RepoRef, Viewer } from '../viewer.ts';
import { type RepoLevel, type TeamRole } from './levels.ts';
import { repoLevelFrom } from './repos.ts';

/** The repo row with its owner's slug or username and its creator's username (repos/view.ts's RepoViewRow). */
export type RepoReadRow = Selectable<ReposTable> & {
  owner_team_slug: string | null;
  owner_username: string | null;
  creator_username: string | null;
};

export type PullReadRow = Selectable<PullsTable> & { author_username: string; merged_by_username: string | null };

const PULL_COLUMNS = [
  'uuid',
  'repo_uuid',
  'number',
  'title',
  'body',
  'source_branch',
  'target_branch',
  'status',
  'author_uuid',
  'created_at',
  'updated_at',
  'closed_at',
  'merged_at',
  'merged_by_uuid',
  'merge_commit_sha',
  'merge_strategy',
  'review_seq',
  'merge_pending',
  'merge_claimed_at',
  'merge_claim_sha',
] as const;

// compiledOnce passes placeholder strings while building; the pull number is bound as a number.
type Placeholder = string;
const asNumber = (p: Placeholder) => p as unknown as number;

interface Facts {
  o_uuid: string;
  o_is_active: number;
  owner_team_slug: string | null;
  owner_username: string | null;
  viewer_role: string | null;
  creator_username: string | null;
}

/** Team form: teams ⟕ repos ⟕ creator ⟕ the viewer's membership [⟕ pull ⟕ its users]. */
function teamQuery(withPull: boolean) {
  return compiledOnce((db, owner: Placeholder, slug: Placeholder, viewer: Placeholder, number: Placeholder) => {
    const base = db
      .selectFrom('teams as o')
      .leftJoin('repos as r', (j) =>
        j.onRef('r.owner_uuid', '=', 'o.uuid').on('r.owner_kind', '=', 'team').on('r.slug', '=', slug),
      )
      .leftJoin('users as c', 'c.uuid', 'r.created_by_uuid')
      .leftJoin('team_members as m', (j) => j.onRef('m.team_uuid', '=', 'o.uuid').on('m.user_uuid', '=', viewer))
      .selectAll('r')
      .select([
        'o.uuid as o_uuid',
        'o.is_active as o_is_active',
        'o.slug as owner_team_slug',
        'c.username as creator_username',
        'm.role as viewer_role',
      ])
      .select(sql<string | null>`null`.as('owner_username'))
      .where('o.slug', '=', owner);
    if (!withPull) return base;
    return base
      .leftJoin('pulls as p', (j) => j.onRef('p.repo_uuid', '=', 'r.uuid').on('p.number', '=', asNumber(number)))
      .leftJoin('users as pa', 'pa.uuid', 'p.author_uuid')
      .leftJoin('users as pm', 'pm.uuid', 'p.merged_by_uuid')
      .select(PULL_COLUMNS.map((c) => `p.${c} as p_${c}` as const))
      .select(['pa.username as p_author_username', 'pm.username as p_merged_by_username']);
  });
}

/** User form: users ⟕ repos ⟕ creator [⟕ pull ⟕ its users]. */
function userQuery(withPull: boolean) {
  return compiledOnce((db, owner: Placeholder, slug: Placeholder, _viewer: Placeholder, number: Placeholder) => {
    const base = db
      .selectFrom('users as o')
      .leftJoin('repos as r', (j) =>
        j.onRef('r.owner_uuid', '=', 'o.uuid').on('r.owner_kind', '=', 'user').on('r.slug', '=', slug),
      )
      .leftJoin('users as c', 'c.uuid', 'r.created_by_uuid')
      .selectAll('r')
      .select([
        'o.uuid as o_uuid',
        'o.is_active as o_is_active',
        'o.username as owner_username',
        'c.username as creator_username',
      ])
      .select([sql<string | null>`null`.as('owner_team_slug'), sql<string | null>`null`.as('viewer_role')])
      .where('o.username', '=', owner);
    if (!withPull) return base;
    return base
      .leftJoin('pulls as p', (j) => j.onRef('p.repo_uuid', '=', 'r.uuid').on('p.number', '=', asNumber(number)))
      .leftJoin('users as pa', 'pa.uuid', 'p.author_uuid')
      .leftJoin('users as pm', 'pm.uuid', 'p.merged_by_uuid')
      .select(PULL_COLUMNS.map((c) => `p.${c} as p_${c}` as const))
      .select(['pa.username as p_author_username', 'pm.username as p_merged_by_username']);
  });
}

const QUERIES = {
  team: { repo: teamQuery(false), pull: teamQuery(true) },
  user: { repo: userQuery(false), pull: userQuery(true) },
};

async function readRow(
  database: Database,
  viewer: Viewer,
  ref: RepoRef,
  number: number | null,
): Promise<{ repo: RepoReadRow; level: RepoLevel; row: Record<string, unknown> }> {
  const query = QUERIES[ref.ownerKind][number === null ? 'repo' : 'pull'];
  const [row] = (await query(
    database,
    ref.ownerName.toLowerCase(),
    ref.repoSlug.toLowerCase(),
    viewer.uuid,
    (number ?? 0) as unknown as string,
  )) as unknown as (Record<string, unknown> & Facts)[];
  // the same 404s, in the same order, as requireRepo: owner, then repo, then access
  if (!row || (ref.ownerKind === 'user' && row.o_is_active !== 1 && !viewer.isStaff)) {
    throw notFound(ref.ownerKind === 'team' ? 'Team' : 'User');
  }
  if (row.uuid === null) throw notFound('Repo');
  const repo = row as unknown as RepoReadRow;
  const level = repoLevelFrom(viewer, repo, (row.viewer_role as TeamRole | null) ?? null, row.o_is_active === 1);
  if (level === 'none') throw notFound('Repo');
  return { repo, level, row };
}

/** A repo the viewer may read, with its names, and the viewer's level; 404 as `requireRepo` gives. */
export async function readRepo(
  database: Database,
  viewer: Viewer,
  ref: RepoRef,
): Promise<{ repo: RepoReadRow; level: RepoLevel }> {
  const { repo, level } = await readRow(database, viewer, ref, null);
  return { repo, level };
}

/** As `readRepo`, plus the pull with that number and its author's and merger's names (404 Pull when absent). */
export async function readRepoPull(
  database: Database,
  viewer: Viewer,
  ref: RepoRef,
  number: number,
): Promise<{ repo: RepoReadRow; level: RepoLevel; pull: PullReadRow }> {
  const { repo, level, row } = await readRow(database, viewer, ref, number);
  if (row.p_uuid === null || row.p_uuid === undefined) throw notFound('Pull');
  const pull: Record<string, unknown> = {};
  for (const c of PULL_COLUMNS) pull[c] = row[`p_${c}`];
  pull.author_username = row.p_author_username;
  pull.merged_by_username = row.p_merged_by_username;
  return { repo, level, pull: pull as PullReadRow };
}
