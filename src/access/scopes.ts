/**
 * Who may read an event scope (docs/behaviour.md "Events and scopes"): one reader per scope kind, registered explicitly.
 * `createDeps` builds the registry from this table and refuses to start when a kind has none.
 */
import type { ScopeKind, ScopeReader } from '../events/scopes.ts';
import type { Deps } from '../deps.ts';
import type { Viewer } from '../viewer.ts';
import { teamRole } from './levels.ts';
import { repoUuidReadable } from './repos.ts';
import { timerReadable } from './timers.ts';

const repoReadable = (deps: Deps, viewer: Viewer, repoUuid: string): Promise<boolean> =>
  repoUuidReadable(deps.db, viewer, repoUuid);

const userScopeReadable: ScopeReader = async (deps, viewer, id) => {
  if (!viewer.isStaff && viewer.uuid !== id) return false;
  return (await deps.db.selectFrom('users').select('uuid').where('uuid', '=', id).executeTakeFirst()) !== undefined;
};

const teamScopeReadable: ScopeReader = async (deps, viewer, id) => {
  const team = await deps.db.selectFrom('teams').select('uuid').where('uuid', '=', id).executeTakeFirst();
  if (!team) return false;
  return viewer.isStaff || (await teamRole(deps.db, viewer, id)) !== null;
};

const pullScopeReadable: ScopeReader = async (deps, viewer, id) => {
  const pull = await deps.db.selectFrom('pulls').select('repo_uuid').where('uuid', '=', id).executeTakeFirst();
  return pull !== undefined && repoReadable(deps, viewer, pull.repo_uuid);
};

const reviewScopeReadable: ScopeReader = async (deps, viewer, id) => {
  const row = await deps.db
    .selectFrom('reviews as r')
    .innerJoin('pulls as p', 'p.uuid', 'r.pull_uuid')
    .select('p.repo_uuid')
    .where('r.uuid', '=', id)
    .executeTakeFirst();
  return row !== undefined && repoReadable(deps, viewer, row.repo_uuid);
};

const threadScopeReadable: ScopeReader = async (deps, viewer, id) => {
  const thread = await deps.db.selectFrom('threads').select('repo_uuid').where('uuid', '=', id).executeTakeFirst();
  return thread !== undefined && repoReadable(deps, viewer, thread.repo_uuid);
};

const replyScopeReadable: ScopeReader = async (deps, viewer, id) => {
  const row = await deps.db
    .selectFrom('replies as r')
    .innerJoin('threads as t', 't.uuid', 'r.thread_uuid')
    .select('t.repo_uuid')
    .where('r.uuid', '=', id)
    .executeTakeFirst();
  return row !== undefined && repoReadable(deps, viewer, row.repo_uuid);
};

/** Every scope kind's reader; the `Record` type makes a missing kind a compile error too. */
export const SCOPE_READERS: Record<ScopeKind, ScopeReader> = {
  user: userScopeReadable,
  team: teamScopeReadable,
  repo: (deps, viewer, id) => repoReadable(deps, viewer, id),
  pull: pullScopeReadable,
  review: reviewScopeReadable,
  thread: threadScopeReadable,
  reply: replyScopeReadable,
  timer: (deps, viewer, id) => timerReadable(deps.db, viewer, id),
};
