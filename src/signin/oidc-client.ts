import * as client from 'openid-client';
import type { Source } from './types.ts';

/**
 * OIDC discovery through openid-client, cached per source (and per change of the source): the
 * provider's metadata and its keys (openid-client refetches the key set when an ID token names a
 * key it does not hold). Plain http issuers are allowed only for 127.0.0.1/localhost (tests,
 * a provider beside the server).
 */
const cache = new Map<string, { at: number; config: Promise<client.Configuration> }>();
const DISCOVERY_TTL_MS = 3600_000;

const isLoopback = (issuer: string) => /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/|$)/.test(issuer);

export async function discover(source: Source, secret: string, fresh = false): Promise<client.Configuration> {
  const oidc = source.oidc!;
  const key = `${source.row.uuid}\n${source.row.updated_at}`;
  const hit = cache.get(key);
  if (hit && !fresh && Date.now() - hit.at < DISCOVERY_TTL_MS) return hit.config;
  const options: client.DiscoveryRequestOptions = { timeout: 10 };
  if (oidc.issuer.startsWith('http:')) {
    if (!isLoopback(oidc.issuer)) throw new Error('an http:// issuer is allowed on this machine only (127.0.0.1, localhost)');
    options.execute = [client.allowInsecureRequests];
  }
  const config = client.discovery(new URL(oidc.issuer), oidc.client_id, secret || undefined, undefined, options);
  for (const k of cache.keys()) if (k.startsWith(`${source.row.uuid}\n`)) cache.delete(k);
  cache.set(key, { at: Date.now(), config });
  config.catch(() => cache.delete(key));
  return config;
}

export { client };
