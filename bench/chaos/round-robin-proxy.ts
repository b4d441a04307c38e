import * as net from 'node:net';

export interface Proxy {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * "Several API processes behind one address", as a load balancer with health checks does it: each
 * new connection goes to the next of `backends()` (the ports the caller reckons alive), and to the
 * one after when that one refuses. Loopback only; bytes are piped untouched.
 */
export async function startRoundRobinProxy(backends: () => readonly number[]): Promise<Proxy> {
  let next = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    client.pause();
    const ports = backends();
    const connect = (tries: number): void => {
      if (tries >= ports.length) return void client.destroy();
      const port = ports[next++ % ports.length]!;
      const upstream = net.connect({ host: '127.0.0.1', port });
      let connected = false;
      upstream.once('connect', () => {
        connected = true;
        sockets.add(upstream);
        upstream.once('close', () => (sockets.delete(upstream), client.destroy()));
        client.once('close', () => upstream.destroy());
        client.pipe(upstream).pipe(client);
        client.resume();
      });
      upstream.on('error', () => (connected ? client.destroy() : connect(tries + 1)));
    };
    connect(0);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
