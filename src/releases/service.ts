/**
 * Releases (docs/releases.md): one per tag of a repo, with Markdown notes and assets streamed to
 * the blob store (counted in the repo's quota). Drafts are seen by write access only; publishing
 * creates the tag at `target_commitish` when it does not exist. Events `release-published`,
 * `release-updated` and `release-deleted` concern published releases only (a draft is not news).
 */
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Kysely } from 'kysely';
import { assertNotArchived, itemWrite, levelAtLeast, repoContextOf, requireRepo } from '../access/index.ts';
import { holdBlob, releaseBlobs } from '../blobs/lifetime.ts';
import { BlobTooLargeError } from '../blobs/store.ts';
import { command, type TxContext } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
import type { DB } from '../db/types.ts';
import { isUniqueViolation } from '../db/tx.ts';
import type { RepoReadRow } from '../db/rows.ts';
import type { Deps } from '../deps.ts';
import { AppError, badRequest, conflict, notFound } from '../errors.ts';
import { actorOf } from '../events/service.ts';
import { isValidBranchName } from '../git/refname.ts';
import { codeReaders } from '../git/readers.ts';
import { refNotFound, resolveRef } from '../git/resolve.ts';
import { ZERO_SHA } from '../git/run.ts';
import { emitRefMoves } from '../pulls/pushes.ts';
import { applyRefMoveCi, planRefMoveCi } from '../ci/ref-moves.ts';
import { ownerPath, repoScopes } from '../repos/view.ts';
import { nowIso } from '../time.ts';
import type { RepoAt, RepoRef, Viewer } from '../viewer.ts';

export interface AssetJson {
  uuid: string;
  name: string;
  size: number;
  content_type: string;
  download_count: number;
  created_at: string;
  url: string;
}

export interface ReleaseJson {
  uuid: string;
  tag_name: string;
  target_commitish: string;
  name: string;
  body: string;
  draft: boolean;
  prerelease: boolean;
  author: { uuid: string; username: string };
  created_at: string;
  published_at: string | null;
  assets: AssetJson[];
}

export interface CreateReleaseBody {
  tag_name: string;
  target_commitish?: string;
  name?: string;
  body?: string;
  draft?: boolean;
  prerelease?: boolean;
}

export type UpdateReleaseBody = Partial<CreateReleaseBody>;

type RepoNames = { owner_kind: string; owner_team_slug: string | null; owner_username: string | null; slug: string };

const apiBase = (publicUrl: string, repo: RepoNames) =>
  `${publicUrl}/api/v1/${ownerPath(repo.owner_kind, (repo.owner_kind === 'team' ? repo.owner_team_slug : repo.owner_username) ?? '')}/repos/${repo.slug}`;

const WRITE = { level: 'write', write: true } as const;

function releaseRows(db: Kysely<DB>) {
  return db
    .selectFrom('releases as r')
    .innerJoin('users as u', 'u.uuid', 'r.author_uuid')
    .selectAll('r')
    .select('u.username as author_username');
}
type ReleaseRow = Awaited<ReturnType<ReturnType<typeof releaseRows>['executeTakeFirstOrThrow']>>;

async function toJson(db: Kysely<DB>, publicUrl: string, repo: RepoNames, rows: ReleaseRow[]): Promise<ReleaseJson[]> {
  const assets =
    rows.length === 0
      ? []
      : await db
          .selectFrom('release_assets')
          .selectAll()
          .where(
            'release_uuid',
            'in',
            rows.map((r) => r.uuid),
          )
          .orderBy('name')
          .execute();
  const base = apiBase(publicUrl, repo);
  return rows.map((r) => ({
    uuid: r.uuid,
    tag_name: r.tag_name,
    target_commitish: r.target_commitish,
    name: r.name,
    body: r.body,
    draft: r.draft === 1,
    prerelease: r.prerelease === 1,
    author: { uuid: r.author_uuid, username: r.author_username },
    created_at: r.created_at,
    published_at: r.published_at,
    assets: assets
      .filter((a) => a.release_uuid === r.uuid)
      .map((a) => ({
        uuid: a.uuid,
        name: a.name,
        size: Number(a.size),
        content_type: a.content_type,
        download_count: Number(a.download_count),
        created_at: a.created_at,
        url: `${base}/releases/${encodeURIComponent(r.tag_name)}/assets/${a.uuid}`,
      })),
  }));
}

// ---------------------------------------------------------------- reads

