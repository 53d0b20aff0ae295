/**
 * Imports, pull mirrors and push mirrors (docs/bring-in.md): what the API and pages ask for. The
 * git work is in sync.ts, run by jobs registered here (`registerMirrors`).
 */
import { randomUUID } from 'node:crypto';
import { assertNotArchived, itemWrite, repoContextOf } from '../access/index.ts';
import { command } from '../core/command.ts';
import { onRepo } from '../core/targets.ts';
import type { Deps } from '../deps.ts';
import { badRequest, notFound } from '../errors.ts';
import { nowIso } from '../time.ts';
import type { RepoAt, RepoRef, Viewer } from '../viewer.ts';
import { openCredentials, sealCredentials } from './credentials.ts';
import { displayUrl, parseRemote } from './remote.ts';
import { MAX_INTERVAL_SECONDS, MIN_INTERVAL_SECONDS, enqueuePushMirror, type SourceFields, sourceFields } from './source.ts';
import { fetchSource, pushToMirror } from './sync.ts';

/** GET {repo}/import (read access): the import's status and progress; 404 for a repo not imported. */
export async function getImport(deps: Deps, viewer: Viewer, at: RepoAt): Promise<SourceFields & { url: string }> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const row = await deps.db.selectFrom('repo_imports').select('url').where('repo_uuid', '=', repo.uuid).executeTakeFirst();
  if (!row) throw notFound('Import');
  return { url: displayUrl(row.url), ...((await sourceFields(deps.db, repo.uuid)) as SourceFields) };
}

const WRITE = { level: 'write', write: true } as const;
const MAINTAIN = { level: 'maintain', write: true } as const;

/** POST {repo}/mirror/sync (write access): queues a sync now; 404 for a repo that is no pull mirror. */
export async function requestMirrorSync(deps: Deps, viewer: Viewer, ref: RepoRef): Promise<void> {
  await command(deps, viewer, onRepo(ref, itemWrite(WRITE)), async (tx) => {
    const row = await tx.db
      .selectFrom('repo_imports')
      .select(['mirror', 'status'])
      .where('repo_uuid', '=', tx.access.repo.uuid)
      .executeTakeFirst();
    if (!row || row.mirror !== 1) throw notFound('Mirror');
    if (row.status !== 'done') throw badRequest('The repo is still being imported, or its import failed.');
    await deps.jobs.enqueue(tx.db, {
      kind: 'mirror-sync',
      payload: { repo_uuid: tx.access.repo.uuid },
      dedupeKey: `mirror-sync:${tx.access.repo.uuid}`,
    });
  });
}

export interface MirrorUpdate {
  interval_seconds?: number;
  username?: string | null;
  password?: string | null;
}

/**
 * PATCH {repo}/mirror (maintain level): a pull mirror's interval and credentials. A field left out
 * stays as it is; `username` or `password` null clears it (credentials are sealed again, never
 * returned). A new interval moves the queued timed sync to the last sync (or now) plus it.
 * 404 for a repo that is no pull mirror, before 403 repo_archived.
 */
