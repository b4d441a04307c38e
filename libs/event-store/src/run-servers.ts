import type { Pool } from 'pg';
import {
  type Config,
  ConfigError,
  createPool,
  fenceRetiredServers,
  isUnavailable,
  migrate,
  readShardMap,
  type RunServerAddress,
  runServerName,
  type ShardMap,
} from '@chronicle/platform';
import type { EventStore } from './event-store.port';
import { PostgresEventStore } from './postgres/postgres.event-store';

/** The control database's name where servers are named: without a map, and beside the map's servers. */
export const CONTROL_SERVER = 'control';

/**
 * A server runs are kept on (docs/sharding.md): its read models and its log. With the PostgreSQL log a
 * server's log is its own `events`, in the same database as its rows, so that a run's append and its
 * rows are one transaction there, as in a single database.
 */
export interface RunServerConnection {
  /** Its name in the shard map; CONTROL_SERVER for the control database when there is no map. */
  readonly name: string;
  readonly url: string;
  /** The logical shards whose runs it keeps. */
  readonly shards: readonly number[];
  /**
   * Shards being copied to it (`chronicle shards move`): their runs here are copies until the map
   * places the shards here, and the scheduler's passes leave them alone.
   */
  readonly arriving: readonly number[];
  readonly pool: Pool;
  readonly eventStore: EventStore;
  /** Ends its pool and log; nothing for the control database's, which the runtime closes. */
  close(): Promise<void>;
}

/** The control database, as the runtime opened it. */
export interface ControlDatabase {
  readonly url: string;
  readonly pool: Pool;
  readonly eventStore: EventStore;
}

/** How often a process reads the shard map again, to follow a failover or a move. */
export const SHARD_MAP_REFRESH_MS = 1_000;

/**
 * The servers runs are kept on, as the control database's shard map places the shards now. The map is
 * read again every SHARD_MAP_REFRESH_MS (`follow`): when a failover or a move changed it, the new
 * servers are connected, those no longer in it are let go, and the listeners (RunServers, the
 * projector) hear of it. Without a map, the control database alone, for good.
 */
export class RunServerDirectory {
  #connections: readonly RunServerConnection[];
  #map: string;
  readonly #listeners = new Set<(connections: readonly RunServerConnection[]) => void>();
  #timer: NodeJS.Timeout | undefined;
  #refreshing: Promise<boolean> | undefined;
  /** Servers connected by `server` beside the map's. */
  readonly #extra: RunServerConnection[] = [];

  private constructor(
    private readonly config: Config,
    private readonly control: ControlDatabase | undefined,
    private readonly applicationName: string,
    connections: readonly RunServerConnection[],
    map: ShardMap | null,
  ) {
    this.#connections = connections;
    this.#map = JSON.stringify(map);
  }

  /** The map's servers, each connected and migrated; no map: the control database alone. */
  static async open(config: Config, control: ControlDatabase, applicationName: string): Promise<RunServerDirectory> {
    const map = await readShardMap(control.pool, config.shards);
    const connections = await connect(config, control, map, applicationName, []);
    return new RunServerDirectory(config, control, applicationName, connections, map);
  }

  /** These connections, for good (tests that build handlers on one database). */
  static fixed(config: Config, connections: readonly RunServerConnection[]): RunServerDirectory {
    return new RunServerDirectory(config, undefined, '', connections, null);
  }

  /** The servers as the map places the shards now. */
  get current(): readonly RunServerConnection[] {
    return this.#connections;
  }