/** GET {repo}/releases: newest first; drafts only for write access. */
export async function listReleases(
  deps: Deps,
  viewer: Viewer,
  at: RepoAt,
  page: { offset: number; limit: number },
): Promise<ReleaseJson[]> {
  const { repo, level } = await repoContextOf(deps.database, viewer, at);
  let q = releaseRows(deps.db).where('r.repo_uuid', '=', repo.uuid);
  if (!levelAtLeast(level, 'write')) q = q.where('r.draft', '=', 0);
  const rows = await q.orderBy('r.created_at', 'desc').orderBy('r.uuid', 'desc').offset(page.offset).limit(page.limit).execute();
  return toJson(deps.db, deps.config.publicUrl, repo, rows);
}

/** GET {repo}/releases/{tag}: 404 for a draft without write access. */
export async function getRelease(deps: Deps, viewer: Viewer, at: RepoAt, tag: string): Promise<ReleaseJson> {
  const { repo, level } = await repoContextOf(deps.database, viewer, at);
  const row = await releaseRows(deps.db).where('r.repo_uuid', '=', repo.uuid).where('r.tag_name', '=', tag).executeTakeFirst();
  if (!row || (row.draft === 1 && !levelAtLeast(level, 'write'))) throw notFound('Release');
  return (await toJson(deps.db, deps.config.publicUrl, repo, [row]))[0]!;
}

/** GET {repo}/releases/latest: the most recently published release that is no draft and no prerelease. */
export async function latestRelease(deps: Deps, viewer: Viewer, at: RepoAt): Promise<ReleaseJson> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const found = await latestOf(deps.db, repo.uuid);
  if (!found) throw notFound('Release');
  return (await toJson(deps.db, deps.config.publicUrl, repo, [found]))[0]!;
}

function latestOf(db: Kysely<DB>, repoUuid: string) {
  return releaseRows(db)
    .where('r.repo_uuid', '=', repoUuid)
    .where('r.draft', '=', 0)
    .where('r.prerelease', '=', 0)
    .orderBy('r.published_at', 'desc')
    .orderBy('r.uuid', 'desc')
    .executeTakeFirst();
}

/** The latest release's tag and name for the repo page, or null. */
export async function latestReleaseName(deps: Deps, repoUuid: string): Promise<{ tag_name: string; name: string } | null> {
  const row = await latestOf(deps.db, repoUuid);
  return row ? { tag_name: row.tag_name, name: row.name } : null;
}

// ---------------------------------------------------------------- writes

function checkTag(tag: string): void {
  if (!isValidBranchName(tag)) throw badRequest('tag_name is not a valid git tag name.');
}

const eventRelease = (r: { uuid: string; tag_name: string; name: string; prerelease: number }) => ({
  uuid: r.uuid,
  tag_name: r.tag_name,
  name: r.name,
  prerelease: r.prerelease === 1,
});

async function emitRelease(
  tx: TxContext,
  viewer: Viewer,
  repo: RepoReadRow | (RepoNames & { uuid: string; owner_uuid: string }),
  kind: 'release-published' | 'release-updated' | 'release-deleted',
  row: { uuid: string; tag_name: string; name: string; prerelease: number },
): Promise<void> {
  const owner = (repo.owner_kind === 'team' ? repo.owner_team_slug : repo.owner_username) ?? '';
  await tx.emit({
    kind,
    scopes: repoScopes(repo),
    actor: actorOf(viewer),
    payload: {
      repo_uuid: repo.uuid,
      repo: { uuid: repo.uuid, full_name: `${owner}/${repo.slug}` },
      release: eventRelease(row),
    },
  });
}

/**
 * Creates the tag at `target` (a branch, tag or sha) when it does not exist: in the transaction,
 * with its `branch-pushed` event, the ref written last against "no such ref".
 */
async function ensureTag(
  deps: Deps,
  tx: TxContext,
  viewer: Viewer,
  repoUuid: string,
  tag: string,
  target: string,
): Promise<void> {
  const readers = codeReaders(deps);
  const dir = readers.dirOf(repoUuid);
  const [existing] = dir ? await readers.objects.info(dir, [`refs/tags/${tag}`]) : [null];
  if (existing) return;
  const start = dir ? await resolveRef(readers.objects, dir, target) : null;
  if (!start) throw refNotFound(target);
  // a new tag as by a push: the workflows whose `on.push.tags` match run (read here, in the
  // transaction: the tag's target is known only now)
  const move = { ref: `refs/tags/${tag}`, before: ZERO_SHA, after: start.sha, forced: false };
  await emitRefMoves(deps, tx, repoUuid, [move], viewer);
  await applyRefMoveCi(deps, tx, repoUuid, await planRefMoveCi(deps, repoUuid, [move], viewer));
  const moved = await readers.limits.run(dir!, ['update-ref', '--no-deref', `refs/tags/${tag}`, start.sha, ZERO_SHA], {
    okCodes: [1, 128],
  });
  if (moved.code !== 0) throw conflict('conflict', `Tag "${tag}" cannot be created: ${moved.stderr.trim().split('\n')[0] ?? ''}`);
}

