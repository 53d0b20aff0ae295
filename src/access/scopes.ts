/**
 * Who may read an event scope (docs/behaviour.md "Events and scopes"): one reader per scope kind, registered explicitly.
 * `createDeps` builds the registry from this table and refuses to start when a kind has none.
 */
import type { ScopeKind, ScopeReader } from '../events/scopes.ts';
import type { Deps } from '../deps.ts';
import type { Viewer } from '../viewer.ts';
import { type Permission, hasAccess } from './check.ts';
import { timerReadable } from './timers.ts';

/** A scope kind read through `checkAccess` (check.ts): one statement per scope. */
const through =
  (permission: Permission): ScopeReader =>
  (deps: Deps, viewer: Viewer, id: string) =>
    hasAccess(deps.db, viewer, permission, id);

/** Every scope kind's reader; the `Record` type makes a missing kind a compile error too. */
export const SCOPE_READERS: Record<ScopeKind, ScopeReader> = {
  user: through('user.read'),
  team: through('team.read'),
  repo: through('repo.read'),
  pull: through('pull.read'),
  review: through('review.read'),
  thread: through('thread.read'),
  reply: through('reply.read'),
  timer: (deps, viewer, id) => timerReadable(deps.db, viewer, id),
};
