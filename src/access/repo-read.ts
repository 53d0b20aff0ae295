/**
 * The read path of a repo path (every route that declares `config.repo`, docs/architecture.md
 * "The read path"): the owner, the repo with
 * its owner's and creator's names, the viewer's membership and, for a pull, the pull with its
 * author's and merger's names, all in ONE statement compiled once (`compiledOnce`: a named
 * prepared statement on PostgreSQL). The viewer's level is computed in the statement by the rule's
 * one SQL expression (`repoLevelSql`, repo-level.ts; `requireRepo` applies its TypeScript mirror);
 * nothing is cached between requests, so a removed member or a revoked token is seen by the next
 * request.
 *
 * Writes keep using `requireRepo` inside their transaction (it locks what it read).
 */
import { type Expression, type SqlBool, sql } from 'kysely';
import { compiledOnce, numberArg, numberParam } from '../db/fast-path.ts';
import type { Database } from '../db/index.ts';
import type { PullReadRow, RepoReadRow } from '../db/rows.ts';
import { notFound } from '../errors.ts';
import type { PullContext, RepoContext, RepoRef, RepoResolution, RepoTarget, Viewer } from '../viewer.ts';
import { LEVEL_BY_RANK, repoLevelSql, tokenReachesRepo } from './repo-level.ts';
import { noteDecision } from './decisions.ts';
import { teamTwoFactorRefusal } from './two-factor.ts';

export type { PullReadRow, RepoReadRow } from '../db/rows.ts';

const PULL_COLUMNS = [
  'uuid',
  'repo_uuid',
  'number',
  'title',
  'body',
  'source_branch',
  'target_branch',
  'source_repo_uuid',
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
  'merge_claim_instance',
  'draft',
  'milestone_uuid',
  'merge_claim_before',
  'merge_claim_head',
  'merged_head_sha',
  'merged_base_sha',
  'review_count',
] as const;

// compiledOnce passes placeholder strings while building (numberParam binds the pull number as a number).
type Placeholder = string;

interface Facts {
  o_uuid: string;
  o_is_active: number;
  owner_team_slug: string | null;
  owner_username: string | null;
  viewer_role: string | null;
  /** the team's `require_two_factor` (user forms: absent) */
  o_require_two_factor?: number | string | null;
  creator_username: string | null;
  /** the viewer's level as `repoLevelSql` computes it (0 none … 4 owner) */
  viewer_level: number;
}

/** The viewer's level on repo `r` (repoLevelSql), the viewer and the staff flag as parameters. */
const paramLevel = (viewer: Placeholder, staff: Placeholder, role: Expression<unknown>, ownerActive: Expression<SqlBool>) =>
  repoLevelSql({ repo: 'r', viewerUuid: sql`${viewer}`, viewerStaff: sql`${numberParam(staff)}`, role, ownerActive });

/** Team form: teams ⟕ repos ⟕ creator ⟕ the viewer's membership [⟕ pull ⟕ its users]. */
function teamQuery(withPull: boolean) {
  return compiledOnce(
    (db, owner: Placeholder, slug: Placeholder, viewer: Placeholder, number: Placeholder, staff: Placeholder) => {
      const level = paramLevel(viewer, staff, sql.ref('m.role'), sql`1 = 1`);
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
          'o.require_two_factor as o_require_two_factor',
        ])
        .select([sql<string | null>`null`.as('owner_username'), level.as('viewer_level')])
        .where('o.slug', '=', owner);
      if (!withPull) return base;
      return base
        .leftJoin('pulls as p', (j) => j.onRef('p.repo_uuid', '=', 'r.uuid').on('p.number', '=', numberParam(number)))
        .leftJoin('users as pa', 'pa.uuid', 'p.author_uuid')
        .leftJoin('users as pm', 'pm.uuid', 'p.merged_by_uuid')
        .select(PULL_COLUMNS.map((c) => `p.${c} as p_${c}` as const))
        .select(['pa.username as p_author_username', 'pm.username as p_merged_by_username']);
    },
  );
}