/** POST {repo}/releases (write access). */
export async function createRelease(deps: Deps, viewer: Viewer, ref: RepoRef, body: CreateReleaseBody): Promise<ReleaseJson> {
  checkTag(body.tag_name);
  return command(deps, viewer, onRepo(ref, WRITE), async (tx) => {
    const repo = tx.access.repo;
    const draft = body.draft === true;
    const now = nowIso();
    const row = {
      uuid: randomUUID(),
      repo_uuid: repo.uuid,
      tag_name: body.tag_name,
      target_commitish: body.target_commitish ?? repo.default_branch,
      name: body.name ?? body.tag_name,
      body: body.body ?? '',
      draft: draft ? 1 : 0,
      prerelease: body.prerelease === true ? 1 : 0,
      author_uuid: viewer.uuid,
      created_at: now,
      published_at: draft ? null : now,
    };
    const taken = await tx.db
      .selectFrom('releases')
      .select('uuid')
      .where('repo_uuid', '=', repo.uuid)
      .where('tag_name', '=', row.tag_name)
      .executeTakeFirst();
    if (taken) throw conflict('already_exists', `A release of the tag "${row.tag_name}" exists.`);
    await tx.db.insertInto('releases').values(row).execute();
    const names = await namesOf(tx.db, repo.uuid);
    if (!draft) {
      await ensureTag(deps, tx, viewer, repo.uuid, row.tag_name, row.target_commitish);
      await emitRelease(tx, viewer, { ...names, uuid: repo.uuid, owner_uuid: repo.owner_uuid }, 'release-published', row);
    }
    return (await toJson(tx.db, deps.config.publicUrl, names, [{ ...row, author_username: viewer.username }]))[0]!;
  });
}

