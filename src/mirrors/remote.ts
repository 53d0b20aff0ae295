/**
 * Talking to another git server for imports and mirrors (docs/bring-in.md "Safety"): the URL's
 * scheme is one of http, https, ssh and git (no file://, ext:: or other transports: git itself is
 * told `protocol.allow=never` but for that one scheme); its host is resolved once and checked with
 * the webhooks' allow-list (`webhook_allowed_hosts`, src/hooks/allow-list.ts), and git connects to
 * that checked address (`http.curloptResolve`, or the address in place of the name); redirects are
 * not followed; credentials reach git in its environment (never its arguments) and are scrubbed
 * from anything git says before it is stored or shown.
 */
import { badRequest } from '../errors.ts';
import { type AllowList, resolveAllowed } from '../hooks/allow-list.ts';

export const REMOTE_SCHEMES = ['http:', 'https:', 'ssh:', 'git:'] as const;

export interface Credentials {
  username: string | null;
  password: string | null;
}

/** A source or target: its URL without credentials, and the credentials apart. */
export interface Remote {
  url: string;
  credentials: Credentials;
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443, 'ssh:': 22, 'git:': 9418 };

/**
 * Checks a URL given by a user and splits its credentials off (a `user:pass@` in the URL counts
 * like the separate fields, which win). 400 for anything but an absolute http(s), ssh or git URL.
 */
export function parseRemote(raw: string, username?: string | null, password?: string | null): Remote {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw badRequest('url must be an absolute http://, https://, ssh:// or git:// URL.');
  }
  if (!(REMOTE_SCHEMES as readonly string[]).includes(url.protocol) || !url.hostname) {
    throw badRequest('url must be an absolute http://, https://, ssh:// or git:// URL (no file:// or other transports).');
  }
  if (url.search || url.hash) throw badRequest('url must not have a query or a fragment.');
  const credentials: Credentials = {
    username: username ?? (url.username ? decodeURIComponent(url.username) : null),
    password: password ?? (url.password ? decodeURIComponent(url.password) : null),
  };
  if (url.protocol === 'ssh:' && credentials.password) throw badRequest('ssh URLs take no password (only http and https do).');
  url.password = '';
  if (url.protocol !== 'ssh:') url.username = '';
  return { url: url.toString(), credentials: { username: credentials.username || null, password: credentials.password || null } };
}

/** A URL as shown to users: no credentials. */
export function displayUrl(raw: string): string {
  try {
    const url = new URL(raw);
    url.password = '';
    if (url.protocol !== 'ssh:') url.username = '';
    return url.toString();
  } catch {
    return '';
  }
}

/** What one git command against the remote needs: its arguments before the verb, the URL, the environment. */
export interface GitRemoteCall {
  configArgs: string[];
  url: string;
  env: Record<string, string>;
  /** the strings never to show: the password, the username with it, their encodings */
  secrets: string[];
}

/**
 * Resolves and checks the remote's address now and pins git to it. Throws AddressRefused
 * (`address_not_allowed: …`) when the allow-list refuses every address of the host.
 */
export async function prepareRemote(remote: Remote, allow: AllowList, timeoutMs: number): Promise<GitRemoteCall> {
  const url = new URL(remote.url);
  const scheme = url.protocol.slice(0, -1);
  const { address, family } = await resolveAllowed(url.hostname, allow);
  const port = url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol]!;
  const configArgs = [
    '-c',
    'protocol.allow=never',
    '-c',
    `protocol.${scheme}.allow=always`,
    '-c',
    'http.followRedirects=false',
    '-c',
    'credential.helper=',
    '-c',
    `http.lowSpeedLimit=1`,
    '-c',
    `http.lowSpeedTime=${Math.max(10, Math.round(timeoutMs / 1000))}`,
  ];
  const env: Record<string, string> = { GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '/bin/false', SSH_ASKPASS: '/bin/false' };
  const secrets: string[] = [];
  const { username, password } = remote.credentials;
  if (scheme === 'http' || scheme === 'https') {
    // curl connects to the checked address, and TLS still checks the certificate of the name
    const host = url.hostname.replace(/^\[|\]$/g, '');
    configArgs.push('-c', `http.curloptResolve=${host}:${port}:${family === 6 ? `[${address}]` : address}`);
    if (username !== null || password !== null) {
      const pair = `${username ?? ''}:${password ?? ''}`;
      const basic = Buffer.from(pair).toString('base64');
      env.GIT_CONFIG_COUNT = '1';
      env.GIT_CONFIG_KEY_0 = 'http.extraHeader';
      env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${basic}`;
      secrets.push(basic, pair);
    }
  } else {
    // git:// and ssh:// are given the checked address in place of the name
    url.hostname = family === 6 ? `[${address}]` : address;
    if (scheme === 'ssh') {
      env.GIT_SSH_COMMAND =
        'ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR ' +
        `-o ConnectTimeout=${Math.max(5, Math.min(60, Math.round(timeoutMs / 1000)))}`;
    }
  }
  if (password) secrets.push(password, encodeURIComponent(password));
  return { configArgs, url: url.toString(), env, secrets: secrets.filter((s) => s.length >= 3) };
}

/** `text` with every secret replaced by `***`, cut to 1,000 characters (what git says, for users). */
export function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const s of [...secrets].sort((a, b) => b.length - a.length)) out = out.split(s).join('***');
  return out
    .replace(/Authorization: *\S+ +\S+/gi, 'Authorization: ***')
    .trim()
    .slice(0, 1000);
}
