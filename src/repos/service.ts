import { randomUUID } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import { scheduleSearchIndex } from '../search/service.ts';
import {
  assertCanSetDiskQuota,
  assertMayCheckRepoSlugs,
  hideUnreadableForkSources,
  type RepoRef,
  type RepoRow,
  namespaceReadFilter,
  tokenRepoFilter,
  repoContextOf,
  requireNamespaceInsight,
  requireRepoCreation,
  resolveOwner,
} from '../access/index.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest, conflict, notFound } from '../errors.ts';
import { actorOf, teamActivityKey } from '../events/service.ts';
import { command, type TxContext } from '../core/command.ts';
import { decide, onRepo } from '../core/targets.ts';
import { reindexRepoVisibility } from '../events/actor-index.ts';
import { releaseBlobs } from '../blobs/lifetime.ts';
import { isValidBranchName } from '../git/refname.ts';
import { nameRuleError, normalizeName, suggestName } from '../names.ts';
import { nowIso } from '../time.ts';
import { isUniqueViolation } from '../db/tx.ts';
import type { RepoAt, Viewer } from '../viewer.ts';

import { type RepoJson, loadRepoJson, repoScopes, repoToJson, repoViewQuery } from './view.ts';
import { openPullsFrom, syncPullHeads } from '../pulls/heads.ts';
import { checkImport, type ImportInput, sourceFields, startImport } from '../mirrors/source.ts';

export function cleanName(raw: string): string {
  const name = raw.trim();
  if (!name) throw badRequest('name must not be blank.');
  return name;
}

const slugTaken = (slug: string) => conflict('slug_taken', `The repo slug "${slug}" is already taken in this namespace.`);

export async function isRepoSlugTaken(db: Kysely<DB>, ownerKind: string, ownerUuid: string, slug: string): Promise<boolean> {
  const row = await db
    .selectFrom('repos')
    .select('uuid')
    .where('owner_kind', '=', ownerKind)
    .where('owner_uuid', '=', ownerUuid)
    .where('slug', '=', slug)
    .executeTakeFirst();
  return row !== undefined;
}

export interface NewRepo {
  name: string;
  slug: string;
  description: string | null;
  about?: string;
  visibility: 'public' | 'private';
  default_branch?: string;
  fork_of_uuid?: string | null;
  source_kind?: 'import' | 'mirror' | null;
}

/**
 * Inserts a repo row in a namespace and emits repo-created. The slug must already be normalised.
 * A taken slug is 409 slug_taken, also when a concurrent request took it a moment earlier
 * (the unique index decides).
 */
export async function insertRepo(
  deps: Deps,
  tx: TxContext,
  owner: { kind: 'team' | 'user'; uuid: string; name: string },
  input: NewRepo,
  actor: Viewer,
): Promise<RepoRow> {
  if (await isRepoSlugTaken(tx.db, owner.kind, owner.uuid, input.slug)) throw slugTaken(input.slug);
  const now = nowIso();
  const row: RepoRow = {
    uuid: randomUUID(),
    owner_kind: owner.kind,
    owner_uuid: owner.uuid,
    name: input.name,
    slug: input.slug,
    description: input.description,
    about: input.about ?? '',
    visibility: input.visibility,
    default_branch: input.default_branch ?? 'main',
    public_repo_pull_policy: 'any',
    max_disk_bytes: deps.config.defaultMaxDiskBytes,
    disk_usage_bytes: 0,
    is_active: 1,
    is_archived: 0,
    fork_of_uuid: input.fork_of_uuid ?? null,
    source_kind: input.source_kind ?? null,
    pull_seq: 0,
    thread_seq: 0,
    created_by_uuid: actor.uuid,
    created_at: now,
    updated_at: now,
  };
  try {
    await tx.db.insertInto('repos').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw slugTaken(input.slug);
    throw err;
  }
  await tx.emit({
    kind: 'repo-created',
    scopes: repoScopes(row),
    actor: actorOf(actor),
    payload: {
      repo_uuid: row.uuid,
      full_name: `${owner.name}/${row.slug}`,
      name: row.name,
      visibility: row.visibility,
      fork_of_uuid: row.fork_of_uuid,
    },
  });
  return row;
}

