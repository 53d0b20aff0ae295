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

/**
 * Scopes a live stream can follow (README "Live event stream"): every event scope kind, and
 * `actor:UUID`, the events whose actor is that user, in whatever scope they were recorded. An
 * actor scope is no event scope (no event carries it, GET /events answers 400 for it); only that
 * user may follow it, and each event still passes the caller's event viewer at delivery.
 */
export const ACTOR_SCOPE = 'actor';
const STREAM_SCOPE_RE = new RegExp(
  `^(${[...SCOPE_KINDS, ACTOR_SCOPE].join('|')}):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$`,
);
/** How many scopes one stream may follow (`scope=A,B,…`). */
export const MAX_STREAM_SCOPES = 8;

export function parseStreamScope(scope: string): { kind: ScopeKind | typeof ACTOR_SCOPE; id: string } {
  const match = STREAM_SCOPE_RE.exec(scope);
  if (!match) throw badRequest(`scope must look like KIND:UUID with KIND one of ${[...SCOPE_KINDS, ACTOR_SCOPE].join(', ')}.`);
  return { kind: match[1] as ScopeKind | typeof ACTOR_SCOPE, id: match[2]! };
}

/** A stream's `scope` parameter: one scope, or several separated by commas (each once, in the order given). */
export function parseStreamScopes(list: string): string[] {
  const scopes = [...new Set(list.split(','))];
  if (scopes.length > MAX_STREAM_SCOPES)
    throw badRequest(`scope names at most ${MAX_STREAM_SCOPES} scopes, separated by commas.`);
  for (const scope of scopes) parseStreamScope(scope);
  return scopes;
}

/** Whether a viewer may follow a stream scope: an actor scope is its user's alone (staff included). */
export async function canReadStreamScope(deps: Deps, viewer: Viewer, scope: string): Promise<boolean> {
  const { kind, id } = parseStreamScope(scope);
  if (kind === ACTOR_SCOPE) return id === viewer.uuid;
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
