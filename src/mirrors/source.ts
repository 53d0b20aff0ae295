/**
 * What other domains need of imports and mirrors, kept apart from the git work (sync.ts) so that
 * creating a repo or recording a push does not depend on it: the import's checks and start, an
 * imported repo's JSON fields, why a push is refused, and the push mirrors a push queues.
 */
import type { Kysely } from 'kysely';
import type { TxContext } from '../core/command.ts';
import type { DB } from '../db/types.ts';
import type { Deps } from '../deps.ts';
import { badRequest } from '../errors.ts';
import { nowIso } from '../time.ts';
import type { Viewer } from '../viewer.ts';
import { sealCredentials } from './credentials.ts';
import { displayUrl, parseRemote, type Remote } from './remote.ts';

export const MIN_INTERVAL_SECONDS = 600;
export const DEFAULT_INTERVAL_SECONDS = 28_800;
export const MAX_INTERVAL_SECONDS = 31_536_000;

export interface ImportInput {
  url: string;
  username?: string | null;
  password?: string | null;
  mirror?: boolean;
  interval_seconds?: number;
}

export interface CheckedImport {
  remote: Remote;
  mirror: boolean;
  interval: number;
}

/** 400 for a URL that is not http(s), ssh or git, or an interval under 600 seconds. */
export function checkImport(input: ImportInput): CheckedImport {
  const remote = parseRemote(input.url, input.username, input.password);
  const interval = input.interval_seconds ?? DEFAULT_INTERVAL_SECONDS;
  if (!Number.isInteger(interval) || interval < MIN_INTERVAL_SECONDS)
    throw badRequest(`interval_seconds must be a whole number of seconds, at least ${MIN_INTERVAL_SECONDS}.`);
  return { remote, mirror: input.mirror === true, interval };
}

/** In the repo-creating transaction: records the source and queues the import job. */
export async function startImport(
  deps: Deps,
  tx: TxContext,
  repoUuid: string,
  source: CheckedImport,
  viewer: Viewer,
): Promise<void> {
  const now = nowIso();
  await tx.db
    .insertInto('repo_imports')
    .values({
      repo_uuid: repoUuid,
      url: source.remote.url,
      credentials: sealCredentials(deps, source.remote.credentials),
      status: 'importing',
      error: null,
      progress: null,
      mirror: source.mirror ? 1 : 0,
      interval_seconds: source.interval,
      last_sync_at: null,
      last_error: null,
      created_by_uuid: viewer.uuid,
      created_at: now,
      updated_at: now,
    })
    .execute();
  await deps.jobs.enqueue(tx.db, { kind: 'repo-import', payload: { repo_uuid: repoUuid }, dedupeKey: `repo-import:${repoUuid}` });
}

export interface SourceFields {
  import_status: 'importing' | 'done' | 'failed';
  import_error: string | null;
  import_progress: string | null;
  mirror: { url: string; interval_seconds: number; last_sync_at: string | null; last_error: string | null } | null;
}

/** The fields an imported repo adds to its JSON (never its credentials). */
export async function sourceFields(db: Kysely<DB>, repoUuid: string): Promise<SourceFields | Record<string, never>> {
  const row = await db.selectFrom('repo_imports').selectAll().where('repo_uuid', '=', repoUuid).executeTakeFirst();
  if (!row) return {};
  return {
    import_status: row.status as SourceFields['import_status'],
    import_error: row.error,
    import_progress: row.progress,
    mirror:
      row.mirror === 1
        ? {
            url: displayUrl(row.url),
            interval_seconds: row.interval_seconds,
            last_sync_at: row.last_sync_at,
            last_error: row.last_error,
          }
        : null,
  };
}

export interface SyncRecord {
  trigger: string;
  started_at: string;
  finished_at: string | null;
  error: string | null;
  refs_moved: number | null;
}

/** A repo's newest syncs, newest first (the import page's history; the caller checked read access). */
export async function recentSyncs(db: Kysely<DB>, repoUuid: string, limit = 10): Promise<SyncRecord[]> {
  return db
    .selectFrom('mirror_syncs')
    .select(['trigger', 'started_at', 'finished_at', 'error', 'refs_moved'])
    .where('repo_uuid', '=', repoUuid)
    .orderBy('started_at', 'desc')
    .limit(limit)
    .execute();
}

/**
 * Why a push into this repo is refused (the pre-receive hook says it as `remote:` lines), or
 * null: a pull mirror follows its source only; an import in progress takes no pushes.
 */
export async function pushRefusal(db: Kysely<DB>, repoUuid: string): Promise<string | null> {
  const row = await db
    .selectFrom('repo_imports')
    .select(['url', 'mirror', 'status'])
    .where('repo_uuid', '=', repoUuid)
    .executeTakeFirst();
  if (!row) return null;
  if (row.mirror === 1) return `this repo is a mirror of ${displayUrl(row.url)}: pushes are refused`;
  if (row.status === 'importing') return 'this repo is being imported: push once the import is done';
  return null;
}

export const enqueuePushMirror = (deps: Deps, db: Kysely<DB>, uuid: string) =>
  deps.jobs.enqueue(db, { kind: 'push-mirror', payload: { uuid }, dedupeKey: `push-mirror:${uuid}` });

/** After a push is recorded (in its transaction): every push mirror with `sync_on_push` gets a job. */
export async function schedulePushMirrors(deps: Deps, db: Kysely<DB>, repoUuid: string): Promise<void> {
  const rows = await db
    .selectFrom('push_mirrors')
    .select('uuid')
    .where('repo_uuid', '=', repoUuid)
    .where('sync_on_push', '=', 1)
    .execute();
  for (const r of rows) await enqueuePushMirror(deps, db, r.uuid);
}
