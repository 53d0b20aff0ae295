/** Credentials of sources and push mirrors, sealed with the server secret (src/secrets/columns.ts). */
import type { Deps } from '../deps.ts';
import type { Credentials } from './remote.ts';

export const CREDENTIALS_PURPOSE = 'mirror-credentials';

export function sealCredentials(deps: Deps, c: Credentials): string | null {
  if (c.username === null && c.password === null) return null;
  return deps.secret.seal(CREDENTIALS_PURPOSE, JSON.stringify(c));
}

export function openCredentials(deps: Deps, sealed: string | null): Credentials {
  if (sealed === null) return { username: null, password: null };
  return JSON.parse(deps.secret.open(CREDENTIALS_PURPOSE, sealed)) as Credentials;
}
