import { badRequest } from './errors.ts';

/** Name rules shared by usernames, team slugs and repo slugs (docs/behaviour.md "Conventions"). */

export const RESERVED_NAMES = new Set([
  'admin',
  'administrator',
  'api',
  'staff',
  'new',
  'settings',
  'login',
  'logout',
  'signup',
  'signin',
  'me',
  'self',
  'user',
  'users',
  'team',
  'teams',
  'repo',
  'repos',
  'root',
  'system',
  'support',
  'help',
  'about',
  'explore',
  'search',
  'docs',
  'git',
  'assets',
  'static',
  'public',
  'events',
  'openapi',
  'healthz',
  'readyz',
  'null',
  'undefined',
  'weft',
  'api-tokens',
  'site-settings',
  'rate-limits',
]);

const USERNAME_RE = /^[a-z0-9][a-z0-9_-]{0,38}$/;
const REPO_SLUG_RE = /^[a-z0-9][a-z0-9_-]{0,99}$/;

export type NameKind = 'username' | 'team slug' | 'repo slug';

export function nameRuleError(kind: NameKind, value: string): string | null {
  const re = kind === 'repo slug' ? REPO_SLUG_RE : USERNAME_RE;
  const max = kind === 'repo slug' ? 100 : 39;
  if (!re.test(value)) {
    return `The ${kind} must be 1-${max} characters of a-z, 0-9, "-" and "_", starting with a letter or digit.`;
  }
  return null;
}

/** Lower-cases and checks a name; throws 400 when it breaks the rules. */
export function normalizeName(kind: NameKind, raw: string): string {
  const value = raw.trim().toLowerCase();
  const problem = nameRuleError(kind, value);
  if (problem) throw badRequest(problem);
  return value;
}

export const isReserved = (kind: NameKind, name: string): boolean => kind !== 'repo slug' && RESERVED_NAMES.has(name);

/**
 * A similar name that is free right now: `name-2`, `name-3`, … trimmed to the length limit.
 * `isTaken` answers for each candidate.
 */
export async function suggestName(
  kind: NameKind,
  base: string,
  isTaken: (candidate: string) => Promise<boolean>,
): Promise<string | null> {
  const max = kind === 'repo slug' ? 100 : 39;
  for (let n = 2; n < 1000; n++) {
    const suffix = `-${n}`;
    const candidate = base.slice(0, max - suffix.length) + suffix;
    if (nameRuleError(kind, candidate) || isReserved(kind, candidate)) continue;
    if (!(await isTaken(candidate))) return candidate;
  }
  return null;
}