async function namesOf(db: Kysely<DB>, repoUuid: string): Promise<RepoNames & { owner_kind: string }> {
  return db
    .selectFrom('repos as r')
    .leftJoin('teams as t', (j) => j.onRef('t.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'team'))
    .leftJoin('users as u', (j) => j.onRef('u.uuid', '=', 'r.owner_uuid').on('r.owner_kind', '=', 'user'))
    .select(['r.owner_kind', 'r.slug', 't.slug as owner_team_slug', 'u.username as owner_username'])
    .where('r.uuid', '=', repoUuid)
    .executeTakeFirstOrThrow();
}

/** The release of `tag` inside a write (404 before 403 repo_archived). */
async function findForWrite(tx: TxContext & { access: { repo: { uuid: string; is_archived: number } } }, tag: string) {
  const row = await releaseRows(tx.db)
    .where('r.repo_uuid', '=', tx.access.repo.uuid)
    .where('r.tag_name', '=', tag)
    .executeTakeFirst();
  if (!row) throw notFound('Release');
  assertNotArchived(tx.access);
  return row;
}

/** PATCH {repo}/releases/{tag} (write access): publishing a draft creates its tag and is `release-published`. */
export async function updateRelease(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  tag: string,
  body: UpdateReleaseBody,
): Promise<ReleaseJson> {
  if (body.tag_name !== undefined) checkTag(body.tag_name);
  return command(deps, viewer, onRepo(ref, itemWrite(WRITE)), async (tx) => {
    const repo = tx.access.repo;
    const row = await findForWrite(tx, tag);
    const next = {
      tag_name: body.tag_name ?? row.tag_name,
      target_commitish: body.target_commitish ?? row.target_commitish,
      name: body.name ?? row.name,
      body: body.body ?? row.body,
      draft: body.draft === undefined ? row.draft : body.draft ? 1 : 0,
      prerelease: body.prerelease === undefined ? row.prerelease : body.prerelease ? 1 : 0,
      published_at: row.published_at,
    };
    if (row.draft === 0 && next.draft === 1) throw badRequest('A published release cannot become a draft again.');
    const publishing = row.draft === 1 && next.draft === 0;
    if (publishing) next.published_at = nowIso();
    if (next.tag_name !== row.tag_name) {
      const taken = await tx.db
        .selectFrom('releases')
        .select('uuid')
        .where('repo_uuid', '=', repo.uuid)
        .where('tag_name', '=', next.tag_name)
        .executeTakeFirst();
      if (taken) throw conflict('already_exists', `A release of the tag "${next.tag_name}" exists.`);
    }
    await tx.db.updateTable('releases').set(next).where('uuid', '=', row.uuid).execute();
    const names = await namesOf(tx.db, repo.uuid);
    const updated = { ...row, ...next };
    if (next.draft === 0) {
      if (publishing || next.tag_name !== row.tag_name)
        await ensureTag(deps, tx, viewer, repo.uuid, next.tag_name, next.target_commitish);
      await emitRelease(
        tx,
        viewer,
        { ...names, uuid: repo.uuid, owner_uuid: repo.owner_uuid },
        publishing ? 'release-published' : 'release-updated',
        updated,
      );
    }
    return (await toJson(tx.db, deps.config.publicUrl, names, [updated]))[0]!;
  });
}

/** DELETE {repo}/releases/{tag} (write access): the release and its assets go, the tag stays. */
export async function deleteRelease(deps: Deps, viewer: Viewer, ref: RepoRef, tag: string): Promise<void> {
  const gone = await command(deps, viewer, onRepo(ref, itemWrite(WRITE)), async (tx) => {
    const repo = tx.access.repo;
    const row = await findForWrite(tx, tag);
    const assets = await tx.db
      .selectFrom('release_assets')
      .select(['sha256', 'size'])
      .where('release_uuid', '=', row.uuid)
      .execute();
    await tx.db.deleteFrom('release_assets').where('release_uuid', '=', row.uuid).execute();
    await tx.db.deleteFrom('releases').where('uuid', '=', row.uuid).execute();
    const total = assets.reduce((n, a) => n + Number(a.size), 0);
    if (total > 0) await subtractUsage(tx.db, repo.uuid, total);
    if (row.draft === 0) {
      const names = await namesOf(tx.db, repo.uuid);
      await emitRelease(tx, viewer, { ...names, uuid: repo.uuid, owner_uuid: repo.owner_uuid }, 'release-deleted', row);
    }
    return assets.map((a) => ({ sha256: a.sha256 }));
  });
  await releaseBlobs(deps, gone);
}

async function subtractUsage(db: Kysely<DB>, repoUuid: string, bytes: number): Promise<void> {
  await db
    .updateTable('repos')
    .set((eb) => ({ disk_usage_bytes: eb('disk_usage_bytes', '-', bytes) }))
    .where('uuid', '=', repoUuid)
    .execute();
}

// ---------------------------------------------------------------- assets

/** A file name: 1-255 characters, no slash, backslash, control or bidirectional control character. */
const validAssetName = (name: string): boolean =>
  name.length >= 1 &&
  name.length <= 255 &&
  name !== '.' &&
  name !== '..' &&
  ![...name].some((ch) => {
    const c = ch.codePointAt(0)!;
    return ch === '/' || ch === '\\' || c < 0x20 || c === 0x7f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
  });

/**
 * POST {repo}/releases/{tag}/assets?name= (write access): the raw body streamed to the blob
 * store under the quota left (413 quota_exceeded beyond, nothing kept), then the row written and
 * the quota taken in one command (409 when the release already has an asset of that name).
 */
export async function uploadAsset(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  tag: string,
  name: string,
  contentType: string,
  body: Readable,
): Promise<AssetJson> {
  if (!validAssetName(name)) throw badRequest('name must be a file name (no slashes or control characters).');
  const access = await requireRepo(deps.db, viewer, ref, WRITE);
  const release = await deps.db
    .selectFrom('releases')
    .select('uuid')
    .where('repo_uuid', '=', access.repo.uuid)
    .where('tag_name', '=', tag)
    .executeTakeFirst();
  if (!release) throw notFound('Release');
  const free = Math.max(0, Number(access.repo.max_disk_bytes) - Number(access.repo.disk_usage_bytes));
  let hold = '';
  let stored: { sha256: string; size: number };
  try {
    stored = await deps.blobs.put(body, {
      maxBytes: free,
      beforePublish: async (sha256) => {
        hold = await holdBlob(deps, sha256);
      },
    });
  } catch (err) {
    if (err instanceof BlobTooLargeError)
      throw new AppError(413, 'quota_exceeded', `The asset is larger than the ${free} bytes the repo quota leaves.`);
    throw err;
  }
  try {
    return await command(deps, viewer, onRepo(ref, itemWrite(WRITE)), async (tx) => {
      const repo = tx.access.repo;
      const rel = await findForWrite(tx, tag);
      const taken = await tx.db
        .updateTable('repos')
        .set((eb) => ({ disk_usage_bytes: eb('disk_usage_bytes', '+', stored.size) }))
        .where('uuid', '=', repo.uuid)
        .where((eb) => eb(eb('disk_usage_bytes', '+', stored.size), '<=', eb.ref('max_disk_bytes')))
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) === 0)
        throw new AppError(413, 'quota_exceeded', 'The asset is larger than the repo quota leaves.');
      const row = {
        uuid: randomUUID(),
        release_uuid: rel.uuid,
        repo_uuid: repo.uuid,
        name,
        size: stored.size,
        content_type: contentType,
        sha256: stored.sha256,
        download_count: 0,
        uploader_uuid: viewer.uuid,
        created_at: nowIso(),
      };
      try {
        await tx.db.insertInto('release_assets').values(row).execute();
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict('already_exists', `The release already has an asset named "${name}".`);
        throw err;
      }
      await tx.db.deleteFrom('blob_holds').where('id', '=', hold).execute();
      const names = await namesOf(tx.db, repo.uuid);
      if (rel.draft === 0)
        await emitRelease(tx, viewer, { ...names, uuid: repo.uuid, owner_uuid: repo.owner_uuid }, 'release-updated', rel);
      return {
        uuid: row.uuid,
        name,
        size: row.size,
        content_type: contentType,
        download_count: 0,
        created_at: row.created_at,
        url: `${apiBase(deps.config.publicUrl, names)}/releases/${encodeURIComponent(tag)}/assets/${row.uuid}`,
      };
    });
  } catch (err) {
    await releaseBlobs(deps, [{ sha256: stored.sha256, hold }]);
    throw err;
  }
}

