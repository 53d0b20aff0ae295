import type { Deps, ScopeReader } from '../deps.ts';
import { badRequest } from '../errors.ts';
import type { Viewer } from '../viewer.ts';

/** docs/behaviour.md "Events and scopes": the scope kinds an event can carry. */
export const SCOPE_KINDS = ['user', 'team', 'repo', 'thread', 'reply', 'pull', 'review', 'timer'] as const;
export type ScopeKind = (typeof SCOPE_KINDS)[number];

const SCOPE_RE = new RegExp(`^(${SCOPE_KINDS.join('|')}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`);

export function parseScope(scope: string): { kind: ScopeKind; id: string } {
  const match = SCOPE_RE.exec(scope);
  if (!match) throw badRequest(`scope must look like KIND:UUID with KIND one of ${SCOPE_KINDS.join(', ')}.`);
  return { kind: match[1] as ScopeKind, id: match[2]! };
}

/** Answers whether a viewer may read what a scope names; false for unknown or invisible. */
export type { ScopeReader } from '../deps.ts';

/**
 * The readers of every scope kind, given explicitly (see access/scopes.ts). Built once per
 * process by `createDeps`; a kind without a reader stops start-up instead of answering 404 at
 * request time.
 */
export class ScopeRegistry {
  private readonly readers: Map<ScopeKind, ScopeReader>;

  constructor(readers: Partial<Record<string, ScopeReader>>) {
    const unknown = Object.keys(readers).filter((k) => !(SCOPE_KINDS as readonly string[]).includes(k));
    if (unknown.length) throw new Error(`scope readers given for unknown scope kinds: ${unknown.join(', ')}`);
    const missing = SCOPE_KINDS.filter((k) => typeof readers[k] !== 'function');
    if (missing.length) throw new Error(`no scope reader for scope kinds: ${missing.join(', ')}`);
    this.readers = new Map(SCOPE_KINDS.map((k) => [k, readers[k]!]));
  }

  reader(kind: ScopeKind): ScopeReader {
    return this.readers.get(kind)!;
  }
}

export async function canReadScope(deps: Deps, viewer: Viewer, scope: string): Promise<boolean> {
  const { kind, id } = parseScope(scope);
  return deps.scopes.reader(kind)(deps, viewer, id);
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
