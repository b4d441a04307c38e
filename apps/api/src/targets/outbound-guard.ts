import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import type { AddressRange } from '@chronicle/platform';

/*
 * Which addresses an HTTP-target call may reach (docs/operations.md, "HTTP targets"). A job's URL is a
 * team's to choose, and the call is made from inside the platform's network: without this check a
 * target could read the cloud's metadata service or an internal admin port (server-side request
 * forgery). The check is on the addresses the name resolves to, and the call connects to the address
 * checked (pinned), so a name that resolves elsewhere a moment later (DNS rebinding) changes nothing.
 */

/** Ranges no call reaches unless the allowlist names them, each with why. */
const RESERVED: ReadonlyArray<readonly [string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', 'a reserved'],
  ['10.0.0.0', 8, 'ipv4', 'a private'],
  ['100.64.0.0', 10, 'ipv4', 'a shared (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'ipv4', 'a loopback'],
  ['169.254.169.254', 32, 'ipv4', 'the cloud metadata'],
  ['169.254.0.0', 16, 'ipv4', 'a link-local'],
  ['172.16.0.0', 12, 'ipv4', 'a private'],
  ['192.0.0.0', 24, 'ipv4', 'a reserved'],
  ['192.168.0.0', 16, 'ipv4', 'a private'],
  ['198.18.0.0', 15, 'ipv4', 'a reserved'],
  ['224.0.0.0', 4, 'ipv4', 'a multicast'],
  ['240.0.0.0', 4, 'ipv4', 'a reserved'],
  ['::', 128, 'ipv6', 'a reserved'],
  ['::1', 128, 'ipv6', 'a loopback'],
  ['64:ff9b::', 96, 'ipv6', 'a translated (NAT64)'],
  ['fd00:ec2::254', 128, 'ipv6', 'the cloud metadata'],
  ['fc00::', 7, 'ipv6', 'a private'],
  ['fe80::', 10, 'ipv6', 'a link-local'],
  ['ff00::', 8, 'ipv6', 'a multicast'],
];

/** Each reserved range as a list to check an address against, the narrower first (metadata before link-local). */
const RESERVED_LISTS = RESERVED.map(([base, prefix, family, why]) => {
  const list = new BlockList();
  list.addSubnet(base, prefix, family);
  return { list, family, why };
});

/** Why a call was not made: its target is not one the platform lets calls reach. */
export class RefusedTarget extends Error {}

export class OutboundGuard {
  private readonly allowed = new BlockList();

  constructor(allowlist: readonly AddressRange[]) {
    for (const range of allowlist) this.allowed.addSubnet(range.address, range.prefix, range.family);
  }

  /** Why `address` may not be reached, or null when it may. */
  refusal(address: string): string | null {
    const plain = unmapped(address);
    const family = isIP(plain) === 6 ? 'ipv6' : 'ipv4';
    if (this.allowed.check(plain, family)) return null;
    const reserved = RESERVED_LISTS.find((r) => r.family === family && r.list.check(plain, family));
    return reserved === undefined ? null : `${reserved.why} address`;
  }

  /** Whether the allowlist names `address` (plain http is for those alone). */
  allowlisted(address: string): boolean {
    const plain = unmapped(address);
    return this.allowed.check(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4');
  }

  /**
   * Resolves a URL's host and checks every address it has: one refused refuses the call. The answer is
   * the address to connect to, as a lookup function the call's socket uses instead of DNS.
   */
  async pin(url: URL): Promise<{ address: string; family: 4 | 6; lookup: LookupFunction }> {
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const literal = isIP(host);
    const addresses =
      literal === 0 ? await lookup(host, { all: true, verbatim: true }) : [{ address: host, family: literal }];
    if (addresses.length === 0) throw new RefusedTarget(`${host} resolves to no address`);
    for (const { address } of addresses) {
      const why = this.refusal(address);
      if (why !== null)
        throw new RefusedTarget(
          `${host} resolves to ${address}, ${why}: calls reach it only if HTTP_TARGET_ALLOWLIST names it`,
        );
    }
    if (url.protocol === 'http:' && !addresses.every(({ address }) => this.allowlisted(address)))
      throw new RefusedTarget(`plain http to ${host}: only https, or http to an address HTTP_TARGET_ALLOWLIST names`);
    // Every address checked, for a socket that tries them in turn (IPv6 and IPv4: happy eyeballs); the first alone otherwise.
    const checked = addresses.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
    const [first] = checked as [{ address: string; family: 4 | 6 }];
    const pinned: LookupFunction = (_hostname, options, callback) => {
      if (typeof options === 'object' && options.all === true)
        (callback as (err: null, addresses: Array<{ address: string; family: number }>) => void)(null, checked);
      else callback(null, first.address, first.family);
    };
    return { address: first.address, family: first.family, lookup: pinned };
  }
}

/** An IPv4 address written as IPv6 (`::ffff:10.0.0.1`) is checked as the IPv4 address it is. */
function unmapped(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped === null ? address : mapped[1]!;
}
