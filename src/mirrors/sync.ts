/**
 * The work of imports and mirrors, run by jobs (docs/bring-in.md): an import fetches every branch
 * and tag once; a pull mirror's sync fetches again so its refs equal the source's (deleted and
 * force-pushed ones too), with a `branch-pushed` event for each moved ref; a push mirror's sync
 * pushes every branch and tag out. Each runs under the repo's git write lock (pushes, merges and
 * syncs take turns, on every instance), so one instance at a time syncs a repo.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Deps } from '../deps.ts';
import { inTransaction } from '../core/transaction.ts';
import { addDiskUsage, BareGitStore } from '../git/bare-store.ts';
import { withRepoLock } from '../git/repo-lock.ts';
import { git, ZERO_SHA } from '../git/run.ts';
import { compileAllowList } from '../hooks/allow-list.ts';
import { emitRefMoves, isForced, type RefMove } from '../pulls/pushes.ts';
import { syncPullHeads } from '../pulls/heads.ts';
import { readSettings } from '../settings/service.ts';
import { nowIso } from '../time.ts';
import { fetchAll, pushMirror } from './fetch.ts';
import { openCredentials } from './credentials.ts';
import { type Remote, prepareRemote } from './remote.ts';

function storeOf(deps: Deps): BareGitStore {
  if (!(deps.git instanceof BareGitStore)) throw new Error('imports and mirrors need git storage');
  return deps.git;
}

async function allowList(deps: Deps) {
  const settings = await readSettings(deps.db);
  return compileAllowList(JSON.parse(settings.webhook_allowed_hosts) as string[]);
}

const refsOf = async (store: BareGitStore, uuid: string) =>
  new Map([...(await store.refs(uuid, 'refs/heads/')), ...(await store.refs(uuid, 'refs/tags/'))].map((r) => [r.ref, r.sha]));

/** Deletes every ref and object of a repo whose import failed: it is left empty. */
async function emptyRepo(store: BareGitStore, uuid: string): Promise<void> {
  const dir = store.pathOf(uuid);
  const refs = await store.refs(uuid, 'refs/');
  if (refs.length) await git(dir, ['update-ref', '--stdin'], { input: refs.map((r) => `delete ${r.ref}\n`).join('') });
  await rm(join(dir, 'packed-refs'), { force: true });
  const objects = join(dir, 'objects');
  for (const name of await readdir(objects).catch(() => [] as string[])) {
    if (name !== 'info') await rm(join(objects, name), { recursive: true, force: true });
  }
  await mkdir(join(objects, 'pack'), { recursive: true });
}

/** Puts a mirror's branches and tags back as they were before a sync that failed (over quota, cut short). */
async function restoreRefs(store: BareGitStore, uuid: string, before: Map<string, string>): Promise<void> {
  const now = await refsOf(store, uuid);
  const lines: string[] = [];
  for (const ref of now.keys()) if (!before.has(ref)) lines.push(`delete ${ref}\n`);
  for (const [ref, sha] of before) if (now.get(ref) !== sha) lines.push(`update ${ref} ${sha}\n`);
  if (lines.length) await git(store.pathOf(uuid), ['update-ref', '--stdin'], { input: lines.join('') });
}

export interface SyncOutcome {
  error: string | null;
}

/** Why a sync runs: the import, a timed one (`slot`: its due time), one asked for. */
export type SyncTrigger = { kind: 'import' } | { kind: 'timer'; slot: string } | { kind: 'demand' };

const INSTANCE = `${hostname()}:${process.pid}`;
const HISTORY_KEPT = 50;

/** Records that a sync begins (the repo's history keeps its newest 50); the row's uuid. */
async function historyBegins(deps: Deps, repoUuid: string, trigger: SyncTrigger): Promise<string> {
  const uuid = randomUUID();
  await deps.db
    .insertInto('mirror_syncs')
    .values({
      uuid,
      repo_uuid: repoUuid,
      trigger: trigger.kind,
      slot: trigger.kind === 'timer' ? trigger.slot : null,
      instance: INSTANCE,
      started_at: nowIso(),
      finished_at: null,
      error: null,
      refs_moved: null,
    })
    .execute();
  const oldest = await deps.db
    .selectFrom('mirror_syncs')
    .select('started_at')
    .where('repo_uuid', '=', repoUuid)
    .orderBy('started_at', 'desc')
    .offset(HISTORY_KEPT - 1)
    .limit(1)
    .executeTakeFirst();
  if (oldest)
    await deps.db
      .deleteFrom('mirror_syncs')
      .where('repo_uuid', '=', repoUuid)
      .where('started_at', '<', oldest.started_at)
      .execute();
  return uuid;
}

/**
 * Fetches the source into the repo under its lock and records what moved in one transaction
 * (disk usage, events, the import row, the sync's history row). An import (`trigger.kind`
 * `import`) that fails leaves the repo empty.
 */