export async function updateMirror(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  body: MirrorUpdate,
): Promise<SourceFields & { url: string }> {
  const interval = body.interval_seconds;
  if (
    interval !== undefined &&
    (!Number.isInteger(interval) || interval < MIN_INTERVAL_SECONDS || interval > MAX_INTERVAL_SECONDS)
  )
    throw badRequest(
      `interval_seconds must be a whole number of seconds from ${MIN_INTERVAL_SECONDS} to ${MAX_INTERVAL_SECONDS}.`,
    );
  return command(deps, viewer, onRepo(ref, itemWrite(MAINTAIN)), async (tx) => {
    const repoUuid = tx.access.repo.uuid;
    const row = await tx.db.selectFrom('repo_imports').selectAll().where('repo_uuid', '=', repoUuid).executeTakeFirst();
    if (!row || row.mirror !== 1) throw notFound('Mirror');
    assertNotArchived(tx.access);
    const set: { interval_seconds?: number; credentials?: string | null; updated_at: string } = { updated_at: nowIso() };
    if (body.username !== undefined || body.password !== undefined) {
      const old = openCredentials(deps, row.credentials);
      const username = body.username === undefined ? old.username : body.username || null;
      const password = body.password === undefined ? old.password : body.password || null;
      if (password !== null && new URL(row.url).protocol === 'ssh:')
        throw badRequest('password: ssh URLs take no password (only http and https do).');
      set.credentials = sealCredentials(deps, { username, password });
    }
    if (interval !== undefined && interval !== row.interval_seconds) {
      set.interval_seconds = interval;
      // the queued timed sync (not one running now) moves to the new interval after the last sync
      const from = row.last_sync_at ? Date.parse(row.last_sync_at) : deps.clock.now().getTime();
      const due = new Date(Math.max(deps.clock.now().getTime(), from + interval * 1000)).toISOString();
      const now = deps.clock.now().toISOString();
      await tx.db
        .updateTable('jobs')
        .set({ run_at: due })
        .where('kind', '=', 'mirror-sync')
        .where('dedupe_key', 'like', `mirror-tick:${repoUuid}:%`)
        .where('failed_at', 'is', null)
        .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
        .execute();
    }
    await tx.db.updateTable('repo_imports').set(set).where('repo_uuid', '=', repoUuid).execute();
    return { url: displayUrl(row.url), ...((await sourceFields(tx.db, repoUuid)) as SourceFields) };
  });
}

// ---- push mirrors ----

export interface PushMirrorJson {
  uuid: string;
  url: string;
  sync_on_push: boolean;
  last_sync_at: string | null;
  last_error: string | null;
  created_at: string;
}

type PushMirrorRow = {
  uuid: string;
  url: string;
  sync_on_push: number;
  last_sync_at: string | null;
  last_error: string | null;
  created_at: string;
};

const pushMirrorJson = (r: PushMirrorRow): PushMirrorJson => ({
  uuid: r.uuid,
  url: displayUrl(r.url),
  sync_on_push: r.sync_on_push === 1,
  last_sync_at: r.last_sync_at,
  last_error: r.last_error,
  created_at: r.created_at,
});

const PUSH_MIRROR_COLUMNS = ['uuid', 'url', 'sync_on_push', 'last_sync_at', 'last_error', 'created_at'] as const;

/** GET {repo}/push-mirrors (maintain level). */
export async function listPushMirrors(deps: Deps, viewer: Viewer, ref: RepoRef): Promise<PushMirrorJson[]> {
  return command(deps, viewer, onRepo(ref, { level: 'maintain', write: false }), async (tx) => {
    const rows = await tx.db
      .selectFrom('push_mirrors')
      .select([...PUSH_MIRROR_COLUMNS])
      .where('repo_uuid', '=', tx.access.repo.uuid)
      .orderBy('created_at')
      .orderBy('uuid')
      .execute();
    return rows.map(pushMirrorJson);
  });
}

export const MAX_PUSH_MIRRORS = 10;

/** POST {repo}/push-mirrors (maintain level): the first sync is queued at once. */
export async function createPushMirror(
  deps: Deps,
  viewer: Viewer,
  ref: RepoRef,
  body: { url: string; username?: string | null; password?: string | null; sync_on_push?: boolean },
): Promise<PushMirrorJson> {
  const remote = parseRemote(body.url, body.username, body.password);
  return command(deps, viewer, onRepo(ref, MAINTAIN), async (tx) => {
    const repoUuid = tx.access.repo.uuid;
    const count = await tx.db
      .selectFrom('push_mirrors')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('repo_uuid', '=', repoUuid)
      .executeTakeFirst();
    if (Number(count?.n ?? 0) >= MAX_PUSH_MIRRORS) throw badRequest(`A repo has at most ${MAX_PUSH_MIRRORS} push mirrors.`);
    const row = {
      uuid: randomUUID(),
      repo_uuid: repoUuid,
      url: remote.url,
      credentials: sealCredentials(deps, remote.credentials),
      sync_on_push: body.sync_on_push === false ? 0 : 1,
      last_sync_at: null,
      last_error: null,
      created_at: nowIso(),
    };
    await tx.db.insertInto('push_mirrors').values(row).execute();
    await enqueuePushMirror(deps, tx.db, row.uuid);
    return pushMirrorJson(row);
  });
}