/** The asset to download (read access; a draft's for write access only); its count goes up by one. */
export async function openAsset(
  deps: Deps,
  viewer: Viewer,
  at: RepoAt,
  tag: string,
  uuid: string,
): Promise<{ name: string; size: number; content_type: string; stream: Readable }> {
  const { repo, level } = await repoContextOf(deps.database, viewer, at);
  const row = await deps.db
    .selectFrom('release_assets as a')
    .innerJoin('releases as r', 'r.uuid', 'a.release_uuid')
    .select(['a.uuid', 'a.name', 'a.size', 'a.content_type', 'a.sha256', 'r.draft'])
    .where('r.repo_uuid', '=', repo.uuid)
    .where('r.tag_name', '=', tag)
    .where('a.uuid', '=', uuid)
    .executeTakeFirst();
  if (!row || (row.draft === 1 && !levelAtLeast(level, 'write'))) throw notFound('Asset');
  await deps.db
    .updateTable('release_assets')
    .set((eb) => ({ download_count: eb('download_count', '+', 1) }))
    .where('uuid', '=', row.uuid)
    .execute();
  return { name: row.name, size: Number(row.size), content_type: row.content_type, stream: deps.blobs.get(row.sha256) };
}

/** DELETE {repo}/releases/{tag}/assets/{uuid} (write access). */
export async function deleteAsset(deps: Deps, viewer: Viewer, ref: RepoRef, tag: string, uuid: string): Promise<void> {
  const gone = await command(deps, viewer, onRepo(ref, itemWrite(WRITE)), async (tx) => {
    const repo = tx.access.repo;
    const rel = await releaseRows(tx.db).where('r.repo_uuid', '=', repo.uuid).where('r.tag_name', '=', tag).executeTakeFirst();
    const asset = rel
      ? await tx.db
          .selectFrom('release_assets')
          .selectAll()
          .where('release_uuid', '=', rel.uuid)
          .where('uuid', '=', uuid)
          .executeTakeFirst()
      : undefined;
    if (!rel || !asset) throw notFound('Asset');
    assertNotArchived(tx.access);
    await tx.db.deleteFrom('release_assets').where('uuid', '=', uuid).execute();
    await subtractUsage(tx.db, repo.uuid, Number(asset.size));
    if (rel.draft === 0) {
      const names = await namesOf(tx.db, repo.uuid);
      await emitRelease(tx, viewer, { ...names, uuid: repo.uuid, owner_uuid: repo.owner_uuid }, 'release-updated', rel);
    }
    return asset.sha256;
  });
  await releaseBlobs(deps, [{ sha256: gone }]);
}
