import { Client } from 'ldapts';
import type { LdapConfig } from './types.ts';

/**
 * LDAP through ldapts (docs/signin.md "LDAP"): a service bind, a search for the user with the
 * username escaped per RFC 4515, a bind as the user's DN, then the user's groups.
 */
const TIMEOUT_MS = 5000;

/** RFC 4515: the characters that end or change a filter, written as \XX. */
export function escapeFilterValue(value: string): string {
  return value.replace(/[\\*()\0]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** A failure to reach the server at all (refused, unreachable, unknown host, timed out, TLS). */
export function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string; name?: string };
  return (
    /^(ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EPIPE)$/.test(e?.code ?? '') ||
    /connect|timeout|timed out|socket|certificate|TLS/i.test(`${e?.name ?? ''} ${e?.message ?? ''}`)
  );
}

const reason = (err: unknown): string => {
  const e = err as { message?: string; code?: string };
  return (e?.message || e?.code || String(err)).slice(0, 300);
};

function connect(cfg: LdapConfig): Client {
  return new Client({ url: cfg.url, timeout: TIMEOUT_MS, connectTimeout: TIMEOUT_MS });
}

async function open(cfg: LdapConfig): Promise<Client> {
  const c = connect(cfg);
  if (cfg.start_tls) await c.startTLS({});
  return c;
}

const first = (v: unknown): string => {
  if (Array.isArray(v)) return v.length ? first(v[0]) : '';
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  return typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v);
};

/** The staff page's test: connect, service bind, read the user base. */
export async function ldapCheck(cfg: LdapConfig, bindPassword: string): Promise<{ ok: boolean; detail: string }> {
  let c: Client;
  try {
    c = await open(cfg);
  } catch (err) {
    return { ok: false, detail: `Connecting to ${cfg.url}${cfg.start_tls ? ' (StartTLS)' : ''} failed: ${reason(err)}` };
  }
  const unreachable = (err: unknown) => ({ ok: false, detail: `Connecting to ${cfg.url} failed: ${reason(err)}` });
  try {
    if (cfg.bind_dn) {
      try {
        await c.bind(cfg.bind_dn, bindPassword);
      } catch (err) {
        if (isConnectionError(err)) return unreachable(err);
        return { ok: false, detail: `Connected to ${cfg.url}, but the service bind as ${cfg.bind_dn} failed: ${reason(err)}` };
      }
    }
    try {
      await c.search(cfg.user_base, { scope: 'base', attributes: ['dn'], sizeLimit: 1 });
    } catch (err) {
      if (isConnectionError(err)) return unreachable(err);
      return { ok: false, detail: `Bound to ${cfg.url}, but the user base ${cfg.user_base} could not be read: ${reason(err)}` };
    }
    return { ok: true, detail: `Connected to ${cfg.url}, bound as ${cfg.bind_dn || 'anonymous'} and read ${cfg.user_base}.` };
  } catch (err) {
    return { ok: false, detail: `${cfg.url}: ${reason(err)}` };
  } finally {
    await c.unbind().catch(() => undefined);
  }
}

export interface LdapUser {
  dn: string;
  username: string;
  email: string;
  groups: string[];
}

/**
 * Signs a user in against one source: null when the user is not found or the password is wrong;
 * throws on connection errors (the caller logs them and goes on to the next source).
 */
export async function ldapAuthenticate(
  cfg: LdapConfig,
  bindPassword: string,
  username: string,
  password: string,
): Promise<LdapUser | null> {
  if (!password) return null;
  const c = await open(cfg);
  try {
    if (cfg.bind_dn) await c.bind(cfg.bind_dn, bindPassword);
    const filter = cfg.user_filter.split('{username}').join(escapeFilterValue(username));
    const found = await c.search(cfg.user_base, {
      scope: 'sub',
      filter,
      attributes: [cfg.username_attribute, cfg.email_attribute],
      sizeLimit: 2,
    });
    if (found.searchEntries.length !== 1) return null;
    const entry = found.searchEntries[0]!;
    const dn = entry.dn;
    const user = await open(cfg);
    try {
      await user.bind(dn, password);
    } catch {
      return null;
    } finally {
      await user.unbind().catch(() => undefined);
    }
    let groups: string[] = [];
    if (cfg.group_base) {
      const gf = cfg.group_filter.split('{dn}').join(escapeFilterValue(dn)).split('{username}').join(escapeFilterValue(username));
      const g = await c.search(cfg.group_base, {
        scope: 'sub',
        filter: gf,
        attributes: [cfg.group_name_attribute],
        sizeLimit: 1000,
      });
      groups = g.searchEntries.map((e) => first(e[cfg.group_name_attribute])).filter(Boolean);
    }
    return {
      dn,
      username: first(entry[cfg.username_attribute]) || username,
      email: first(entry[cfg.email_attribute]),
      groups,
    };
  } finally {
    await c.unbind().catch(() => undefined);
  }
}
