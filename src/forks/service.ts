import { copyLfsForFork } from '../lfs/service.ts';
import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import { scheduleSearchIndex } from '../search/service.ts';
import { type RepoRef, forkRecordReadable, repoReadableBy, requireRepo, requireRepoCreation } from '../access/index.ts';
import type { DB, ForksTable } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { notFound } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { command } from '../core/command.ts';
import { decide } from '../core/targets.ts';
import { insertRepo } from '../repos/service.ts';
import { type RepoJson, type RepoUrls, loadRepoJson, repoScopes, repoToJson, repoViewQuery } from '../repos/view.ts';
import type { Viewer } from '../viewer.ts';

type ForkRow = Selectable<ForksTable>;

export interface ForkJson {
  uuid: string;
  source_repo_uuid: string;
  source_full_name: string;
  repo: RepoJson;
  created_at: string;
  created_by_username: string;
}

async function usernameOf(db: Kysely<DB>, uuid: string): Promise<string> {
  return (await db.selectFrom('users').select('username').where('uuid', '=', uuid).executeTakeFirst())?.username ?? '';
}

async function forkToJson(
  db: Kysely<DB>,
  fork: ForkRow,
  urls: RepoUrls,
  repo?: RepoJson,
  sourceFullName?: string,
  createdByUsername?: string,
): Promise<ForkJson> {
  return {
    uuid: fork.uuid,
    source_repo_uuid: fork.source_repo_uuid,
    source_full_name: sourceFullName ?? (await loadRepoJson(db, fork.source_repo_uuid, urls)).full_name,
    repo: repo ?? (await loadRepoJson(db, fork.repo_uuid, urls)),
    created_at: fork.created_at,
    created_by_username: createdByUsername ?? (await usernameOf(db, fork.created_by_uuid)),
  };
}

/**
 * POST {repo}/forks: read access to the source. Into `teamSlug` (maintainer or owner there,
 * active team) or else the caller's own namespace, with the source's slug; a taken slug is 409
 * slug_taken. The new repo copies name, description, about, visibility and default_branch.
 */
export async function createFork(deps: Deps, viewer: Viewer, ref: RepoRef, teamSlug: string | undefined): Promise<ForkJson> {
  // the source read (and locked) at read level, then the namespace the fork goes to
  const forking = decide(async (db, v: Viewer) => ({
    source: await requireRepo(db, v, ref, { level: 'read', lock: true }),
    target:
      teamSlug === undefined
        ? await requireRepoCreation(db, v, 'user', v.username)
        : await requireRepoCreation(db, v, 'team', teamSlug),
  }));
  return command(deps, viewer, forking, async (tx) => {
    const { repo: source, owner: sourceOwner } = tx.access.source;
    const target = tx.access.target;
    const repo = await insertRepo(
      deps,
      tx,
      target,
      {
        name: source.name,
        slug: source.slug,
        description: source.description,
        about: source.about,
        visibility: source.visibility as 'public' | 'private',
        default_branch: source.default_branch,
        fork_of_uuid: source.uuid,
      },
      viewer,
    );
    const fork: ForkRow = {
      uuid: randomUUID(),
      source_repo_uuid: source.uuid,
      repo_uuid: repo.uuid,
      created_by_uuid: viewer.uuid,
      created_at: repo.created_at,
    };
    await tx.db.insertInto('forks').values(fork).execute();
    await deps.git.copyForFork(tx, source, repo);
    await scheduleSearchIndex(deps, tx.db, repo.uuid);
    // the fork holds its source's LFS objects too (the bytes are shared)
    await copyLfsForFork(tx.db, source.uuid, repo.uuid);
    const sourceFullName = `${sourceOwner.name}/${source.slug}`;
    const json = await forkToJson(tx.db, fork, deps.config, undefined, sourceFullName);
    await tx.emit({
      kind: 'fork-created',
      scopes: [...repoScopes(repo), `repo:${source.uuid}`],
      actor: actorOf(viewer),
      payload: {
        fork_uuid: fork.uuid,
        repo_uuid: repo.uuid,
        full_name: json.repo.full_name,
        source_repo_uuid: source.uuid,
        source_full_name: sourceFullName,
      },
    });
    return json;
  });
}

/** GET /forks/{uuid}: visible when the caller can read the fork repo and its source (404 otherwise). */
export async function getForkByUuid(deps: Deps, viewer: Viewer, uuid: string): Promise<ForkJson> {
  const fork = await deps.db.selectFrom('forks').selectAll().where('uuid', '=', uuid).executeTakeFirst();
  if (!fork || !(await forkRecordReadable(deps.db, viewer, fork))) throw notFound('Fork');
  return forkToJson(deps.db, fork, deps.config);
}

/**
 * GET {repo}/fork: this repo's own fork record; 404 when it is not a fork, or when the caller
 * cannot read its source.
 */
export async function getOwnFork(deps: Deps, viewer: Viewer, ref: RepoRef): Promise<ForkJson> {
  const { repo } = await requireRepo(deps.db, viewer, ref, { level: 'read' });
  const fork = await deps.db.selectFrom('forks').selectAll().where('repo_uuid', '=', repo.uuid).executeTakeFirst();
  if (!fork || !(await forkRecordReadable(deps.db, viewer, fork))) throw notFound('Fork');
  return forkToJson(deps.db, fork, deps.config);
}

