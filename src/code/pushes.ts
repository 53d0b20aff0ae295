import { randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Deps } from '../deps.ts';
import { inTransaction } from '../core/transaction.ts';
import { nowIso } from '../time.ts';
import { addDiskUsage, type BareGitStore } from '../git/bare-store.ts';
import { tryWithRepoLock } from '../git/repo-lock.ts';
import { ZERO_SHA } from '../git/run.ts';
import { syncPullHeads } from '../pulls/heads.ts';
import { emitRefMoves, isForced, type RefMove } from '../pulls/pushes.ts';
import { referencesOfPush } from '../references/push.ts';
import { applyRefMoveCi, planRefMoveCi } from '../ci/ref-moves.ts';
import { schedulePushMirrors } from '../mirrors/source.ts';
import type { CommitInfo } from '../git/store.ts';

/**
 * Pushes are recorded from a marker file, so a crash at any point records each moved ref once
 * (README "Storage lifetimes and crash recovery"):
 * 1. under the repo's git write lock, before `receive-pack` starts, the server writes the marker
 *    `DATA_DIR/git-pushes/<repo uuid>.<push id>.push`: the pusher and the object store's size;
 * 2. the pre-receive hook, once it accepts the push and before any ref moves, appends the
 *    planned updates (`old new ref` lines) to it and syncs it;
 * 3. after `receive-pack`, still under the lock, one transaction emits `branch-pushed` for every
 *    planned update the ref really made (its tip is now `new`), adds the growth of the object
 *    store to `disk_usage_bytes`, and inserts the push id into `git_push_records`; then the
 *    marker and that row are removed and the client is answered.
 * A marker left by a killed process is recorded the same way by the next holder of the repo's
 * lock (the next push or merge of that repo) or at start-up; the push id row makes a marker
 * whose transaction had committed a no-op.
 */

export interface PushMarker {
  push_id: string;
  repo_uuid: string;
  pusher: { uuid: string; username: string };
  size_before: number;
}

const SUFFIX = '.push';

export function pushesDir(dataDir: string): string {
  return join(dataDir, 'git-pushes');
}