/** User form: users ⟕ repos ⟕ creator [⟕ pull ⟕ its users]. */
function userQuery(withPull: boolean) {
  return compiledOnce(
    (db, owner: Placeholder, slug: Placeholder, viewer: Placeholder, number: Placeholder, staff: Placeholder) => {
      const level = paramLevel(viewer, staff, sql`null`, sql`o.is_active = 1`);
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
        .select([
          sql<string | null>`null`.as('owner_team_slug'),
          sql<string | null>`null`.as('viewer_role'),
          level.as('viewer_level'),
        ])
        .where('o.username', '=', owner);
      if (!withPull) return base;
      return base
        .leftJoin('pulls as p', (j) => j.onRef('p.repo_uuid', '=', 'r.uuid').on('p.number', '=', numberParam(number)))
        .leftJoin('users as pa', 'pa.uuid', 'p.author_uuid')
        .leftJoin('users as pm', 'pm.uuid', 'p.merged_by_uuid')
        .select(PULL_COLUMNS.map((c) => `p.${c} as p_${c}` as const))
        .select(['pa.username as p_author_username', 'pm.username as p_merged_by_username']);
    },
  );
}

/** The pull's columns of a read row (`p_` prefixed), as one literal: PULL_COLUMNS and the two names. */
const pullFrom = (r: Record<string, unknown>): PullReadRow =>
  ({
    uuid: r.p_uuid,
    repo_uuid: r.p_repo_uuid,
    number: r.p_number,
    title: r.p_title,
    body: r.p_body,
    source_branch: r.p_source_branch,
    target_branch: r.p_target_branch,
    source_repo_uuid: r.p_source_repo_uuid,
    status: r.p_status,
    author_uuid: r.p_author_uuid,
    created_at: r.p_created_at,
    updated_at: r.p_updated_at,
    closed_at: r.p_closed_at,
    merged_at: r.p_merged_at,
    merged_by_uuid: r.p_merged_by_uuid,
    merge_commit_sha: r.p_merge_commit_sha,
    merge_strategy: r.p_merge_strategy,
    review_seq: r.p_review_seq,
    merge_pending: r.p_merge_pending,
    merge_claimed_at: r.p_merge_claimed_at,
    merge_claim_sha: r.p_merge_claim_sha,
    merge_claim_instance: r.p_merge_claim_instance,
    draft: r.p_draft,
    milestone_uuid: r.p_milestone_uuid,
    merge_claim_before: r.p_merge_claim_before,
    merge_claim_head: r.p_merge_claim_head,
    merged_head_sha: r.p_merged_head_sha,
    merged_base_sha: r.p_merged_base_sha,
    review_count: r.p_review_count,
    author_username: r.p_author_username,
    merged_by_username: r.p_merged_by_username,
  }) satisfies Record<keyof PullReadRow, unknown> as PullReadRow;

const QUERIES = {
  team: { repo: teamQuery(false), pull: teamQuery(true) },
  user: { repo: userQuery(false), pull: userQuery(true) },
};

/** The token and its user's columns, as the token lookup reads them, prefixed `v_`. */
const TOKEN_COLUMNS =
  't.uuid as v_token_uuid, t.token_hash as v_token_hash, t.expires_at as v_expires_at, t.revoked_at as v_revoked_at, ' +
  't.last_used_at as v_last_used_at, t.scopes as v_scopes, t.repos as v_repos, u.uuid as v_uuid, u.username as v_username, u.display_name as v_display_name, ' +
  'u.email as v_email, u.is_staff as v_is_staff, u.is_active as v_is_active, u.ping_mentions as v_ping_mentions, ' +
  'u.created_at as v_created_at, u.updated_at as v_updated_at, u.has_two_factor as v_has_two_factor, ' +
  '(select ss.require_two_factor from site_settings ss where ss.id = 1) as v_site_two_factor';

const PULL_SELECT =
  PULL_COLUMNS.map((c) => `p.${c} as p_${c}`).join(', ') +
  ', pa.username as p_author_username, pm.username as p_merged_by_username';
const PULL_JOINS =
  'left join pulls p on p.repo_uuid = r.uuid and p.number = {number} ' +
  'left join users pa on pa.uuid = p.author_uuid left join users pm on pm.uuid = p.merged_by_uuid';

