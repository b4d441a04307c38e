import { readFileSync } from 'node:fs';
import * as net from 'node:net';
import { findFreePort, FREE_PORT_RANGE } from './free-port';

describe('findFreePort', () => {
  it('finds ports that can be listened on, below the range the kernel gives outgoing connections', async () => {
    const ephemeralFirst = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    expect(FREE_PORT_RANGE.last).toBeLessThan(ephemeralFirst);
    for (let i = 0; i < 20; i++) {
      const port = await findFreePort();
      expect(port).toBeGreaterThanOrEqual(FREE_PORT_RANGE.first);
      expect(port).toBeLessThanOrEqual(FREE_PORT_RANGE.last);
      const server = net.createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', resolve);
      });
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