export async function createRepo(
  deps: Deps,
  viewer: Viewer,
  kind: 'team' | 'user',
  ownerName: string,
  input: {
    name: string;
    slug: string;
    description?: string | null;
    visibility?: 'public' | 'private';
    import?: ImportInput;
  },
): Promise<RepoJson> {
  const name = cleanName(input.name);
  const slug = normalizeName('repo slug', input.slug);
  // a bad source URL or interval is 400 before anything is written
  const source = input.import ? checkImport(input.import) : null;
  const creation = decide((db, v: Viewer) => requireRepoCreation(db, v, kind, ownerName));
  return command(deps, viewer, creation, async (tx) => {
    const owner = tx.access;
    const row = await insertRepo(
      deps,
      tx,
      owner,
      {
        name,
        slug,
        description: input.description ?? null,
        visibility: input.visibility ?? 'private',
        source_kind: source ? (source.mirror ? 'mirror' : 'import') : null,
      },
      viewer,
    );
    await deps.git.create(tx, row);
    if (source) await startImport(deps, tx, row.uuid, source, viewer);
    const json = await loadRepoJson(tx.db, row.uuid, deps.config);
    return source ? { ...json, ...(await sourceFields(tx.db, row.uuid)) } : json;
  });
}

/**
 * A namespace's repos that the viewer may read, oldest first. The page's keys are read first
 * from the index in the list's order (a deep `page` skips index entries only), then the page's
 * rows with their names (a "deferred join").
 */
export async function listRepos(
  deps: Deps,
  viewer: Viewer,
  kind: 'team' | 'user',
  ownerName: string,
  page: { offset: number; limit: number },
): Promise<RepoJson[]> {
  const owner = await resolveOwner(deps.db, viewer, kind, ownerName);
  const filter = await namespaceReadFilter(deps.db, viewer, owner);
  let keys = deps.db.selectFrom('repos').select('uuid').where('owner_kind', '=', kind).where('owner_uuid', '=', owner.uuid);
  if (filter === 'public') keys = keys.where('visibility', '=', 'public');
  if (filter !== 'all') keys = keys.where('is_active', '=', 1);
  const only = tokenRepoFilter(viewer);
  if (only !== null) {
    if (only.length === 0) return [];
    keys = keys.where('uuid', 'in', only);
  }
  keys = keys.orderBy('created_at').orderBy('uuid').offset(page.offset).limit(page.limit);
  const rows = await repoViewQuery(deps.db)
    .where('repos.uuid', 'in', keys)
    .orderBy('repos.created_at')
    .orderBy('repos.uuid')
    .execute();
  return hideUnreadableForkSources(
    deps.db,
    viewer,
    rows.map((row) => repoToJson(row, deps.config)),
  );
}

/**
 * The Explore page's list (README "Web interface"): public repos of active owners, newest first,
 * that the viewer's token may see (a repo-restricted token: those repos only).
 */
export async function listPublicRepos(deps: Deps, viewer: Viewer, page: { offset: number; limit: number }): Promise<RepoJson[]> {
  let keys = deps.db
    .selectFrom('repos')
    .select('uuid')
    .where('visibility', '=', 'public')
    .where('is_active', '=', 1)
    .where((eb) =>
      eb.or([
        eb.and([
          eb('owner_kind', '=', 'team'),
          eb('owner_uuid', 'in', eb.selectFrom('teams').select('uuid').where('is_active', '=', 1)),
        ]),
        eb.and([
          eb('owner_kind', '=', 'user'),
          eb('owner_uuid', 'in', eb.selectFrom('users').select('uuid').where('is_active', '=', 1)),
        ]),
      ]),
    );
  const only = tokenRepoFilter(viewer);
  if (only !== null) {
    if (only.length === 0) return [];
    keys = keys.where('uuid', 'in', only);
  }
  keys = keys.orderBy('created_at', 'desc').orderBy('uuid', 'desc').offset(page.offset).limit(page.limit);
  const rows = await repoViewQuery(deps.db)
    .where('repos.uuid', 'in', keys)
    .orderBy('repos.created_at', 'desc')
    .orderBy('repos.uuid', 'desc')
    .execute();
  return hideUnreadableForkSources(
    deps.db,
    viewer,
    rows.map((row) => repoToJson(row, deps.config)),
  );
}

