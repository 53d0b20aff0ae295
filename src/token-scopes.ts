/**
 * The scopes an API token may carry (README "Scoped tokens"). A token without scopes (null) has
 * every scope, as tokens had before scopes existed; session cookies of the web interface too.
 * `write:X` implies `read:X`. Which scope each route needs is in src/http/route-scopes.ts.
 */
export const TOKEN_SCOPES = [
  'read:user',
  'write:user',
  'read:repo',
  'write:repo',
  'read:team',
  'write:team',
  'read:events',
  'admin',
] as const;

export type TokenScope = (typeof TOKEN_SCOPES)[number];

export const isTokenScope = (value: string): value is TokenScope => (TOKEN_SCOPES as readonly string[]).includes(value);

/** Whether scopes `granted` (null: unrestricted) include `needed`, with `write:X` implying `read:X`. */
export function scopeGranted(granted: readonly string[] | null | undefined, needed: TokenScope): boolean {
  if (granted === null || granted === undefined) return true;
  if (granted.includes(needed)) return true;
  return needed.startsWith('read:') && granted.includes(`write:${needed.slice('read:'.length)}`);
}

/** Scopes in their canonical order, without duplicates. */
export function canonicalScopes(scopes: readonly string[]): TokenScope[] {
  return TOKEN_SCOPES.filter((s) => scopes.includes(s));
}

/** The `WWW-Authenticate` value of a 403 insufficient_scope (RFC 6750 §3.1). */
export const insufficientScopeChallenge = (needed: string): string => `Bearer error="insufficient_scope", scope="${needed}"`;