  /** Tells `listener` of the servers each time the map changes; returns how to stop. */
  onChange(listener: (connections: readonly RunServerConnection[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reads the map every SHARD_MAP_REFRESH_MS until close; a read that fails is tried at the next. */
  follow(onError: (err: unknown) => void): void {
    if (this.control === undefined || this.#timer !== undefined) return;
    this.#timer = setInterval(() => void this.refresh().catch(onError), SHARD_MAP_REFRESH_MS);
    this.#timer.unref();
  }

  /** Reads the map now; resolves with whether it changed (and the servers with it). One read at a time. */
  refresh(): Promise<boolean> {
    this.#refreshing ??= this.read().finally(() => (this.#refreshing = undefined));
    return this.#refreshing;
  }

  private async read(): Promise<boolean> {
    if (this.control === undefined) return false;
    await migrateThoseBack();
    const map = await readShardMap(this.control.pool, this.config.shards);
    // An old primary back after a failover: read-only before anything could write to it.
    if (map !== null) await fenceRetiredServers(this.control.pool);
    const seen = JSON.stringify(map);
    if (seen === this.#map) return false;
    const before = this.#connections;
    const after = await connect(this.config, this.control, map, this.applicationName, before);
    this.#connections = after;
    this.#map = seen;
    for (const listener of this.#listeners) listener(after);
    // Let go of the servers the map no longer names, once their last units of work had time to end.
    const gone = before.filter((c) => !after.some((a) => a.pool === c.pool));
    if (gone.length > 0)
      setTimeout(() => void Promise.all(gone.map((c) => c.close().catch(() => undefined))), 5_000).unref();
    return true;
  }

  /**
   * A server by its name in the map or its URL, connected: one of the map's as it is, or another of
   * `run_servers` (a URL not among them is added, by its name). For the operator's commands that place
   * shards on a server (`chronicle shards move`); closed with the directory.
   */
  async server(nameOrUrl: string): Promise<RunServerConnection> {
    const known = this.#connections.find((c) => c.name === nameOrUrl || c.url === nameOrUrl);
    if (known !== undefined) return known;
    if (this.control === undefined) throw new ConfigError('no control database to find run servers in');
    const isUrl = /^postgres(ql)?:\/\//.test(nameOrUrl);
    if (isUrl)
      await this.control.pool.query(
        'INSERT INTO run_servers (name, url) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING',
        [runServerName(nameOrUrl), nameOrUrl],
      );
    const { rows } = await this.control.pool.query<RunServerAddress>(
      'SELECT name, url FROM run_servers WHERE name = $1 OR url = $1',
      [isUrl ? runServerName(nameOrUrl) : nameOrUrl],
    );
    const address = rows[0];
    if (address === undefined) throw new ConfigError(`no run server ${nameOrUrl}: give its PostgreSQL URL`);
    const connection = await openServer(this.config, address, [], [], this.applicationName);
    this.#extra.push(connection);
    return connection;
  }

  async close(): Promise<void> {
    await Promise.all(this.#extra.map((c) => c.close().catch(() => undefined)));
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#refreshing?.catch(() => undefined);
    await Promise.all(this.#connections.map((c) => c.close().catch(() => undefined)));
  }
}

/**
 * A connection to each of the map's servers: the one `known` to a server's URL if there is one (its
 * pool and log go on), a new one otherwise, migrated; a server whose URL is the control database's
 * shares its pool and log. No map: the control database alone.
 */
async function connect(
  config: Config,
  control: ControlDatabase,
  map: ShardMap | null,
  applicationName: string,
  known: readonly RunServerConnection[],
): Promise<RunServerConnection[]> {
  const controlServer = (
    name: string,
    shards: readonly number[],
    arriving: readonly number[] = [],
  ): RunServerConnection => ({
    name,
    url: control.url,
    shards,
    arriving,
    pool: control.pool,
    eventStore: control.eventStore,
    close: async () => undefined,
  });
  if (map === null)
    return [
      controlServer(
        CONTROL_SERVER,
        Array.from({ length: config.shards }, (_, shard) => shard),
      ),
    ];
  if (config.eventStore !== 'postgres')
    throw new ConfigError(
      "runs on several servers (RUN_SHARD_URLS) keep each server's runs in its own PostgreSQL log for now: use EVENT_STORE=postgres (docs/sharding.md)",
    );
  const connections: RunServerConnection[] = [];
  const opened: RunServerConnection[] = [];
  try {
    for (const [i, { name, url }] of map.servers.entries()) {
      const shards = map.placement.flatMap((server, shard) => (server === i ? [shard] : []));
      const arriving = map.movingTo.flatMap((to, shard) => (to === name ? [shard] : []));
      if (url === control.url) {
        connections.push(controlServer(name, shards, arriving));
        continue;
      }
      const same = known.find((c) => c.url === url && c.name === name);
      if (same !== undefined) {
        connections.push(
          sameList(same.shards, shards) && sameList(same.arriving, arriving) ? same : { ...same, shards, arriving },
        );
        continue;
      }
      const connection = await openServer(config, { name, url }, shards, arriving, applicationName);
      opened.push(connection);
      connections.push(connection);
    }
    return connections;
  } catch (err) {
    await Promise.all(opened.map((c) => c.close().catch(() => undefined)));
    throw err;
  }
}

/** Servers a process could not migrate as it connected to them (down then): migrated once they answer. */
const unmigrated = new Set<string>();

/** Those of `unmigrated` that answer now, migrated. */
async function migrateThoseBack(): Promise<void> {
  for (const url of unmigrated)
    await migrate(url).then(
      () => unmigrated.delete(url),
      (err: unknown) => {
        if (!isUnavailable(err)) throw err;
      },
    );
}

/** A server of the map (or to be), migrated, with a pool of its own and its log. */
async function openServer(
  config: Config,
  { name, url }: RunServerAddress,
  shards: readonly number[],
  arriving: readonly number[],
  applicationName: string,
): Promise<RunServerConnection> {
  // A server down does not keep a process from starting: its runs wait (shard-unavailable), and it
  // is migrated once it answers (RunServerDirectory.read).
  await migrate(url).catch((err: unknown) => {
    if (!isUnavailable(err)) throw err;
    unmigrated.add(url);
  });
  const pool = createPool({ connectionString: url, max: config.pgPoolSize, applicationName });
  return { name, url, shards, arriving, pool, eventStore: new PostgresEventStore(pool), close: () => pool.end() };
}

function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((s, i) => s === b[i]);
}
