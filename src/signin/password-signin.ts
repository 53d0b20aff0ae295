import type { Deps } from '../deps.ts';
import { AppError, unauthorized } from '../errors.ts';
import { type UserRow, checkCredentials } from '../users/service.ts';
import { resolveExternal } from './identities.ts';
import { ldapAuthenticate } from './ldap.ts';
import { enabledSources } from './sources.ts';
import type { Source } from './types.ts';

/**
 * A username and password (the sign-in form and `POST /auth/login`, docs/signin.md "LDAP"): the
 * local password first, then each enabled LDAP source in order. A source that cannot be reached
 * is skipped (its error goes to `log`, naming the source), never answered as a 5xx; every
 * failure is the same 401, so nothing tells whether the username exists or where it lives.
 */
export interface PasswordSignIn {
  user: UserRow;
  /** the LDAP source that said yes, or null for the local password */
  source: Source | null;
}

export type SourceLog = (source: string, err: unknown) => void;

export async function passwordSignIn(deps: Deps, username: string, password: string, log?: SourceLog): Promise<PasswordSignIn> {
  try {
    return { user: await checkCredentials(deps, username, password), source: null };
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 401) throw err;
  }
  const name = username.trim();
  if (name && password) {
    for (const source of await enabledSources(deps, 'ldap')) {
      try {
        const found = await ldapAuthenticate(source.ldap!, source.secret(), name, password);
        if (!found) continue;
        const outcome = await resolveExternal(deps, source, {
          subject: found.username.toLowerCase(),
          username: found.username,
          email: found.email,
          emailVerified: true,
          displayName: '',
          groups: found.groups,
        });
        if (outcome.kind === 'user') return { user: outcome.user, source };
      } catch (err) {
        log?.(source.row.name, err);
      }
    }
  }
  throw unauthorized('Wrong username or password.');
}
