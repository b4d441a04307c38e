import type { Pool } from 'pg';
import {
  type Config,
  ConfigError,
  createPool,
  fenceRetiredServers,
  migrate,
  readShardMap,
  type ShardMap,
} from '@chronicle/platform';
import type { EventStore } from './event-store.port';
import { PostgresEventStore } from './postgres/postgres.event-store';

/**
 * A server runs are kept on (docs/sharding.md): its read models and its log. With the PostgreSQL log a
 * server's log is its own `events`, in the same database as its rows, so that a run's append and its
 * rows are one transaction there, as in a single database.
 */
export interface RunServerConnection {
  /** Its name in the shard map; `control` for the control database when there is no map. */
  readonly name: string;
  readonly url: string;
  /** The logical shards whose runs it keeps. */
  readonly shards: readonly number[];
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

  async close(): Promise<void> {
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
  const controlServer = (name: string, shards: readonly number[]): RunServerConnection => ({
    name,
    url: control.url,
    shards,
    pool: control.pool,
    eventStore: control.eventStore,
    close: async () => undefined,
  });
  if (map === null)
    return [
      controlServer(
        'control',
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
      if (url === control.url) {
        connections.push(controlServer(name, shards));
        continue;
      }
      const same = known.find((c) => c.url === url && c.name === name);
      if (same !== undefined) {
        connections.push(sameShards(same, shards) ? same : { ...same, shards });
        continue;
      }
      await migrate(url);
      const pool = createPool({ connectionString: url, max: config.pgPoolSize, applicationName });
      const connection = { name, url, shards, pool, eventStore: new PostgresEventStore(pool), close: () => pool.end() };
      opened.push(connection);
      connections.push(connection);
    }
    return connections;
  } catch (err) {
    await Promise.all(opened.map((c) => c.close().catch(() => undefined)));
    throw err;
  }
}

function sameShards(connection: RunServerConnection, shards: readonly number[]): boolean {
  return connection.shards.length === shards.length && connection.shards.every((s, i) => s === shards[i]);
}
