/**
 * The subscription routes' rules (docs/notifications.md "Subscriptions"): the caller's own
 * level on a repo they can read, and their explicit subscription to a thread or pull of it. A
 * write is the caller's own setting: read access suffices, an archived repo included.
 */
import { pullContextOf, repoContextOf } from '../access/index.ts';
import { command } from '../core/command.ts';
import { onPull, onRepo } from '../core/targets.ts';
import type { Deps } from '../deps.ts';
import { findThread } from '../threads/service.ts';
import type { RepoAt, RepoRef, Viewer } from '../viewer.ts';
import {
  type WatchLevel,
  repoSubscription,
  setRepoSubscription,
  setSubjectSubscription,
  subjectSubscription,
} from './service.ts';
import { catchUp } from './watch.ts';

const READ = { level: 'read' } as const;

export async function getRepoWatch(deps: Deps, viewer: Viewer, at: RepoAt): Promise<{ level: WatchLevel }> {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  return repoSubscription(deps.db, viewer, repo.uuid);
}

export async function putRepoWatch(deps: Deps, viewer: Viewer, ref: RepoRef, level: WatchLevel | null) {
  // a watcher's inbox takes in what it has not yet read of the repos it watches (watch.ts) before it stops
  if (level !== 'watching') await catchUp(deps, viewer.uuid);
  return command(deps, viewer, onRepo(ref, READ), (tx) =>
    setRepoSubscription(tx.db, viewer, tx.access.repo.uuid, level, deps.clock.now().toISOString()),
  );
}

export async function getThreadSubscription(deps: Deps, viewer: Viewer, at: RepoAt, number: number) {
  const { repo } = await repoContextOf(deps.database, viewer, at);
  const thread = await findThread(deps.db, repo.uuid, number);
  return subjectSubscription(deps.db, viewer, { uuid: thread.uuid, repo_uuid: repo.uuid });
}

export async function putThreadSubscription(deps: Deps, viewer: Viewer, ref: RepoRef, number: number, on: boolean | null) {
  const thread = await command(deps, viewer, onRepo(ref, READ), async (tx) => {
    const row = await findThread(tx.db, tx.access.repo.uuid, number);
    await setSubjectSubscription(tx.db, viewer, row.uuid, on, deps.clock.now().toISOString());
    return row;
  });
  return subjectSubscription(deps.db, viewer, { uuid: thread.uuid, repo_uuid: thread.repo_uuid });
}

export async function getPullSubscription(deps: Deps, viewer: Viewer, at: RepoAt, number: number) {
  const { pull } = await pullContextOf(deps.database, viewer, at, number);
  return subjectSubscription(deps.db, viewer, { uuid: pull.uuid, repo_uuid: pull.repo_uuid });
}

export async function putPullSubscription(deps: Deps, viewer: Viewer, ref: RepoRef, number: number, on: boolean | null) {
  const pull = await command(deps, viewer, onPull(ref, number, READ), async (tx) => {
    await setSubjectSubscription(tx.db, viewer, tx.access.pull.uuid, on, deps.clock.now().toISOString());
    return tx.access.pull;
  });
  return subjectSubscription(deps.db, viewer, { uuid: pull.uuid, repo_uuid: pull.repo_uuid });
}
