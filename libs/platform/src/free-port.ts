import * as net from 'node:net';

/**
 * Ports tried, below Linux's default ephemeral range (32768-60999): the kernel hands those out as the
 * source ports of outgoing connections and for listen(0), so a port found free there can be taken by any
 * client connecting anywhere before the caller binds it (a test's server once failed to start so, beside
 * a fuzz test's thousands of connections). Here only another caller of this function can take it.
 */
const FIRST_PORT = 20_000;
const LAST_PORT = 32_767;
const TRIES = 50;

/** A port nobody listens on right now on 127.0.0.1, from FIRST_PORT..LAST_PORT, picked at random. */
export async function findFreePort(): Promise<number> {
  for (let i = 0; i < TRIES; i++) {
    const port = FIRST_PORT + Math.floor(Math.random() * (LAST_PORT - FIRST_PORT + 1));
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port on 127.0.0.1 in ${TRIES} tries from ${FIRST_PORT}-${LAST_PORT}`);
}

export const FREE_PORT_RANGE = { first: FIRST_PORT, last: LAST_PORT } as const;

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