/** DELETE {repo}/push-mirrors/{uuid} (maintain level). */
export async function deletePushMirror(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<void> {
  await command(deps, viewer, onRepo(ref, itemWrite(MAINTAIN)), async (tx) => {
    const gone = await tx.db
      .deleteFrom('push_mirrors')
      .where('repo_uuid', '=', tx.access.repo.uuid)
      .where('uuid', '=', uuid)
      .executeTakeFirst();
    if (Number(gone.numDeletedRows) === 0) throw notFound('Push mirror');
  });
}

/** POST {repo}/push-mirrors/{uuid}/sync (maintain level): queues a push now. */
export async function syncPushMirror(deps: Deps, viewer: Viewer, ref: RepoRef, uuid: string): Promise<void> {
  await command(deps, viewer, onRepo(ref, itemWrite(MAINTAIN)), async (tx) => {
    const row = await tx.db
      .selectFrom('push_mirrors')
      .select('uuid')
      .where('repo_uuid', '=', tx.access.repo.uuid)
      .where('uuid', '=', uuid)
      .executeTakeFirst();
    if (!row) throw notFound('Push mirror');
    await enqueuePushMirror(deps, tx.db, uuid);
  });
}

/**
 * Queues a pull mirror's next timed sync, `interval_seconds` from now. Its key names the tick that
 * queued it (`after` the due time of that tick; `first` after the import), so a tick that runs
 * twice (retried after a crash, or on two instances) queues one successor, and a tick that ran
 * early (a sync on demand does not count) still queues the next.
 */
async function scheduleNextTick(deps: Deps, repoUuid: string, after: number | null): Promise<void> {
  const row = await deps.db
    .selectFrom('repo_imports')
    .select(['mirror', 'interval_seconds'])
    .where('repo_uuid', '=', repoUuid)
    .executeTakeFirst();
  if (!row || row.mirror !== 1) return;
  const due = deps.clock.now().getTime() + row.interval_seconds * 1000;
  await deps.jobs.enqueue(deps.db, {
    kind: 'mirror-sync',
    payload: { repo_uuid: repoUuid, tick: true, due },
    runAt: new Date(due).toISOString(),
    dedupeKey: `mirror-tick:${repoUuid}:${after === null ? 'first' : `after-${after}`}`,
  });
}

/**
 * The jobs: the import, pull mirror syncs (on demand, and timed ones that queue the next), push
 * mirror pushes. Each holds its lease while git runs (git has its own timeout, which may be longer
 * than the queue's lease), so a long sync is never taken over by another instance while it runs.
 */
export function registerMirrors(deps: Deps): void {
  deps.jobs.register(
    'repo-import',
    async (payload) => {
      const uuid = String(payload.repo_uuid);
      const { error } = await fetchSource(deps, uuid, { kind: 'import' });
      if (error === null) await scheduleNextTick(deps, uuid, null);
    },
    { holdLease: true },
  );
  deps.jobs.register(
    'mirror-sync',
    async (payload) => {
      const uuid = String(payload.repo_uuid);
      const due = Number(payload.due) || 0;
      await fetchSource(
        deps,
        uuid,
        payload.tick === true ? { kind: 'timer', slot: new Date(due).toISOString() } : { kind: 'demand' },
      );
      if (payload.tick === true) await scheduleNextTick(deps, uuid, Number(payload.due) || 0);
    },
    { holdLease: true },
  );
  deps.jobs.register(
    'push-mirror',
    async (payload) => {
      await pushToMirror(deps, String(payload.uuid));
    },
    { holdLease: true },
  );
}
