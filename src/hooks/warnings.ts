/**
 * Warnings when a hook is created (README "Webhooks", safety): a URL whose host resolves only to
 * addresses deliveries refuse (loopback, private and the like, unless `webhook_allowed_hosts`
 * allows them) is still accepted, since the site setting may change, but every delivery would
 * fail, so the answer says so. Deliveries check again at connect time; this is advice only.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Deps } from '../deps.ts';
import { readSettings } from '../settings/service.ts';
import { addressAllowed, compileAllowList, hostAllowed } from './allow-list.ts';

const LOOKUP_TIMEOUT_MS = 2000;

export async function hookUrlWarnings(deps: Deps, url: string): Promise<string[]> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  const settings = await readSettings(deps.db);
  const allow = compileAllowList(JSON.parse(settings.webhook_allowed_hosts) as string[]);
  if (hostAllowed(host, allow)) return [];
  let addresses: string[];
  if (isIP(host)) addresses = [host];
  else {
    let timer: NodeJS.Timeout | undefined;
    try {
      const found = await Promise.race([
        lookup(host, { all: true }),
        new Promise<null>((resolve) => {
          timer = setTimeout(() => resolve(null), LOOKUP_TIMEOUT_MS);
        }),
      ]);
      if (found === null) return [];
      addresses = found.map((a) => a.address);
    } catch {
      return [`The host ${host} does not resolve now: deliveries will fail until it does.`];
    } finally {
      clearTimeout(timer);
    }
  }
  if (addresses.some((a) => addressAllowed(a, allow))) return [];
  return [
    `Deliveries to ${host} (${addresses[0]}) will be refused: it is not a public address. ` +
      'A staff member can allow it in the site setting webhook_allowed_hosts.',
  ];
}
