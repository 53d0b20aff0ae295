/** Which events a hook takes (README "Webhooks"): its kinds (or `*`) and its branch filter. */
import { badRequest } from '../errors.ts';
import { isEventKind } from '../events/kinds.ts';

/** Checks a hook's `events`: known kinds, or exactly `["*"]`; duplicates dropped. */
export function checkEvents(events: string[]): string[] {
  if (events.includes('*')) {
    if (events.length !== 1) throw badRequest('events: "*" stands alone (every kind).');
    return ['*'];
  }
  const unknown = events.filter((k) => !isEventKind(k));
  if (unknown.length) throw badRequest(`events: unknown event kind ${JSON.stringify(unknown[0])}.`);
  return [...new Set(events)];
}

/**
 * A branch glob as a regular expression: `**` any characters, `*` any but `/`, `?` one character
 * but `/`, `{a,b}` alternatives (not nested); everything else literal. A bad glob is 400.
 */
export function globToRegExp(glob: string): RegExp {
  let out = '';
  let inBraces = false;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') {
      if (glob[i + 1] === '*') {
        out += '.*';
        i++;
      } else out += '[^/]*';
    } else if (c === '?') out += '[^/]';
    else if (c === '{') {
      if (inBraces) throw badRequest('branch_filter: braces do not nest.');
      inBraces = true;
      out += '(?:';
    } else if (c === '}') {
      if (!inBraces) throw badRequest('branch_filter: a } without its {.');
      inBraces = false;
      out += ')';
    } else if (c === ',' && inBraces) out += '|';
    else out += c.replace(/[.+^$()|[\]\\]/g, '\\$&');
  }
  if (inBraces) throw badRequest('branch_filter: a { without its }.');
  return new RegExp(`^${out}$`);
}

/**
 * The branches an event concerns, or null when it concerns none (then no branch filter applies):
 * a push's branch, a pull event's target branch, a status event's branches.
 */
export function branchesOf(kind: string, payload: Record<string, unknown>): string[] | null {
  if (kind === 'branch-pushed') {
    const ref = payload.ref;
    return typeof ref === 'string' && ref.startsWith('refs/heads/') ? [ref.slice('refs/heads/'.length)] : [];
  }
  if (kind.startsWith('status')) {
    const branches = payload.branches;
    if (Array.isArray(branches)) return branches.filter((b): b is string => typeof b === 'string');
    return typeof payload.branch === 'string' ? [payload.branch] : [];
  }
  if (kind.startsWith('pull-') || kind.startsWith('review-')) {
    return typeof payload.target_branch === 'string' ? [payload.target_branch] : null;
  }
  return null;
}

export interface HookFilter {
  all: boolean;
  kinds: Set<string>;
  branch: RegExp | null;
}

export function hookFilter(events: string[], branchFilter: string | null): HookFilter {
  return { all: events.includes('*'), kinds: new Set(events), branch: branchFilter === null ? null : globToRegExp(branchFilter) };
}

export function matches(filter: HookFilter, kind: string, payload: Record<string, unknown>): boolean {
  if (!filter.all && !filter.kinds.has(kind)) return false;
  if (filter.branch === null) return true;
  const branches = branchesOf(kind, payload);
  return branches === null || branches.some((b) => filter.branch!.test(b));
}