export async function fetchSource(deps: Deps, repoUuid: string, trigger: SyncTrigger): Promise<SyncOutcome> {
  const fresh = trigger.kind === 'import';
  const store = storeOf(deps);
  return withRepoLock(deps.database, repoUuid, async () => {
    const source = await deps.db.selectFrom('repo_imports').selectAll().where('repo_uuid', '=', repoUuid).executeTakeFirst();
    const repo = await deps.db
      .selectFrom('repos')
      .select(['uuid', 'default_branch', 'max_disk_bytes', 'disk_usage_bytes'])
      .where('uuid', '=', repoUuid)
      .executeTakeFirst();
    if (!source || !repo || !store.exists(repoUuid)) return { error: null };
    if (fresh && source.status !== 'importing') return { error: source.error };
    if (!fresh && (source.mirror !== 1 || source.status !== 'done')) return { error: null };
    const history = await historyBegins(deps, repoUuid, trigger);
    const pusher = await deps.db
      .selectFrom('users')
      .select(['uuid', 'username'])
      .where('uuid', '=', source.created_by_uuid)
      .executeTakeFirst();
    const before = await refsOf(store, repoUuid);
    const sizeBefore = await store.size(repoUuid);
    const quotaLeft = Math.max(0, Number(repo.max_disk_bytes) - Number(repo.disk_usage_bytes));
    let lastProgress = 0;
    const onProgress = (line: string) => {
      const now = Date.now();
      if (!fresh || now - lastProgress < 1000) return;
      lastProgress = now;
      void deps.db
        .updateTable('repo_imports')
        .set({ progress: line.slice(0, 200) })
        .where('repo_uuid', '=', repoUuid)
        .execute()
        .catch(() => undefined);
    };
    let error: string | null = null;
    try {
      const remote: Remote = { url: source.url, credentials: openCredentials(deps, source.credentials) };
      const call = await prepareRemote(remote, await allowList(deps), deps.config.transferTimeoutMs);
      await fetchAll(store.pathOf(repoUuid), call, {
        quotaLeft,
        sizeBefore,
        timeoutMs: deps.config.transferTimeoutMs,
        onProgress,
      });
    } catch (err) {
      const e = err as { code?: string; message?: string };
      error =
        e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN'
          ? `the host does not resolve (${e.code})`
          : String(e.message ?? err).slice(0, 1000);
    }
    if (error !== null && fresh) await emptyRepo(store, repoUuid);
    else if (error !== null) await restoreRefs(store, repoUuid, before);
    const after = await refsOf(store, repoUuid);
    const moves: RefMove[] = [];
    for (const ref of new Set([...before.keys(), ...after.keys()])) {
      const b = before.get(ref) ?? ZERO_SHA;
      const a = after.get(ref) ?? ZERO_SHA;
      if (a !== b) moves.push({ ref, before: b, after: a, forced: await isForced(deps, repoUuid, b, a) });
    }
    moves.sort((x, y) => (x.ref < y.ref ? -1 : 1));
    // an import whose source's default branch is not the repo's: the repo takes main, master or the first
    let defaultBranch: string | null = null;
    const branches = [...after.keys()].filter((r) => r.startsWith('refs/heads/')).map((r) => r.slice(11));
    if (branches.length && !branches.includes(repo.default_branch)) {
      defaultBranch = ['main', 'master'].find((b) => branches.includes(b)) ?? branches.sort()[0]!;
      await store.setHead(repoUuid, defaultBranch);
    }
    const growth = (await store.size(repoUuid)) - sizeBefore;
    const now = nowIso();
    const pulls = await inTransaction(deps, async (tx) => {
      await addDiskUsage(tx, repoUuid, growth);
      if (defaultBranch)
        await tx.db.updateTable('repos').set({ default_branch: defaultBranch }).where('uuid', '=', repoUuid).execute();
      await tx.db
        .updateTable('repo_imports')
        .set(
          fresh
            ? {
                status: error === null ? 'done' : 'failed',
                error,
                progress: null,
                last_sync_at: error === null ? now : null,
                updated_at: now,
              }
            : { last_error: error, ...(error === null ? { last_sync_at: now } : {}), updated_at: now },
        )
        .where('repo_uuid', '=', repoUuid)
        .execute();
      await tx.db
        .updateTable('mirror_syncs')
        .set({ finished_at: now, error, refs_moved: moves.length })
        .where('uuid', '=', history)
        .execute();
      if (!pusher || moves.length === 0) return [];
      return emitRefMoves(deps, tx, repoUuid, moves, pusher);
    });
    await syncPullHeads(deps, pulls);
    return { error };
  });
}

/** Pushes every branch and tag to one push mirror and records the outcome; throws on failure (the job retries). */
export async function pushToMirror(deps: Deps, mirrorUuid: string): Promise<void> {
  const store = storeOf(deps);
  const mirror = await deps.db.selectFrom('push_mirrors').selectAll().where('uuid', '=', mirrorUuid).executeTakeFirst();
  if (!mirror || !store.exists(mirror.repo_uuid)) return;
  let error: string | null = null;
  try {
    const call = await prepareRemote(
      { url: mirror.url, credentials: openCredentials(deps, mirror.credentials) },
      await allowList(deps),
      deps.config.transferTimeoutMs,
    );
    // under the lock: the refs pushed are one consistent state of the repo
    await withRepoLock(deps.database, mirror.repo_uuid, () =>
      pushMirror(store.pathOf(mirror.repo_uuid), call, deps.config.transferTimeoutMs),
    );
  } catch (err) {
    error = String((err as Error)?.message ?? err).slice(0, 1000);
  }
  await deps.db
    .updateTable('push_mirrors')
    .set(error === null ? { last_sync_at: nowIso(), last_error: null } : { last_error: error })
    .where('uuid', '=', mirrorUuid)
    .execute();
  if (error !== null) throw new Error(`push mirror ${mirrorUuid}: ${error}`);
}