/**
 * The token lookup and the repo read of `resolveRepo` in one statement: the token's row (with its
 * user) ⟕ the owner ⟕ the repo ⟕ its creator [⟕ the viewer's membership] [⟕ the pull ⟕ its users].
 * No token: no row. The same joins and columns as teamQuery/userQuery, so `resolutionFromRow` decides alike.
 */
function tokenQuery(kind: 'team' | 'user', withPull: boolean) {
  return compiledOnce((db, hash: Placeholder, owner: Placeholder, slug: Placeholder, number: Placeholder) => {
    const owners =
      kind === 'team'
        ? 'o.uuid as o_uuid, o.is_active as o_is_active, o.slug as owner_team_slug, null as owner_username, m.role as viewer_role, o.require_two_factor as o_require_two_factor'
        : 'o.uuid as o_uuid, o.is_active as o_is_active, null as owner_team_slug, o.username as owner_username, null as viewer_role, 0 as o_require_two_factor';
    // the rule's one SQL expression, fed from the token's user and the joined rows (no parameters)
    const level = repoLevelSql({
      repo: 'r',
      viewerUuid: sql.ref('u.uuid'),
      viewerStaff: sql.ref('u.is_staff'),
      role: kind === 'team' ? sql.ref('m.role') : sql`null`,
      ownerActive: sql`o.is_active = 1`,
    }).compile(db).sql;
    const text =
      `select ${TOKEN_COLUMNS}, r.*, ${owners}, ${level} as viewer_level, c.username as creator_username${withPull ? `, ${PULL_SELECT}` : ''} ` +
      'from api_tokens t inner join users u on u.uuid = t.user_uuid ' +
      (kind === 'team' ? 'left join teams o on o.slug = {owner} ' : 'left join users o on o.username = {owner} ') +
      `left join repos r on r.owner_uuid = o.uuid and r.owner_kind = '${kind}' and r.slug = {slug} ` +
      'left join users c on c.uuid = r.created_by_uuid ' +
      (kind === 'team' ? 'left join team_members m on m.team_uuid = o.uuid and m.user_uuid = u.uuid ' : '') +
      (withPull ? `${PULL_JOINS} ` : '') +
      'where t.token_hash = {hash}';
    const values: Record<string, unknown> = { hash, owner, slug, number: numberParam(number) };
    const parts = text.split(/\{(\w+)\}/);
    const strings = parts.filter((_, i) => i % 2 === 0);
    const params = parts.filter((_, i) => i % 2 === 1).map((name) => values[name]);
    const query = sql<Record<string, unknown>>(Object.assign([...strings], { raw: strings }) as TemplateStringsArray, ...params);
    return { compile: () => query.compile(db) };
  });
}

const TOKEN_QUERIES = {
  team: { repo: tokenQuery('team', false), pull: tokenQuery('team', true) },
  user: { repo: tokenQuery('user', false), pull: tokenQuery('user', true) },
};

/**
 * The token lookup of a request whose route declares a repo (`config.repo`): one statement reads
 * the token, its user and the repo (and pull) `resolveRepo` would read. Returns the token
 * lookup's columns (as `tokenByHash` names them) and the whole row for `resolutionFromRow`, or
 * undefined when no token has this hash.
 */
export async function tokenWithRepoRead(
  database: Database,
  hash: string,
  target: RepoTarget,
): Promise<{ token: Record<string, unknown>; row: Record<string, unknown> } | undefined> {
  const query = TOKEN_QUERIES[target.ref.ownerKind][target.number === null ? 'repo' : 'pull'];
  const [row] = await query(
    database,
    hash,
    target.ref.ownerName.toLowerCase(),
    target.ref.repoSlug.toLowerCase(),
    numberArg(target.number ?? 0),
  );
  if (!row) return undefined;
  // one literal (one hidden class), not keys computed per request
  const token = {
    token_uuid: row.v_token_uuid,
    token_hash: row.v_token_hash,
    expires_at: row.v_expires_at,
    revoked_at: row.v_revoked_at,
    last_used_at: row.v_last_used_at,
    scopes: row.v_scopes,
    repos: row.v_repos,
    uuid: row.v_uuid,
    username: row.v_username,
    display_name: row.v_display_name,
    email: row.v_email,
    is_staff: row.v_is_staff,
    is_active: row.v_is_active,
    ping_mentions: row.v_ping_mentions,
    created_at: row.v_created_at,
    updated_at: row.v_updated_at,
    has_two_factor: row.v_has_two_factor,
    site_two_factor: row.v_site_two_factor,
  };
  return { token, row };
}

