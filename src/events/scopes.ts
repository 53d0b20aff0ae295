import type { Deps } from '../deps.ts';
import { badRequest } from '../errors.ts';
import type { Viewer } from '../viewer.ts';

/** decisions §8: the scope kinds an event can carry. */
export const SCOPE_KINDS = ['user', 'team', 'repo', 'thread', 'reply', 'pull', 'review', 'timer'] as const;
export type ScopeKind = (typeof SCOPE_KINDS)[number];

const SCOPE_RE = new RegExp(`^(${SCOPE_KINDS.join('|')}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`);

export function parseScope(scope: string): { kind: ScopeKind; id: string } {
  const match = SCOPE_RE.exec(scope);
  if (!match) throw badRequest(`scope must look like KIND:UUID with KIND one of ${SCOPE_KINDS.join(', ')}.`);
  return { kind: match[1] as ScopeKind, id: match[2]! };
}

/** Answers whether a viewer may read what a scope names; false for unknown or invisible. */
export type ScopeReader = (deps: Deps, viewer: Viewer, id: string) => Promise<boolean>;

const readers = new Map<ScopeKind, ScopeReader>();

/** Each domain registers how its scope kind is authorised (see access.ts). */
export function registerScopeReader(kind: ScopeKind, reader: ScopeReader): void {
  readers.set(kind, reader);
}

export async function canReadScope(deps: Deps, viewer: Viewer, scope: string): Promise<boolean> {
  const { kind, id } = parseScope(scope);
  const reader = readers.get(kind);
  return reader ? reader(deps, viewer, id) : false;
}

/** A per-request memo: the same scope is checked once however many events carry it. */
export function scopeChecker(deps: Deps, viewer: Viewer): (scope: string) => Promise<boolean> {
  const memo = new Map<string, Promise<boolean>>();
  return (scope) => {
    let answer = memo.get(scope);
    if (!answer) {
      answer = canReadScope(deps, viewer, scope).catch(() => false);
      memo.set(scope, answer);
    }
    return answer;
  };
}
