import { OutboundGuard, RefusedTarget } from './outbound-guard';
import { retryAfterOf, signatureHeader } from './target-call';
import { createHmac } from 'node:crypto';

describe('OutboundGuard', () => {
  const none = new OutboundGuard([]);

  it.each([
    ['127.0.0.1', 'a loopback address'],
    ['10.1.2.3', 'a private address'],
    ['172.20.0.1', 'a private address'],
    ['192.168.1.1', 'a private address'],
    ['169.254.169.254', 'the cloud metadata address'],
    ['169.254.10.1', 'a link-local address'],
    ['100.100.100.200', 'a shared (carrier-grade NAT) address'],
    ['0.0.0.0', 'a reserved address'],
    ['::1', 'a loopback address'],
    ['::ffff:10.0.0.1', 'a private address'],
    ['fd00:ec2::254', 'the cloud metadata address'],
    ['fe80::1', 'a link-local address'],
    ['fc00::5', 'a private address'],
  ])('refuses %s, %s', (address, why) => {
    expect(none.refusal(address)).toBe(why);
  });

  it.each(['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '172.32.0.1'])('lets %s be reached', (address) => {
    expect(none.refusal(address)).toBeNull();
  });

  it('lets the allowlist name addresses and ranges it would refuse, and nothing more', () => {
    const guard = new OutboundGuard([
      { address: '127.0.0.1', prefix: 32, family: 'ipv4' },
      { address: '10.1.0.0', prefix: 16, family: 'ipv4' },
      { address: 'fd12::', prefix: 16, family: 'ipv6' },
    ]);
    expect(guard.refusal('127.0.0.1')).toBeNull();
    expect(guard.refusal('::ffff:127.0.0.1')).toBeNull();
    expect(guard.refusal('10.1.200.3')).toBeNull();
    expect(guard.refusal('fd12::9')).toBeNull();
    expect(guard.refusal('127.0.0.2')).toBe('a loopback address');
    expect(guard.refusal('10.2.0.1')).toBe('a private address');
    expect(guard.refusal('169.254.169.254')).toBe('the cloud metadata address');
  });

  it('checks every address a name resolves to, and refuses plain http to an address the allowlist does not name', async () => {
    await expect(none.pin(new URL('https://localhost:8443/hook'))).rejects.toThrow(/localhost resolves to .*loopback/);
    await expect(none.pin(new URL('https://[::1]/hook'))).rejects.toThrow(RefusedTarget);
    await expect(none.pin(new URL('https://169.254.169.254/latest/meta-data'))).rejects.toThrow(/cloud metadata/);
    await expect(none.pin(new URL('http://93.184.216.34/hook'))).rejects.toThrow(/plain http/);
    const pinned = await none.pin(new URL('https://93.184.216.34/hook'));
    expect(pinned.address).toBe('93.184.216.34');
    const loopback = new OutboundGuard([{ address: '127.0.0.1', prefix: 32, family: 'ipv4' }]);
    expect((await loopback.pin(new URL('http://127.0.0.1:9/hook'))).address).toBe('127.0.0.1');
  });

  it('connects to the address it checked, whatever the name resolves to later', async () => {
    const { lookup } = await none.pin(new URL('https://93.184.216.34/hook'));
    const one = await new Promise<string>((resolve) =>
      lookup('elsewhere.example', {}, (_e, address) => resolve(address as string)),
    );
    const all = await new Promise<unknown>((resolve) =>
      lookup('elsewhere.example', { all: true }, (_e, addresses) => resolve(addresses)),
    );
    expect(one).toBe('93.184.216.34');
    expect(all).toEqual([{ address: '93.184.216.34', family: 4 }]);
  });
});

describe('a call’s signature and Retry-After', () => {
  it('signs `<t>.<body>` with each valid secret, the current first', () => {
    const body = '{"runId":"r"}';
    const header = signatureHeader(['new-secret', 'old-secret'], 1_700_000_000, body);
    const expected = (secret: string) => createHmac('sha256', secret).update(`1700000000.${body}`).digest('hex');
    expect(header).toBe(`t=1700000000,v1=${expected('new-secret')},v1=${expected('old-secret')}`);
  });

  it('reads seconds or an HTTP date, at most a day; a malformed one is none', () => {
    const now = new Date('2026-12-07T12:00:00Z');
    expect(retryAfterOf('120', now)).toBe(120);
    expect(retryAfterOf('Mon, 07 Dec 2026 12:00:30 GMT', now)).toBe(30);
    expect(retryAfterOf('Mon, 07 Dec 2026 11:00:00 GMT', now)).toBe(0);
    expect(retryAfterOf('9999999', now)).toBe(86_400);
    expect(retryAfterOf('soon', now)).toBeUndefined();
    expect(retryAfterOf(undefined, now)).toBeUndefined();
  });
});
