import type { Deps } from '../deps.ts';

/** The cookie that binds the sign-in form to the browser that loaded it (login CSRF). */
export const LOGIN_COOKIE = 'weft_login';

/** Where to go after signing in: a path on this site only (never `//host` or a scheme). */
export function localPath(next: unknown): string {
  return typeof next === 'string' && /^\/(?![/\\])[^\s]*$/.test(next) && next.length <= 2000 ? next : '/';
}

export function cookie(deps: Deps, name: string, value: string, maxAgeSeconds: number): string {
  const secure = deps.config.publicUrl.startsWith('https:') ? '; Secure' : '';
  return `${name}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}