/**
 * The route's repo from a read row (the repo query's, or the token lookup's joined one): the
 * context, or the 404 the route answers — the same 404s, in the same order, as `requireRepo`:
 * owner, then repo, then access, then the pull.
 */
export function resolutionFromRow(viewer: Viewer, target: RepoTarget, row: Record<string, unknown> | undefined): RepoResolution {
  noteDecision('repo');
  const { ref, number } = target;
  const r = row as (Record<string, unknown> & Facts) | undefined;
  if (!r || r.o_uuid === null || (ref.ownerKind === 'user' && r.o_is_active !== 1 && !viewer.isStaff)) {
    return { error: notFound(ref.ownerKind === 'team' ? 'Team' : 'User') };
  }
  if (r.uuid === null) return { error: notFound('Repo') };
  const repo = r as unknown as RepoReadRow;
  // a token restricted to repos reaches those only (README "Scoped tokens")
  const level = tokenReachesRepo(viewer, repo.uuid) ? (LEVEL_BY_RANK[Number(r.viewer_level)] ?? 'none') : 'none';
  if (level === 'none') return { error: notFound('Repo') };
  // a member of a team that requires a second factor, without one (docs/signin.md "Requiring it")
  if (r.viewer_role !== null && r.viewer_role !== undefined && Number(r.o_require_two_factor) === 1) {
    const refused = teamTwoFactorRefusal(viewer, { slug: String(r.owner_team_slug), require_two_factor: 1 }, r.viewer_role);
    if (refused) return { error: refused };
  }
  if (number === null) return { context: { ref, repo, level } };
  if (r.p_uuid === null || r.p_uuid === undefined) return { error: notFound('Pull') };
  return { context: { ref, repo, level, pull: pullFrom(r) } };
}

/** Resolves a repo (and pull) for a viewer in one compiled statement; the 404 as a value. */
export async function resolveRepo(database: Database, viewer: Viewer, target: RepoTarget): Promise<RepoResolution> {
  const { ref, number } = target;
  const query = QUERIES[ref.ownerKind][number === null ? 'repo' : 'pull'];
  const [row] = await query(
    database,
    ref.ownerName.toLowerCase(),
    ref.repoSlug.toLowerCase(),
    viewer.uuid,
    numberArg(number ?? 0),
    numberArg(viewer.isStaff ? 1 : 0),
  );
  return resolutionFromRow(viewer, target, row as Record<string, unknown> | undefined);
}

/** A repo the viewer may read, with its names, and the viewer's level; 404 as `requireRepo` gives. */
export async function readRepo(database: Database, viewer: Viewer, ref: RepoRef): Promise<RepoContext> {
  const { context, error } = await resolveRepo(database, viewer, { ref, number: null });
  if (error) throw error;
  return context;
}

/** As `readRepo`, plus the pull with that number and its author's and merger's names (404 Pull when absent). */
export async function readRepoPull(database: Database, viewer: Viewer, ref: RepoRef, number: number): Promise<PullContext> {
  const { context, error } = await resolveRepo(database, viewer, { ref, number });
  if (error) throw error;
  return context as PullContext;
}

/**
 * The repo a service works on: the context the request resolved (a route's `config.repo`,
 * `repoOf(request)`), or, given a bare ref (a page, an older caller), resolved now.
 */
export async function repoContextOf(database: Database, viewer: Viewer, at: RepoRef | RepoContext): Promise<RepoContext> {
  return 'repo' in at ? at : readRepo(database, viewer, at);
}

/** As `repoContextOf` for a pull: the request's context when it holds this pull, else resolved now. */
export async function pullContextOf(
  database: Database,
  viewer: Viewer,
  at: RepoRef | RepoContext,
  number: number,
): Promise<PullContext> {
  if ('pull' in at && (at as PullContext).pull.number === number) return at as PullContext;
  return readRepoPull(database, viewer, 'repo' in at ? at.ref : at, number);
}