/**
 * GET {repo}: the repo the request resolved (`config.repo`: one statement with the token lookup),
 * or, given a bare ref, read now in one compiled statement (`repoContextOf`).
 */
export async function getRepo(deps: Deps, viewer: Viewer, at: RepoAt): Promise<RepoJson> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  // fork_of_uuid only when the caller may read the source (one more read, forks only)
  const [json] = await hideUnreadableForkSources(deps.db, viewer, [repoToJson(repo, deps.config)]);
  // an imported repo's status and mirror (one more read, those repos only)
  return repo.source_kind ? { ...json!, ...(await sourceFields(deps.db, repo.uuid)) } : json!;
}

/**
 * GET /repos/{uuid}: the repo with this uuid, under the same rules as by its names (404 when
 * there is none or the caller may not read it), so an event's `repo.uuid` leads to the repo.
 */
export async function getRepoByUuid(deps: Deps, viewer: Viewer, uuid: string): Promise<RepoJson> {
  const row = await deps.db
    .selectFrom('repos as r')
    .leftJoin('teams as t', (j) => j.onRef('t.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'team'))
    .leftJoin('users as u', (j) => j.onRef('u.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'user'))
    .select(['r.owner_kind', 'r.slug', 't.slug as team_slug', 'u.username'])
    .where('r.uuid', '=', uuid)
    .executeTakeFirst();
  const ownerName = row?.owner_kind === 'team' ? row.team_slug : row?.username;
  if (!row || !ownerName) throw notFound('Repo');
  return getRepo(deps, viewer, { ownerKind: row.owner_kind === 'team' ? 'team' : 'user', ownerName, repoSlug: row.slug });
}

export interface UpdateRepoInput {
  name?: string;
  slug?: string;
  description?: string | null;
  about?: string;
  visibility?: 'public' | 'private';
  default_branch?: string;
  public_repo_pull_policy?: 'any' | 'team' | 'owner';
  max_disk_bytes?: number;
  is_active?: boolean;
}

type RepoChanges = Partial<Omit<RepoRow, 'uuid' | 'owner_kind' | 'owner_uuid'>>;

/**
 * Applies a changes object, bumps updated_at and emits repo-updated with the changed fields.
 * Nothing changed: no write and no event.
 */
async function applyRepoChanges(
  deps: Deps,
  tx: TxContext,
  repo: RepoRow,
  changes: RepoChanges,
  viewer: Viewer,
  extra: Record<string, unknown> = {},
): Promise<RepoJson> {
  const changed = Object.fromEntries(
    Object.entries(changes).filter(([key, value]) => repo[key as keyof RepoRow] !== value),
  ) as RepoChanges;
  if (Object.keys(changed).length === 0) return loadRepoJson(tx.db, repo.uuid, deps.config);
  try {
    await tx.db
      .updateTable('repos')
      .set({ ...changed, updated_at: nowIso() })
      .where('uuid', '=', repo.uuid)
      .execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw slugTaken(String(changed.slug));
    throw err;
  }
  const json = await loadRepoJson(tx.db, repo.uuid, deps.config);
  // Payload values in API form (booleans, not 0/1).
  const shown: Record<string, unknown> = {};
  for (const key of Object.keys(changed)) shown[key] = json[key as keyof RepoJson];
  await tx.emit({
    kind: 'repo-updated',
    scopes: repoScopes(repo),
    actor: actorOf(viewer),
    payload: { repo_uuid: repo.uuid, full_name: json.full_name, fields: Object.keys(changed), changes: shown, ...extra },
  });
  // who may read its events changed: the user activity index follows (events/actor-index.ts)
  if (changed.visibility !== undefined) await reindexRepoVisibility(tx.db, repo.uuid, changed.visibility);
  return json;
}

/**
 * PUT {repo} (docs/behaviour.md "Repos and forks"): maintain level; `max_disk_bytes` is staff only (403, even
 * when unchanged); `public_repo_pull_policy: team` only on a public team repo, checked against the
 * resulting repo (409 invalid_pull_policy, also for `visibility: private` while the policy is `team`);
 * a taken slug 409 slug_taken.
 */
export async function updateRepo(deps: Deps, viewer: Viewer, ref: RepoRef, input: UpdateRepoInput): Promise<RepoJson> {
  return command(deps, viewer, onRepo(ref, { level: 'maintain', write: true }), async (tx) => {
    const { repo, owner } = tx.access;
    if (input.max_disk_bytes !== undefined) assertCanSetDiskQuota(viewer);
    const changes: RepoChanges = {};
    if (input.name !== undefined) changes.name = cleanName(input.name);
    if (input.slug !== undefined) changes.slug = normalizeName('repo slug', input.slug);
    if (input.description !== undefined) changes.description = input.description;
    if (input.about !== undefined) changes.about = input.about;
    if (input.visibility !== undefined) changes.visibility = input.visibility;
    if (input.default_branch !== undefined) {
      if (!isValidBranchName(input.default_branch)) {
        throw badRequest('default_branch must be a valid git branch name.');
      }
      changes.default_branch = input.default_branch;
      const branch = input.default_branch;
      tx.afterCommit(() => deps.git.setHead(repo.uuid, branch));
      if (branch !== repo.default_branch) await scheduleSearchIndex(deps, tx.db, repo.uuid);
    }
    if (input.public_repo_pull_policy !== undefined) changes.public_repo_pull_policy = input.public_repo_pull_policy;
    if (input.max_disk_bytes !== undefined) changes.max_disk_bytes = input.max_disk_bytes;
    if (input.is_active !== undefined) changes.is_active = input.is_active ? 1 : 0;

    if (changes.slug !== undefined && changes.slug !== repo.slug) {
      if (await isRepoSlugTaken(tx.db, repo.owner_kind, repo.owner_uuid, changes.slug)) throw slugTaken(changes.slug);
    }
    // Checked against the repo as it will be, whatever fields the request names: a change to
    // private (or a move of policy alone) must not leave `team` on a repo it is not valid for.
    if ((changes.public_repo_pull_policy ?? repo.public_repo_pull_policy) === 'team') {
      if (owner.kind !== 'team') {
        throw conflict('invalid_pull_policy', 'public_repo_pull_policy "team" is only valid for team repos.');
      }
      if ((changes.visibility ?? repo.visibility) !== 'public') {
        throw conflict('invalid_pull_policy', 'public_repo_pull_policy "team" is only valid for public team repos.');
      }
    }
    return shownRepo(tx.db, viewer, await applyRepoChanges(deps, tx, repo, changes, viewer));
  });
}

/** The repo record as the caller may see it (fork_of_uuid: hideUnreadableForkSources). */
async function shownRepo(db: Kysely<DB>, viewer: Viewer, json: RepoJson): Promise<RepoJson> {
  return (await hideUnreadableForkSources(db, viewer, [json]))[0]!;
}

/** PUT/DELETE {repo}/archive: maintain level; idempotent; allowed on an archived repo. */
export async function setArchived(deps: Deps, viewer: Viewer, ref: RepoRef, archived: boolean): Promise<RepoJson> {
  return command(deps, viewer, onRepo(ref, { level: 'maintain', write: true, allowArchived: true }), async (tx) => {
    const { repo } = tx.access;
    const json = await applyRepoChanges(deps, tx, repo, { is_archived: archived ? 1 : 0 }, viewer, {
      action: archived ? 'archived' : 'unarchived',
    });
    return shownRepo(tx.db, viewer, json);
  });
}

/**
 * DELETE {repo}: team owner, user owner or staff. Its protections, pulls and reviews go with it
 * (foreign keys cascade), as does its own fork record. Forks of it survive as standalone repos
 * (as Gitea does): their fork_of_uuid becomes null and their fork records are removed, each
 * with a repo-updated event.
 */
/**
 * A deleted repo is no longer one of its team's repos: its events leave the team's activity
 * (the index of events/service.ts writeScopeRows), except those that also carry the team's own
 * scope or the scope of another repo of the team.
 */
async function dropFromTeamActivity(tx: TxContext, repoUuid: string, teamUuid: string): Promise<void> {
  await sql`
    delete from event_scopes
    where scope = ${teamActivityKey(teamUuid)}
      and event_id in (select x.event_id from event_scopes x where x.scope = ${`repo:${repoUuid}`})
      and not exists (select 1 from event_scopes t where t.event_id = event_scopes.event_id and t.scope = ${`team:${teamUuid}`})
      and not exists (
        select 1 from event_scopes o join repos r on o.scope = 'repo:' || r.uuid
        where o.event_id = event_scopes.event_id and r.owner_kind = 'team' and r.owner_uuid = ${teamUuid} and r.uuid <> ${repoUuid})`.execute(
    tx.db,
  );
}

export async function deleteRepo(deps: Deps, viewer: Viewer, ref: RepoRef): Promise<void> {
  let blobs: { sha256: string }[] = [];
  const deleted = await command(deps, viewer, onRepo(ref, { level: 'owner', write: true, allowArchived: true }), async (tx) => {
    const { repo, owner } = tx.access;
    // The uploads go with the repo (cascade): their blobs are deleted once this commits, unless shared.
    blobs = await tx.db.selectFrom('uploads').select('sha256').distinct().where('repo_uuid', '=', repo.uuid).execute();
    const forks = await tx.db
      .selectFrom('repos')
      .select(['uuid', 'owner_kind', 'owner_uuid'])
      .where('fork_of_uuid', '=', repo.uuid)
      .orderBy('uuid')
      .execute();
    await tx.db.deleteFrom('forks').where('source_repo_uuid', '=', repo.uuid).execute();
    if (forks.length) {
      const now = nowIso();
      await tx.db
        .updateTable('repos')
        .set({ fork_of_uuid: null, updated_at: now })
        .where('fork_of_uuid', '=', repo.uuid)
        .execute();
      for (const fork of forks) {
        await tx.emit({
          kind: 'repo-updated',
          scopes: repoScopes(fork),
          actor: actorOf(viewer),
          payload: {
            repo_uuid: fork.uuid,
            fields: ['fork_of_uuid'],
            changes: { fork_of_uuid: null },
            action: 'fork_source_deleted',
            source_repo_uuid: repo.uuid,
          },
        });
      }
    }
    if (repo.owner_kind === 'team') await dropFromTeamActivity(tx, repo.uuid, repo.owner_uuid);
    // the list filters' words (no foreign key: see migrations 400 and 740)
    await tx.db.deleteFrom('thread_terms').where('repo_uuid', '=', repo.uuid).execute();
    await tx.db.deleteFrom('pull_terms').where('repo_uuid', '=', repo.uuid).execute();
    await tx.db.deleteFrom('repos').where('uuid', '=', repo.uuid).execute();
    await tx.emit({
      kind: 'repo-deleted',
      scopes: repoScopes(repo),
      actor: actorOf(viewer),
      payload: {
        repo_uuid: repo.uuid,
        full_name: `${owner.name}/${repo.slug}`,
        // who could read the repo: an is_active=false one was hidden below maintain level (events/kinds.ts)
        is_active: repo.is_active === 1,
        detached_fork_uuids: forks.map((f) => f.uuid),
      },
    });
    return repo;
  });
  // pulls from this repo into others keep their heads (README "Pulls from forks")
  await syncPullHeads(deps, await openPullsFrom(deps.db, deleted.uuid));
  await deps.git.remove(deleted);
  await releaseBlobs(deps, blobs);
}

/** GET /teams/{t}/check-repo-slug and /users/{u}/check-repo-slug. */
export async function checkRepoSlug(
  deps: Deps,
  viewer: Viewer,
  kind: 'team' | 'user',
  ownerName: string,
  raw: string,
): Promise<{ available: boolean; suggestion: string | null }> {
  assertMayCheckRepoSlugs(viewer);
  const slug = raw.trim().toLowerCase();
  const problem = nameRuleError('repo slug', slug);
  if (problem) throw badRequest(problem);
  const owner = await requireNamespaceInsight(deps.db, viewer, kind, ownerName);
  const taken = (candidate: string) => isRepoSlugTaken(deps.db, kind, owner.uuid, candidate);
  if (!(await taken(slug))) return { available: true, suggestion: null };
  return { available: false, suggestion: await suggestName('repo slug', slug, taken) };
}