/** Writes (and syncs) the marker of a push about to start; returns its path, for the hook. */
export async function beginPush(
  dataDir: string,
  repoUuid: string,
  pusher: { uuid: string; username: string },
  sizeBefore: number,
): Promise<string> {
  const dir = pushesDir(dataDir);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const marker: PushMarker = { push_id: randomUUID(), repo_uuid: repoUuid, pusher, size_before: sizeBefore };
  const file = join(dir, `${repoUuid}.${marker.push_id}${SUFFIX}`);
  const fd = openSync(file, 'wx', 0o600);
  try {
    writeSync(fd, `${JSON.stringify(marker)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return file;
}

/** Records one marker (see above); the caller holds the repo's git write lock. */
export async function recordPush(deps: Deps, store: BareGitStore, file: string): Promise<void> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return; // already recorded and removed
  }
  const [head, ...lines] = text.split('\n');
  let marker: PushMarker;
  try {
    marker = JSON.parse(head!) as PushMarker;
  } catch {
    await rm(file, { force: true }); // torn before its first line was synced: the push never started
    return;
  }
  const planned = lines
    .map((l) => l.split(' '))
    .filter((p) => p.length === 3 && /^[0-9a-f]{40}$/.test(p[0]!) && /^[0-9a-f]{40}$/.test(p[1]!));
  const repoUuid = marker.repo_uuid;
  let moved: string[][] = [];
  let growth = 0;
  if (store.exists(repoUuid)) {
    const tips = new Map((await store.refs(repoUuid, 'refs/')).map((r) => [r.ref, r.sha]));
    moved = planned.filter(([before, after, ref]) => before !== after && (tips.get(ref!) ?? ZERO_SHA) === after);
    growth = (await store.size(repoUuid)) - marker.size_before;
  }
  const moves: RefMove[] = [];
  for (const [before, after, ref] of moved) {
    moves.push({ ref: ref!, before: before!, after: after!, forced: await isForced(deps, repoUuid, before!, after!) });
  }
  // README "Issue tracker": the new commits' messages, for their references and closing keywords
  // (at most 250 per branch; a new branch lists what its repo's default branch lacks)
  const commits = new Map<string, CommitInfo[]>();
  if (moved.length && store.exists(repoUuid)) {
    const repoRow = await deps.db.selectFrom('repos').select('default_branch').where('uuid', '=', repoUuid).executeTakeFirst();
    const defaultTip = repoRow ? await store.branchSha(repoUuid, repoRow.default_branch) : null;
    for (const [before, after, ref] of moved) {
      if (after === ZERO_SHA || !ref!.startsWith('refs/heads/')) continue;
      // a new branch: what the default branch lacks (a first push of the default branch itself: nothing)
      if (before === ZERO_SHA && defaultTip === after) continue;
      const base: string | null = before !== ZERO_SHA ? before! : defaultTip;
      const list = await store.commitsBetween(repoUuid, base, after!).catch(() => [] as CommitInfo[]);
      commits.set(ref!, list.slice(-250));
    }
  }
  // CI (docs/ci.md): the workflows of each pushed commit, read before the transaction that writes the runs
  const ci = await planRefMoveCi(deps, repoUuid, moves, marker.pusher);
  const pulls = await inTransaction(deps, async (tx) => {
    const done = await tx.db
      .selectFrom('git_push_records')
      .select('push_id')
      .where('push_id', '=', marker.push_id)
      .executeTakeFirst();
    if (done) return [];
    const repo = await tx.db.selectFrom('repos').select('uuid').where('uuid', '=', repoUuid).executeTakeFirst();
    if (!repo) return [];
    await tx.db
      .insertInto('git_push_records')
      .values({ push_id: marker.push_id, repo_uuid: repoUuid, created_at: nowIso() })
      .execute();
    await addDiskUsage(tx, repoUuid, growth);
    if (commits.size) await referencesOfPush(tx, repoUuid, marker.pusher, commits);
    // branch-pushed for each moved ref, pull-updated for the open pulls whose head moved
    const heads = await emitRefMoves(deps, tx, repoUuid, moves, marker.pusher);
    await applyRefMoveCi(deps, tx, repoUuid, ci);
    // push mirrors follow (docs/bring-in.md), through the job queue
    if (moves.length) await schedulePushMirrors(deps, tx.db, repoUuid);
    return heads;
  });
  await rm(file, { force: true });
  await deps.db.deleteFrom('git_push_records').where('push_id', '=', marker.push_id).execute();
  // their kept heads follow, before `git push` returns (`git fetch origin pull/N/head` sees the new head)
  await syncPullHeads(deps, pulls);
}

/** The markers of one repo (every repo when `repoUuid` is omitted) left in the directory. */
async function markers(dataDir: string, repoUuid?: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(pushesDir(dataDir));
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith(SUFFIX) && (repoUuid === undefined || n.startsWith(`${repoUuid}.`)))
    .sort()
    .map((n) => join(pushesDir(dataDir), n));
}

/** Records what crashed pushes of this repo left; the caller holds the repo's git write lock. */
export async function recordLeftoverPushes(deps: Deps, store: BareGitStore, repoUuid: string): Promise<void> {
  for (const file of await markers(deps.config.dataDir, repoUuid)) await recordPush(deps, store, file);
}

/**
 * At start-up: records every marker a killed process left. A repo whose lock another instance
 * holds is skipped (its push records the leftovers under that lock). Returns the markers seen.
 */
export async function recoverPushes(deps: Deps, store: BareGitStore): Promise<number> {
  const files = await markers(deps.config.dataDir);
  const repos = new Set(files.map((f) => f.slice(pushesDir(deps.config.dataDir).length + 1, -SUFFIX.length).split('.')[0]!));
  for (const repoUuid of repos) {
    await tryWithRepoLock(deps.database, repoUuid, () => recordLeftoverPushes(deps, store, repoUuid));
  }
  return files.length;
}

/** Removes spooled push bodies older than `olderThanMs` (left by a killed process). */
export async function sweepPushSpool(dataDir: string, olderThanMs: number): Promise<void> {
  const dir = join(pushesDir(dataDir), 'tmp');
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  const cutoff = Date.now() - olderThanMs;
  for (const n of names) {
    const at = Number(n.split('-')[0]);
    if (Number.isFinite(at) && at < cutoff) await rm(join(dir, n), { force: true });
  }
}
