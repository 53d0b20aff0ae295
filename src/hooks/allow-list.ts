/**
 * Which addresses a webhook may reach (README "Webhooks", safety). A resolved address must be
 * public unicast; loopback, private, link-local, unique-local, multicast, unspecified, reserved
 * and the IPv4-mapped forms of them are refused unless the site setting `webhook_allowed_hosts`
 * names the URL's host, or an address or CIDR range holding the resolved address.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { badRequest } from '../errors.ts';

export interface AllowList {
  hosts: Set<string>;
  ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
}

export const EMPTY_ALLOW_LIST: AllowList = { hosts: new Set(), ranges: [] };

const HOST_RE = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*\.?$/;

function parseRange(entry: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | null {
  const bare = entry.startsWith('[') && entry.endsWith(']') ? entry.slice(1, -1) : entry;
  if (bare.includes('/')) {
    try {
      const [addr, bits] = ipaddr.parseCIDR(bare);
      return [addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress() ? addr : addr, bits];
    } catch {
      return null;
    }
  }
  if (!ipaddr.isValid(bare)) return null;
  const addr = ipaddr.process(bare);
  return [addr, addr.kind() === 'ipv4' ? 32 : 128];
}

/** Checks and normalizes the setting's entries (lower case, no duplicates); a bad entry is 400. */
export function normalizeAllowList(entries: string[]): string[] {
  const out: string[] = [];
  for (const raw of entries) {
    const entry = raw.trim().toLowerCase();
    if (parseRange(entry) === null && !HOST_RE.test(entry)) {
      throw badRequest(
        `webhook_allowed_hosts: "${raw}" is neither a host name, an IP address nor a CIDR range such as 10.0.0.0/8.`,
      );
    }
    if (!out.includes(entry)) out.push(entry);
  }
  return out;
}

export function compileAllowList(entries: string[]): AllowList {
  const list: AllowList = { hosts: new Set(), ranges: [] };
  for (const entry of entries) {
    const range = parseRange(entry);
    if (range) list.ranges.push(range);
    else list.hosts.add(entry.replace(/\.$/, ''));
  }
  return list;
}

/** Whether a URL's host name is allowed whatever it resolves to. */
export const hostAllowed = (hostname: string, list: AllowList): boolean =>
  list.hosts.has(
    hostname
      .toLowerCase()
      .replace(/^\[|\]$/g, '')
      .replace(/\.$/, ''),
  );

/** Whether a resolved address may be connected to: public unicast, or inside an allowed range. */
export function addressAllowed(address: string, list: AllowList): boolean {
  if (!ipaddr.isValid(address)) return false;
  const addr = ipaddr.process(address); // an IPv4-mapped IPv6 address is judged as the IPv4 one
  for (const [range, bits] of list.ranges) {
    if (range.kind() === addr.kind() && addr.match(range, bits)) return true;
  }
  return addr.range() === 'unicast';
}

/** A host that resolves to no address the allow-list permits (the message names the address). */
export class AddressRefused extends Error {
  readonly code = 'address_not_allowed';
}

/**
 * The address a connection to `hostname` may use (imports and mirrors, docs/bring-in.md): an IP
 * literal as it stands, else the first address DNS gives that `addressAllowed` accepts (any of them
 * when the host itself is allowed). The caller connects to this address, not to the name again,
 * so a name that re-resolves elsewhere between the check and the connection cannot be reached.
 */
export async function resolveAllowed(hostname: string, list: AllowList): Promise<{ address: string; family: 4 | 6 }> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const literal = isIP(host);
  if (literal) {
    if (!hostAllowed(host, list) && !addressAllowed(host, list)) throw new AddressRefused(`address_not_allowed: ${host}`);
    return { address: host, family: literal as 4 | 6 };
  }
  const found = await lookup(host, { all: true });
  const ok = hostAllowed(host, list) ? found : found.filter((a) => addressAllowed(a.address, list));
  if (ok.length === 0) throw new AddressRefused(`address_not_allowed: ${host} resolves to ${found[0]?.address ?? 'nothing'}`);
  return { address: ok[0]!.address, family: ok[0]!.family as 4 | 6 };
}