/** The forks of a source repo whose repos the viewer may read (the caller selects and orders). */
function readableForksOf(deps: Deps, viewer: Viewer, sourceUuid: string) {
  return deps.db
    .selectFrom('forks')
    .innerJoin('repos', 'repos.uuid', 'forks.repo_uuid')
    .where('forks.source_repo_uuid', '=', sourceUuid)
    .where(repoReadableBy(viewer));
}

async function forksToJson(deps: Deps, forks: ForkRow[], sourceFullName: string): Promise<ForkJson[]> {
  if (forks.length === 0) return [];
  const repos = await repoViewQuery(deps.db)
    .where(
      'repos.uuid',
      'in',
      forks.map((f) => f.repo_uuid),
    )
    .execute();
  const byUuid = new Map(repos.map((row) => [row.uuid, repoToJson(row, deps.config)]));
  // the creators' usernames in one read (a creator without a row answers '', as usernameOf)
  const creators = await deps.db
    .selectFrom('users')
    .select(['uuid', 'username'])
    .where('uuid', 'in', [...new Set(forks.map((f) => f.created_by_uuid))])
    .execute();
  const usernames = new Map(creators.map((u) => [u.uuid, u.username]));
  const out: ForkJson[] = [];
  for (const fork of forks) {
    const username = usernames.get(fork.created_by_uuid) ?? '';
    out.push(await forkToJson(deps.db, fork, deps.config, byUuid.get(fork.repo_uuid), sourceFullName, username));
  }
  return out;
}

/** GET {repo}/forks: a Page of this repo's forks that the caller may read. */
export async function listForks(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  page: { offset: number; limit: number },
): Promise<ForkJson[]> {
  const { repo, owner } = await requireRepo(deps.db, viewer, ref, { level: 'read' });
  // The page's keys from forks_source_keys_idx (its entries hold the fork repo's uuid, so only
  // the joined repo is read for the access filter), then those fork rows: a deep page skips
  // index entries, never fork rows (README "Performance").
  const keys = readableForksOf(deps, viewer, repo.uuid)
    .select('forks.uuid')
    .orderBy('forks.created_at')
    .orderBy('forks.uuid')
    .offset(page.offset)
    .limit(page.limit);
  const forks = await deps.db
    .selectFrom('forks')
    .selectAll()
    .where('uuid', 'in', keys)
    .orderBy('created_at')
    .orderBy('uuid')
    .execute();
  return forksToJson(deps, forks, `${owner.name}/${repo.slug}`);
}

/**
 * GET {repo}/forks/team/{t} and .../forks/user/{u}: the fork of this repo in that namespace, or
 * 404 (also when the caller cannot read it). Should a namespace hold several forks of the repo
 * (a fork renamed, then forked again), the oldest is answered.
 */
export async function getForkIn(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  kind: 'team' | 'user',
  namespace: string,
): Promise<ForkJson> {
  const { repo, owner } = await requireRepo(deps.db, viewer, ref, { level: 'read' });
  const key = namespace.toLowerCase();
  const ns =
    kind === 'team'
      ? await deps.db.selectFrom('teams').select('uuid').where('slug', '=', key).executeTakeFirst()
      : await deps.db.selectFrom('users').select('uuid').where('username', '=', key).executeTakeFirst();
  if (!ns) throw notFound(kind === 'team' ? 'Team' : 'User');
  const fork = await readableForksOf(deps, viewer, repo.uuid)
    .selectAll('forks')
    .where('repos.owner_kind', '=', kind)
    .where('repos.owner_uuid', '=', ns.uuid)
    .orderBy('forks.created_at')
    .orderBy('forks.uuid')
    .executeTakeFirst();
  if (!fork) throw notFound('Fork');
  const [json] = await forksToJson(deps, [fork], `${owner.name}/${repo.slug}`);
  return json!;
}

/** The first repo of a repo's fork network: follow `fork_of_uuid` up while it names a repo. */
async function forkNetworkRoot(db: Kysely<DB>, uuid: string): Promise<string> {
  const seen = new Set<string>();
  let current = uuid;
  for (;;) {
    seen.add(current);
    const row = await db.selectFrom('repos').select('fork_of_uuid').where('uuid', '=', current).executeTakeFirst();
    if (!row?.fork_of_uuid || seen.has(row.fork_of_uuid)) return current;
    current = row.fork_of_uuid;
  }
}

/**
 * Whether two repos are of one fork network: the same repo, or repos whose chains of fork
 * sources (a fork's source, its source's source, ...) end at the same repo. A deleted source
 * splits its network: its forks no longer have one (their `fork_of_uuid` is cleared).
 */
export async function sameForkNetwork(db: Kysely<DB>, a: string, b: string): Promise<boolean> {
  if (a === b) return true;
  return (await forkNetworkRoot(db, a)) === (await forkNetworkRoot(db, b));
}
